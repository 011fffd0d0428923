"""Categoricals keep their categories, their order and their frame's column labels through the bridge.

An empty Categorical came back with no categories from from_pandas / from_dask / from_modin: a block of
no rows went through the object store as an Arrow IPC stream with no record batch, and a stream with no
batch carries no dictionary.  Two ordered Categoricals whose categories ran in opposite orders were
merged into one order with no error.  from_modin dropped the columns' axis name.
"""

from __future__ import annotations

import dask.dataframe as dd
import modin.pandas as mpd
import pandas as pd
import pyarrow as pa
import pytest
import ray

import bridge
from bridge import _ray_arrow
from bridge.errors import SchemaMismatchError


def _empty_categorical_frame() -> pd.DataFrame:
    return pd.DataFrame({"c": pd.Categorical([], categories=["lo", "mid", "hi"], ordered=True),
                         "x": pd.Series([], dtype="int64")})


def _assert_categories(df: pd.DataFrame) -> None:
    assert len(df) == 0
    assert isinstance(df["c"].dtype, pd.CategoricalDtype)
    assert df["c"].cat.categories.tolist() == ["lo", "mid", "hi"]
    assert df["c"].cat.ordered


def test_an_empty_categorical_keeps_its_categories_from_pandas():
    ds = bridge.from_pandas(_empty_categorical_frame())
    _assert_categories(ds.to_pandas())
    assert ds.to_arrow().column("c").type == pa.dictionary(pa.int8(), pa.string(), ordered=True)


def test_an_empty_categorical_keeps_its_categories_from_dask_and_modin():
    _assert_categories(bridge.from_dask(dd.from_pandas(_empty_categorical_frame(), npartitions=1)).to_pandas())
    _assert_categories(bridge.from_modin(mpd.DataFrame(_empty_categorical_frame())).to_pandas())


def test_a_categorical_filtered_to_no_rows_keeps_its_categories():
    df = pd.DataFrame({"c": pd.Categorical(["lo", "hi"], categories=["lo", "mid", "hi"], ordered=True),
                       "x": [1, 2]})
    _assert_categories(bridge.from_pandas(df).filter(lambda row: row["x"] > 5).to_pandas())


def test_a_block_of_no_rows_keeps_its_dictionaries_through_the_object_store():
    # The IPC path (a small table): a top-level dictionary, and one inside a struct.
    values = pa.array(["a", "b", "c"])
    top = pa.DictionaryArray.from_arrays(pa.array([], pa.int8()), values)
    nested = pa.StructArray.from_arrays([pa.DictionaryArray.from_arrays(pa.array([], pa.int16()), values)], ["d"])
    table = pa.table({"top": top, "nested": nested})
    assert _ray_arrow.goes_as_ipc(table)
    back = ray.get(ray.put(table))
    assert back.num_rows == 0 and back.schema == table.schema
    assert back.column("top").chunk(0).dictionary.to_pylist() == ["a", "b", "c"]
    assert back.column("nested").chunk(0).field("d").dictionary.to_pylist() == ["a", "b", "c"]
    # A table with no chunks at all (concat of nothing) still travels, as an empty table of its schema.
    no_chunks = pa.Table.from_batches([], schema=table.schema)
    assert ray.get(ray.put(no_chunks)).schema == table.schema


def _ordered(values: list[str], categories: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"c": pd.Categorical(values, categories=categories, ordered=True), "x": range(len(values))})


def test_ordered_categoricals_of_opposite_orders_are_refused_not_merged():
    ds = bridge.from_pandas([_ordered(["lo"], ["lo", "hi"]), _ordered(["lo"], ["hi", "lo"])])
    with pytest.raises(SchemaMismatchError, match=r"'c' is an ordered dictionary.*\['lo', 'hi'\].*\['hi', 'lo'\]"):
        ds.to_pandas()
    with pytest.raises(SchemaMismatchError, match="ordered dictionary"):
        ds.random_shuffle().to_pandas()
    with pytest.raises(SchemaMismatchError, match="ordered dictionary"):
        list(ds.repartition(1).iter_batches(batch_format="pandas"))
    # Each piece alone keeps its own order.
    assert [b["c"].cat.categories.tolist() for b in ds.iter_batches(batch_size=None, batch_format="pandas")] == [
        ["lo", "hi"], ["hi", "lo"]]


def test_ordered_categoricals_whose_orders_agree_are_combined():
    ds = bridge.from_pandas([_ordered(["lo"], ["lo", "hi"]), _ordered(["top", "lo"], ["lo", "hi", "top"])])
    out = ds.to_pandas()
    assert out["c"].cat.categories.tolist() == ["lo", "hi", "top"] and out["c"].cat.ordered
    assert out["c"].tolist() == ["lo", "top", "lo"]
    assert sorted(ds.repartition(1).to_pandas()["c"].tolist()) == ["lo", "lo", "top"]
    # Unordered Categoricals of different categories are still merged (their order means nothing).
    a = pd.DataFrame({"c": pd.Categorical(["x"], categories=["x", "y"])})
    b = pd.DataFrame({"c": pd.Categorical(["y"], categories=["y", "x"])})
    assert bridge.from_pandas([a, b]).to_pandas()["c"].tolist() == ["x", "y"]


def test_from_modin_keeps_the_columns_axis_name_and_level_names():
    m = mpd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    m.columns.name = "features"
    ds = bridge.from_modin(m)
    assert ds.to_pandas().columns.name == "features"
    assert ds.to_modin().columns.name == "features"
    mi = mpd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("x", "a"), ("x", "b")], names=["top", "sub"]))
    cols = bridge.from_modin(mi).to_pandas().columns
    assert list(cols) == [("x", "a"), ("x", "b")] and list(cols.names) == ["top", "sub"]


def test_an_expression_filter_to_no_rows_keeps_the_categories_and_no_buffers():
    df = pd.DataFrame({"c": pd.Categorical(["lo", "hi"], categories=["lo", "mid", "hi"], ordered=True),
                       "x": [1, 2]})
    _assert_categories(bridge.from_pandas(df).filter(expr="x > 5").to_pandas())
    from bridge.block import empty_like

    big = pa.table({"c": pa.DictionaryArray.from_arrays(pa.array([0] * 100_000, pa.int8()), pa.array(["a", "b"])),
                    "v": pa.array(range(100_000))})
    empty = empty_like(big)
    assert empty.num_rows == 0 and empty.schema == big.schema
    assert empty.column("c").chunk(0).dictionary.to_pylist() == ["a", "b"]
    assert empty.get_total_buffer_size() < 1_000  # none of the block's buffers held


def test_an_empty_block_of_several_chunks_keeps_the_categories_through_the_store():
    typ = pa.dictionary(pa.int8(), pa.string())
    none_yet = pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array([], pa.int8()), pa.array([], pa.string()))])
    some = pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array([], pa.int8()), pa.array(["a", "b"]))])
    table = pa.table({"c": pa.chunked_array([*none_yet.chunks, *some.chunks], type=typ)})
    back = ray.get(ray.put(table))
    assert back.column("c").chunk(0).dictionary.to_pylist() == ["a", "b"]


def test_equal_float_dictionaries_with_nan_or_signed_zeros_are_not_refused():
    for values in ([float("nan"), 1.0], [0.0, -0.0, 1.0]):
        typ = pa.dictionary(pa.int8(), pa.float64(), ordered=True)
        chunks = [pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(values), ordered=True)
                  for _ in range(2)]
        table = pa.table({"f": pa.chunked_array(chunks, type=typ)})
        from bridge.block import take_rows

        assert take_rows(table, pa.array([0, 3])).num_rows == 2
