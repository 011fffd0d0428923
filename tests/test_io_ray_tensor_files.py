"""``read_parquet`` of Parquet files that Ray Data 2.60 wrote with tensor columns.

Findings (each file below is written by Ray Data in the test itself):

* Ray Data writes a fixed-shape tensor as its extension type ``ray.data.arrow_tensor_v2`` (``_v1``:
  ``ray.data.arrow_tensor``): a ``large_list<T>`` of flat rows, the shape only in the field's
  ``ARROW:extension:metadata`` (JSON, ``[2, 2]``).  pyarrow restores the type only where
  ``ray.data`` is imported, and ``import bridge`` does not import it.  Before: without ``ray.data``
  a (2, 2) column read as flat 4-element lists (the shape silently lost); with it, as Ray Data's
  own ``ArrowTensorTypeV2``.  Now: ``arrow.fixed_shape_tensor`` either way, same values and shape.
* Ragged tensors written one block per file (``from_items([{"t": np.ones((1, k))} ...])``) give
  one fixed shape per file, (1, 1), (1, 2), (1, 3).  Ray Data reads them as a variable-shape
  tensor column.  Before: ``SchemaConflictError`` with ``ray.data`` imported, and without it one
  column of flat lists (shapes lost).  Now: ``raybridge.variable_shape_tensor`` with the exact shapes.
* ``ray.data.arrow_variable_shaped_tensor`` (``struct<data: large_list<T>, shape: list<int64>>``,
  ``ndim`` in the metadata): before, read as that plain struct (or as Ray Data's type); now our
  variable-shape tensor.  uint8, float32, int64 and bool all keep their dtype; null rows (Ray
  Data writes them from its own arrays, and a file of a null-only block has a ``null`` column,
  which Ray Data itself then fails to read) stay null.
* A tensor of strings (Ray Data stores ``fixed_size_binary`` values) is refused with a hint, unless
  ``columns=`` leaves it out; tensors of different numbers of dimensions across files conflict.
* Ray 2.49-2.54 pickled the metadata: read as plain numbers (no code runs) where ``ray.data`` is not
  imported; where it is, Ray Data refuses it, which read_parquet now reports as a FileReadError with a hint.
* The reverse direction is Ray Data's: it reads this library's variable-shape tensor files as
  ``{"data": [...], "shape": [...]}`` dicts (not ndarrays); fixed-shape ones as ndarrays.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bridge
from bridge.errors import UnsupportedTypeError
from bridge.io.parquet_schema import SchemaConflictError
from bridge.io.paths import FileReadError
from bridge.tensor import VariableShapeTensorType, tensor_to_numpy

ROOT = Path(__file__).resolve().parents[1]


def _ray_data():
    import ray.data

    return ray.data


def _column(path, name="t", **kwargs) -> pa.ChunkedArray:
    return bridge.read_parquet(str(path), **kwargs).to_arrow().column(name)


def _ray_rows(path, name="t") -> list:
    """Ray Data's own reading of the column, ordered by ``id`` where there is one, else by size (its order varies)."""
    rows = _ray_data().read_parquet(str(path)).take_all()
    rows.sort(key=lambda r: r["id"] if "id" in r else r[name].size)
    return [r[name] for r in rows]


@pytest.mark.parametrize("dtype", ["uint8", "float32", "int64", "bool"])
def test_fixed_shape_tensors_keep_shape_dtype_and_values(tmp_path, dtype):
    arrays = [(np.arange(6).reshape(2, 3) + i).astype(dtype) for i in range(3)]
    _ray_data().from_items([{"id": i, "t": a} for i, a in enumerate(arrays)]).write_parquet(str(tmp_path))
    col = _column(tmp_path)
    assert isinstance(col.type, pa.FixedShapeTensorType)
    assert list(col.type.shape) == [2, 3] and col.type.value_type == pa.from_numpy_dtype(np.dtype(dtype))
    ids = bridge.read_parquet(str(tmp_path)).to_arrow().column("id").to_pylist()
    values = tensor_to_numpy(col)
    assert values.dtype == np.dtype(dtype) and values.shape == (3, 2, 3)
    np.testing.assert_array_equal(values, np.stack([arrays[i] for i in ids]))
    np.testing.assert_array_equal(values, np.stack([_ray_rows(tmp_path)[i] for i in ids]))
    schema = bridge.read_parquet(str(tmp_path)).schema()
    assert schema.field("t").type == col.type and not schema.field("t").metadata  # no Ray Data keys left


