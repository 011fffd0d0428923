"""The fidelity matrix: every type (tests/fidelity_data.py) x variant x path is EXACT, CONVERTED or REFUSED.

A path takes the variant's whole table (one column per type) through a
round trip and back to Arrow; each column is one cell.  A cell's expected
outcome is written in ``EXPECTED`` below (default: EXACT):

* EXACT     -- same Arrow type, same values (NaN == NaN), same row count;
* CONVERTED -- the type changed by a written rule *and* a warning naming the column said so;
* REFUSED   -- the path raised an error naming the column;
* FOREIGN(type, reason) -- the other system stores the values in a type of its own
  (polars has only large strings and lists): that exact type, the same values;
* a known gap is ``XFAIL(reason)``: a strict xfail, so fixing it makes the test fail until the table says so.

A cell that is none of these fails: that is a silent change.  The Dataset's own
storage rule (view types -> plain types, ``bridge.block.normalize_types``) is
applied to the input first: it is what every path starts from.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import bridge
from bridge.block import normalize_types
from tests.fidelity_data import TYPE_NAMES, VARIANTS, table

EXACT = "EXACT"


class XFAIL:
    def __init__(self, reason: str) -> None:
        self.reason = reason


class FOREIGN:
    """The other system's own type system changes the type (values kept): asserted exactly, no warning due."""

    def __init__(self, type_: pa.DataType, reason: str) -> None:
        self.type = type_
        self.reason = reason


#: Set while the ``blocks`` variant runs: each path's Dataset is then made of two blocks (:func:`_source`).
_AS_BLOCKS: list[bool] = [False]


def _two_blocks(t: pa.Table) -> list[pa.Table]:
    """``t`` as two blocks, the first three rows (no null row) and the rest, with an empty block between
    (a filter's output has them); each dictionary column is encoded again per block, so the blocks hold
    different dictionaries ([b, a], [] and [c]) as separately made blocks do."""
    out = []
    for part in (t.slice(0, 3), t.slice(3, 0), t.slice(3)):
        cols = [pa.chunked_array([c.cast(c.type.value_type).combine_chunks().dictionary_encode()], c.type)
                if pa.types.is_dictionary(c.type) else c for c in part.columns]
        out.append(pa.Table.from_arrays(cols, schema=part.schema))
    return out


def _source(t: pa.Table) -> bridge.Dataset:
    """The Dataset every path starts from: ``t`` as one block, or as two for the ``blocks`` variant."""
    return bridge.from_arrow(_two_blocks(t)) if _AS_BLOCKS[0] else bridge.from_arrow(t)


def _arrow(ds: bridge.Dataset) -> pa.Table:
    return ds.to_arrow()


def _pandas_roundtrip(t: pa.Table) -> pa.Table:
    return bridge.from_pandas(_source(t).to_pandas()).to_arrow()


def _dask_roundtrip(t: pa.Table) -> pa.Table:
    pytest.importorskip("dask.dataframe")
    ddf = _source(t).to_dask()
    # Dask's metadata says what the partitions hold.
    pd.testing.assert_series_equal(ddf.dtypes, ddf.compute().dtypes)
    return bridge.from_dask(ddf).to_arrow()


def _modin_roundtrip(t: pa.Table) -> pa.Table:
    pytest.importorskip("modin")
    ds = _source(t)
    mdf = ds.to_modin()
    # What Modin says of the columns is what the partitions hold (it once sorted a Categorical's categories).
    pd.testing.assert_series_equal(mdf.dtypes, ds.to_pandas().dtypes)
    pd.testing.assert_series_equal(mdf.dtypes, mdf._to_pandas().dtypes)
    return bridge.from_modin(mdf).to_arrow()


def _ray_data_roundtrip(t: pa.Table) -> pa.Table:
    return bridge.from_any(_source(t).to_ray_data()).to_arrow()


def _parquet_roundtrip(t: pa.Table, tmp: Any) -> pa.Table:
    _source(t).write_parquet(str(tmp))
    return bridge.read_parquet(str(tmp)).to_arrow()


def _xorbits_roundtrip(t: pa.Table) -> pa.Table:
    pytest.importorskip("xorbits")
    from tests.constructors_engines import ensure_xorbits

    ensure_xorbits()
    xdf = _source(t).to_mars()
    pd.testing.assert_series_equal(xdf.dtypes, xdf.to_pandas().dtypes)  # what Xorbits says is what it holds
    return bridge.from_mars(xdf).to_arrow()


def _polars_roundtrip(t: pa.Table) -> pa.Table:
    pl = pytest.importorskip("polars")
    return bridge.from_any(pl.DataFrame(_source(t))).to_arrow()


