"""What a user meets in their first hour: argument mistakes refused at the call with a bridge error and a hint,
``DataLoader(ds)``, the list form of ``rename_columns``, torch batches of list columns and bfloat16.

Each of these failed before with a raw Python error (``'<' not supported``, ``invalid literal for int()``,
``object of type 'Dataset' has no len()``), some of them inside a Ray task.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import BridgeError, BridgeTypeError, BridgeValueError, SchemaMismatchError

torch = pytest.importorskip("torch")


def _is_bridge_form(err: pytest.ExceptionInfo) -> None:
    assert isinstance(err.value, BridgeError)
    assert "\n\nHint: " in str(err.value)


# ------------------------------------------------------------------ rename_columns([...])
def test_rename_columns_list_names_every_column_in_order():
    ds = bridge.from_items([{"a": 1, "b": "x", "c": 2.5}])
    assert ds.rename_columns(["x", "y", "z"]).take_all() == [{"x": 1, "y": "x", "z": 2.5}]
    assert ds.rename_columns(["c", "b", "a"]).take_all() == [{"c": 1, "b": "x", "a": 2.5}]  # swapped by position
    assert ds.rename_columns(["c", "b", "a"]).schema().types == [pa.int64(), pa.string(), pa.float64()]


def test_rename_columns_list_after_a_transform_uses_the_schema():
    ds = bridge.range(4).map_batches(lambda b: {"id": b["id"], "sq": b["id"] ** 2})
    assert ds.rename_columns(["i", "s"]).take(2) == [{"i": 0, "s": 0}, {"i": 1, "s": 1}]
    assert bridge.range(3).rename_columns(["a"]).take(1) == [{"a": 0}]


@pytest.mark.parametrize(
    ("names", "error", "words"),
    [
        (["a", "b"], BridgeValueError, "one per column"),           # Ray Data: length must match
        ([], BridgeValueError, "empty"),
        ([1], BridgeValueError, "strings"),
        ({}, BridgeValueError, "no entries"),
        ({"id": 1}, BridgeValueError, "strings"),
        ("a", BridgeTypeError, "dict"),
    ],
)
def test_rename_columns_refuses_bad_names(names, error, words):
    with pytest.raises(error, match=words) as err:
        bridge.range(3).rename_columns(names)
    _is_bridge_form(err)


def test_rename_columns_list_refuses_repeated_names():
    with pytest.raises(SchemaMismatchError, match="more than once") as err:
        bridge.from_items([{"a": 1, "b": 2}]).rename_columns(["x", "x"])
    _is_bridge_form(err)
    assert isinstance(err.value, ValueError)  # Ray Data raises ValueError


# ------------------------------------------------------------------ row counts
_COUNT_CALLS = {
    "take": lambda ds, n: ds.take(n),
    "take_batch": lambda ds, n: ds.take_batch(n),
    "limit": lambda ds, n: ds.limit(n),
    "show": lambda ds, n: ds.show(n),
    "take_all": lambda ds, n: ds.take_all(limit=n),
}


@pytest.mark.parametrize("method", list(_COUNT_CALLS))
@pytest.mark.parametrize("bad", ["5", 5.0, True, [5]])
def test_row_counts_must_be_ints(method, bad):
    with pytest.raises(BridgeTypeError, match=f"{method}: .* must be .*got {re.escape(repr(bad))}") as err:
        _COUNT_CALLS[method](bridge.range(10), bad)
    _is_bridge_form(err)
    assert isinstance(err.value, TypeError)  # what the raw error was: `except TypeError` still catches it


@pytest.mark.parametrize("method", list(_COUNT_CALLS))
def test_negative_row_counts_are_refused(method):
    with pytest.raises(BridgeValueError, match=f"{method}: .* got -1") as err:
        _COUNT_CALLS[method](bridge.range(10), -1)
    _is_bridge_form(err)


def test_valid_row_counts_match_ray_data(capsys):
    ds = bridge.range(10)
    assert ds.take(0) == []
    assert ds.take(np.int64(2)) == [{"id": 0}, {"id": 1}]
    assert ds.limit(np.int32(3)).count() == 3
    assert ds.take_batch(np.int64(2))["id"].tolist() == [0, 1]
    assert ds.take_all(limit=np.int64(10)) == ds.take_all()
    with pytest.raises(BridgeValueError, match="found 10 rows"):
        ds.take_all(limit=np.int64(9))
    ds.show(np.int64(1))
    assert capsys.readouterr().out == "{'id': 0}\n"


@pytest.mark.parametrize("bad", ["5", 2.0])
def test_map_batches_batch_size_is_checked_at_the_call(bad):
    # 2.0 used to fail inside the Ray task, when the plan ran.
    with pytest.raises(BridgeTypeError, match="batch_size must be a positive number of rows or None") as err:
        bridge.range(4).map_batches(lambda b: b, batch_size=bad)
    _is_bridge_form(err)


def test_other_counts_and_fractions_are_checked():
    ds = bridge.range(10)
    with pytest.raises(BridgeTypeError, match="random_shuffle: num_blocks"):
        ds.random_shuffle(num_blocks="2")
    with pytest.raises(BridgeTypeError, match="random_sample: fraction must be a number"):
        ds.random_sample("0.5")
    with pytest.raises(BridgeTypeError, match="split_proportionately: proportions must be a list of numbers"):
        ds.split_proportionately(["0.5"])
    with pytest.raises(BridgeTypeError, match="prefetch_batches"):
        ds.iter_batches(prefetch_batches="2")
    with pytest.raises(BridgeTypeError, match="local_shuffle_buffer_size"):
        ds.iter_batches(batch_size=2, local_shuffle_buffer_size="4")


# ------------------------------------------------------------------ seeds
_SEEDED = {
    "random_shuffle": lambda ds, s: ds.random_shuffle(seed=s),
    "random_sample": lambda ds, s: ds.random_sample(0.5, seed=s),
    "randomize_block_order": lambda ds, s: ds.randomize_block_order(seed=s),
    "train_test_split": lambda ds, s: ds.train_test_split(0.2, shuffle=True, seed=s),
    "iter_batches": lambda ds, s: ds.iter_batches(batch_size=2, local_shuffle_buffer_size=4, local_shuffle_seed=s),
    "iter_torch_batches": lambda ds, s: ds.iter_torch_batches(batch_size=2, local_shuffle_buffer_size=4,
                                                              local_shuffle_seed=s),
    "iterator().iter_torch_batches": lambda ds, s: ds.iterator().iter_torch_batches(
        batch_size=2, local_shuffle_buffer_size=4, local_shuffle_seed=s),
    "to_torch(seed=)": lambda ds, s: ds.to_torch(batch_size=2, seed=s),
    "to_torch(local_shuffle_seed=)": lambda ds, s: ds.to_torch(batch_size=2, local_shuffle_buffer_size=4,
                                                               local_shuffle_seed=s),
}


@pytest.mark.parametrize("method", list(_SEEDED))
@pytest.mark.parametrize("bad", ["x", 1.5, True])
def test_seeds_must_be_ints(method, bad):
    with pytest.raises(BridgeTypeError, match=r"seed must be an int >= 0 or None; got") as err:
        _SEEDED[method](bridge.range(10), bad)  # at the call, before anything runs
    _is_bridge_form(err)


@pytest.mark.parametrize("method", list(_SEEDED))
def test_negative_seeds_are_refused(method):
    with pytest.raises(BridgeValueError, match="seed must be an int >= 0"):
        _SEEDED[method](bridge.range(10), -1)


def test_numpy_integer_seeds_act_as_ints():
    ds = bridge.range(20, override_num_blocks=4)
    assert ds.random_shuffle(seed=np.int64(3)).take_all() == ds.random_shuffle(seed=3).take_all()
    assert ds.random_sample(0.5, seed=np.int32(3)).take_all() == ds.random_sample(0.5, seed=3).take_all()
    rows = [b["id"].tolist() for b in ds.iter_batches(batch_size=5, local_shuffle_buffer_size=8,
                                                      local_shuffle_seed=np.uint8(3))]
    assert rows == [b["id"].tolist() for b in ds.iter_batches(batch_size=5, local_shuffle_buffer_size=8,
                                                             local_shuffle_seed=3)]


# ------------------------------------------------------------------ DataLoader(ds)
def test_dataloader_of_a_dataset_says_to_use_to_torch():
    loader = torch.utils.data.DataLoader(bridge.range(10), batch_size=4)
    with pytest.raises(BridgeTypeError, match="has no len") as err:
        next(iter(loader))
    _is_bridge_form(err)
    assert "to_torch(" in err.value.hint and "iter_torch_batches(" in err.value.hint
    with pytest.raises(BridgeTypeError, match="has no len"):
        torch.utils.data.DataLoader(bridge.range(10), shuffle=True)  # RandomSampler asks len() at once
    # What the hint says works.
    batch = next(iter(torch.utils.data.DataLoader(bridge.range(10).to_torch(batch_size=None), batch_size=4)))
    assert batch["id"].tolist() == [0, 1, 2, 3]


def test_len_refusal_keeps_iteration_and_truth():
    ds = bridge.range(3)
    assert bool(ds) is True
    assert list(ds) == [{"id": 0}, {"id": 1}, {"id": 2}]  # list() asks len() for a hint only: TypeError is skipped
    assert next(iter(ds)) == {"id": 0}
    assert [r["id"] for r in ds] == [0, 1, 2]
    assert sorted(r["id"] for r in ds.__iter__()) == [0, 1, 2]
    assert bool(bridge.range(0)) is True and bool(ds.materialize()) is True
    with pytest.raises(TypeError):
        len(ds)
    assert ds.count() == 3


# ------------------------------------------------------------------ torch map_batches: results
def test_bfloat16_result_is_refused_naming_the_column():
    ds = bridge.range(10)
    with pytest.raises(bridge.UserCodeError, match=r"column 'x' is a torch\.bfloat16 tensor") as err:
        ds.map_batches(lambda b: {"x": b["id"].to(torch.bfloat16)}, batch_format="torch").take(2)
    _is_bridge_form(err)
    assert ".float()" in err.value.hint and "torch.float32" in err.value.hint  # the fix is the Hint line
    with pytest.raises(bridge.UserCodeError, match=r"column 'x' holds a torch\.bfloat16 tensor"):
        ds.map_batches(lambda b: {"x": [t.to(torch.bfloat16) for t in b["id"].split(1)]},
                       batch_format="torch").take(2)
    # The fix the message names works, and a float32 result stays float32.
    out = ds.map_batches(lambda b: {"x": b["id"].to(torch.bfloat16).float()}, batch_format="torch")
    assert out.schema().field("x").type == pa.float32()
    assert out.take(2) == [{"x": 0.0}, {"x": 1.0}]


def _identity(batch):
    return batch


_LIST_TABLE = pa.table({
    "a": pa.array([[1, 2], None, [3, 4, 5], [], None], pa.list_(pa.int64())),
    "f": pa.array([[1.5], [2.5, 3.0], None, [], [0.25]], pa.list_(pa.float32())),
    "x": pa.array([[1, 2], [3, 4], None, [7, 8], [9, 10]], pa.list_(pa.int32(), 2)),
    "l": pa.array([[1], [2, 3], [], None, [4]], pa.large_list(pa.int16())),
    "n": pa.array([1, 2, 3, 4, 5], pa.int64()),
})


def test_identity_torch_map_keeps_list_columns():
    ragged = bridge.from_items([{"a": [1, 2]}, {"a": [3, 4, 5]}])
    out = ragged.map_batches(_identity, batch_format="torch")
    assert out.take(2) == [{"a": [1, 2]}, {"a": [3, 4, 5]}]
    assert out.schema().field("a").type == pa.list_(pa.int64())

    got = bridge.from_arrow(_LIST_TABLE).map_batches(_identity, batch_format="torch").to_arrow()
    assert got.schema == _LIST_TABLE.schema  # list<int64>, list<float32>, fixed_size_list<int32>[2], large_list<int16>
    assert got.equals(_LIST_TABLE)  # the values, empty lists and null rows


def test_null_list_rows_are_none_in_the_torch_batch():
    seen = bridge.from_arrow(_LIST_TABLE).map_batches(
        lambda b: {"kinds": ["none" if v is None else type(v).__name__ for v in b["a"]]},
        batch_format="torch").to_arrow()
    assert seen["kinds"].to_pylist() == ["Tensor", "none", "Tensor", "Tensor", "none"]


def test_identity_torch_map_keeps_list_columns_across_block_boundaries():
    ds = bridge.from_arrow([_LIST_TABLE, _LIST_TABLE])  # batches of 3 straddle the two blocks
    got = ds.map_batches(_identity, batch_format="torch", batch_size=3).to_arrow()
    assert got.equals(pa.concat_tables([_LIST_TABLE, _LIST_TABLE]))


def test_split_proportionately_takes_a_generator_and_map_batches_rays_default_batch_size():
    assert [p.count() for p in bridge.range(10).split_proportionately(x for x in (0.2, 0.5))] == [2, 5, 3]
    # Ray Data's map_batches(batch_size="default") is valid Ray Data code: our default (whole blocks).
    assert bridge.range(6).map_batches(lambda b: b, batch_size="default").count() == 6
