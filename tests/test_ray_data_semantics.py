"""Where raybridge must answer as Ray Data does: actor call threading, re-iteration, nulls, argument errors."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import BridgeError, BridgeTypeError, BridgeValueError, DatasetEmptyError

# ------------------------------------------------------------------ one thread per __call__


class RecordsThreads:
    """Notes the thread of every call and whether another call was running at the same time."""

    def __init__(self) -> None:
        self.active = 0
        self.guard = threading.Lock()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with self.guard:
            self.active += 1
            overlapped = self.active > 1
        time.sleep(0.05)  # long enough for a second call to arrive if the actor lets it in
        with self.guard:
            overlapped = overlapped or self.active > 1
            self.active -= 1
        n = len(batch["id"])
        return {"id": batch["id"], "overlap": np.full(n, overlapped), "thread": np.full(n, threading.get_ident())}


@pytest.mark.timeout(180)
def test_sync_call_runs_on_one_thread_at_a_time_even_with_max_concurrency():
    ds = bridge.range(400, override_num_blocks=20).map_batches(RecordsThreads, concurrency=1, max_concurrency=2)
    rows = ds.take_all()
    assert [r["id"] for r in rows] == list(range(400))
    assert not any(r["overlap"] for r in rows), "two calls of __call__ ran at once in one actor"


# ------------------------------------------------------------------ iterables make a new pass


@pytest.mark.timeout(120)
def test_iter_batches_iterable_makes_a_full_second_pass():
    it = bridge.range(10, override_num_blocks=3).iter_batches(batch_size=4)
    first = [int(x) for b in it for x in b["id"]]
    second = [int(x) for b in it for x in b["id"]]
    assert first == second == list(range(10))
    assert it.state_dict()["epoch"] == 1  # the second pass is the next epoch


@pytest.mark.timeout(120)
def test_next_still_works_and_a_pass_started_with_next_continues_in_for():
    it = bridge.range(10).iter_batches(batch_size=4)
    head = next(it)
    rest = [b for b in it]  # mid-pass: continues, no restart
    assert [len(head["id"])] + [len(b["id"]) for b in rest] == [4, 4, 2]
    with pytest.raises(StopIteration):
        next(it)  # an ended pass keeps raising for next(): only iter() restarts
    assert sum(len(b["id"]) for b in it) == 10


@pytest.mark.timeout(120)
def test_state_resumes_then_second_pass_is_full():
    it = bridge.range(10).iter_batches(batch_size=4)
    next(it)
    resumed = bridge.range(10).iter_batches(batch_size=4)
    resumed.load_state_dict(it.state_dict())
    assert [len(b["id"]) for b in resumed] == [4, 2]
    assert [len(b["id"]) for b in resumed] == [4, 4, 2]


@pytest.mark.timeout(120)
def test_iter_torch_batches_iterable_makes_a_second_pass():
    pytest.importorskip("torch")
    it = bridge.range(6).iter_torch_batches(batch_size=4)
    assert sum(len(b["id"]) for b in it) == 6
    assert sum(len(b["id"]) for b in it) == 6


# ------------------------------------------------------------------ nulls in aggregations


@pytest.mark.timeout(120)
def test_std_of_an_all_null_column_is_none():
    ds = bridge.from_items([{"k": 1, "x": None}, {"k": 1, "x": None}])  # x has Arrow's null type
    assert ds.std("x") is None
    assert ds.std(["x"]) is None  # a list of one column gives the value, as in Ray Data
    assert ds.groupby("k").std("x").take_all() == [{"k": 1, "std(x)": None}]


@pytest.mark.timeout(120)
def test_std_over_blocks_where_one_is_all_null():
    ds = bridge.from_items([{"k": 1, "x": None}]).union(bridge.from_items([{"k": 2, "x": 2.0}, {"k": 2, "x": 4.0}]))
    assert ds.groupby("k").std("x").take_all() == [{"k": 1, "std(x)": None}, {"k": 2, "std(x)": pytest.approx(2 ** 0.5)}]


@pytest.mark.timeout(120)
def test_sum_of_an_all_null_group_is_none_not_nan():
    table = pa.table({"k": [1, 1, 2, 2], "x": pa.array([None, None, 1.0, 2.0], pa.float64())})
    for ds in (bridge.from_arrow(table), bridge.from_arrow(table).repartition(3)):
        assert ds.groupby("k").sum("x").take_all() == [{"k": 1, "sum(x)": None}, {"k": 2, "sum(x)": 3.0}]
        assert ds.filter(lambda r: r["k"] == 1).sum("x") is None
    null_typed = bridge.from_items([{"k": 1, "x": None}, {"k": 1, "x": None}])
    assert null_typed.groupby("k").sum("x").take_all() == [{"k": 1, "sum(x)": None}]


# ------------------------------------------------------------------ argument errors are ValueError / TypeError


def test_error_classes_are_bridge_errors_and_builtins():
    assert issubclass(BridgeValueError, BridgeError) and issubclass(BridgeValueError, ValueError)
    assert issubclass(BridgeTypeError, BridgeError) and issubclass(BridgeTypeError, TypeError)
    assert bridge.BridgeValueError is BridgeValueError and bridge.BridgeTypeError is BridgeTypeError
    assert "\n\nHint: x" in str(BridgeValueError("what", "x"))


@pytest.mark.parametrize("batch_size", [0, -1])
def test_negative_batch_size_is_a_value_error(batch_size):
    ds = bridge.range(10)
    with pytest.raises(ValueError, match="batch_size"):
        ds.map_batches(lambda b: b, batch_size=batch_size)
    with pytest.raises(ValueError, match="batch_size"):
        ds.iter_batches(batch_size=batch_size)  # at the call, not on the first batch


def test_take_negative_is_a_value_error_naming_take():
    with pytest.raises(ValueError, match=r"take: limit must be a number of rows >= 0; got -1") as info:
        bridge.range(10).take(-1)
    assert info.value.what.startswith("take:")  # not the limit() it calls


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_random_sample_fraction_outside_0_1_is_a_value_error(fraction):
    with pytest.raises(ValueError, match="fraction must be in"):
        bridge.range(10).random_sample(fraction)


def test_split_at_no_indices_is_a_value_error():
    with pytest.raises(ValueError, match="at least one row index"):
        bridge.range(10).split_at_indices([])


def test_local_shuffle_without_batch_size_is_a_value_error():
    with pytest.raises(ValueError, match="needs a batch_size"):
        bridge.range(10).iter_batches(batch_size=None, local_shuffle_buffer_size=4)


def test_constructor_args_on_a_plain_function_is_a_value_error():
    with pytest.raises(ValueError, match="only for a callable class"):
        bridge.range(10).map_batches(lambda b: b, fn_constructor_args=(1,))
    with pytest.raises(ValueError, match="only for a callable class"):
        bridge.range(10).map(lambda r: r, fn_constructor_kwargs={"a": 1})


@pytest.mark.timeout(120)
def test_take_batch_of_an_empty_dataset_is_a_value_error():
    with pytest.raises(ValueError, match="no rows") as info:
        bridge.range(10).filter(lambda r: False).take_batch()
    assert isinstance(info.value, DatasetEmptyError)
    with pytest.raises(ValueError):
        bridge.range(0).take_batch(5)


@pytest.mark.parametrize("concurrency", [0, (3, 1)])
def test_bad_pool_size_is_a_value_error(concurrency):
    with pytest.raises(ValueError, match="concurrency must be"):
        bridge.range(10).map_batches(RecordsThreads, concurrency=concurrency).take_all()


def test_ndarray_rows_become_tensor_columns_and_batch_format_none_is_arrow():
    import numpy as np
    import pyarrow as pa

    batch = bridge.from_items([np.array([0, 0])] * 4).take_batch(4)
    assert batch["item"].shape == (4, 2) and batch["item"].dtype == np.int64
    rows = bridge.range(2).map(lambda r: {"x": np.array([r["id"]])}).take_all()
    assert all(isinstance(r["x"], np.ndarray) and r["x"].shape == (1,) for r in rows)
    assert [int(r["x"][0]) for r in rows] == [0, 1]
    assert isinstance(next(iter(bridge.range(3).iter_batches(batch_format=None))), pa.Table)
    cube = bridge.from_numpy(np.arange(32).reshape(4, 2, 2, 2))
    assert cube.map_batches(lambda df: df, batch_format="pandas").take_batch(4)["data"].shape == (4, 2, 2, 2)


def test_add_column_defaults_to_pandas_and_broadcasts_scalars():
    ds = bridge.range(4)
    assert ds.add_column("y", lambda df: df["id"] * 2).take(2) == [{"id": 0, "y": 0}, {"id": 1, "y": 2}]
    assert [r["c"] for r in ds.add_column("c", lambda df: 7).take_all()] == [7, 7, 7, 7]


def test_two_aggregations_of_one_name_are_numbered():
    from bridge import Sum

    assert bridge.range(4).aggregate(Sum("id"), Sum("id"), Sum("id")) == {
        "sum(id)": 6, "sum(id)_2": 6, "sum(id)_3": 6}


def test_more_argument_errors_are_value_errors(tmp_path):
    ds = bridge.range(5)
    with pytest.raises(ValueError, match="take_all"):
        ds.take_all(limit=3)
    with pytest.raises(ValueError, match="exactly one of fn"):
        ds.filter(lambda r: True, expr="id > 1")
    ds.write_parquet(str(tmp_path))
    with pytest.raises(ValueError, match="already holds"):
        ds.write_parquet(str(tmp_path), mode="error")


def test_read_json_records_longer_than_the_block_size(tmp_path):
    import json

    import pyarrow.json as pj

    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps({"a": i, "s": "x" * 50}) for i in range(200)))
    ds = bridge.read_json(str(tmp_path), read_options=pj.ReadOptions(block_size=64))
    assert ds.count() == 200 and ds.take(1) == [{"a": 0, "s": "x" * 50}]
