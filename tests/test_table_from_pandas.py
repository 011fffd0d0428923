"""``table_from_pandas``: pyarrow's ``Table.from_pandas`` to the byte, with float columns taken without a scan.

Every frame that becomes a block (``from_pandas``, ``from_dask``, ``from_modin``,
pandas batches of ``map_batches``) goes through it, so it must give the table
pyarrow gives: same schema and ``pandas`` metadata, same values, NaN read as
null exactly where pyarrow reads it so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import bridge
import bridge.pandas_types as pandas_types
from bridge.pandas_types import table_from_pandas

N = 1000


def _frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(1)
    noisy = rng.random(N)
    with_nan = noisy.copy()
    with_nan[[0, N // 2, N - 1]] = np.nan
    attrs = pd.DataFrame({"a": noisy})
    attrs.attrs["source"] = "test"
    return {
        "floats": pd.DataFrame({f"c{i}": rng.random(N) for i in range(3)}),
        "mixed": pd.DataFrame({
            "f64": noisy, "i": np.arange(N), "s": ["x", "y"] * (N // 2), "f32": noisy.astype("float32"),
            "f16": noisy.astype("float16"), "nan": with_nan, "obj": [None, 1.5] * (N // 2),
        }),
        "index": pd.DataFrame({"a": noisy}, index=pd.Index(np.arange(N) * 2, name="k")),
        "named_range_index": pd.DataFrame({"a": noisy}, index=pd.RangeIndex(5, 5 + N, name="r")),
        "multi_index": pd.DataFrame({"a": noisy, "b": with_nan},
                                    index=pd.MultiIndex.from_arrays([np.arange(N), np.arange(N) % 3])),
        "int_labels": pd.DataFrame({0: noisy, 1: np.arange(N), 2: with_nan}),
        "infinities": pd.DataFrame({"pm": np.r_[np.inf, -np.inf, noisy[2:]], "p": np.r_[np.inf, noisy[1:]],
                                    "z": np.r_[-0.0, noisy[1:]]}),
        "strided": pd.DataFrame(rng.random((N, 3)), columns=list("xyz")),
        "named_columns": pd.DataFrame({"a": noisy, "b": pd.array(np.arange(N), dtype="Int64")}
                                      ).rename_axis("what", axis=1),
        "categorical_tz": pd.DataFrame({"a": noisy, "c": pd.Categorical(["u", "v"] * (N // 2)),
                                        "t": pd.date_range("2020", periods=N, tz="UTC")}),
        "masked_and_arrow": pd.DataFrame({"a": noisy, "m": pd.array(with_nan, dtype="Float64"),
                                          "s": pd.array(["p"] * N, dtype="string[pyarrow]")}),
        "attrs": attrs,
        "float16_overflow": pd.DataFrame({"h": np.full(N, 60000.0, dtype="float16")}),
    }


@pytest.mark.parametrize("preserve_index", [None, True, False])
@pytest.mark.parametrize("name", sorted(_frames()))
def test_same_table_as_pyarrow(name, preserve_index, monkeypatch):
    monkeypatch.setattr(pandas_types, "_SPLIT_FLOAT_BYTES", 0)  # the split path even for these small frames
    df = _frames()[name]
    want = pa.Table.from_pandas(df, preserve_index=preserve_index)
    got = pandas_types._from_pandas(df, preserve_index=preserve_index)
    assert got.schema.equals(want.schema, check_metadata=True), (got.schema, want.schema)
    assert got.equals(want)
    assert [c.null_count for c in got.columns] == [c.null_count for c in want.columns]
    pd.testing.assert_frame_equal(got.to_pandas(), want.to_pandas())
    # table_from_pandas adds only the column labels' description pyarrow leaves out without the index.
    full = table_from_pandas(df, preserve_index=preserve_index)
    assert full.equals(want)
    if preserve_index is not False or name not in ("int_labels", "named_columns"):
        assert full.schema.equals(want.schema, check_metadata=True)


@pytest.mark.parametrize("name", ["int_labels", "named_columns"])
def test_column_labels_survive_without_the_index(name):
    """pyarrow's ``from_pandas(preserve_index=False)`` drops the labels' description: ``0`` came back ``'0'``."""
    df = _frames()[name]
    plain = pa.Table.from_pandas(df, preserve_index=False).to_pandas().columns
    assert not (plain.equals(df.columns) and plain.name == df.columns.name)
    back = table_from_pandas(df, preserve_index=False).to_pandas()
    pd.testing.assert_index_equal(back.columns, df.columns, exact=True)
    assert back.columns.name == df.columns.name


def test_nan_anywhere_in_a_large_frame_is_null_where_pyarrow_says_so():
    rows = 700_000  # 5.6 MB a column: above the split threshold with no patching
    rng = np.random.default_rng(2)
    df = pd.DataFrame({f"c{i}": rng.random(rows) for i in range(4)})
    df.loc[rows - 1, "c1"] = np.nan  # the very last value
    df.loc[0, "c3"] = np.nan
    assert df.shape[0] * 8 * 4 >= pandas_types._SPLIT_FLOAT_BYTES
    want = pa.Table.from_pandas(df, preserve_index=False)
    got = table_from_pandas(df, preserve_index=False)
    assert got.equals(want) and got.schema.equals(want.schema, check_metadata=True)
    assert [c.null_count for c in got.columns] == [0, 1, 0, 1]
    # Columns without NaN share the frame's memory, as pyarrow's own do.
    assert got.column("c0").chunk(0).buffers()[1].address == df["c0"].to_numpy().ctypes.data


def test_from_pandas_of_a_large_frame_keeps_every_value_and_null():
    rows = 1_000_000
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.random(rows), "y": rng.random(rows).astype("float32"), "k": np.arange(rows)})
    df.loc[123_456, "x"] = np.nan
    df.loc[rows - 1, "y"] = np.inf
    ds = bridge.from_pandas(df)
    table = ds.to_arrow()
    assert table.column("x").null_count == 1 and not table.column("x")[123_456].is_valid
    assert table.column("y").null_count == 0 and table.column("y")[rows - 1].as_py() == np.inf
    back = ds.to_pandas()  # the frame's float64 again, its null NaN as it was (bridge.pandas_types)
    assert str(back["x"].dtype) == "float64" and back["x"].isna().to_numpy().nonzero()[0].tolist() == [123_456]
    pd.testing.assert_frame_equal(back, df)


def test_float_columns_without_nan_skip_pyarrows_scan(monkeypatch):
    """The point of the function: NaN-free float columns never reach pyarrow's value-by-value conversion."""
    converted: list[list] = []

    class RecordingTable:  # pyarrow's own functions, each from_pandas call's columns recorded
        from_arrays = staticmethod(pa.Table.from_arrays)

        @staticmethod
        def from_pandas(df, *args, **kwargs):
            converted.append(list(kwargs.get("columns") or df.columns) if len(df) else [])
            return pa.Table.from_pandas(df, *args, **kwargs)

    class RecordingPyarrow:
        Table = RecordingTable

        def __getattr__(self, name):
            return getattr(pa, name)

    monkeypatch.setattr(pandas_types, "pa", RecordingPyarrow())
    rows = 700_000
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"clean": rng.random(rows), "k": np.arange(rows), "dirty": rng.random(rows)})
    df.loc[5, "dirty"] = np.nan
    table = table_from_pandas(df, preserve_index=False)
    assert table.column("dirty").null_count == 1
    assert converted == [["k", "dirty"], []]  # the rest with its values; the clean column's metadata only