# Text carries no types: the round trip reads back with the written Dataset's schema (read_csv's and
# read_json's docstrings say what an untyped read infers).
def _csv_roundtrip(t: pa.Table, tmp: Any) -> pa.Table:
    ds = _source(t)
    ds.write_csv(str(tmp))
    return bridge.read_csv(str(tmp), schema=ds.schema()).to_arrow()


def _json_roundtrip(t: pa.Table, tmp: Any) -> pa.Table:
    ds = _source(t)
    ds.write_json(str(tmp))
    return bridge.read_json(str(tmp), schema=ds.schema()).to_arrow()


def _torch_column(parts: list[Any], type_: pa.DataType) -> pa.Array:
    """What ``iter_torch_batches`` handed over for one column, back in Arrow for comparison.

    A tensor becomes the NumPy array it holds, in the dtype torch gave it (so a widened
    or re-typed column shows up as that type); a fixed-shape tensor column the tensor
    extension of the stacked tensor.  Values handed over as Python lists (strings,
    lists, variable-shape tensors, which torch has no tensor type for) are read with
    the column's own type: a changed value still fails the comparison.
    """
    import numpy as np
    import torch

    from bridge import tensor as tensor_mod

    if all(isinstance(p, torch.Tensor) for p in parts):
        arr = np.concatenate([p.numpy() for p in parts]) if parts else np.array([])
        if isinstance(type_, pa.FixedShapeTensorType):
            return tensor_mod.fixed_tensor_array(arr)
        return pa.array(arr)
    rows = [r for p in parts for r in p]
    if isinstance(type_, tensor_mod.VariableShapeTensorType):
        return tensor_mod.variable_tensor_array([None if r is None else r.numpy() for r in rows])
    return pa.array([r.tolist() if isinstance(r, torch.Tensor) else r for r in rows], type=type_)


def _forget_conversion_warnings() -> None:
    """Training formats warn once per process and column; each matrix run must see its own warning."""
    from raybridge_adapters import training_columns

    training_columns._warned_time_like.clear()


def _training_roundtrip(t: pa.Table, package: str, column: Callable[[list[Any], pa.DataType], pa.Array]) -> pa.Table:
    """The batches a training framework's iterator hands over (one pass), each column back in Arrow."""
    pytest.importorskip(package)
    _forget_conversion_warnings()
    ds = _source(t)
    it = ds.iter_torch_batches if package == "torch" else ds.iter_tf_batches
    batches = list(it(batch_size=None))
    if not batches:  # no rows: nothing was handed over, nothing could change
        return t.slice(0, 0)
    return pa.table({name: column([b[name] for b in batches], t.schema.field(name).type) for name in t.column_names})


def _tf_column(parts: list[Any], type_: pa.DataType) -> pa.Array:
    """What ``iter_tf_batches`` handed over for one column, back in Arrow (see :func:`_torch_column`).

    ``tf.string`` holds bytes: a string column's bytes are decoded as UTF-8, the column's own
    encoding; a ragged tensor is read as its rows with the column's type.
    """
    import numpy as np
    import tensorflow as tf

    from bridge import tensor as tensor_mod

    if any(isinstance(p, tf.RaggedTensor) for p in parts):
        rows = [r for p in parts for r in p.to_list()]
        if tensor_mod.is_variable_tensor(type_):  # each dimension ragged: the rows' nested lists
            dtype = type_.value_type.to_pandas_dtype()
            return tensor_mod.variable_tensor_array([np.asarray(r, dtype=dtype) for r in rows])
        return pa.array(rows, type=type_)
    arr = np.concatenate([p.numpy() for p in parts])
    if isinstance(type_, pa.FixedShapeTensorType):
        return tensor_mod.fixed_tensor_array(arr)
    if arr.dtype == object:
        text = pa.types.is_string(type_) or pa.types.is_large_string(type_)
        return pa.array([v.decode() if text else v for v in arr], type=type_)
    return pa.array(arr)


_spark_sessions: list[Any] = []