def test_ragged_tensors_written_one_block_per_file_read_as_variable_shape(tmp_path):
    arrays = [np.arange(k, dtype=np.float64).reshape(1, k) for k in (1, 2, 3)]
    _ray_data().from_items([{"t": a} for a in arrays]).write_parquet(str(tmp_path))
    assert len(os.listdir(tmp_path)) == 3  # one fixed shape per file
    col = _column(tmp_path)
    assert col.type == VariableShapeTensorType(pa.float64(), 2)
    got = tensor_to_numpy(col)
    ray_rows = _ray_rows(tmp_path)
    for g, want, r in zip(got, arrays, ray_rows):
        assert g.dtype == np.float64 and g.shape == want.shape
        np.testing.assert_array_equal(g, want)
        np.testing.assert_array_equal(g, r)


@pytest.mark.parametrize("dtype", ["uint8", "float32", "int64", "bool"])
def test_variable_shaped_tensor_columns(tmp_path, dtype):
    arrays = [(np.arange(2 * k).reshape(k, 2) % 3).astype(dtype) for k in (1, 2, 3)]
    _ray_data().from_items([{"t": a} for a in arrays]).repartition(1).write_parquet(str(tmp_path))
    stored = pq.read_schema(next(tmp_path.iterdir())).field("t")
    name = getattr(stored.type, "extension_name", None) or (stored.metadata or {})[b"ARROW:extension:name"].decode()
    assert name == "ray.data.arrow_variable_shaped_tensor"
    col = _column(tmp_path)
    assert col.type == VariableShapeTensorType(pa.from_numpy_dtype(np.dtype(dtype)), 2)
    got = sorted(tensor_to_numpy(col), key=lambda a: a.size)  # (repartition(1) may reorder the rows)
    for g, want in zip(got, arrays):
        assert g.dtype == np.dtype(dtype) and g.shape == want.shape
        np.testing.assert_array_equal(g, want)


