"""First-hour mistakes of session 49: each gives an error naming what, where and the fix."""

from __future__ import annotations

import pytest

import bridge
from bridge.errors import UnknownSettingError


def test_a_misspelt_setting_is_refused_with_the_nearest_name_and_changes_nothing(context):
    ctx = context
    before = ctx.target_max_block_size
    with pytest.raises(AttributeError) as err:
        ctx.target_max_blocksize = 1 << 20  # (was taken without a word: blocks stayed 128 MiB)
    assert isinstance(err.value, UnknownSettingError)
    assert "'target_max_blocksize'" in str(err.value) and "did you mean 'target_max_block_size'" in str(err.value)
    assert ctx.target_max_block_size == before
    assert "target_max_blocksize" not in vars(ctx)


def test_a_ray_data_setting_says_what_does_that_here(context):
    ctx = context
    with pytest.raises(UnknownSettingError, match="Ray Data setting; here: ctx.shuffle_exchange"):
        ctx.use_push_based_shuffle = True
    with pytest.raises(UnknownSettingError, match="ctx.preserve_order = True"):
        ctx.execution_options.preserve_order = True  # (reading execution_options fails first)


def test_reading_an_unknown_setting_names_the_settings(context):
    ctx = context
    with pytest.raises(AttributeError, match="no setting 'prefetch'") as err:
        _ = ctx.prefetch
    assert "prefetch_batches" in str(err.value)
    assert not hasattr(ctx, "no_such_setting")


def test_known_settings_copies_and_private_marks_still_work(context):
    ctx = context
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


def test_read_csv_of_a_parquet_file_names_the_format_and_the_reader(tmp_path, capfd):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": list(range(1000)), "s": ["text"] * 1000}), tmp_path / "a.parquet")
    with pytest.raises(bridge.BridgeError, match=r"is a Parquet file, not CSV text") as err:
        bridge.read_csv(str(tmp_path / "a.parquet")).take_all()  # (was "line 45: expected 1 columns, got 2")
    assert "read_parquet" in str(err.value)
    assert "UnicodeDecodeError" not in capfd.readouterr().err  # (pyarrow printed one per undecodable line)


def test_read_csv_of_utf16_text_says_which_encoding_to_pass(tmp_path):
    import pyarrow.csv as pcsv

    (tmp_path / "u.csv").write_bytes("a,b\n1,x\n2,y\n".encode("utf-16"))
    with pytest.raises(bridge.BridgeError, match="looks like UTF-16 text") as err:
        bridge.read_csv(str(tmp_path / "u.csv")).take_all()
    assert "encoding='utf-16'" in str(err.value)
    ds = bridge.read_csv(str(tmp_path / "u.csv"), read_options=pcsv.ReadOptions(encoding="utf-16"))
    assert ds.take_all() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    (tmp_path / "p.csv").write_text("PAR1,ORC\n1,2\n")  # (text that starts like a magic number is text)
    assert bridge.read_csv(str(tmp_path / "p.csv")).take_all() == [{"PAR1": 1, "ORC": 2}]
    (tmp_path / "n.csv").write_bytes(b"a,b\n1,x\x00y\n2,z\n")  # (a NUL inside a value is valid UTF-8 and reads)
    assert bridge.read_csv(str(tmp_path / "n.csv")).take_all() == [{"a": 1, "b": "x\x00y"}, {"a": 2, "b": "z"}]


def test_a_bad_line_in_a_files_first_rows_prints_no_stray_traceback(tmp_path, monkeypatch):
    import sys
    import warnings

    import pyarrow.fs as pafs

    from bridge.io.csv_datasource import CSVFormat

    (tmp_path / "bad.csv").write_text("a\n1\n2,3\n4\n")  # one column: the one-column probe reads the bad line
    stray = []
    monkeypatch.setattr(sys, "unraisablehook", stray.append)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        table = next(iter(CSVFormat(on_bad_lines="skip").read(pafs.LocalFileSystem(), str(tmp_path / "bad.csv"), None)))
    assert table.column("a").to_pylist() == [1, 4]
    assert stray == []  # (was "TypeError: 'NoneType' object is not callable" from the probe's handler)


def test_a_split_read_while_the_others_are_not_warns_long_before_the_stall_error(monkeypatch):
    import bridge.iteration.streaming_split as ss
    from bridge.errors import StallError

    monkeypatch.setattr(ss, "WAIT_WARNING_S", 0.5)
    first, _second = bridge.range(20_000, override_num_blocks=40).streaming_split(2, equal=True, stall_timeout_s=4)
    with pytest.warns(UserWarning, match=r"split 0 has waited 0.5s .* read all of them at the same time"):
        with pytest.raises(StallError):
            for _ in first.iter_batches(batch_size=100, prefetch_batches=0):  # (split 1 is never read)
                pass
