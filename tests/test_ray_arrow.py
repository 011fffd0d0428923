"""Blocks through Ray's object store: the IPC path keeps every value, type and metadata, and is taken where meant."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest
import ray
from ray import cloudpickle

from bridge import _ray_arrow
from bridge._ray import ensure_ray
from bridge.batch import to_block
from bridge.tensor import VariableShapeTensorType


def _every_kept_type(rows: int = 40) -> pa.Table:
    """One column per kind of type IPC keeps, with nulls, chunked, sliced, with field and schema metadata."""
    rng = np.random.default_rng(3)
    ints = pa.array([None if i % 7 == 0 else i - 20 for i in range(rows)], pa.int64())
    cols: dict[str, pa.Array | pa.ChunkedArray] = {
        "i8": pa.array(rng.integers(-128, 127, rows), pa.int8()),
        "u64": pa.array(rng.integers(0, 2**63, rows, dtype=np.uint64) * 2, pa.uint64()),
        "i64": ints,
        "f16": pa.array(rng.random(rows).astype(np.float16)),
        "f64": pa.array([-0.0 if i % 3 else None for i in range(rows)], pa.float64()),
        "bool": pa.array([None if i % 5 == 0 else bool(i % 2) for i in range(rows)]),
        "str": pa.chunked_array([[f"s{i}" for i in range(rows // 2)], [None] + ["é"] * (rows - rows // 2 - 1)]),
        "lstr": pa.array(["x" * (i % 4) for i in range(rows)], pa.large_string()),
        "view": pa.array([f"view-{i}-long-enough" for i in range(rows)], pa.string_view()),
        "bin": pa.array([bytes([i % 256]) * (i % 3) for i in range(rows)], pa.binary()),
        "dec": pa.array([None if i % 4 == 0 else i * 10**20 for i in range(rows)], pa.decimal128(38, 2)),
        "ts_ny": pa.array(np.arange(rows).astype("datetime64[us]")).cast(pa.timestamp("us", "America/New_York")),
        "dur": pa.array(np.arange(rows).astype("timedelta64[ns]")),
        "date": pa.array(np.arange(rows).astype("datetime64[D]")),
        "t64": pa.array(range(rows), pa.time64("ns")),
        "list": pa.array([None if i % 6 == 0 else list(range(i % 4)) for i in range(rows)], pa.list_(pa.int32())),
        "llist": pa.array([[float(i)] * (i % 3) for i in range(rows)], pa.large_list(pa.float64())),
        "fsl": pa.array([[i, i + 1] for i in range(rows)], pa.list_(pa.int16(), 2)),
        "struct": pa.array([None if i % 9 == 0 else {"a": i, "b": str(i)} for i in range(rows)],
                           pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "map": pa.array([[("k", i)] for i in range(rows)], pa.map_(pa.string(), pa.int64())),
        "union": pa.UnionArray.from_dense(
            pa.array([i % 2 for i in range(rows)], pa.int8()),
            pa.array([i // 2 for i in range(rows)], pa.int32()),
            [pa.array(range(rows)), pa.array([str(i) for i in range(rows)])]),
        "ree": pa.compute.run_end_encode(pa.array([i // 5 for i in range(rows)], pa.int32())),
        "null": pa.nulls(rows),
        "fixed_tensor": pa.FixedShapeTensorArray.from_numpy_ndarray(rng.random((rows, 2, 3), dtype=np.float32)),
        "b8": pa.ExtensionArray.from_storage(pa.bool8(), pa.array([i % 2 for i in range(rows)], pa.int8())),
        "uuid": pa.ExtensionArray.from_storage(pa.uuid(), pa.array([uuid.UUID(int=i).bytes for i in range(rows)],
                                                                   pa.binary(16))),
        "json": pa.ExtensionArray.from_storage(pa.json_(), pa.array(['{"a": 1}'] * rows)),
    }
    table = pa.table(cols)
    var = to_block({"v": np.array([np.ones((i % 3 + 1, 2), np.float32) for i in range(rows)], dtype=object)})
    table = table.append_column("var_tensor", var.column("v"))
    fields = [f.with_metadata({"unit": "m"}) if f.name == "i64" else f for f in table.schema]
    fields = [f.with_nullable(False) if f.name == "i8" else f for f in fields]
    return table.cast(pa.schema(fields, metadata={"origin": "test"}))


def _round_trips(table: pa.Table) -> list[pa.Table]:
    ensure_ray()
    back = [ray.get(ray.put(table)), ray.get(_echo.remote(table))]
    for got in back:
        assert got.schema.equals(table.schema, check_metadata=True), (got.schema, table.schema)
        assert [type(f.type) for f in got.schema] == [type(f.type) for f in table.schema]
        assert got.num_rows == table.num_rows
        assert got.equals(table), "values changed on the way through Ray"
    return back


@ray.remote
def _echo(table: pa.Table) -> pa.Table:
    import bridge  # noqa: F401  (the worker's first import of bridge installs the reducer, as in the library's tasks)

    return table


@ray.remote
def _worker_reducer() -> str:
    import bridge  # noqa: F401

    return cloudpickle.CloudPickler.dispatch[pa.Table].__qualname__


def test_every_kept_type_goes_as_ipc_and_comes_back_exact() -> None:
    table = _every_kept_type()
    assert _ray_arrow.goes_as_ipc(table)
    assert _ray_arrow.reduce_table(table)[0] is _ray_arrow.table_from_ipc
    for got in _round_trips(table):
        assert isinstance(got.schema.field("var_tensor").type, VariableShapeTensorType)


def test_a_slice_goes_as_ipc_with_only_its_rows() -> None:
    table = _every_kept_type(rows=400)
    part = table.slice(123, 45)
    assert _ray_arrow.goes_as_ipc(part)
    _round_trips(part)
    assert _ray_arrow.write_ipc(part).size < _ray_arrow.write_ipc(table).size / 3


def test_floats_keep_their_bits() -> None:
    bits = np.array([0x7FF8000000000001, 0x7FF0000000000000, 0x8000000000000000, 1], np.uint64)
    table = pa.table({"x": pa.array(bits.view(np.float64))})
    assert _ray_arrow.goes_as_ipc(table)
    ensure_ray()
    for got in (ray.get(ray.put(table)), ray.get(_echo.remote(table))):  # NaN != NaN: compared by their bits
        assert got.column("x").to_numpy().view(np.uint64).tolist() == bits.tolist()


def _ray_data_tensor_table() -> pa.Table:
    from ray.data.block import BlockAccessor

    return BlockAccessor.batch_to_block({"t": np.arange(24, dtype=np.float32).reshape(2, 3, 4)})


@pytest.mark.parametrize("make", [
    pytest.param(lambda: pa.table({"d": pa.chunked_array([pa.array(["a", "b"]).dictionary_encode(),
                                                          pa.array(["c", "a"]).dictionary_encode()])}),
                 id="dictionary_chunks_with_their_own_dictionaries"),
    pytest.param(lambda: pa.table({"s": pa.array([{"d": "x"}], pa.struct([("d", pa.dictionary(pa.int8(),
                                                                                            pa.string()))]))}),
                 id="dictionary_nested"),
    pytest.param(_ray_data_tensor_table, id="ray_data_tensor_extension"),
    pytest.param(lambda: pa.table({"x": pa.array([], pa.int64())}), id="no_rows"),
])
def test_more_types_go_as_ipc_exactly(make) -> None:
    table = make()
    assert _ray_arrow.goes_as_ipc(table)
    _round_trips(table)


@pytest.mark.parametrize("make", [
    pytest.param(lambda: pa.table({"x": np.zeros(100_000), "s": pa.array(["a"] * 100_000)}), id="large_columns"),
    pytest.param(lambda: pa.table({"x": np.zeros(100_000)}).slice(5, 10), id="small_slice_of_large_buffers"),
])
def test_large_buffers_take_rays_path_exactly(make) -> None:
    table = make()
    assert not _ray_arrow.goes_as_ipc(table)
    assert _ray_arrow.reduce_table(table)[0] is not _ray_arrow.table_from_ipc
    _round_trips(table)


def test_a_large_table_with_a_dictionary_in_a_null_struct_goes_as_ipc() -> None:
    # Ray's reducer fails on this column ('Index 0 out of bounds'), so it goes as IPC whatever its size.
    typ = pa.struct([pa.field("f0", pa.dictionary(pa.int32(), pa.string()))])
    table = pa.table({"c0": pa.array([None, {"f0": "a"}] * 50_000, type=typ), "x": np.zeros(100_000)})
    assert table.get_total_buffer_size() > _ray_arrow.IPC_BYTES_PER_COLUMN * table.num_columns
    assert _ray_arrow.goes_as_ipc(table)
    _round_trips(table)


def test_a_table_ipc_cannot_write_takes_rays_path(monkeypatch) -> None:
    def refuse(table: pa.Table) -> pa.Buffer:
        raise pa.ArrowNotImplementedError("no IPC for this type")

    monkeypatch.setattr(_ray_arrow, "write_ipc", refuse)
    table = pa.table({"x": pa.array([1, 2, 3])})
    assert _ray_arrow.goes_as_ipc(table)
    assert _ray_arrow.reduce_table(table)[0] is not _ray_arrow.table_from_ipc
    ensure_ray()
    assert ray.get(ray.put(table)).equals(table)


def test_zero_column_table_keeps_its_row_count() -> None:
    table = pa.table({"x": pa.array([1, 2, 3])}, metadata={"k": "v"}).select([])
    assert table.num_columns == 0 and table.num_rows == 3  # Ray's own reducer gives this back with 0 rows
    assert [t.num_rows for t in _round_trips(table)] == [3, 3]


def test_installed_on_the_driver_and_in_workers_and_again_after_ray_reregisters() -> None:
    ensure_ray()
    dispatch = cloudpickle.CloudPickler.dispatch
    assert dispatch[pa.Table] is _ray_arrow.reduce_table
    assert ray.get(_worker_reducer.remote()) == "reduce_table"
    previous = _ray_arrow._previous
    assert previous is not None and previous is not _ray_arrow.reduce_table
    dispatch[pa.Table] = previous  # what a new serialisation context does
    try:
        ensure_ray()
        assert dispatch[pa.Table] is _ray_arrow.reduce_table
        assert _ray_arrow._previous is previous
    finally:
        dispatch[pa.Table] = _ray_arrow.reduce_table


def test_rays_switch_leaves_tables_to_ray(monkeypatch) -> None:
    ensure_ray()
    dispatch = cloudpickle.CloudPickler.dispatch
    previous = _ray_arrow._previous
    monkeypatch.setenv(_ray_arrow.RAY_DISABLE_ENV, "1")
    dispatch[pa.Table] = previous
    try:
        ensure_ray()
        assert dispatch[pa.Table] is previous
    finally:
        dispatch[pa.Table] = _ray_arrow.reduce_table
