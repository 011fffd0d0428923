"""Python values that pyarrow's inference changed without a word, and from_torch's items (session 53, a hunt)."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import bridge
from bridge.errors import BridgeTypeError, BridgeValueError


def test_pandas_timestamps_and_timedeltas_keep_their_nanoseconds():
    """Rows hand a timestamp[ns] value out as a pandas Timestamp; pyarrow read those back as microseconds,
    so a map that renamed the column (or from_items of such values) cut the nanoseconds off."""
    src = bridge.from_arrow(pa.table({"t": pa.array([1_000_000_001, None], pa.timestamp("ns")),
                                      "d": pa.array([1, None], pa.duration("ns")),
                                      "l": pa.array([[1_000_000_001, None], None], pa.list_(pa.timestamp("ns")))}))
    moved = src.map(lambda r: {"t2": r["t"], "d2": r["d"]}).to_arrow()
    assert moved.column("t2").cast(pa.int64()).to_pylist() == [1_000_000_001, None]
    assert moved.column("d2").cast(pa.int64()).to_pylist() == [1, None]
    lists = src.map_batches(lambda b: {"l2": b["l"]}).to_arrow().column("l2")
    assert lists.type == pa.list_(pa.timestamp("ns"))
    assert lists.to_pylist()[0][0].value == 1_000_000_001
    items = bridge.from_items([{"x": pd.Timestamp("2020-01-01T00:00:00.000000001")}]).to_arrow().column("x")
    assert items.cast(pa.int64()).to_pylist() == [1577836800000000001]
    # Microseconds where no value holds nanoseconds: the range of years stays datetime's.
    wide = bridge.from_items([{"x": pd.Timestamp("2020-01-01T00:00:00.000001")}, {"x": datetime.datetime(1, 1, 1)}])
    assert wide.schema().field("x").type == pa.timestamp("us")
    # Nanoseconds beside a year nanoseconds do not reach: refused, saying so (no type holds both exactly).
    with pytest.raises(BridgeTypeError, match=r"a value holds nanoseconds and another lies outside the years"):
        bridge.from_items([{"x": pd.Timestamp("2020-01-01T00:00:00.000000001")},
                           {"x": datetime.datetime(3000, 1, 1)}]).take_all()


@pytest.mark.parametrize("values, kinds", [
    ([datetime.date(2020, 1, 2), datetime.datetime(2020, 1, 1, 5)], "date, datetime"),  # date32: 05:00 dropped
    ([b"a", "b"], "bytes, str"),                                                           # binary: 'b' became b'b'
])
def test_two_kinds_pyarrow_would_merge_are_refused(values, kinds):
    with pytest.raises(BridgeTypeError, match=rf"column 'x' holds values of kinds no one Arrow type holds together "
                                              rf"\({kinds}\)"):
        bridge.from_items([{"x": v} for v in values]).take_all()
    with pytest.raises(Exception, match=rf"\({kinds}\)|types {kinds}"):
        bridge.range(2).map_batches(lambda b: {"x": np.array(values, dtype=object)}).take_all()


def test_from_torch_keeps_keys_and_kinds_and_takes_a_tensor():
    torch = pytest.importorskip("torch")
    # Keys the first item lacked were dropped (the other order raised KeyError): missing ones are null.
    assert bridge.from_torch([{"a": 1}, {"a": 2, "b": 3}]).take_all() == [{"a": 1, "b": None}, {"a": 2, "b": 3}]
    assert bridge.from_torch([{"a": 2, "b": 3}, {"a": 1}]).take_all() == [{"a": 2, "b": 3}, {"a": 1, "b": None}]
    # np.asarray made (True, 2) ints [1, 2], and an int64 2**53 + 1 beside a float32 a rounded float.
    with pytest.raises(BridgeTypeError, match=r"column 'item_0'.*bool, int"):
        bridge.from_torch([(True,), (2,)])
    with pytest.raises(BridgeTypeError, match=r"column 'item_0'.*float32, int64"):
        bridge.from_torch([(np.int64(2**53 + 1),), (np.float32(0.5),)])
    assert bridge.from_torch([(2**63,), (1,)]).take_all() == [{"item_0": 2**63}, {"item_0": 1}]
    # A tensor failed: "from_numpy: unexpected keyword argument(s) ['rows_per_block']".
    ds = bridge.from_torch(torch.arange(10).reshape(5, 2), rows_per_block=2)
    assert ds.num_blocks() == 3
    assert [r["data"].tolist() for r in ds.take_all()] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    with pytest.raises(BridgeValueError, match=r"rows_per_block must be a positive int, got -1"):
        bridge.from_torch(torch.arange(4), rows_per_block=-1)  # (read nothing, silently)
    # 0-d tensors of two dtypes: a column of numbers, as before.
    assert bridge.from_torch([(torch.tensor(1, dtype=torch.int32),), (torch.tensor(2),)]).schema().field(
        "item_0").type == pa.int64()
    pairs = bridge.from_torch(torch.utils.data.TensorDataset(torch.arange(3.0), torch.arange(3)))
    assert pairs.take_all() == [{"item_0": float(i), "item_1": i} for i in range(3)]


def test_ray_data_python_objects_come_as_objects_in_numpy_batches():
    """Ray Data keeps values Arrow has no type for (complex, classes) pickled in an extension column: NumPy
    batches handed out the pickles' bytes, and a map_batches passing them on stored the bytes for good."""
    import ray.data

    ds = bridge.from_ray_data(ray.data.from_items([{"x": 1 + 2j, "i": 1}, {"x": None, "i": 2}]))
    batch = ds.take_batch(2)
    assert batch["x"].dtype == object and batch["x"].tolist() == [1 + 2j, None]
    assert ds.map_batches(lambda b: b).take_all() == [{"x": 1 + 2j, "i": 1}, {"x": None, "i": 2}]


