"""Export paths that changed values or said nothing useful (found by a hunt over to_dask / to_modin /
torch / tf / NumPy exports).

- to_dask / to_modin converted each block's dictionary alone: the same code meant "x" in one partition
  and "z" in another, and Dask's metadata said the column had no category.
- fill_nulls truncated a value pyarrow took for the column's type (1.5 into timestamp[s] was 1 s,
  Decimal("2.5") into int64 was 2, [9.5] into list<int64> was [9]).
- NumPy batches of a list column were object arrays or int64 arrays by what the neighbouring batches held.
- dtypes naming a text column: torch left the text as it was without a word, tf failed in its Cast kernel.
- to_numpy(column=) of a missing column: a KeyError from a task.
"""

from __future__ import annotations

import datetime as dt
import decimal

import dask.dataframe as dd  # noqa: F401  (to_dask needs it loaded)
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import ray
import torch

import bridge
from bridge.errors import BridgeValueError, SchemaMismatchError, UnsupportedTypeError


def _two_category_blocks() -> bridge.Dataset:
    return bridge.from_pandas([pd.DataFrame({"c": pd.Categorical(["x", "y"]), "n": [1, 2]}),
                               pd.DataFrame({"c": pd.Categorical(["z"]), "n": [3]})])


def test_to_dask_gives_every_partition_the_same_categories():
    ddf = _two_category_blocks().to_dask()
    assert ddf["c"].cat.known and list(ddf["c"].cat.categories) == ["x", "y", "z"]  # the metadata too
    out = ddf.compute()
    assert out["c"].tolist() == ["x", "y", "z"]
    assert out["c"].cat.codes.tolist() == [0, 1, 2]
    parts = [ddf.get_partition(i).compute() for i in range(ddf.npartitions)]
    assert [list(p["c"].cat.categories) for p in parts] == [["x", "y", "z"]] * len(parts)


def test_to_modin_gives_every_partition_the_same_categories():
    m = _two_category_blocks().to_modin()
    assert m["c"].cat.codes._to_pandas().tolist() == [0, 1, 2]
    assert m._to_pandas()["c"].tolist() == ["x", "y", "z"]


def test_dask_metadata_of_an_ordered_categorical_lets_dask_compare():
    pdf = pd.DataFrame({"b": pd.Categorical(["x", "y", "x"], categories=["y", "x", "z"], ordered=True)})
    ddf = bridge.from_pandas(pdf).to_dask()
    assert list(ddf["b"].cat.categories) == ["y", "x", "z"] and ddf["b"].cat.ordered
    assert (ddf["b"] > "y").compute().tolist() == (pdf["b"] > "y").tolist() == [True, False, True]
    empty = bridge.from_pandas(pdf).filter(lambda r: False).to_dask()
    assert list(empty["b"].cat.categories) == ["y", "x", "z"]
    assert list(empty.compute()["b"].cat.categories) == ["y", "x", "z"]


def test_ordered_categoricals_of_opposite_orders_are_refused_by_to_dask_and_to_modin():
    ds = bridge.from_pandas([
        pd.DataFrame({"c": pd.Categorical(["lo"], categories=["lo", "hi"], ordered=True)}),
        pd.DataFrame({"c": pd.Categorical(["lo"], categories=["hi", "lo"], ordered=True)})])
    with pytest.raises(SchemaMismatchError, match="ordered dictionary"):
        ds.to_dask()
    with pytest.raises(SchemaMismatchError, match="ordered dictionary"):
        ds.to_modin()


def _filled(arr: pa.Array, fill, framework: str = "torch"):
    ds = bridge.from_arrow(pa.table({"x": arr}))
    if framework == "tf":
        return next(iter(ds.iter_tf_batches(fill_nulls={"x": fill})))["x"].numpy().tolist()
    batch = next(iter(ds.iter_torch_batches(fill_nulls={"x": fill})))["x"]
    return batch.tolist() if hasattr(batch, "tolist") else [v.tolist() for v in batch]


@pytest.mark.parametrize(("arr", "fill"), [
    (pa.array([5, None], pa.timestamp("s")), 1.5),
    (pa.array([5, None], pa.timestamp("s")), dt.datetime(1970, 1, 1, 0, 0, 1, 5)),
    (pa.array([5, None], pa.timestamp("us")), pd.Timestamp("1970-01-01 00:00:00.000000001")),
    (pa.array([5, None], pa.duration("s")), dt.timedelta(seconds=1.5)),
    (pa.array([5, None], pa.int64()), decimal.Decimal("2.5")),
    (pa.array([[5], None], pa.list_(pa.int64())), [9.5]),
    (pa.array([5, None], pa.date32()), 1.5),
    (pa.array([5, None], pa.time32("s")), dt.time(1, 2, 3, 400)),
], ids=["float-ts", "micros-ts-s", "nanos-ts-us", "duration", "decimal-int", "list", "float-date", "time"])
def test_fill_nulls_refuses_a_value_the_column_would_truncate(arr, fill):
    with pytest.raises(UnsupportedTypeError, match="cannot fill the nulls of column 'x'"):
        _filled(arr, fill)