def test_null_rows_stay_null(tmp_path):
    from ray.air.util.tensor_extensions.arrow import ArrowTensorTypeV2, ArrowVariableShapedTensorType

    fixed = pa.ExtensionArray.from_storage(
        ArrowTensorTypeV2((2, 2), pa.int64()), pa.array([[1, 2, 3, 4], None, [5, 6, 7, 8]], pa.large_list(pa.int64())))
    var_storage = pa.StructArray.from_arrays(
        [pa.array([[1.0, 2.0], None, [3.0]], pa.large_list(pa.float64())),
         pa.array([[1, 2], None, [1, 1]], pa.list_(pa.int64()))], names=["data", "shape"],
        mask=pa.array([False, True, False]))
    var = pa.ExtensionArray.from_storage(ArrowVariableShapedTensorType(pa.float64(), 2), var_storage)
    _ray_data().from_arrow(pa.table({"t": fixed, "v": var})).write_parquet(str(tmp_path / "arrays"))
    t = bridge.read_parquet(str(tmp_path / "arrays")).to_arrow()
    f = tensor_to_numpy(t.column("t"))
    assert f[1] is None and f[0].dtype == np.int64
    np.testing.assert_array_equal(f[0], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(f[2], [[5, 6], [7, 8]])
    v = tensor_to_numpy(t.column("v"))
    assert v[1] is None and v[0].shape == (1, 2) and v[2].shape == (1, 1)
    np.testing.assert_array_equal(v[2], [[3.0]])
    # A block of None only is written as a ``null`` column (Ray Data then fails to read the files back).
    _ray_data().from_items([{"t": np.ones((2, 2))}, {"t": None}, {"t": np.zeros((2, 2))}],
                           override_num_blocks=3).write_parquet(str(tmp_path / "blocks"))
    rows = tensor_to_numpy(_column(tmp_path / "blocks"))
    assert [None if r is None else r.shape for r in rows] == [(2, 2), None, (2, 2)]
    np.testing.assert_array_equal(rows[2], np.zeros((2, 2)))


def test_columns_selection(tmp_path):
    _ray_data().from_items([{"id": i, "t": np.full((2, 2), i, np.float32)} for i in range(4)]).write_parquet(
        str(tmp_path))
    only_t = bridge.read_parquet(str(tmp_path), columns=["t"]).to_arrow()
    assert only_t.column_names == ["t"] and tensor_to_numpy(only_t.column("t")).shape == (4, 2, 2)
    assert bridge.read_parquet(str(tmp_path), columns=["id"]).to_arrow().column_names == ["id"]
    picked = bridge.read_parquet(str(tmp_path)).select_columns(["t", "id"]).to_arrow()
    assert sorted(picked.column("id").to_pylist()) == [0, 1, 2, 3]
    np.testing.assert_array_equal(tensor_to_numpy(picked.column("t"))[:, 0, 0], picked.column("id").to_numpy())


def test_string_tensors_are_refused_and_other_columns_read(tmp_path):
    _ray_data().from_items([{"id": 1, "t": np.array([["a", "b"]])}]).write_parquet(str(tmp_path))
    with pytest.raises(UnsupportedTypeError, match="'t'.*numbers or bools") as info:
        bridge.read_parquet(str(tmp_path)).to_arrow()
    assert "Hint:" in str(info.value)
    assert bridge.read_parquet(str(tmp_path), columns=["id"]).to_arrow().column("id").to_pylist() == [1]


def test_tensors_of_different_ranks_across_files_conflict(tmp_path):
    _ray_data().from_items([{"t": np.ones((2,))}, {"t": np.ones((2, 2))}], override_num_blocks=2).write_parquet(
        str(tmp_path))
    if len(os.listdir(tmp_path)) != 2:
        pytest.skip("Ray Data merged the blocks into one file")
    with pytest.raises(SchemaConflictError, match="'t'"):
        bridge.read_parquet(str(tmp_path))


def test_pickled_metadata_of_ray_2_49_is_refused_by_ray_data_with_a_hint(tmp_path):
    import cloudpickle

    _ray_data().from_items([{"t": np.ones((2, 2))}]).write_parquet(str(tmp_path / "src"))
    storage = pq.read_table(next((tmp_path / "src").iterdir())).column("t").combine_chunks().storage
    field = pa.field("t", storage.type, metadata={b"ARROW:extension:name": b"ray.data.arrow_tensor_v2",
                                                  b"ARROW:extension:metadata": cloudpickle.dumps((2, 2))})
    pq.write_table(pa.Table.from_arrays([storage], schema=pa.schema([field])), str(tmp_path / "old.parquet"))
    with pytest.raises(FileReadError, match="Ray 2.49-2.54") as info:
        bridge.read_parquet(str(tmp_path / "old.parquet"))
    assert "Hint:" in str(info.value)


_READER = r"""
import json, sys
import bridge
from bridge.tensor import tensor_to_numpy
out = {}
for name in sys.argv[1:]:
    ds = bridge.read_parquet(name)
    col = ds.to_arrow().column("t")
    rows = tensor_to_numpy(col)
    out[name] = {"type": str(col.type), "schema_type": str(ds.schema().field("t").type),
                 "rows": [None if r is None else {"dtype": str(r.dtype), "shape": list(r.shape),
                                                  "values": r.ravel().tolist()} for r in rows]}
out["ray.data imported"] = "ray.data" in sys.modules
print("RESULT" + json.dumps(out))
"""


def test_ray_data_not_imported_in_the_reading_process(tmp_path):
    import cloudpickle
    import ray

    rd = _ray_data()
    fixed = [np.arange(4, dtype=np.float32).reshape(2, 2) + i for i in range(3)]
    ragged = [np.arange(k, dtype=np.int64).reshape(1, k) for k in (1, 2, 3)]
    variable = [np.arange(2 * k, dtype=np.uint8).reshape(k, 2) for k in (1, 2, 3)]
    rd.from_items([{"t": a} for a in fixed]).repartition(1).write_parquet(str(tmp_path / "fixed"))
    rd.from_items([{"t": a} for a in ragged]).write_parquet(str(tmp_path / "ragged"))
    rd.from_items([{"t": a} for a in variable]).repartition(1).write_parquet(str(tmp_path / "variable"))
    # Ray 2.49-2.54's metadata (cloudpickle) on the storage Ray Data wrote: read as plain numbers here.
    storage = pq.read_table(next((tmp_path / "fixed").iterdir())).column("t").combine_chunks().storage
    field = pa.field("t", storage.type, metadata={b"ARROW:extension:name": b"ray.data.arrow_tensor_v2",
                                                  b"ARROW:extension:metadata": cloudpickle.dumps((2, 2))})
    (tmp_path / "pickled").mkdir()
    pq.write_table(pa.Table.from_arrays([storage], schema=pa.schema([field])), str(tmp_path / "pickled" / "a.parquet"))
    names = [str(tmp_path / n) for n in ("fixed", "ragged", "variable", "pickled")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled",
           "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    proc = subprocess.run([sys.executable, "-c", _READER, *names], env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    out = json.loads(line[len("RESULT"):])
    assert out["ray.data imported"] is False
    expected = {names[0]: fixed, names[1]: ragged, names[2]: variable, names[3]: fixed}
    for name, arrays in expected.items():
        got = out[name]
        assert got["type"] == got["schema_type"]
        kind = "fixed_shape_tensor" if name in (names[0], names[3]) else "raybridge.variable_shape_tensor"
        assert kind in got["type"], got["type"]
        assert len(got["rows"]) == len(arrays)
        rows = sorted(got["rows"], key=lambda r: (len(r["values"]), r["values"]))  # (Ray Data may reorder rows)
        for row, want in zip(rows, arrays):
            assert row["dtype"] == str(want.dtype) and row["shape"] == list(want.shape)
            assert row["values"] == want.ravel().tolist()


def test_a_row_group_past_one_scan_batch_reads_every_rows_own_values(tmp_path):
    """Every row of a 300,000-row Ray Data tensor file comes back with its own values.  A guard for the
    bug found in review: a converted tensor whose child array starts mid-buffer (a scan batch after the
    first, or a sliced Ray block) was read from the buffer's start by pyarrow's ``to_numpy_ndarray``;
    the test below it fails on the code before (this read scans 1M-row batches, so it did not)."""
    n = 300_000
    values = np.arange(n * 4, dtype=np.int64).reshape(n, 2, 2)
    _ray_data().from_numpy(values).repartition(1).write_parquet(str(tmp_path))
    got = np.concatenate([b["data"] for b in bridge.read_parquet(str(tmp_path)).iter_batches(batch_size=50_000)])
    assert got.shape == (n, 2, 2) and got.dtype == np.int64
    np.testing.assert_array_equal(np.sort(got.reshape(n, 4)[:, 0]), values.reshape(n, 4)[:, 0])
    assert (got.reshape(n, 4) - got.reshape(n, 4)[:, :1] == np.arange(4)).all()


def test_a_tensor_whose_child_is_a_slice_reads_its_own_values():
    t = pa.fixed_shape_tensor(pa.int64(), [2, 2], permutation=[0, 1])
    child = pa.array(np.arange(40, dtype=np.int64)).slice(8)
    arr = pa.ExtensionArray.from_storage(t, pa.FixedSizeListArray.from_arrays(child, 4))
    np.testing.assert_array_equal(tensor_to_numpy(pa.chunked_array([arr])), np.arange(8, 40).reshape(8, 2, 2))
    np.testing.assert_array_equal(tensor_to_numpy(pa.chunked_array([arr.slice(3)])),
                                  np.arange(20, 40).reshape(5, 2, 2))
