"""Values that came back changed, or were written as what cannot be read back, without an error (session 52, from a hunt)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import bridge


def test_read_json_of_a_list_holding_a_null_before_its_items_type_is_known(tmp_path):
    """pyarrow's JSON reader, inferring, built ``[null, {"a": null}]`` as a list whose offsets overran its
    values: the null was gone and values moved into the next row (``count()`` still said 2)."""
    tb = pa.table({"lst": pa.array([[None, {"a": None}], [{"a": 2}]], pa.list_(pa.struct([("a", pa.int64())]))),
                   "l": pa.array([[[None, 1], None], [[2]]], pa.list_(pa.list_(pa.int64())))})
    bridge.from_arrow(tb).write_json(str(tmp_path))
    back = bridge.read_json(str(tmp_path))
    assert back.take_all() == tb.to_pylist()
    assert back.to_arrow().equals(tb)
    (tmp_path / "nested.json").write_text('{"s": {"x": [null, {"a": 1}]}}\n{"s": null}\n')
    assert bridge.read_json(str(tmp_path / "nested.json")).take_all() == [{"s": {"x": [None, {"a": 1}]}}, {"s": None}]


@pytest.mark.parametrize("values", [
    pa.array([-2**50, 5], pa.timestamp("ms")),                 # Arrow wrote "<value out of range: ...>"
    pa.array([253402300800, None], pa.timestamp("s", "UTC")),  # year 10000: written, never read back
    pa.array([2932897], pa.date32()),
    pa.array([253402300800000], pa.date64()),
    pa.array([2**40], pa.time64("us")),                        # past midnight
    pa.array([253402300800 - 1800], pa.timestamp("s", "Europe/Paris")),  # UTC 9999, Paris (written) 10000
    pa.array([253402300800000], pa.timestamp("ms")).dictionary_encode(),
], ids=lambda a: str(a.type))
def test_write_csv_refuses_a_temporal_value_csv_text_cannot_hold(tmp_path, values):
    """write_csv wrote placeholder text (or year-10000 text that read_csv refuses): the value was lost at
    the write and seen only at the read. write_json refused them already."""
    with pytest.raises(bridge.UnsupportedTypeError, match=r"write_csv: column 'c' .* which CSV text cannot hold"):
        bridge.from_arrow(pa.table({"c": values})).write_csv(str(tmp_path))


def test_write_csv_keeps_the_temporal_values_csv_text_holds(tmp_path):
    tb = pa.table({"t": pa.array([-62135596800, 253402300799, None], pa.timestamp("s")),
                   "d": pa.array([-719162, 2932896, 0], pa.date32()),
                   "ns": pa.array([-2**62, 2**62, 1], pa.timestamp("ns")),
                   "tm": pa.array([0, 86399999999, None], pa.time64("us"))})
    bridge.from_arrow(tb).write_csv(str(tmp_path))
    assert bridge.read_csv(str(tmp_path), schema=tb.schema).to_arrow().equals(tb)


def test_min_and_max_of_fixed_size_binary_as_sort_orders_it():
    """Min / Max refused fixed_size_binary (UnsupportedTypeError) where sort orders it and Ray Data answers."""
    values = pa.array([b"\x00\x00", b"\xff\x00", None, b"\x01\x02"], pa.binary(2))
    ds = bridge.from_arrow([pa.table({"k": [1, 1], "v": values[:2]}), pa.table({"k": [2, 1], "v": values[2:]})])
    assert (ds.min("v"), ds.max("v")) == (b"\x00\x00", b"\xff\x00")
    out = ds.groupby("k").aggregate(bridge.Min("v"), bridge.Max("v")).to_arrow()
    assert out.schema.field("min(v)").type == pa.binary(2)
    assert out.to_pydict() == {"k": [1, 2], "min(v)": [b"\x00\x00", None], "max(v)": [b"\xff\x00", None]}


def test_from_pandas_of_an_object_column_with_an_int_past_int64_names_it():
    """pyarrow's bare "OverflowError: Python int too large to convert to C long" named no column."""
    import pandas as pd

    fits = pd.DataFrame({"a": pd.Series([2**63, None, 1], dtype=object), "b": [1, 2, 3]})
    with pytest.raises(bridge.UnsupportedTypeError, match=r"(?s)object column 'a' holds the int 9223372036854775808, "
                                                          r"past int64.*astype\('UInt64'\)"):
        bridge.from_pandas(fits)
    with pytest.raises(bridge.UnsupportedTypeError, match=r"(?s)holds the int -9223372036854775809.*as text"):
        bridge.from_pandas(pd.DataFrame({"a": pd.Series([-2**63 - 1, 1], dtype=object)}))
    fits["a"] = fits["a"].astype("UInt64")  # the hint's way
    assert bridge.from_pandas(fits).to_arrow().column("a").to_pylist() == [2**63, None, 1]
