"""Values and rows that once came back changed or missing without an error, one test each.

Found by a hunt through the round trips and exporters (2026-11-25); each test
fails on the code before its fix.  The type-by-path matrix (tests/test_fidelity.py)
holds the cases that are a type's (dictionary of ints, lists of lists and of structs
with nulls two levels down, bool tensors); these are the rest.
"""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import bridge
from bridge.block import concat_blocks
from bridge.errors import BridgeError, SchemaMismatchError, UnsupportedTypeError

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------- NumPy and pandas batches

def test_a_masked_array_keeps_its_mask_as_nulls():
    ds = bridge.from_numpy(np.ma.array([1, 2, 3], mask=[False, True, False]))
    assert [r["data"] for r in ds.take_all()] == [1, None, 3]
    out = bridge.range(3).map_batches(lambda b: {"x": np.ma.array(b["id"], mask=b["id"] == 1)}).take_all()
    assert [r["x"] for r in out] == [0, None, 2]


def test_an_nd_masked_array_with_a_masked_element_is_refused_and_without_one_is_its_data():
    with pytest.raises(BridgeError, match="masked element"):
        bridge.from_numpy(np.ma.array(np.zeros((2, 2)), mask=[[False, True], [False, False]])).materialize()
    ds = bridge.from_numpy(np.ma.array(np.ones((2, 2)), mask=False))
    assert np.array_equal(np.stack([r["data"] for r in ds.take_all()]), np.ones((2, 2)))


def test_pandas_batches_keep_a_named_index_and_a_stored_unnamed_one():
    named = pd.DataFrame({"x": [1, 2]}, index=pd.Index(["a", "b"], name="key"))
    out = bridge.from_pandas(named).map_batches(lambda df: df, batch_format="pandas")
    assert out.schema().names == ["x", "key"]
    pd.testing.assert_frame_equal(out.to_pandas(), named)
    unnamed = pd.DataFrame({"x": [1, 2]}, index=[7, 9])
    pd.testing.assert_frame_equal(
        bridge.from_pandas(unnamed).map_batches(lambda df: df, batch_format="pandas").to_pandas(), unnamed)
    # A function that sets an index keeps that column; a filter's leftover positions are not a column.
    moved = bridge.range(4).map_batches(lambda df: df.set_index("id"), batch_format="pandas")
    assert moved.to_pandas().index.tolist() == [0, 1, 2, 3]
    filtered = bridge.range(4).map_batches(lambda df: df[df["id"] % 2 == 1], batch_format="pandas")
    assert filtered.schema().names == ["id"] and [r["id"] for r in filtered.take_all()] == [1, 3]


@pytest.mark.parametrize("index", [pd.Index([1.5, np.nan], name="k"), pd.Index(pd.array([1, None], dtype="Int64")),
                                   pd.Index(["a", None], name="s")])
def test_an_index_holding_a_null_comes_back_as_the_index(index):
    df = pd.DataFrame({"x": [1, 2]}, index=index)
    pd.testing.assert_frame_equal(bridge.from_pandas(df).to_pandas(), df, check_index_type=False)
    back = bridge.from_pandas(df).to_pandas()
    assert back.index.name == index.name and back.columns.tolist() == ["x"]


def test_renaming_a_column_keeps_the_pandas_index_and_dtypes():
    df = pd.DataFrame({"x": pd.array([1, 2], dtype="Int64"), "y": [0.5, 1.5]},
                      index=pd.Index(["r", "s"], name="key"))
    out = bridge.from_pandas(df).rename_columns({"x": "z"}).to_pandas()
    pd.testing.assert_frame_equal(out, df.rename(columns={"x": "z"}))
    moved = bridge.from_pandas(df).rename_columns({"key": "k"}).to_pandas()
    assert moved.index.name == "k" and moved.index.tolist() == ["r", "s"]


def test_a_function_output_replacing_a_dictionary_column_keeps_its_own_type():
    t = pa.table({"c": pa.array(["a", "bb", "a"]).dictionary_encode()})
    out = bridge.from_arrow(t).map_batches(lambda b: {"c": np.array([len(str(v)) for v in b["c"]])})
    assert out.schema().field("c").type == pa.int64()
    assert [r["c"] for r in out.take_all()] == [1, 2, 1]


def test_a_sliced_frame_keeps_its_labels_and_pieces_of_a_default_one_do_not_gain_any():
    df = pd.DataFrame({"x": range(10)}).iloc[3:]  # RangeIndex(3, 10): labels a user joins on
    for ds in (bridge.from_pandas(df), bridge.from_pandas(df, override_num_blocks=3)):
        back = ds.to_pandas()
        assert back.index.tolist() == list(range(3, 10)) and back.columns.tolist() == ["x"]
        assert [r["x"] for r in ds.take_all()] == list(range(3, 10))
    whole = pd.DataFrame({"x": range(10)})
    for frames in ([whole.iloc[:4], whole.iloc[4:]], [whole, whole]):
        ds = bridge.from_pandas(frames)
        assert ds.schema().names == ["x"] and isinstance(ds.to_pandas().index, pd.RangeIndex)
    mixed = bridge.from_pandas([whole.iloc[:2], df])  # one frame with labels: every block keeps its own
    assert mixed.to_pandas().index.tolist() == [0, 1, *range(3, 10)]