def _spark() -> Any:
    """One local Spark session for this module (stopped by ``_stop_spark``), session zone UTC."""
    if not _spark_sessions:
        pytest.importorskip("pyspark")
        import os
        import sys

        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        os.environ["PYSPARK_PYTHON"] = sys.executable
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
        session = (SparkSession.builder.master("local[1]").appName("raybridge-fidelity")
                   .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
                   .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
        _spark_sessions.append(session)
    return _spark_sessions[0]


@pytest.fixture(scope="module", autouse=True)
def _stop_spark() -> Any:
    yield
    while _spark_sessions:
        _spark_sessions.pop().stop()


def _spark_roundtrip(t: pa.Table, method: str) -> pa.Table:
    """``to_spark`` then ``from_spark`` (Spark's Arrow collection, or mapInArrow in Spark's Python workers)."""
    return bridge.from_spark(_source(t).to_spark(_spark()), method=method).to_arrow()


def _capsule_roundtrip(t: pa.Table) -> pa.Table:
    ds = _source(t)
    return bridge.from_arrow(pa.RecordBatchReader.from_stream(ds)).to_arrow()


PATHS: dict[str, Callable[..., pa.Table]] = {
    "arrow": lambda t, _tmp: _arrow(_source(t)),
    "capsule": lambda t, _tmp: _capsule_roundtrip(t),
    "numpy_batches": lambda t, _tmp: _arrow(_source(t).map_batches(lambda b: b)),
    "pandas_batches": lambda t, _tmp: _arrow(_source(t).map_batches(lambda df: df, batch_format="pandas")),
    "pyarrow_batches": lambda t, _tmp: _arrow(_source(t).map_batches(lambda b: b, batch_format="pyarrow")),
    "pandas": lambda t, _tmp: _pandas_roundtrip(t),
    "dask": lambda t, _tmp: _dask_roundtrip(t),
    "modin": lambda t, _tmp: _modin_roundtrip(t),
    "parquet": _parquet_roundtrip,
    "ray_data": lambda t, _tmp: _ray_data_roundtrip(t),
    "xorbits": lambda t, _tmp: _xorbits_roundtrip(t),
    "polars": lambda t, _tmp: _polars_roundtrip(t),
    "csv": _csv_roundtrip,
    "json": _json_roundtrip,
    "torch": lambda t, _tmp: _training_roundtrip(t, "torch", _torch_column),
    "tf": lambda t, _tmp: _training_roundtrip(t, "tensorflow", _tf_column),
    "spark": lambda t, _tmp: _spark_roundtrip(t, "arrow_collect"),
    "spark_map_in_arrow": lambda t, _tmp: _spark_roundtrip(t, "map_in_arrow"),
}

#: Paths that need a Spark JVM (marked ``spark``).
_SPARK_PATHS = ("spark", "spark_map_in_arrow")

#: Columns that training formats hand over as int64 counts of their unit, with a warning naming the column.
_TEMPORAL = ("date32", "timestamp_s", "timestamp_ms", "timestamp_us", "timestamp_ns", "timestamp_us_utc",
             "timestamp_us_ny", "duration_us", "time64_ns")

#: (path, type name, variant or "*") -> "CONVERTED", "REFUSED", FOREIGN(...) or XFAIL(reason).  Anything not
#: listed is EXACT (18 paths x 39 types x 4 variants = 2,808 cells; ``blocks`` expected as ``nulls``).
EXPECTED: dict[tuple[str, str, str], Any] = {
    # CSV is flat text: write_csv refuses nested, tensor and binary columns, naming them.
    **{("csv", name, "*"): "REFUSED" for name in (
        "binary", "list_int64", "large_list_float64", "fixed_size_list_int32", "struct", "map", "list_struct",
        "fixed_tensor", "variable_tensor", "list_list_int64", "bool_tensor")},
    # polars (2.1) has only 64-bit-offset strings and lists, u32 dictionary codes and no second unit.
    **{("polars", name, "*"): FOREIGN(t, "polars stores it so") for name, t in {
        "string": pa.large_string(), "binary": pa.large_binary(), "timestamp_s": pa.timestamp("ms"),
        "list_int64": pa.large_list(pa.int64()),
        "struct": pa.struct([("a", pa.int64()), ("b", pa.large_string())]),
        "map": pa.map_(pa.large_string(), pa.int64()),
        "dictionary": pa.dictionary(pa.uint32(), pa.large_string()),
        "list_struct": pa.large_list(pa.struct([("x", pa.int32())])),
        "list_list_int64": pa.large_list(pa.large_list(pa.int64())),
        "dictionary_int64": pa.int64(),  # (a Categorical holds strings only: the values)
    }.items()},
    # torch (adapters/torch_format.py's table): tensors hold no nulls (every column of the null variant is
    # refused, naming it, except a variable-shape tensor's: a list of tensors, None for the null row), nor
    # decimals, structs, maps or uint64; temporal columns are int64 counts with a warning naming the column
    # and unit; uint16/uint32 are widened to int64 (torch has no arithmetic on them).
    **{("torch", name, "nulls"): "REFUSED" for name in TYPE_NAMES if name != "variable_tensor"},
    **{("torch", name, "plain"): "REFUSED" for name in ("uint64", "decimal128", "decimal256", "struct", "map",
                                                        "list_struct", "list_list_int64")},
    # dictionaries are decoded (the written rule of adapters/training_columns.py): the values, exactly.
    **{(path, "dictionary_int64", "plain"): FOREIGN(pa.int64(), "decoded: tensors have no dictionary")
       for path in ("torch", "tf")},
    **{("torch", name, "plain"): "CONVERTED" for name in _TEMPORAL},
    **{("torch", name, "plain"): FOREIGN(pa.int64(), "torch has no arithmetic on uint16/uint32: widened, lossless")
       for name in ("uint16", "uint32")},
    # tf (adapters/tf_adapter.py's table): the same, except that tf holds every integer width, strings and
    # binary as tf.string bytes, lists and variable-shape tensors as ragged tensors.
    **{("tf", name, "nulls"): "REFUSED" for name in TYPE_NAMES},
    **{("tf", name, "plain"): "REFUSED" for name in ("decimal128", "decimal256", "struct", "map", "list_struct",
                                                     "list_list_int64")},
    **{("tf", name, "plain"): "CONVERTED" for name in _TEMPORAL},
    # Spark (adapters/spark_types.py's rules, session zone UTC): the written conversions warn naming the
    # column and keep every value; what Spark has no type for, or could hold only by losing nanoseconds, is
    # refused naming the column.
    **{(path, name, "*"): "CONVERTED" for path in _SPARK_PATHS for name in (
        "uint8", "uint16", "uint32", "uint64", "float16", "large_string", "timestamp_s", "timestamp_ms",
        "timestamp_us_ny", "large_list_float64", "fixed_size_list_int32", "dictionary", "fixed_tensor",
        "dictionary_int64", "bool_tensor")},
    **{(path, name, "*"): "REFUSED" for path in _SPARK_PATHS for name in (
        "decimal256", "time64_ns", "variable_tensor", "timestamp_ns")},
    **{(path, "timestamp_ns", "empty"): "CONVERTED" for path in _SPARK_PATHS},  # no nanoseconds to lose
    ("polars", "decimal256", "*"): XFAIL("polars 2.1 panics reading a decimal256 column ('operator does not "
                                         "support primitive Int256'), before the bridge sees it"),
}

def _panic_type() -> type[BaseException]:
    try:
        from polars.exceptions import PanicException
    except ImportError:  # pragma: no cover - polars is in the test environment
        return Exception
    return PanicException


#: What a path may raise for a cell: errors, and polars' Rust panics (BaseExceptions, not Exceptions).
_CELL_ERRORS = (Exception, _panic_type())

_results: dict[tuple[str, str], tuple[pa.Table | None, dict[str, BaseException], list[str]]] = {}


def _run(path: str, variant: str, tmp_factory: Any) -> tuple[pa.Table | None, dict[str, BaseException], list[str]]:
    """The path over the variant's table (once per module); on an error, column by column."""
    key = (path, variant)
    if key in _results:
        return _results[key]
    src = table(_table_variant(variant))
    messages: list[str] = []
    errors: dict[str, BaseException] = {}
    out: pa.Table | None = None
    _AS_BLOCKS[0] = variant == "blocks"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = PATHS[path](src, tmp_factory.mktemp(f"{path}-{variant}"))
        except _CELL_ERRORS:  # retried column by column per column to find the cells that fail
            cols = []
            for name in src.column_names:
                try:
                    cols.append(PATHS[path](src.select([name]), tmp_factory.mktemp(f"{path}-{variant}-c")))
                except _CELL_ERRORS as err:  # the cell's outcome
                    errors[name] = err
            # The columns that made it, side by side (each run has the variant's row count).
            out = pa.Table.from_arrays([c.column(0) for c in cols], names=[c.column_names[0] for c in cols]) \
                if cols else None
        messages = [str(w.message) for w in caught]
    _AS_BLOCKS[0] = False
    _results[key] = (out, errors, messages)
    return _results[key]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b) and type(a) is type(b) or (a is None and b is None)


