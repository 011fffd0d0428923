"""Fast reliability checks: stalls, lost blocks, memory budget, hostile user code and mixed schemas.

Each test injects the real fault (an actor that hangs, an owner process that
dies, a function that returns garbage) and asserts on the error's type and on
the words of its message: what failed, where, what came back, and a Hint.
"""

from __future__ import annotations

import gc
import time

import numpy as np
import pyarrow as pa
import pytest
import ray

import bridge
from bridge.errors import (
    BlockLostError,
    InsufficientMemoryError,
    SchemaMismatchError,
    StallError,
    UserCodeError,
)

# ------------------------------------------------------------------ stalls


def test_actor_hung_in_call_raises_stall_error_naming_the_operator(context):
    context.stall_timeout_s = 3

    class Hangs:
        def __call__(self, batch):
            if batch["id"][0] >= 50:
                time.sleep(3600)
            return batch

    ds = bridge.range(100, override_num_blocks=2).map_batches(Hangs, concurrency=1)
    t0 = time.time()
    with pytest.raises(StallError) as err:
        ds.take_all()
    assert time.time() - t0 < 120
    text = str(err.value)
    assert "MapBatches(Hangs)" in text and "input batch 1" in text and "stall timeout of 3s" in text
    assert "Hint:" in text


class HangsFromRow50:
    def __call__(self, batch):
        if batch["id"][0] >= 50:
            time.sleep(3600)
        return batch


def test_a_pool_actor_names_the_batch_in_user_code_while_that_call_hangs():
    # Ray starts a threaded actor's calls in no fixed order, so the driver's oldest call may be
    # waiting for the user-code lock behind a later, hung one; the stall error asks the actor,
    # which answers on its own thread while both of its call threads are blocked.
    from bridge.context import DataContext
    from bridge.execution.actor_pool import ActorPoolOp
    from bridge.execution.planner import plan
    from bridge.execution.pool import _PoolWorker

    ds = bridge.range(100, override_num_blocks=2).map_batches(HangsFromRow50, concurrency=1)
    pool = next(op for op in plan(ds._plan, DataContext.get_current()) if isinstance(op, ActorPoolOp))
    actor = _PoolWorker.options(max_concurrency=2).remote(pool.transform, pool.name)
    try:
        ray.get(actor.ready.remote(), timeout=60)
        late = pa.table({"id": pa.array(range(50, 100), pa.int64())})
        early = pa.table({"id": pa.array(range(50), pa.int64())})
        actor.run.remote(1, None, late)  # sent first: it enters user code and hangs
        time.sleep(1)
        actor.run.remote(0, None, early)  # waits for the lock behind it
        time.sleep(1)
        index, seconds = ray.get(actor.user_call.remote(), timeout=10)
        assert index == 1 and 1 <= seconds < 60
    finally:
        ray.kill(actor)


def test_streaming_split_consumer_that_stops_reading_is_named(context):
    splits = bridge.range(20_000, override_num_blocks=40).streaming_split(2, equal=True, stall_timeout_s=2)
    with pytest.raises(StallError, match=r"split\(s\) \[1\] stopped reading") as err:
        for _ in splits[0].iter_batches(batch_size=100):
            pass
    assert "Hint:" in str(err.value)


# ------------------------------------------------------------------ lost blocks (single node, real owner death)


@ray.remote(num_cpus=0)
class _Owner:
    def put(self, n: int) -> list[ray.ObjectRef]:
        # > 100 KiB each, so the blocks live in the object store and die with their owner.
        return [ray.put(pa.table({"x": np.arange(i * n, (i + 1) * n)})) for i in range(3)]


def test_blocks_whose_owner_died_raise_block_lost_error_naming_the_source():
    owner = _Owner.remote()
    ds = bridge.from_arrow_refs(ray.get(owner.put.remote(50_000)))
    assert ds.count() == 150_000
    ray.kill(owner)
    time.sleep(1)
    for consume in (ds.take_all, ds.to_arrow, lambda: ds.map_batches(lambda b: b).to_arrow()):
        with pytest.raises(BlockLostError) as err:
            consume()
        text = str(err.value)
        assert "from source FromArrowRefs" in text and "OwnerDiedError" in text and "Hint:" in text


# ------------------------------------------------------------------ driver memory budget


def test_collecting_more_than_the_driver_budget_fails_early(context):
    context.driver_memory_budget = 1024 * 1024
    ds = bridge.range(1_000_000, override_num_blocks=8)  # 8 MB of int64
    with pytest.raises(InsufficientMemoryError, match=r"to_arrow: the driver would have to hold") as err:
        ds.to_arrow()
    assert isinstance(err.value, MemoryError) and "Hint: stream instead" in str(err.value)
    with pytest.raises(InsufficientMemoryError):
        ds.to_pandas()
    context.driver_memory_budget = 64 * 1024 * 1024
    assert ds.to_arrow().num_rows == 1_000_000