def test_pandas_dtypes_and_labels_that_pyarrow_forgets_come_back():
    df = pd.DataFrame({0: pd.array(["a", None], dtype="string[pyarrow]"), 1: [1.5, 2.5]},
                      index=pd.Index([5, 6], dtype="Int64", name="k"))
    df.columns.name = "field"
    assert pa.Table.from_pandas(df).to_pandas()[0].dtype == pd.StringDtype("python")  # what pyarrow gives
    back = bridge.from_pandas(df).to_pandas()
    pd.testing.assert_frame_equal(back, df, check_exact=True)
    assert back.columns.name == "field" and back.index.dtype == pd.Int64Dtype()
    same = bridge.from_pandas(df).map_batches(lambda b: b, batch_format="pandas").to_pandas()
    pd.testing.assert_frame_equal(same, df, check_exact=True)
    # Int labels, a named index and a column with nulls: the float column was dropped without a word.
    lost = pd.DataFrame({0: pd.array([1, None], dtype="Int64"), 1: [1.5, 2.5]}, index=pd.Index(["a", "b"], name="k"))
    pd.testing.assert_frame_equal(bridge.from_pandas(lost).to_pandas(), lost, check_exact=True)
    multi = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", 1), ("a", 2)], names=["l", "n"]))
    pd.testing.assert_frame_equal(bridge.from_pandas(multi).to_pandas(), multi)


def test_a_dictionary_of_zoned_timestamps_keeps_its_zone_in_pandas():
    zoned = pa.array([0, 3_600_000_000, None, 0], pa.timestamp("us", tz="Asia/Tokyo"))
    t = pa.table({"t": zoned.dictionary_encode()})
    # pyarrow's own to_pandas gives the UTC instants as naive wall times (00:00 for 09:00 in Tokyo).
    assert pa.table({"t": zoned.dictionary_encode()}).to_pandas()["t"].dt.tz is None
    want = pd.Series(pd.Categorical(zoned.to_pandas()), name="t")
    for frame in (bridge.from_arrow(t).to_pandas(),
                  next(iter(bridge.from_arrow(t).iter_batches(batch_format="pandas")))):
        pd.testing.assert_series_equal(frame["t"], want)
        assert str(frame["t"].iloc[0]) == "1970-01-01 09:00:00+09:00"
    # Blocks with different dictionaries: one Categorical, every instant and the null in place.
    two = bridge.from_arrow([t.slice(0, 2), pa.table({"t": zoned.slice(1).dictionary_encode()})]).to_pandas()["t"]
    expected = pa.concat_arrays([zoned.slice(0, 2), zoned.slice(1)]).to_pandas()
    pd.testing.assert_series_equal(two.astype(expected.dtype), expected, check_names=False)


# ---------------------------------------------------------------- combining blocks

def test_union_of_decimals_and_floats_is_refused_rather_than_rounded():
    dec = pa.table({"x": pa.array([decimal.Decimal("1234567890123456.7891")], pa.decimal128(20, 4))})
    flt = pa.table({"x": pa.array([0.5])})
    with pytest.raises(SchemaMismatchError, match="round the decimals"):
        bridge.from_arrow(dec).union(bridge.from_arrow(flt))
    with pytest.raises(SchemaMismatchError, match="decimal"):
        concat_blocks([dec, flt])
    wider = pa.table({"x": pa.array([decimal.Decimal("0.5")], pa.decimal128(30, 4))})  # decimals widen: exact
    assert concat_blocks([dec, wider]).column("x").to_pylist() == [decimal.Decimal("1234567890123456.7891"),
                                                                     decimal.Decimal("0.5")]


def test_rows_without_columns_are_counted_in_every_batching():
    ds = bridge.range(10).select_columns([])
    assert [b.num_rows for b in ds.iter_batches(batch_size=4, batch_format="pyarrow")] == [4, 4, 2]
    assert len(list(ds.iter_torch_batches(batch_size=4))) == 3
    tds = ds.to_torch(batch_size=3)
    assert len(tds) == len(list(tds)) == 4
    pieces = [pa.table({"_": pa.nulls(n)}).select([]) for n in (3, 4)]
    assert concat_blocks(pieces).num_rows == 7


# ---------------------------------------------------------------- torch

def test_an_in_place_change_to_a_torch_batch_does_not_reach_the_dataset():
    m = bridge.from_numpy(np.zeros((8, 2), np.float32)).materialize()
    for b in m.iter_torch_batches(batch_size=3):
        b["data"].add_(100)
    assert all((r["data"] == 0).all() for r in m.take_all())
    plain = bridge.from_arrow(pa.table({"x": np.zeros(8)})).materialize()
    for b in plain.iter_torch_batches(batch_size=8):
        b["x"][:] = 7
    for b in plain.to_torch(batch_size=4):
        b["x"].mul_(3)
    assert [r["x"] for r in plain.take_all()] == [0.0] * 8

    def in_place(batch):
        batch["x"].add_(5)
        return batch

    assert [r["x"] for r in plain.map_batches(in_place, batch_format="torch").take_all()] == [5.0] * 8
    assert [r["x"] for r in plain.take_all()] == [0.0] * 8


def test_zero_copy_batches_are_views_of_the_store():
    m = bridge.from_arrow(pa.table({"x": np.zeros(4)})).materialize()
    for b in m.iter_torch_batches(batch_size=4, zero_copy=True):
        b["x"].add_(1)  # what the docstring says not to do: it reaches the Dataset
    assert [r["x"] for r in m.take_all()] == [1.0] * 4


def test_to_torch_rows_with_drop_last_lose_no_row():
    tds = bridge.range(1500).to_torch(drop_last=True)
    assert [int(r["id"]) for r in tds] == list(range(1500))