def test_fill_nulls_refuses_truncation_for_tf_too():
    with pytest.raises(UnsupportedTypeError, match="cannot fill the nulls of column 'x'"):
        _filled(pa.array([5, None], pa.timestamp("s")), 1.5, "tf")


def test_fill_nulls_takes_values_the_column_holds_exactly():
    assert _filled(pa.array([5, None], pa.timestamp("s")), 7) == [5, 7]
    assert _filled(pa.array([5, None], pa.timestamp("s")), 7.0) == [5, 7]
    assert _filled(pa.array([5, None], pa.timestamp("s")), dt.datetime(1970, 1, 1, 0, 0, 9)) == [5, 9]
    assert _filled(pa.array([5, None], pa.timestamp("ns")), pd.Timestamp("1970-01-01 00:00:00.000000001")) == [5, 1]
    assert _filled(pa.array([5, None], pa.duration("s")), dt.timedelta(seconds=2)) == [5, 2]
    assert _filled(pa.array([5, None], pa.int64()), decimal.Decimal("2")) == [5, 2]
    assert _filled(pa.array([[5], None], pa.list_(pa.int64())), [9]) == [[5], [9]]
    assert _filled(pa.array([5, None], pa.int64()), 2, "tf") == [5, 2]


def test_numpy_batches_of_a_list_column_do_not_depend_on_their_neighbours():
    t = pa.table({"l": pa.array([[1, 2], [3, None]], pa.list_(pa.int64()))})
    batches = list(bridge.from_arrow(t).iter_batches(batch_size=1))
    alone = next(iter(bridge.from_arrow(t.slice(0, 1)).iter_batches(batch_size=1)))
    assert batches[0]["l"][0].dtype == alone["l"][0].dtype == np.int64
    assert batches[1]["l"][0].tolist() == [3, None]


def test_dtypes_naming_a_text_column_are_refused():
    ds = bridge.from_items([{"x": 1, "y": "a"}, {"x": 2, "y": "b"}])
    with pytest.raises(BridgeValueError, match=r"column 'y' as torch.float32, but it holds text"):
        next(iter(ds.iter_torch_batches(dtypes={"y": torch.float32})))
    batch = next(iter(ds.iter_torch_batches(dtypes={"x": torch.float32})))
    assert batch["x"].dtype == torch.float32 and batch["y"] == ["a", "b"]
    import tensorflow as tf

    with pytest.raises(BridgeValueError, match=r"column 'y' as tf.float32, but it holds text") as info:
        next(iter(ds.iter_tf_batches(dtypes=tf.float32)))
    assert "a dict naming only the number columns" in info.value.hint
    with pytest.raises(BridgeValueError, match=r"column 'y' as tf.float32"):
        next(iter(ds.iter_tf_batches(dtypes={"y": tf.float32})))
    assert next(iter(ds.iter_tf_batches(dtypes={"y": tf.string})))["y"].numpy().tolist() == [b"a", b"b"]


def test_to_numpy_of_a_missing_column_names_the_columns():
    ds = bridge.from_items([{"x": 1}])
    with pytest.raises(BridgeValueError, match=r"to_numpy\(column='z'\): the Dataset has no such column \(columns: \['x'\]\)"):
        ds.to_numpy(column="z")
    with pytest.raises(BridgeValueError, match=r"to_numpy_refs\(column='z'\)"):
        ds.to_numpy_refs(column="z")
    assert ray.get(ds.to_numpy_refs(column="x"))[0].tolist() == [1]


def test_fill_nulls_of_an_unsigned_list_beyond_int64_and_a_datetime_into_a_date():
    import tensorflow as tf  # noqa: F401

    from raybridge_adapters.tf_adapter import make_tf_formatter

    out = make_tf_formatter(fill_nulls={"l": [2**63]})(pa.table({"l": pa.array([[1, 2], None], pa.list_(pa.uint64()))}))
    assert out["l"].to_list() == [[1, 2], [2**63]]
    with pytest.raises(UnsupportedTypeError, match="time of day dropped"):
        _filled(pa.array([5, None], pa.date32()), dt.datetime(2020, 1, 1, 5))
    assert _filled(pa.array([5, None], pa.date32()), dt.datetime(2020, 1, 1)) == [5, 18262]
