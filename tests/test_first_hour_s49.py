"""First-hour mistakes of session 49: each gives an error naming what, where and the fix."""

from __future__ import annotations

import pytest

import bridge
from bridge.errors import UnknownSettingError


@pytest.fixture
def ctx():
    current = bridge.DataContext.get_current()
    saved = current.copy()
    yield current
    bridge.DataContext._set_current(saved)


def test_a_misspelt_setting_is_refused_with_the_nearest_name_and_changes_nothing(ctx):
    before = ctx.target_max_block_size
    with pytest.raises(AttributeError) as err:
        ctx.target_max_blocksize = 1 << 20  # (was taken without a word: blocks stayed 128 MiB)
    assert isinstance(err.value, UnknownSettingError)
    assert "'target_max_blocksize'" in str(err.value) and "did you mean 'target_max_block_size'" in str(err.value)
    assert ctx.target_max_block_size == before
    assert "target_max_blocksize" not in vars(ctx)


def test_a_ray_data_setting_says_what_does_that_here(ctx):
    with pytest.raises(UnknownSettingError, match="Ray Data setting; here: ctx.shuffle_exchange"):
        ctx.use_push_based_shuffle = True
    with pytest.raises(UnknownSettingError, match="ctx.preserve_order = True"):
        ctx.execution_options.preserve_order = True  # (reading execution_options fails first)


def test_reading_an_unknown_setting_names_the_settings(ctx):
    with pytest.raises(AttributeError, match="no setting 'prefetch'") as err:
        _ = ctx.prefetch
    assert "prefetch_batches" in str(err.value)
    assert not hasattr(ctx, "no_such_setting")


def test_known_settings_copies_and_private_marks_still_work(ctx):
    ctx.target_max_block_size = 64 * 1024 * 1024
    ctx._a_private_mark = 1  # (the library marks contexts with private attributes, e.g. an epoch's seed)
    snap = ctx.copy()
    assert snap.target_max_block_size == 64 * 1024 * 1024 and snap._a_private_mark == 1
    ctx.target_max_block_size = 32 * 1024 * 1024
    assert snap.target_max_block_size == 64 * 1024 * 1024
    assert bridge.range(10).map_batches(lambda b: b).count() == 10
    assert bridge.DataContext(preserve_order=False).preserve_order is False
    with pytest.raises(TypeError):
        bridge.DataContext(preserve_ordr=False)


def test_a_dataloader_that_batches_torch_batches_again_is_refused_with_the_fix():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    tds = bridge.range(10).to_torch(batch_size=4)
    with pytest.raises(ValueError, match=r"each tensor would come as \[k, 4, \.\.\.\]") as err:
        next(iter(DataLoader(tds)))  # (was [1, 4]-shaped tensors: the default batch_size=1 stacked each batch)
    assert "DataLoader(tds, batch_size=None)" in str(err.value)
    assert [b["id"].tolist() for b in DataLoader(tds, batch_size=None)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    # Rows batched by the DataLoader, and a collate_fn of the user's own over our batches, are as asked.
    assert [b["id"].shape for b in DataLoader(bridge.range(10).to_torch(), batch_size=4)] == \
        [torch.Size([4]), torch.Size([4]), torch.Size([2])]
    assert [[len(x["id"]) for x in group] for group in DataLoader(tds, batch_size=2, collate_fn=list)] == [[4, 4], [2]]


def test_the_refusal_reaches_the_loop_from_dataloader_workers():
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    tds = bridge.range(10).to_torch(batch_size=4)
    with pytest.raises(ValueError, match=r"DataLoader\(to_torch\(batch_size=4\)\): the DataLoader batches again"):
        list(DataLoader(tds, num_workers=2, batch_size=2))
    assert sum(len(b["id"]) for b in DataLoader(tds, num_workers=2, batch_size=None)) == 10