def test_uint64_with_a_float_dtype_keeps_the_values_and_int64_refuses_what_wraps():
    # (2**64 - 2**11 is a float64; 2**64 - 1 is not, and float64 would round it: refused, test_conversion_differential_s43)
    ds = bridge.from_arrow(pa.table({"u": pa.array([2**63, 2**64 - 2**11, 5], pa.uint64())}))
    got = next(iter(ds.iter_torch_batches(dtypes=torch.float64)))["u"].tolist()
    assert got == [float(2**63), float(2**64 - 2**11), 5.0]
    with pytest.raises(UnsupportedTypeError, match="above int64"):
        next(iter(ds.iter_torch_batches(dtypes=torch.int64)))
    lossy = bridge.from_arrow(pa.table({"u": pa.array([2**64 - 1], pa.uint64())}))
    with pytest.raises(UnsupportedTypeError, match="float64 cannot hold exactly"):
        next(iter(lossy.iter_torch_batches(dtypes=torch.float64)))
    small = bridge.from_arrow(pa.table({"u": pa.array([2**62, 5], pa.uint64())}))
    assert next(iter(small.iter_torch_batches(dtypes=torch.int64)))["u"].tolist() == [2**62, 5]


@pytest.mark.parametrize(("arrow_type", "fill", "message"), [
    (pa.int64(), 2.9, "would be 2"),
    (pa.float32(), 1e40, "would be inf"),
    (pa.uint8(), -1, "uint8"),
])
def test_fill_nulls_that_would_change_is_refused(arrow_type, fill, message):
    ds = bridge.from_arrow(pa.table({"x": pa.array([1, None], arrow_type)}))
    with pytest.raises(UnsupportedTypeError, match=message):
        next(iter(ds.iter_torch_batches(fill_nulls=fill)))


def test_fill_nulls_that_fits_fills():
    ds = bridge.from_arrow(pa.table({"x": pa.array([1, None], pa.int32()), "f": pa.array([1.5, None], pa.float32())}))
    b = next(iter(ds.iter_torch_batches(fill_nulls={"x": 3.0, "f": 0.1})))
    assert b["x"].tolist() == [1, 3] and b["f"].tolist() == [1.5, pytest.approx(0.1)]


# ---------------------------------------------------------------- tf