def _values(col: pa.ChunkedArray) -> list:
    if isinstance(col.type, pa.ExtensionType):
        col = pa.chunked_array([c.storage for c in col.chunks], type=col.type.storage_type)
    return col.to_pylist()


#: The variants of the matrix: the README's three, and ``blocks``, the ``nulls`` rows as two blocks that
#: differ (the null row and the dictionaries in the second only; an empty block between): what a path
#: decides per block (a masked dtype, a dictionary's codes, a partition's metadata) must come back as one
#: column. Expected as ``nulls``.
CELL_VARIANTS = (*VARIANTS, "blocks")


def _table_variant(variant: str) -> str:
    return "nulls" if variant == "blocks" else variant


def _expected(path: str, type_name: str, variant: str) -> Any:
    variant = _table_variant(variant)
    return EXPECTED.get((path, type_name, variant), EXPECTED.get((path, type_name, "*"), EXACT))


def _cells() -> list[Any]:
    cells = []
    for path in PATHS:
        for type_name in TYPE_NAMES:
            for variant in CELL_VARIANTS:
                expected = _expected(path, type_name, variant)
                marks = [pytest.mark.xfail(strict=True, reason=expected.reason)] if isinstance(expected, XFAIL) else []
                if path in _SPARK_PATHS:
                    marks.append(pytest.mark.spark)
                cells.append(pytest.param(path, type_name, variant, marks=marks, id=f"{path}-{type_name}-{variant}"))
    return cells


