"""The shuffle exchange through holder actors' memory (bridge/ops/held_exchange.py).

Forced with ``DataContext.shuffle_exchange = "actor_memory"`` on small data; the output
must be the same, row for row and type for type, as the object-store exchange's.
"""

from __future__ import annotations

import os
import signal
import time
import warnings

import pyarrow as pa
import pytest
import ray
import ray._private.state

import bridge
from bridge.block import BlockMetadata
from bridge.errors import BridgeError, SchemaMismatchError
from bridge.ops import held_exchange
from bridge.ops.shuffle import _shuffle_map, _shuffle_reduce
from tests import fidelity_data


@pytest.fixture
def exchange_mode():
    """The context, its exchange settings restored after; no holder kept from another test before or after."""
    ctx = bridge.DataContext.get_current()
    before = ctx.shuffle_exchange, ctx.shuffle_memory_budget, ctx.shuffle_holders_keepalive_s
    held_exchange.release_idle_holders()
    yield ctx
    ctx.shuffle_exchange, ctx.shuffle_memory_budget, ctx.shuffle_holders_keepalive_s = before
    held_exchange.release_idle_holders()


def _holders() -> list[dict]:
    return [a for a in ray._private.state.actors().values() if a.get("ActorClassName") == "_Holder"]


def _bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    return sink.getvalue().to_pybytes()


def _both(ds_fn, ctx) -> tuple[pa.Table, pa.Table]:
    ctx.shuffle_exchange = "object_store"
    store = ds_fn().to_arrow()
    ctx.shuffle_exchange = "actor_memory"
    held_exchange.release_idle_holders()  # so that new holders show the exchange went through them
    before = len(_holders())
    held = ds_fn().to_arrow()
    assert len(_holders()) > before, "the exchange did not go through holders"
    return store, held


@pytest.mark.parametrize("variant", ["plain", "nulls"])
def test_holders_give_the_store_exchange_rows_in_the_same_order_for_every_type(exchange_mode, variant):
    table = fidelity_data.table(variant)
    ds = bridge.from_arrow([table] * 6)
    store, held = _both(lambda: ds.random_shuffle(seed=11, num_blocks=4), exchange_mode)
    assert held.schema == store.schema == table.schema
    assert _bytes(held) == _bytes(store)  # NaN-aware: equals() says NaN != NaN
    assert held.num_rows == 6 * table.num_rows


def test_holders_sort_like_the_store_exchange(exchange_mode):
    ds = bridge.range(20_000, override_num_blocks=7).map_batches(
        lambda b: {"k": (b["id"] * 7919) % 1000, "s": b["id"].astype(str)})
    store, held = _both(lambda: ds.sort("k", boundaries=[100, 500, 900]), exchange_mode)
    assert held.equals(store)
    assert held.column("k").to_pylist() == sorted(held.column("k").to_pylist())


def _alive_holders() -> set[str]:
    return {a["ActorID"] for a in _holders() if a["State"] == "ALIVE"}