def test_to_tf_refuses_a_later_block_whose_values_do_not_fit_the_signature():
    tf = pytest.importorskip("tensorflow")
    # A function whose output type depends on its block (constructors give one type per column:
    # tests/test_block_schemas.py); the signature comes from the first block, int32.
    wide = bridge.range(4, override_num_blocks=2).map_batches(
        lambda b: {"x": b["id"].astype(np.int32) if b["id"][0] == 0 else np.array([2**40, 3], np.int64)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="1099511627776 would become 0"):
        list(wide.to_tf("x", batch_size=1))
    promoted = bridge.from_arrow([pa.table({"x": pa.array([1, 2], pa.int32())}),
                                  pa.table({"x": pa.array([2**40, 3], pa.int64())})])
    assert [int(v) for x in promoted.to_tf("x", batch_size=2) for v in x.numpy()] == [1, 2, 2**40, 3]
    fits = bridge.from_arrow([pa.table({"x": pa.array([1, 2], pa.int32())}),
                              pa.table({"x": pa.array([7, 3], pa.int64())})])
    assert [int(v) for x in fits.to_tf("x", batch_size=2) for v in x.numpy()] == [1, 2, 7, 3]


def test_to_tf_takes_a_dictionary_column():
    pytest.importorskip("tensorflow")
    t = pa.table({"cat": pa.array(["a", "b", "a"]).dictionary_encode(), "x": [1.0, 2.0, 3.0]})
    (features, labels), = list(bridge.from_arrow(t).to_tf("cat", "x", batch_size=3))
    assert features.numpy().tolist() == [b"a", b"b", b"a"] and labels.numpy().tolist() == [1.0, 2.0, 3.0]


def test_from_pandas_of_a_mixed_object_column_says_which_and_what_to_do():
    df = pd.DataFrame({"ok": [1, 2], "mixed": [1, "a"]})
    with pytest.raises(BridgeError, match="mixed") as err:
        bridge.from_pandas(df)
    assert "astype" in str(err.value)


# ---------------------------------------------------------------- to_torch with DataLoader workers

def _ids(batches) -> list[int]:
    return [int(i) for b in batches for i in b["id"]]


def test_workers_resume_from_the_batches_the_loop_took_not_from_what_the_feed_sent():
    kw = dict(batch_size=10, local_shuffle_buffer_size=50, seed=7)
    tds = bridge.range(200).to_torch(**kw)
    loader = torch.utils.data.DataLoader(tds, batch_size=None, num_workers=2)
    taken = []
    for i, b in enumerate(loader):
        taken.append(b)
        if i == 2:
            break
    state = tds.state_dict(batches_consumed=3)
    assert state["epoch"] == 0 and state["rows_consumed"] == 30
    again = bridge.range(200).to_torch(**kw)
    again.load_state_dict(state)
    rest = list(torch.utils.data.DataLoader(again, batch_size=None, num_workers=2))
    assert sorted(_ids(taken) + _ids(rest)) == list(range(200))


def test_workers_loop_stopped_early_then_run_again_loses_no_row():
    tds = bridge.range(200).to_torch(batch_size=10)
    loader = torch.utils.data.DataLoader(tds, batch_size=None, num_workers=2)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert sorted(_ids(loader)) == list(range(200))  # the epoch again, from its start


def test_workers_reading_rows_refuse_an_inexact_resume():
    tds = bridge.range(50).to_torch()
    assert sorted(int(r["id"]) for r in torch.utils.data.DataLoader(tds, batch_size=None, num_workers=2)) == \
        list(range(50))
    with pytest.raises(BridgeError, match="interleave"):
        tds.state_dict(batches_consumed=3)


@pytest.mark.parametrize("size", [0, 2.5, "2", True])
def test_a_batch_size_that_is_not_a_positive_count_is_refused_at_the_call(size):
    with pytest.raises(BridgeError, match="batch_size must be a positive number"):
        bridge.range(10).iter_torch_batches(batch_size=size)
    with pytest.raises(BridgeError, match="batch_size must be a positive number"):
        bridge.range(10).to_torch(batch_size=size)


def test_the_null_hint_offers_a_fill_value_of_the_column_type():
    ds = bridge.from_arrow(pa.table({"s": pa.array(["a", None])}))
    with pytest.raises(UnsupportedTypeError, match="fill_nulls=\\{'s': ''\\}"):
        next(iter(ds.iter_torch_batches()))
    filled = next(iter(ds.iter_torch_batches(fill_nulls={"s": ""})))
    assert filled["s"] == ["a", ""]


@pytest.mark.parametrize("dtypes, error, message", [
    ("float", "BridgeTypeError", "dtypes must be a torch.dtype"),
    ({"id": "float32"}, "BridgeTypeError", "'id': 'float32'"),
    ({"idd": torch.float32}, "BridgeValueError", r"no such column \(columns: \['id'\]\)"),
])
def test_torch_dtypes_that_name_no_dtype_or_no_column_are_refused(dtypes, error, message):
    # A misspelt column was skipped (no cast, no word); "float" failed inside torch's device parser.
    with pytest.raises(getattr(bridge.errors, error), match=message):
        next(iter(bridge.range(4).iter_torch_batches(batch_size=2, dtypes=dtypes)))


def test_a_resume_position_below_zero_is_refused():
    it = bridge.range(10).iter_batches(batch_size=2)
    with pytest.raises(BridgeError, match="rows_consumed.*>= 0; got -5"):
        it.load_state_dict({"epoch": 0, "seed": 1, "rows_consumed": -5})
    with pytest.raises(BridgeError, match="batches_consumed.*>= 0; got -1"):
        bridge.range(10).to_torch(batch_size=2).state_dict(batches_consumed=-1)


# ---------------------------------------------------------------- inputs Arrow reads wrongly or not at all

def test_sorting_by_a_dictionary_column_orders_by_its_values():
    blocks = [pa.table({"d": pa.array(["b", None, "a"]).dictionary_encode(), "i": [0, 1, 2]}),
              pa.table({"d": pa.array(["c", "a0"]).dictionary_encode(), "i": [3, 4]})]
    ds = bridge.from_arrow(blocks)
    assert [r["d"] for r in ds.sort("d").take_all()] == ["a", "a0", "b", "c", None]
    down = ds.sort("d", descending=True).take_all()
    assert [r["d"] for r in down] == ["c", "b", "a0", "a", None] and [r["i"] for r in down] == [3, 0, 4, 2, 1]
    assert ds.sort("d").schema().field("d").type == blocks[0].schema.field("d").type


def test_big_endian_and_multiple_unit_arrays_keep_their_values():
    assert [r["data"] for r in bridge.from_numpy(np.array([1, -2], dtype=">i4")).take_all()] == [1, -2]
    df = pd.DataFrame({"be": np.array([1.5, 2.5], dtype=">f8")})
    assert [r["be"] for r in bridge.from_pandas(df).take_all()] == [1.5, 2.5]
    # pyarrow reads datetime64[10s] as [s]: instants 10 s apart came out 1 s apart.
    tens = np.array([1, 2]).astype("datetime64[10s]")
    assert pa.array(tens).to_pylist()[1].second == 2
    got = [r["data"] for r in bridge.from_numpy(tens).take_all()]
    assert [v.second for v in got] == [10, 20]


def test_from_items_keeps_uint64_values_and_refuses_what_no_64_bit_type_holds():
    assert bridge.from_items([{"a": 2**64 - 1}, {"a": 1}]).take_all() == [{"a": 2**64 - 1}, {"a": 1}]
    for rows in ([{"a": 2**64 - 1}, {"a": -1}], [{"a": 2**70}]):
        with pytest.raises(bridge.errors.BridgeTypeError, match="no 64-bit type") as err:
            bridge.from_items(rows).materialize()
        assert "Decimal" in str(err.value)


@pytest.mark.parametrize("make, what, hint", [
    (lambda: bridge.from_pandas(pd.DataFrame({"a": pd.arrays.SparseArray([0, 1])})), "'a' is sparse", "to_dense"),
    (lambda: bridge.from_pandas(pd.DataFrame({"z": np.array([1 + 2j])})), "'z': a complex128", "z.real"),
    (lambda: bridge.from_numpy(np.array([1j])), "complex128", "z.imag"),
    (lambda: bridge.from_numpy(np.array(["2020-01"], dtype="datetime64[M]")), "no such unit", "datetime64[D]"),
])
def test_inputs_arrow_has_no_type_for_say_which_and_what_to_do(make, what, hint):
    with pytest.raises(BridgeError) as err:
        make()
    assert what in err.value.what and hint in err.value.hint


# ---------------------------------------------------------------- operations (a hunt through ops and io, 2026-11-25)

@pytest.mark.parametrize("expr, python", [
    ("x % 3 == 2", lambda x: x % 3 == 2),
    ("x % -3 == -1", lambda x: x % -3 == -1),
    ("x / 2 > 1", lambda x: x / 2 > 1),
    ("x / 2 == 1.5", lambda x: x / 2 == 1.5),
    ("x / 2 < -1", lambda x: x / 2 < -1),
    ("10 / x > 2", lambda x: 10 / x > 2),
    ("-x % 4 == 1", lambda x: -x % 4 == 1),
])
def test_filter_strings_compute_as_python_does(expr, python):
    # Arrow divides ints as ints (3 / 2 == 1) and % was built on that: rows were kept or dropped wrongly.
    xs = [-7, -3, -1, 3, 4, 7]
    ds = bridge.from_arrow(pa.table({"x": pa.array(xs, pa.int64())}))
    assert [r["x"] for r in ds.filter(expr=expr).take_all()] == [x for x in xs if python(x)]


def test_grouping_by_floats_puts_zero_and_minus_zero_and_every_nan_together():
    nan = float("nan")
    t = pa.table({"k": pa.array([0.0, -0.0, nan, -nan, 1.0, None, 0.0]), "x": [1] * 7})
    assert np.signbit(t["k"].to_numpy(zero_copy_only=False)[1])  # a real -0.0 in the data
    for ds in (bridge.from_arrow(t), bridge.from_arrow([t.slice(0, 3), t.slice(3)])):
        counts = {("nan" if r["k"] != r["k"] else r["k"]): r["count()"] for r in ds.groupby("k").count().take_all()}
        assert counts == {0.0: 3, "nan": 2, 1.0: 1, None: 1}  # pandas (dropna=False) counts the same
        uniques = ds.unique("k")
        assert len(uniques) == 4 and sum(1 for v in uniques if v != v) == 1


def test_mean_of_integers_whose_sum_passes_int64_is_not_wrapped():
    big = [2**62] * 4  # the int64 sum wrapped to 0: mean 0.0
    ds = bridge.from_items([{"k": i % 2, "t": v} for i, v in enumerate(big)])
    assert ds.mean("t") == float(2**62)
    assert [r["mean(t)"] for r in ds.groupby("k").mean("t").take_all()] == [float(2**62)] * 2
    stamps = [1_700_000_000_000_000_000 + i for i in range(10)]  # nanosecond epochs as ints: raised
    got = bridge.from_items([{"t": v} for v in stamps]).aggregate(bridge.Min("t"), bridge.Mean("t"))
    assert got["mean(t)"] == pytest.approx(sum(stamps) / 10, rel=1e-15) and got["min(t)"] == stamps[0]


def test_an_integer_sum_that_wraps_is_refused_and_one_that_fits_is_exact():
    stamps = [1_700_000_000_000_000_000 + i for i in range(10)]  # the int64 sum wrapped to a negative number
    ds = bridge.from_items([{"k": i % 2, "t": v} for i, v in enumerate(stamps)])
    with pytest.raises(bridge.errors.BridgeValueError, match=r"sum\(t\).*beyond int64") as err:
        ds.sum("t")
    assert "decimal" in err.value.hint
    halves = ds.groupby("k").sum("t").take_all()  # each group's sum fits: exact, as ints
    assert [r["sum(t)"] for r in halves] == [sum(stamps[0::2]), sum(stamps[1::2])]
    exact = ds.add_column("t", lambda t: pa.compute.cast(t["t"], pa.decimal128(38, 0)), batch_format="pyarrow")
    assert exact.sum("t") == sum(stamps)  # the hint's way
    assert bridge.from_items([{"x": 1.5}, {"x": None}, {"x": 2}]).sum("x") == 3.5
    # Blocks whose own sums fit, the total not: the merge wrapped.
    two = bridge.from_arrow([pa.table({"x": [6 * 10**18]}), pa.table({"x": [6 * 10**18]})])
    with pytest.raises(bridge.errors.BridgeValueError, match="beyond int64"):
        two.sum("x")
    assert bridge.from_arrow([pa.table({"x": [6 * 10**18]}), pa.table({"x": [-6 * 10**18]})]).sum("x") == 0


def test_a_custom_aggregate_whose_results_make_no_column_is_refused_not_pickled():
    agg = bridge.AggregateFn(init=lambda k: 0, merge=lambda a, b: a + b, accumulate_row=lambda a, r: a + r["x"],
                             finalize=lambda a: "big" if a > 4 else a, name="m")
    ds = bridge.from_items([{"k": 1, "x": 1.0}, {"k": 1, "x": 2.0}, {"k": 2, "x": 5.0}])
    with pytest.raises(bridge.errors.BridgeTypeError, match="'m'.*float, str") as err:
        ds.groupby("k").aggregate(agg).take_all()
    assert "finalize" in err.value.hint


def test_read_csv_of_one_column_keeps_its_null_rows(tmp_path):
    # write_csv writes a one-column null as an empty line; the untyped read skipped it (a row lost).
    t = pa.table({"s": ["a", None, "", "x"]})
    bridge.from_arrow(t).write_csv(str(tmp_path / "one"))
    assert bridge.read_csv(str(tmp_path / "one")).take_all() == t.to_pylist()
    two = pa.table({"s": ["a", None, ""], "n": [1, None, 3]})
    bridge.from_arrow(two).write_csv(str(tmp_path / "two"))
    assert bridge.read_csv(str(tmp_path / "two")).take_all() == two.to_pylist()


def test_std_of_a_table_with_bool_and_decimal_columns_works_as_numpy():
    # ds.std() takes every numeric column by default, and Arrow has no variance of bools or decimals.
    t = pa.table({"b": [True, False, True, None], "x": [1, 2, 3, 4],
                  "d": pa.array([decimal.Decimal("1.5"), decimal.Decimal("2.5"), None, decimal.Decimal("4.0")])})
    got = bridge.from_arrow(t).std()
    assert got["std(b)"] == pytest.approx(np.std([1, 0, 1], ddof=1))
    assert got["std(d)"] == pytest.approx(np.std([1.5, 2.5, 4.0], ddof=1))
    assert got["std(x)"] == pytest.approx(np.std([1, 2, 3, 4], ddof=1))
    assert bridge.from_arrow(t).aggregate(bridge.Sum("d"))["sum(d)"] == decimal.Decimal("8.0")


def test_read_csv_without_schema_keeps_nan_apart_from_null(tmp_path):
    # Arrow's default null spellings include "nan", which write_csv writes for NaN: NaN became null.
    t = pa.table({"f": [float("nan"), float("inf"), None, 1e300], "s": ["NaN", "NA", None, "x"]})
    bridge.from_arrow(t).write_csv(str(tmp_path / "out"))
    back = bridge.read_csv(str(tmp_path / "out")).to_arrow()
    f = back.column("f").to_pylist()
    assert f[0] != f[0] and f[1:] == [float("inf"), None, 1e300]
    assert back.column("s").to_pylist() == ["NaN", "NA", None, "x"]  # quoted strings stay strings
    (tmp_path / "ext.csv").write_text("x,y\n1,NA\nnan,2\n")  # a file written elsewhere: NA is still null
    rows = bridge.read_csv(str(tmp_path / "ext.csv")).take_all()
    assert rows[0]["y"] is None and rows[1]["x"] != rows[1]["x"]


def test_grouping_by_and_min_of_dictionary_columns_with_a_dictionary_per_block():
    # Blocks read from several files each have their own dictionary: grouping raised, min/max too.
    a = pa.table({"k": pa.array(["x", "y", "x"]).dictionary_encode(), "v": pa.array(["p", "q", "r"]).dictionary_encode(),
                  "n": [1, 2, 3]})
    b = pa.table({"k": pa.array(["z", "x"]).dictionary_encode(), "v": pa.array(["a", "s"]).dictionary_encode(),
                  "n": [4, 5]})
    ds = bridge.from_arrow([a, b])
    assert ds.groupby("k").sum("n").take_all() == [{"k": "x", "sum(n)": 9}, {"k": "y", "sum(n)": 2},
                                                  {"k": "z", "sum(n)": 4}]
    got = ds.groupby("k").aggregate(bridge.Min("v"), bridge.Max("v")).take_all()
    assert [(r["min(v)"], r["max(v)"]) for r in got] == [("p", "s"), ("q", "q"), ("a", "a")]
    assert (ds.min("v"), ds.max("v")) == ("a", "s")


# ---------------------------------------------------------------- adapters (a hunt through the round trips, 2026-11-25)

def test_a_frame_with_rows_and_no_columns_keeps_its_rows():
    dd = pytest.importorskip("dask.dataframe")
    pdf = pd.DataFrame(index=range(4))  # pyarrow makes it a table of 0 rows
    assert bridge.from_pandas(pdf).count() == 4 and bridge.from_pandas(pdf).to_pandas().shape == (4, 0)
    assert bridge.from_dask(dd.from_pandas(pdf, npartitions=2)).count() == 4


@pytest.mark.parametrize("index", [pd.RangeIndex(5, 9), pd.RangeIndex(0, 8, 2)])
def test_from_dask_keeps_a_range_index_that_is_not_the_default(index):
    dd = pytest.importorskip("dask.dataframe")
    p = pd.DataFrame({"a": [1, 2, 3, 4]}, index=index)
    assert bridge.from_dask(dd.from_pandas(p, npartitions=2)).to_pandas().index.tolist() == list(index)
    assert bridge.from_pandas(p).to_pandas().index.tolist() == list(index)  # the same rule as from_pandas
    default = pd.DataFrame({"a": [1, 2, 3, 4]})
    assert bridge.from_dask(dd.from_pandas(default, npartitions=2)).schema().names == ["a"]


def test_from_dask_of_a_series_built_from_pandas():
    dd = pytest.importorskip("dask.dataframe")
    s = dd.from_pandas(pd.Series([1, 2, 3], name="x"), npartitions=2)  # raised AttributeError ('columns')
    assert bridge.from_dask(s).take_all() == [{"x": 1}, {"x": 2}, {"x": 3}]


# ---------------------------------------------------------------- functions' results (a hunt through map and io, 2026-11-25)

@pytest.mark.parametrize("make, want", [
    (lambda: bridge.range(4).map(lambda r: {"id": r["id"] / 2}), [0.0, 0.5, 1.0, 1.5]),
    (lambda: bridge.range(3).flat_map(lambda r: [{"id": r["id"] / 2}]), [0.0, 0.5, 1.0]),
    (lambda: bridge.range(3).map_batches(lambda b: {"id": [v / 2 for v in b["id"]]}), [0.0, 0.5, 1.0]),
    (lambda: bridge.from_items([{"id": 1}, {"id": None}, {"id": 3}]).map_batches(
        lambda b: {"id": np.array([None if v is None else v / 2 for v in b["id"]], dtype=object)}), [0.5, None, 1.5]),
    (lambda: bridge.from_items([{"id": [1, 2]}, {"id": [3]}]).map_batches(
        lambda b: {"id": np.array([r / 2 for r in b["id"]], dtype=object)}), [[0.5, 1.0], [1.5]]),
    (lambda: bridge.from_items([{"id": {"a": 1}}]).map(lambda r: {"id": {"a": 1, "b": 2}}), [{"a": 1, "b": 2}]),
    (lambda: bridge.from_items([{"id": datetime.date(2020, 1, 1)}]).map(
        lambda r: {"id": datetime.datetime(2020, 1, 1, 12, 30)}), [datetime.datetime(2020, 1, 1, 12, 30)]),
    (lambda: bridge.from_items([{"id": datetime.datetime(2020, 1, 1)}]).map(lambda r: {"id": 5}), [5]),
    (lambda: bridge.from_items([{"id": datetime.date(2020, 1, 1)}]).map_batches(
        lambda b: {"id": b["id"].astype("datetime64[s]") + np.timedelta64(43200, "s")}),
     [datetime.datetime(2020, 1, 1, 12)]),
])
def test_a_function_result_keeps_its_values_whatever_the_input_column_was(make, want):
    # pyarrow's conversion into the input column's type truncated: 0.5 -> 0, a datetime -> its date,
    # 5 -> 5 microseconds after 1970, a new struct field dropped.
    assert [r["id"] for r in make().take_all()] == want


def test_a_row_function_returning_floats_for_an_int_column_gives_floats_in_every_block():
    """The input column's type was kept wherever the values fit it: whole floats came back as int64, so
    one Dataset had int64 blocks and float64 blocks (torch batches alternated Long and Double)."""
    assert bridge.range(6).map(lambda r: {"id": float(r["id"])}).schema().field("id").type == pa.float64()
    ds = bridge.from_items([{"v": 2}, {"v": 4}, {"v": 3}, {"v": 5}], override_num_blocks=2).map(
        lambda r: {"v": r["v"] / 2})
    assert [b.schema.field("v").type for b in ds.iter_batches(batch_size=2, batch_format="pyarrow")] == [
        pa.float64(), pa.float64()]
    assert [type(r["v"]) for r in ds.take_all()] == [float] * 4
    ints = bridge.from_items([{"x": 1.5}, {"x": 2.5}]).flat_map(lambda r: [{"x": int(r["x"])}])
    assert ints.schema().field("x").type == pa.int64()


def test_an_identity_function_keeps_every_type():
    t = pa.table({"u": pa.array([1, 2], pa.uint8()), "f": pa.array([0.1, 2.5], pa.float32()),
                  "dec": pa.array([decimal.Decimal("1.10"), None], pa.decimal128(5, 2)),
                  "s": pa.array(["a", "b"]).dictionary_encode(), "ts": pa.array([0, 1], pa.timestamp("ns", tz="Asia/Tokyo")),
                  "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
                  "ls": pa.array(["x", None], pa.large_string()), "n": pa.array([None, None], pa.int32()),
                  "d": pa.array([datetime.date(2020, 1, 1), None])})
    ds = bridge.from_arrow(t)
    for out in (ds.map(lambda r: r), ds.flat_map(lambda r: [r])):
        assert out.schema() == t.schema
        assert out.take_all() == ds.take_all()


def test_read_json_of_an_array_keeps_keys_the_first_object_lacks(tmp_path):
    (tmp_path / "a.json").write_text('[{"a": 1}, {"a": 2, "b": "x"}]')
    for kw in ({}, {"lines": False}):
        assert bridge.read_json(str(tmp_path / "a.json"), **kw).take_all() == [{"a": 1, "b": None}, {"a": 2, "b": "x"}]


def test_read_text_splits_at_line_ends_only(tmp_path):
    # str.splitlines() also split at \u2028, form feeds and record separators: rows made up.
    (tmp_path / "t.txt").write_bytes("x\u2028y\x0cz\x1e\nsecond\r\n\nlast\n".encode())
    assert [r["text"] for r in bridge.read_text(str(tmp_path / "t.txt")).take_all()] == \
        ["x\u2028y\x0cz\x1e", "second", "", "last"]


def test_read_parquet_with_columns_and_include_paths_keeps_the_path(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2], "b": [3, 4]}), tmp_path / "x.parquet")
    rows = bridge.read_parquet(str(tmp_path), columns=["a"], include_paths=True).take_all()
    assert [sorted(r) for r in rows] == [["a", "path"]] * 2 and rows[0]["path"].endswith("x.parquet")