@pytest.mark.parametrize(("path", "type_name", "variant"), _cells())
def test_fidelity_cell(path: str, type_name: str, variant: str, tmp_path_factory: Any) -> None:
    expected = _expected(path, type_name, variant)
    out, errors, messages = _run(path, variant, tmp_path_factory)
    want = normalize_types(table(_table_variant(variant)).select([type_name])).column(0)
    if expected == "REFUSED":
        assert type_name in errors and type_name in str(errors[type_name]), errors.get(type_name)
        return
    assert type_name not in errors, f"{path} raised on {type_name}: {errors[type_name]!r}"
    assert out is not None and type_name in out.column_names, f"{path} lost the column {type_name}"
    got = out.column(type_name)
    if expected == EXACT:
        assert got.type == want.type, f"{path}: {type_name} came back as {got.type}, not {want.type}"
        assert len(got) == len(want)
        assert _same(_values(got), _values(want)), f"{path}: {type_name} values changed"
        return
    if isinstance(expected, FOREIGN):
        assert got.type == expected.type, f"{path}: {type_name} came back as {got.type}, not {expected.type}"
        assert _same(got.to_pylist(), want.to_pylist()), f"{path}: {type_name} values changed"
        return
    # CONVERTED: a warning naming the column must have said so, and the values are kept.
    assert any(type_name in m for m in messages), f"{path}: {type_name} became {got.type} without a warning"
    assert len(got) == len(want)
    back = _cast_back(got, want.type)
    if back is not None:
        assert _same(_values(back), _values(want)), f"{path}: {type_name} values changed in the conversion"


def _cast_back(got: pa.ChunkedArray, type_: pa.DataType) -> pa.ChunkedArray | None:
    """A converted column cast back to its first type (safe: a value that changed raises), or ``None``
    where Arrow has no such cast (a tensor from nested lists, a date from int64): not comparable."""
    if isinstance(type_, pa.BaseExtensionType):
        return None
    try:
        return got.cast(type_, safe=True)
    except pa.ArrowNotImplementedError:
        return None


def test_pandas_batch_keeps_int64_above_2p53_with_nulls_and_nan_apart_from_null():
    t = pa.table({"x": pa.array([2**53 + 1, None]), "f": pa.array([float("nan"), None])})

    def look(df: Any) -> Any:
        df["dtypes"] = f"{df['x'].dtype}/{df['f'].dtype}"  # what the user's function saw (runs in a task)
        return df

    out = bridge.from_arrow(t).map_batches(look, batch_format="pandas").to_arrow()
    assert out.column("x").to_pylist() == [2**53 + 1, None] and out.schema.field("x").type == pa.int64()
    f = out.column("f").to_pylist()
    assert math.isnan(f[0]) and f[1] is None
    assert out.column("dtypes").to_pylist() == ["Int64/Float64"] * 2


def test_pandas_batches_are_writable_in_place():
    def bump(df: Any) -> Any:
        df["id"] += 1
        return df

    assert bridge.range(3).map_batches(bump, batch_format="pandas").take_all() == [{"id": 1}, {"id": 2}, {"id": 3}]


def test_polars_categorical_through_from_any_then_map():
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"c": ["x", "y", None, "x"]}, schema={"c": pl.Categorical})
    out = bridge.from_any(df).map_batches(lambda b: b, batch_format="pandas").to_arrow()
    assert out.column("c").to_pylist() == ["x", "y", None, "x"]
    assert pa.types.is_dictionary(out.schema.field("c").type)


def test_readme_type_table_is_the_matrix():
    from tests import fidelity_table

    readme = fidelity_table.README.read_text()
    assert fidelity_table.readme_table(readme) == fidelity_table.render(), (
        "README.md's type table differs from the matrix's expectations; "
        "run `python -m tests.fidelity_table --write` and commit README.md")