def _wait_for(cond, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def test_holders_keep_every_row_once_and_are_gone_after(exchange_mode):
    exchange_mode.shuffle_exchange = "actor_memory"
    exchange_mode.shuffle_holders_keepalive_s = 0
    out = bridge.range(50_000, override_num_blocks=9).random_shuffle(num_blocks=5).materialize()
    ids = sorted(r["id"] for r in out.iter_rows())
    assert ids == list(range(50_000))
    assert out.num_blocks() == 5
    assert all(a["State"] == "DEAD" for a in _holders())


def test_the_next_exchange_reuses_the_idle_holders_which_stop_after_the_keepalive(exchange_mode):
    exchange_mode.shuffle_exchange = "actor_memory"
    exchange_mode.shuffle_holders_keepalive_s = 600
    per_cpu = min(bridge._ray.cluster_cpus(), held_exchange.MAX_HOLDERS)
    ds = bridge.range(40_000, override_num_blocks=8)
    first = ds.random_shuffle(seed=3, num_blocks=2 * per_cpu).materialize()
    kept = _alive_holders()
    assert len(kept) == per_cpu  # one per CPU, waiting
    started = len(_holders())
    second = ds.random_shuffle(seed=3, num_blocks=2 * per_cpu).materialize()
    assert len(_holders()) == started, "the second exchange started holders of its own"
    assert _alive_holders() == kept
    # Same seed, same holders or not: the same rows in the same order, each once.
    assert first.to_arrow().equals(second.to_arrow())
    assert sorted(second.to_arrow().column("id").to_pylist()) == list(range(40_000))
    # Another partition count reuses them too, each holder taking its new range: row for row
    # what the store exchange gives.
    third = ds.random_shuffle(seed=4, num_blocks=2 * per_cpu + 3).to_arrow()
    assert len(_holders()) == started and _alive_holders() == kept
    exchange_mode.shuffle_exchange = "object_store"
    assert third.equals(ds.random_shuffle(seed=4, num_blocks=2 * per_cpu + 3).to_arrow())
    # The keep-alive counts from the last exchange; after it they stop.
    exchange_mode.shuffle_exchange = "actor_memory"
    exchange_mode.shuffle_holders_keepalive_s = 0.5
    ds.random_shuffle(num_blocks=4).materialize()
    assert _wait_for(lambda: not _alive_holders()), _alive_holders()


def test_a_keepalive_of_zero_stops_the_holders_kept_before_too(exchange_mode):
    exchange_mode.shuffle_exchange = "actor_memory"
    exchange_mode.shuffle_holders_keepalive_s = 600
    ds = bridge.range(20_000, override_num_blocks=4)
    ds.random_shuffle(num_blocks=8).materialize()
    assert _alive_holders()
    exchange_mode.shuffle_holders_keepalive_s = 0
    ds.random_shuffle(num_blocks=8).materialize()
    assert not _alive_holders()
    # Holders kept by an exchange with a keep-alive, then one ending with 0 that used none of them
    # (here: none at all): they stop too.
    exchange_mode.shuffle_holders_keepalive_s = 600
    ds.random_shuffle(num_blocks=8).materialize()
    assert _alive_holders()
    held_exchange._IDLE.put([], 0)
    assert _wait_for(lambda: not _alive_holders())


@pytest.mark.parametrize("value", [-1, float("nan"), None, "60"])
def test_a_wrong_keepalive_says_what_it_takes(exchange_mode, value):
    exchange_mode.shuffle_exchange = "actor_memory"
    exchange_mode.shuffle_holders_keepalive_s = value
    with pytest.raises(ValueError, match="shuffle_holders_keepalive_s must be a number of seconds >= 0"):
        bridge.range(1_000, override_num_blocks=2).random_shuffle(num_blocks=2).materialize()
    assert not _alive_holders()


def test_an_idle_holder_that_died_is_replaced(exchange_mode):
    exchange_mode.shuffle_exchange = "actor_memory"
    exchange_mode.shuffle_holders_keepalive_s = 600
    ds = bridge.range(30_000, override_num_blocks=6)
    ds.random_shuffle(num_blocks=4).materialize()
    kept = [a for a in _holders() if a["State"] == "ALIVE"]
    assert kept
    os.kill(kept[0]["Pid"], signal.SIGTERM)
    assert _wait_for(lambda: kept[0]["ActorID"] not in _alive_holders())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "holder died" rerun: a new holder in its place
        out = ds.random_shuffle(num_blocks=4).materialize()
    assert sorted(out.to_arrow().column("id").to_pylist()) == list(range(30_000))
    alive = _alive_holders()
    assert len(alive) == len(kept) and kept[0]["ActorID"] not in alive


@ray.remote(num_cpus=0)
class _ImportsOnly:
    """A worker that imports this module (and with it what a holder imports): a holder's memory baseline."""

    def __init__(self) -> None:
        from bridge.ops import held_exchange  # noqa: F401

    def pid(self) -> int:
        return os.getpid()


def test_idle_holders_give_their_memory_back(exchange_mode):
    import psutil

    def private_mib(pid: int) -> float:
        return psutil.Process(pid).memory_full_info().uss / 2**20

    exchange_mode.shuffle_exchange = "actor_memory"
    exchange_mode.shuffle_holders_keepalive_s = 600
    rows = 8_000_000  # 128 MiB through the holders' memory: two partitions, so two holders on any cluster
    ds = bridge.range(rows, override_num_blocks=8).map_batches(lambda b: {"id": b["id"], "x": b["id"] * 0.5})
    ds.random_shuffle(num_blocks=2).materialize()
    pids = [a["Pid"] for a in _holders() if a["State"] == "ALIVE"]
    share = rows * 16 / len(pids) / 2**20  # what each held, and built again as its output
    baseline = _ImportsOnly.remote()
    base = private_mib(ray.get(baseline.pid.remote()))
    ray.kill(baseline)
    # Resting, a holder is the baseline process plus little: Arrow's pool and the C heap handed back
    # what the exchange freed (without the release a holder keeps about its share twice over or more).
    assert _wait_for(lambda: all(private_mib(p) < base + 2 * share for p in pids)), (
        base, share, [private_mib(p) for p in pids])


def test_holders_raise_the_stores_error_and_leave_no_actor(exchange_mode):
    exchange_mode.shuffle_exchange = "actor_memory"
    exchange_mode.shuffle_holders_keepalive_s = 600
    bridge.range(10_000, override_num_blocks=4).random_shuffle(num_blocks=4).materialize()
    assert _alive_holders()  # kept: the failing exchange below takes them, and stops them
    # A function whose output type depends on its block (from_arrow refuses such parts up front).
    ds = bridge.range(2000, override_num_blocks=2).map_batches(
        lambda b: {"x": b["id"] if b["id"][0] == 0 else b["id"].astype(str)})
    with pytest.raises(SchemaMismatchError, match="x: int64 vs x: string"):
        ds.random_shuffle(num_blocks=4).materialize()
    assert all(a["State"] == "DEAD" for a in _holders())


def _refs_and_metas(rows: int, blocks: int) -> tuple[list, list]:
    bundles = list(bridge.range(rows, override_num_blocks=blocks).materialize().iter_internal_ref_bundles())
    return [r for b in bundles for r in b.refs], [m for b in bundles for m in b.metas]


@ray.remote(num_cpus=0)
def _kill_the_holders_once_up(count: int) -> int:
    """Stop the live holders from outside, as a node losing them would (waits for them to be up).

    SIGTERM (and ``exit_actor`` below) rather than SIGKILL / ``os._exit``: the holders' pending calls fail
    with RayActorError either way, which is what the exchange handles, and the raylet sees clean exits.
    (The mid-suite driver exits once blamed on these kills came from ``ray.cancel`` in the exchange
    itself, see bridge/ops/held_exchange.py.)
    """
    deadline = time.monotonic() + 60
    alive: list[dict] = []
    while time.monotonic() < deadline and len(alive) < count:
        alive = [a for a in _holders() if a["State"] == "ALIVE"]
        time.sleep(0.05)
    for actor in alive:
        os.kill(actor["Pid"], signal.SIGTERM)
    return len(alive)


def test_a_holder_dying_while_rows_arrive_reruns_the_exchange_through_the_store(exchange_mode, tmp_path):
    once = tmp_path / "killed"

    def map_then_kill_the_holders(block, index, n_out, seed):
        if index == 3 and not once.exists():  # the run through the store maps block 3 again
            once.touch()
            assert ray.get(_kill_the_holders_once_up.remote(2)) == 2
        return _shuffle_map(block, index, n_out, seed)

    refs, metas = _refs_and_metas(30_000, 6)
    exchange_mode.shuffle_exchange = "actor_memory"
    with pytest.warns(RuntimeWarning, match="shuffle holder died"):
        out = held_exchange.run_exchange(map_then_kill_the_holders, (3, 5), _shuffle_reduce, (5,), refs, metas, 3,
                                         exchange_mode)
    ids = sorted(i for b in out for r in b.refs for i in ray.get(r).column("id").to_pylist())
    assert ids == list(range(30_000))
    assert refs == []


def test_a_holder_dying_while_building_its_output_raises_with_a_hint(exchange_mode):
    def reduce_or_die(pieces, index, seed):
        if ray.get_runtime_context().get_actor_id() is not None:
            ray.actor.exit_actor()  # a holder gone mid-reduce
        return _shuffle_reduce(pieces, index, seed)

    refs, metas = _refs_and_metas(30_000, 6)
    exchange_mode.shuffle_exchange = "actor_memory"
    with pytest.raises(BridgeError, match="holder died while building its output") as info:
        held_exchange.run_exchange(_shuffle_map, (3, 5), reduce_or_die, (5,), refs, metas, 3, exchange_mode)
    assert "shuffle_exchange = 'object_store'" in str(info.value)
    assert all(a["State"] == "DEAD" for a in _holders())


def test_auto_uses_holders_when_the_input_outgrows_half_the_store_and_fits_the_budget(exchange_mode):
    store = bridge._ray.object_store_capacity()
    exchange_mode.shuffle_exchange = "auto"
    exchange_mode.shuffle_memory_budget = 4 * store

    def metas(total: int) -> list[BlockMetadata]:
        return [BlockMetadata(num_rows=1, size_bytes=total // 4, schema=None) for _ in range(4)]

    assert not held_exchange._use_holders(metas(store // 4), 8, exchange_mode)
    assert held_exchange._use_holders(metas(2 * store), 8, exchange_mode)
    assert not held_exchange._use_holders(metas(2 * store), 1, exchange_mode)
    exchange_mode.shuffle_memory_budget = store
    assert not held_exchange._use_holders(metas(2 * store), 8, exchange_mode)  # spills instead
    exchange_mode.shuffle_exchange = "object_store"
    assert not held_exchange._use_holders(metas(2 * store), 8, exchange_mode)
    exchange_mode.shuffle_exchange = "in the air"
    with pytest.raises(ValueError, match="shuffle_exchange must be one of"):
        held_exchange._use_holders(metas(2 * store), 8, exchange_mode)


def test_auto_keeps_the_task_exchange_for_few_large_pieces_below_most_of_the_store(exchange_mode):
    store = bridge._ray.object_store_capacity()
    exchange_mode.shuffle_exchange = "auto"
    exchange_mode.shuffle_memory_budget = 4 * store
    total = int(0.7 * store)

    def metas(blocks: int) -> list[BlockMetadata]:
        return [BlockMetadata(num_rows=1, size_bytes=total // blocks, schema=None) for _ in range(blocks)]

    pieces_of_large = int((total / held_exchange.LARGE_PIECE_BYTES) ** 0.5) // 2  # blocks = partitions
    assert not held_exchange._use_holders(metas(pieces_of_large), pieces_of_large, exchange_mode)
    many = 4 * pieces_of_large + 50  # pieces below LARGE_PIECE_BYTES: the holders, as above half the store
    assert held_exchange._use_holders(metas(many), many, exchange_mode)
    # Above LARGE_PIECES_STORE_FRACTION the task exchange would spill most of it: holders whatever the pieces.
    big = [BlockMetadata(num_rows=1, size_bytes=int(0.9 * store) // 2, schema=None) for _ in range(2)]
    assert held_exchange._use_holders(big, 2, exchange_mode)