class _TwoBatches:
    def __call__(self, batch):
        yield {"x": batch["id"]}
        yield {"x": batch["id"] + 100}


def test_a_callable_class_that_yields_gives_every_batch_it_yields():
    # Under the pool actor's lock the generator became one list, then was refused as one batch.
    for kw in ({"concurrency": 1}, {"concurrency": 2, "batch_size": 2}):
        out = bridge.range(4).map_batches(_TwoBatches, **kw)
        assert sorted(r["x"] for r in out.take_all()) == [0, 1, 2, 3, 100, 101, 102, 103]


def test_add_column_puts_a_reordered_series_back_on_its_rows():
    # The Series went in by position: sorted values landed on other rows.
    out = bridge.range(3).add_column("z", lambda df: df["id"].sort_values(ascending=False) * 10).take_all()
    assert [(r["id"], r["z"]) for r in out] == [(0, 0), (1, 10), (2, 20)]
    stored = pd.DataFrame({"x": [1, 2]}, index=[7, 9])  # a Series of other labels still goes in by position
    assert [r["y"] for r in bridge.from_pandas(stored).add_column("y", lambda df: pd.Series([5, 6])).take_all()] \
        == [5, 6]


class _Doubles:
    async def __call__(self, batch):
        return {"x": batch["id"] * 2}


