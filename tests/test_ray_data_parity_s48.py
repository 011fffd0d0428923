"""Ray Data parity found by a differential hunt: functions called on emptied blocks, argument errors
that were not ValueErrors."""

from __future__ import annotations

import numpy as np
import pytest

import bridge


def _mostly_emptied() -> bridge.Dataset:
    return bridge.range(10, override_num_blocks=5).filter(lambda r: r["id"] < 2)  # 4 of 5 blocks emptied


def test_map_batches_is_not_called_on_blocks_a_filter_emptied():
    ds = _mostly_emptied()
    # One row per batch: a row for each emptied block came out too ([2, 0, 0, 0, 0]).
    assert ds.map_batches(lambda b: {"n": np.array([len(b["id"])])}).take_all() == [{"n": 2}]
    # A function reading its batch's first row failed on an empty one.
    assert ds.map_batches(lambda b: {"first": np.array([b["id"][0]])}).take_all() == [{"first": 0}]
    assert ds.map_batches(lambda df: df.head(1), batch_format="pandas").count() == 1


def test_an_emptied_dataset_keeps_the_function_s_output_schema_and_no_rows():
    emptied = bridge.range(10, override_num_blocks=5).filter(lambda r: False)
    out = emptied.map_batches(lambda b: {"n": b["id"] + 1, "x": b["id"] * 2.0})
    assert out.take_all() == [] and out.count() == 0
    assert out.schema().names == ["n", "x"] and str(out.schema().field("x").type) == "double"
    # A function that cannot take an empty batch: no rows and no error, as in Ray Data.
    assert emptied.map_batches(lambda b: {"first": np.array([b["id"][0]])}).take_all() == []


def test_add_column_of_a_function_reading_the_first_row_skips_emptied_blocks():
    out = _mostly_emptied().add_column("f", lambda df: df["id"].iloc[0] + df["id"] * 0)
    assert out.take_all() == [{"id": 0, "f": 0}, {"id": 1, "f": 0}]
    assert str(out.schema().field("f").type) == "int64"


@pytest.mark.parametrize("call", [
    lambda ds: ds.split(0),
    lambda ds: ds.split_at_indices([3, 1]),
    lambda ds: ds.split_proportionately([0.5, 0.5]),
    lambda ds: ds.train_test_split(1.5),
    lambda ds: ds.sort(["id", "id"], descending=[True]),
    lambda ds: ds.sort(5),
    lambda ds: ds.repeat(-1),
    lambda ds: ds.groupby(5),
], ids=["split0", "unsorted-indices", "proportions", "test-size", "descending-flags", "sort-key", "repeat", "groupby"])
def test_bad_arguments_are_value_errors_as_in_ray_data(call):
    with pytest.raises(ValueError):
        call(bridge.range(5))


def test_sort_and_groupby_keys_given_as_other_iterables():
    ds = bridge.from_items([{"a": 2, "b": 1}, {"a": 1, "b": 2}])
    assert [r["a"] for r in ds.sort(np.array(["a"])).take_all()] == [1, 2]
    assert ds.groupby(("a", "b")).count().count() == 2