def test_map_batches_returning_big_endian_or_complex_pandas_frames():
    """from_pandas turned big-endian columns around and named complex ones; a pandas frame returned by
    map_batches failed with pyarrow's bare "Byte-swapped arrays not supported" / "Unsupported numpy type"."""
    def big_endian(df):
        return pd.DataFrame({"x": np.arange(3, dtype=">i4"), "f": np.ones(3, dtype=">f8")})

    ds = bridge.range(3).map_batches(big_endian, batch_format="pandas")
    assert ds.take_all() == [{"x": i, "f": 1.0} for i in range(3)]
    assert ds.schema().field("x").type == pa.int32()
    with pytest.raises(Exception, match=r"column 'c': a complex128 \(complex\) array has no Arrow type(?s:.*)Hint: "
                                        r"store its parts as two columns"):
        bridge.range(3).map_batches(lambda df: pd.DataFrame({"c": np.ones(3, dtype=complex)}),
                                    batch_format="pandas").take_all()


def test_from_tf_keeps_bytes_and_the_dtype_of_ragged_values():
    """Image bytes (not UTF-8) failed with a bare UnicodeDecodeError; ragged int32 / float32 rows came as
    int64 / float64 (read through to_list()); 2-d text came as lists of bytes where 1-d text was str."""
    tf = pytest.importorskip("tensorflow")
    images = bridge.from_tf(tf.data.Dataset.from_tensor_slices({"img": [b"\xff\xd8", b"\x00a"]}))
    assert images.take_all() == [{"img": b"\xff\xd8"}, {"img": b"\x00a"}]
    ragged = tf.ragged.constant([[[1.5], [2.5, 3.5]], [[4.5]]], dtype=tf.float32)
    ds = bridge.from_tf(tf.data.Dataset.from_tensor_slices({"r": ragged, "i": tf.ragged.constant([[1, 2], [3]],
                                                                                              dtype=tf.int32)}))
    assert ds.schema().field("r").type == pa.list_(pa.list_(pa.float32()))
    assert ds.schema().field("i").type == pa.list_(pa.int32())
    assert ds.take_all() == [{"r": [[1.5], [2.5, 3.5]], "i": [1, 2]}, {"r": [[4.5]], "i": [3]}]
    words = bridge.from_tf(tf.data.Dataset.from_tensor_slices({"s": [["a", "b"], ["c", "é"]]}))
    assert words.schema().field("s").type == pa.list_(pa.string())
    assert words.take_all() == [{"s": ["a", "b"]}, {"s": ["c", "é"]}]