class _AsyncTwoBatches:
    async def __call__(self, batch):
        yield {"x": batch["id"]}
        yield {"x": batch["id"] + 100}


def test_async_callable_classes_run_and_give_their_batches():
    # The coroutine was returned un-awaited and refused as "not a batch".
    out = bridge.range(6).map_batches(_Doubles, concurrency=1, batch_size=2)
    assert sorted(r["x"] for r in out.take_all()) == [0, 2, 4, 6, 8, 10]
    out = bridge.range(4).map_batches(_AsyncTwoBatches, concurrency=2)
    assert sorted(r["x"] for r in out.take_all()) == [0, 1, 2, 3, 100, 101, 102, 103]


def test_torch_ranks_share_a_seedless_shuffle_or_sample_without_overlap():
    """Every rank of to_torch(rank=, world_size=) runs the plan; a seedless random_shuffle drew its own
    permutation per rank (rows came twice and others never), and a seedless random_sample its own rows."""
    pytest.importorskip("torch")
    shuffled = bridge.range(40, override_num_blocks=4).random_shuffle()
    shares = [[int(x) for b in shuffled.to_torch(batch_size=4, rank=k, world_size=2) for x in b["id"]]
              for k in (0, 1)]
    assert sorted(shares[0] + shares[1]) == list(range(40))
    sampled = bridge.range(200, override_num_blocks=4).random_sample(0.5)
    shares = [[int(x) for b in sampled.to_torch(batch_size=4, rank=k, world_size=2) for x in b["id"]]
              for k in (0, 1)]
    assert not set(shares[0]) & set(shares[1]) and len(shares[0]) == len(shares[1]) > 0
    assert len(set(shares[0] + shares[1])) == len(shares[0]) + len(shares[1])


