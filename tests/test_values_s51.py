"""A function's output keeps its values and types (session 51, from a hunt).

A row or batch function that returned floats in a list column of ints got them back as ints in every
block where the floats happened to be whole ([1.0, 2.0] -> [1, 2], while [1.5] stayed float: one column,
two types), and floats returned into a list<float32> column were rounded to float32 (1.1 ->
1.100000023841858): the input's list type was restored by a "safe" cast, which checks neither.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import ray

import bridge

INTS = [pa.table({"l": pa.array([[2, 4]])}), pa.table({"l": pa.array([[3]])})]


def _block_types(ds: bridge.Dataset, column: str) -> list[pa.DataType]:
    return [ray.get(r).schema.field(column).type for r in ds.materialize().to_arrow_refs()]


def _halve_pandas(df):
    return df.assign(l=df["l"].map(lambda v: [x / 2 for x in v]))


@pytest.mark.parametrize("how", ["map", "numpy", "pandas"])
def test_floats_a_function_returns_into_a_list_of_ints_stay_floats(how):
    ds = bridge.from_arrow(INTS)
    if how == "map":
        out = ds.map(lambda r: {"l": [v / 2 for v in r["l"]]})
    elif how == "numpy":
        out = ds.map_batches(lambda b: {"l": np.array([np.asarray(v) / 2 for v in b["l"]] + [None], object)[:-1]})
    else:
        out = ds.map_batches(_halve_pandas, batch_format="pandas")
    assert out.take_all() == [{"l": [1.0, 2.0]}, {"l": [1.5]}]
    assert [type(v) for v in out.take_all()[0]["l"]] == [float, float]
    assert _block_types(out, "l") == [pa.list_(pa.float64())] * 2


@pytest.mark.parametrize("how", ["map", "numpy"])
def test_floats_returned_into_a_list_of_float32_are_not_rounded(how):
    ds = bridge.from_arrow(pa.table({"l": pa.array([[1.0]], pa.list_(pa.float32()))}))
    if how == "map":
        out = ds.map(lambda r: {"l": [1.1]})
    else:
        out = ds.map_batches(lambda b: {"l": np.array([np.array([1.1])] + [None], object)[:-1]})
    assert out.take_all() == [{"l": [1.1]}]
    assert _block_types(out, "l") == [pa.list_(pa.float64())]


def test_the_input_list_type_still_comes_back_where_the_values_fit_it():
    ds = bridge.from_arrow(pa.table({"l": pa.array([[1, 2], None, [2**31 - 1]], pa.list_(pa.int32())),
                                     "f": pa.array([[0.5], [1.5], None], pa.list_(pa.float32()))}))
    for out in (ds.map(lambda r: r), ds.map_batches(lambda b: b), ds.map_batches(lambda b: b, batch_format="pandas")):
        assert out.schema().field("l").type == pa.list_(pa.int32())
        assert out.schema().field("f").type == pa.list_(pa.float32())
        assert out.take_all() == ds.take_all()
    # NaN inside a list is its own value: the list<double> -> large_list round trip still holds.
    nan = bridge.from_arrow(pa.table({"l": pa.array([[float("nan"), 1.0]], pa.large_list(pa.float64()))}))
    back = nan.map_batches(lambda b: b)
    assert back.schema().field("l").type == pa.large_list(pa.float64())
    structs = pa.list_(pa.struct([("a", pa.int32()), ("b", pa.float32())]))
    st = bridge.from_arrow(pa.table({"s": pa.array([[{"a": 1, "b": 1.5}]], structs)}))
    assert st.map(lambda r: r).schema().field("s").type == structs
    halves = st.map(lambda r: {"s": [{"a": 0.5, "b": 2.0}]})
    assert halves.take_all() == [{"s": [{"a": 0.5, "b": 2.0}]}]


def test_a_list_column_whose_rows_hold_no_item_keeps_its_type():
    """A batch whose lists are all empty (a function that filtered every item out) is list<null> to pyarrow:
    it takes the column's type, so every block agrees."""
    ds = bridge.from_arrow(pa.table({"l": pa.array([[1.5], [2.5]], pa.list_(pa.float32()))}))
    out = ds.map(lambda r: {"l": [v for v in r["l"] if v > 9]})
    assert out.schema().field("l").type == pa.list_(pa.float32())
    assert out.take_all() == [{"l": []}, {"l": []}]


def test_add_column_in_numpy_keeps_the_type_of_the_column_it_replaces():
    """The zone went (19:00 New York became a naive 00:00) and a dictionary became string, where
    map_batches returning the same arrays kept both."""
    ds = bridge.from_arrow(pa.table({"t": pa.array([0, None], pa.timestamp("us", tz="America/New_York")),
                                     "d": pa.array(["a", "b"]).dictionary_encode(),
                                     "u": pa.array([2**64 - 1, None], pa.uint64())}))
    out = ds
    for col in ("t", "d", "u"):
        out = out.add_column(col, lambda b, c=col: b[c], batch_format="numpy")
    assert out.schema() == ds.schema()
    assert out.take_all() == ds.take_all()
    # Values of another kind in the column's place are the function's own.
    ints = ds.add_column("t", lambda b: np.array([1, 2]), batch_format="numpy")
    assert ints.schema().field("t").type == pa.int64() and [r["t"] for r in ints.take_all()] == [1, 2]
    # pandas and Arrow batches carry their types: a dictionary the function decoded stays text.
    decoded = ds.add_column("d", lambda t: t["d"].cast(pa.string()), batch_format="pyarrow")
    assert decoded.schema().field("d").type == pa.string()
    as_text = ds.add_column("d", lambda df: df["d"].astype(str), batch_format="pandas")
    assert as_text.schema().field("d").type == pa.string()


def test_uint64_with_nulls_under_a_new_name_stays_uint64():
    """NumPy holds a uint64 column with nulls as Python ints and None: under a new name (no input type to
    restore) pyarrow read them as int64 and the task failed with OverflowError."""
    ds = bridge.from_arrow(pa.table({"u": pa.array([2**64 - 1, None, 3], pa.uint64())}))
    for out in (ds.map_batches(lambda b: {"v": b["u"]}), ds.add_column("v", lambda b: b["u"], batch_format="numpy")):
        assert out.schema().field("v").type == pa.uint64()
        assert [r["v"] for r in out.take_all()] == [2**64 - 1, None, 3]


def test_repartition_refuses_ordered_dictionaries_whose_orders_conflict():
    """A block sliced and compacted put both pieces on one dictionary in first-seen order: the rows that
    meant hi < lo said lo < hi, where to_pandas of the same Dataset refuses."""
    from bridge.errors import SchemaMismatchError

    def ordered(values, order):
        idx = pa.array([order.index(v) for v in values], pa.int8())
        return pa.DictionaryArray.from_arrays(idx, pa.array(order), ordered=True)

    n = 4000  # a first block large enough that its slice is copied (compacted) before shipping
    big = pa.table({"c": ordered(["lo", "hi"] * (n // 2), ["lo", "hi"]), "i": pa.array(range(n))})
    small = pa.table({"c": ordered(["hi", "lo"], ["hi", "lo"]), "i": pa.array([n, n + 1])})
    ds = bridge.from_arrow([big, small])
    with pytest.raises(SchemaMismatchError, match="order"):
        ds.to_pandas()
    with pytest.raises(SchemaMismatchError, match="order"):
        ds.repartition(2).to_pandas()