# ------------------------------------------------------------------ hostile user functions


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (lambda b: {"a": b["id"], "b": b["id"][:-1]}, ["different lengths", "'a': 5", "'b': 4"]),
        (lambda b: 5, ["got int", "Hint: return a dict of column name -> array"]),
        (lambda b: [1, 2, 3], ["got list"]),
        (lambda b: "text", ["got str"]),
        (lambda b: None, ["got NoneType"]),
        (lambda b: 1 / 0, ["raised ZeroDivisionError: division by zero", "input block"]),
    ],
    ids=["wrong-lengths", "scalar", "list", "string", "none", "raises"],
)
def test_bad_user_function_raises_user_code_error_showing_what_came_back(fn, words):
    with pytest.raises(UserCodeError) as err:
        bridge.range(10, override_num_blocks=2).map_batches(fn).take_all()
    text = str(err.value)
    assert "MapBatches(<lambda>)" in text
    for w in words:
        assert w in text, text


def test_add_column_with_wrong_length_names_both_counts():
    with pytest.raises(UserCodeError, match=r"got 2 values for 5 rows"):
        bridge.range(10, override_num_blocks=2).add_column("y", lambda t: pa.array([1, 2])).take_all()


def _int_then_string_blocks(pairs: int = 1) -> bridge.Dataset:
    """Blocks of int64, then of strings, in one column: a function's output (constructors refuse such
    parts up front, tests/test_block_schemas.py), materialized."""
    return bridge.range(4 * pairs, override_num_blocks=2 * pairs).map_batches(
        lambda b: {"x": b["id"] if b["id"][0] % 4 == 0 else b["id"].astype(str)}).materialize()


def _fail_in_sibling_tasks() -> bool:
    ds = _int_then_string_blocks(4)
    for run in (lambda: ds.sort("x").to_arrow(), lambda: ds.repartition(3).to_arrow()):
        try:
            run()
        except SchemaMismatchError:
            continue
        return False
    return True


def test_failed_exchange_prints_no_unhandled_errors_for_sibling_tasks(capfd):
    assert _fail_in_sibling_tasks()
    gc.collect()
    time.sleep(2)  # Ray reports unfetched task errors when their refs are released
    assert "Unhandled error" not in capfd.readouterr().err


# ------------------------------------------------------------------ blocks with different schemas


def test_int_block_and_all_null_block_unify_by_arrow_rules():
    ds = bridge.from_arrow([pa.table({"x": pa.array([1, 2])}), pa.table({"x": pa.array([None, None], pa.null())})])
    table = ds.to_arrow()
    assert table.schema.field("x").type == pa.int64()
    assert table.column("x").to_pylist() == [1, 2, None, None]
    assert [len(b["x"]) for b in ds.iter_batches(batch_size=4)] == [4]
    assert ds.sort("x").take_all() == [{"x": 1}, {"x": 2}, {"x": None}, {"x": None}]


def test_struct_column_absent_from_one_block_becomes_null():
    ds = bridge.from_arrow([pa.table({"x": [1], "s": pa.array([{"a": 1}])}), pa.table({"x": [2]})])
    table = ds.to_arrow()
    assert table.column("s").to_pylist() == [{"a": 1}, None]
    assert ds.repartition(1).to_arrow().column("x").to_pylist() == [1, 2]


@pytest.mark.parametrize("consume", ["to_arrow", "iter_batches", "sort", "repartition"])
def test_incompatible_block_types_name_both_types(consume):
    ds = _int_then_string_blocks()
    with pytest.raises(SchemaMismatchError) as err:
        if consume == "to_arrow":
            ds.to_arrow()
        elif consume == "iter_batches":
            list(ds.iter_batches(batch_size=4))
        elif consume == "sort":
            ds.sort("x").to_arrow()
        else:
            ds.repartition(1).to_arrow()
    text = str(err.value)
    assert "int64" in text and "string" in text and "Hint:" in text


def test_a_batch_column_mixing_strings_and_nan_names_the_column_and_the_fix():
    mixed = np.array(["a", float("nan"), "c"], dtype=object)  # pandas' missing marker among strings
    ds = bridge.range(3).map_batches(lambda b: {"s": mixed})
    with pytest.raises(bridge.BridgeError, match=r"column 's' cannot become one Arrow column \(its values are of "
                                                 r"types float, str\)") as info:
        ds.take_all()
    assert "use None, not float('nan')" in str(info.value)
    with pytest.raises(bridge.BridgeTypeError, match="from_numpy: column 's'"):
        bridge.from_numpy({"s": mixed})