def test_a_limit_is_not_pushed_below_add_column():
    """add_column's function sees a whole batch: with the limit pushed below it, take(3) computed the
    mean of 3 rows instead of the block's, and len(df) was 2 in take_batch(2)."""
    ds = bridge.range(10, override_num_blocks=1).add_column("m", lambda df: df["id"] - df["id"].mean())
    assert [r["m"] for r in ds.take(3)] == [r["m"] for r in ds.take_all()[:3]] == [-4.5, -3.5, -2.5]
    n = bridge.range(10, override_num_blocks=1).add_column("n", lambda df: len(df))
    assert n.take_batch(2)["n"].tolist() == [10, 10]


def test_to_pandas_limit_is_a_cap_that_raises_as_in_ray_data():
    """to_pandas(limit=3) of 20 rows returned 3 rows without a word (Ray Data raises: it is a cap)."""
    with pytest.raises(BridgeError, match="more than 3 rows") as err:
        bridge.range(20).to_pandas(limit=3)
    assert "ds.limit(3).to_pandas()" in err.value.hint
    assert bridge.range(3).to_pandas(limit=3)["id"].tolist() == [0, 1, 2]
    assert list(bridge.range(3).filter(lambda r: False).to_pandas(limit=0).columns) == ["id"]


def test_a_fixed_size_list_of_ints_with_a_null_row_stays_ints_in_numpy_batches():
    """The slots under a null row are nulls: NumPy made the whole child float64 (2**53 + 1 changed,
    uint64 2**64 - 1 became 1.8e19), in numpy batches, to_numpy_refs and map_batches' round trip."""
    big = 2**53 + 1
    for t in (pa.table({"v": pa.array([[big, 1], None, [3, 4]], pa.list_(pa.int64(), 2))}),
              pa.table({"v": pa.array([[2**64 - 1, 1], None, [3, 4]], pa.list_(pa.uint64(), 2))})):
        ds = bridge.from_arrow(t)
        rows = next(ds.iter_batches())["v"]
        assert rows[1] is None and rows[0].dtype == t.schema.field("v").type.value_type.to_pandas_dtype()
        assert [None if r is None else r.tolist() for r in rows] == t.column("v").to_pylist()
        assert ds.map_batches(lambda b: b).to_arrow().equals(t)


def test_first_hour_mistakes_with_rows_and_datasets_get_bridge_errors():
    """from_items(df) made one row per column name; union(df) / union([ds]) raised AttributeError
    '_plan'; a column of ints and strings from map / from_items raised a raw ArrowInvalid."""
    from bridge.errors import BridgeTypeError, UserCodeError

    with pytest.raises(BridgeTypeError, match="column names, not its rows") as err:
        bridge.from_items(pd.DataFrame({"a": [1, 2]}))
    assert "from_pandas" in err.value.hint
    with pytest.raises(BridgeTypeError, match="argument 1 is a DataFrame"):
        bridge.range(2).union(pd.DataFrame({"a": [1]}))
    with pytest.raises(BridgeTypeError, match="zip\\(\\): argument 1 is a DataFrame"):
        bridge.range(2).zip(pd.DataFrame({"a": [1]}))
    with pytest.raises(BridgeTypeError, match="argument 1 is a list") as err:
        bridge.range(2).union([bridge.range(1)])
    assert "*datasets" in err.value.hint
    with pytest.raises(BridgeTypeError, match=r"column 'a' holds values of kinds .* \(int, str\)"):
        bridge.from_items([{"a": 1}, {"a": "x"}]).take_all()
    with pytest.raises(UserCodeError, match=r"column 'x' holds values of kinds"):
        bridge.range(4).map(lambda r: {"x": 1 if r["id"] < 2 else "s"}).take_all()
    assert bridge.from_items([{"x": 1}, {"x": 2.5}]).take_all() == [{"x": 1.0}, {"x": 2.5}]
