"""An exchange whose pieces wait in the reducers' memory instead of the object store.

The task exchange (:func:`bridge.ops.exchange.run_map` / ``run_reduce``) keeps every
map piece in the object store until its reducer runs (it packs a map task's pieces
into one object only for data well within the store).  When the data is larger than
the store, the store writes those pieces to disk and reads them back, on top of the
output it must spill anyway, and the cost grows with the number of pieces (blocks x
partitions).

Here the reducers are *holders*, one actor per CPU (at most :data:`MAX_HOLDERS`),
each owning a contiguous range of output partitions.  A map task takes a few
consecutive blocks, cuts each exactly as in the task exchange and sends each holder
the rows of its partitions in one table; the holder copies them into its own memory
at once, so a piece sits in the store only while it travels (the driver keeps a
bounded number of map tasks in flight).  When every map task has finished,
each holder builds its partitions with the same reduce function, so only the output
goes to the store.  With the same seeds the output is the same, row for row, as the
task exchange's: pieces are kept by map index and concatenated in that order.

A holder is a worker process of its own: starting one is a new process and its imports,
where a map task runs in a worker Ray already has.  The holders of an exchange that
finished wait, empty and with their memory handed back, for the next exchange of this
driver (a shuffle per epoch) for ``DataContext.shuffle_holders_keepalive_s``, then stop;
an exchange that fails or is interrupted stops its holders at once.

:func:`run_exchange` picks: the task exchange while the data fits comfortably in
the object store (it is faster there, and it can be rebuilt by lineage), the holders
when it does not but fits in the holders' memory budget, the task exchange again
(spilling) when it fits in neither.  ``DataContext.shuffle_exchange`` forces one.
If a holder dies while rows arrive, the exchange runs again through the object store,
with a warning; if one dies while building its output, the error says what to change.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import math
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import ray

from bridge import _ray_arrow
from bridge.block import Block, BlockMetadata, concat_same_schema
from bridge.context import DataContext
from bridge.execution.bundle import RefBundle
from bridge.ops import exchange

#: Holders per exchange at most (each is a process holding its share of the data).
MAX_HOLDERS = 32

#: The task exchange is used while the input takes at most this fraction of the object store.
STORE_FRACTION = 0.5

#: ... or at most this fraction when its map pieces are large (at least ``LARGE_PIECE_BYTES`` on
#: average, pieces being ``blocks x partitions``): few large pieces spill and come back cheaply,
#: and the task exchange then beats the holders' start-up and copies (measured in
#: ``integration/bench/RESULTS.md``, shuffle_15_blocks at small scale).
LARGE_PIECES_STORE_FRACTION = 0.8
LARGE_PIECE_BYTES = 512 * 1024

#: Default memory the holders may take together, as a fraction of the cluster's ``memory`` resource.
MEMORY_FRACTION = 0.5

#: Seconds an idle holder may take to answer the next exchange before it counts as lost
#: (on a node that died, the call would wait until the cluster notices).
START_TIMEOUT_S = 30.0

#: Bytes of input one map task takes at least / at most (consecutive blocks are grouped).
MIN_TASK_BYTES = 8 * 1024**2
MAX_TASK_BYTES = 128 * 1024**2

EXCHANGES = ("auto", "object_store", "actor_memory")


def _to_heap(block: Block) -> Block:
    """A copy of ``block`` in this process's memory (one memcpy through the Arrow IPC stream format).

    Blocks handed to a Ray worker are read in place from the object store; holding one
    would pin its object there.  The stream format keeps every type, extension types,
    per-chunk dictionaries and schema metadata, and writes only a slice's own rows.
    """
    return _ray_arrow.table_from_ipc(_ray_arrow.write_ipc(block))


def _release_memory() -> None:
    """Hand the memory this process freed back to the system (Arrow's pool and the C heap keep it)."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


@ray.remote(num_cpus=0)
class _Holder:
    """Holds the pieces of a contiguous range of output partitions, then reduces each one."""

    def __init__(self, partitions: list[int]) -> None:
        self.start(partitions)

    def start(self, partitions: list[int]) -> None:
        """Take the partitions of a new exchange (a holder kept from the previous one is empty)."""
        self._partitions = partitions
        self._held: dict[int, dict[int, Block]] = {j: {} for j in partitions}

    def rest(self) -> None:
        """Drop anything left and give the memory back: an idle holder is a small process."""
        self._partitions, self._held = [], {}
        _release_memory()

    def add(self, tables: list[Block], runs: list[tuple[int, list[int]]]) -> int:
        """Keep rows of map tasks: ``tables[k]`` holds block ``runs[k][0]``'s rows for this holder,
        ``runs[k][1][p]`` rows of partition ``partitions[p]`` after one another."""
        rows = 0
        for table, (index, counts) in zip(tables, runs):
            table = _to_heap(table)
            offset = 0
            for j, n in zip(self._partitions, counts):
                # A retried map task sends the same rows again: keyed by block index, they replace.
                self._held[j][index] = table.slice(offset, n)
                offset += n
            rows += table.num_rows
        return rows

    def reduce(self, j: int, reduce_fn: Callable[..., Block], args: Any) -> tuple[Block, BlockMetadata]:
        held = self._held.pop(j)
        pieces = [held[i] for i in sorted(held)]
        del held
        return exchange.reduce_with_stats(reduce_fn, pieces, j, args)


@ray.remote
def _held_map_task(map_fn: Callable[..., list[Block]], n_out: int, indices: list[int], holders: list[Any],
                   spans: list[tuple[int, int]], args: tuple[Any, ...], *blocks: Block) -> int:
    tables: list[list[Block]] = [[] for _ in holders]
    runs: list[list[tuple[int, list[int]]]] = [[] for _ in holders]
    for index, block in zip(indices, blocks):
        pieces = map_fn(block, index, *args)
        assert len(pieces) == n_out, (len(pieces), n_out)
        for h, (lo, hi) in enumerate(spans):
            # Slices of one table (exchange.split_by_partition): concatenating them copies nothing.
            tables[h].append(concat_same_schema(pieces[lo:hi]))
            runs[h].append((index, [p.num_rows for p in pieces[lo:hi]]))
    del blocks
    acks = [holder.add.remote(t, r) for holder, t, r in zip(holders, tables, runs)]
    return sum(ray.get(acks))


def _groups(metas: Sequence[BlockMetadata], target: int) -> list[list[int]]:
    """Consecutive block indices in groups of about ``target`` bytes (one map task each)."""
    groups: list[list[int]] = []
    size = 0
    for i, m in enumerate(metas):
        if not groups or size + m.size_bytes > target:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += m.size_bytes
    return groups


class _IdleHolders:
    """Holders of finished exchanges, waiting for this driver's next one; stopped after a keep-alive.

    Handles belong to one Ray session: after a restart of Ray the old ones are forgotten.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self._session: tuple[str, str] | None = None
        self._generation = 0
        self._timer: threading.Timer | None = None

    def _follow_session(self, session: tuple[str, str]) -> None:
        """Forget the handles of another Ray session (its actors went with it); under the lock."""
        if self._session != session:
            self._idle, self._session = [], session

    def _stop_timer(self) -> None:
        """Under the lock."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def take(self, n: int) -> list[Any]:
        """Up to ``n`` idle holders (they may have died since; :func:`_start_holders` checks)."""
        session = _current_session()
        with self._lock:
            self._follow_session(session)
            taken, self._idle = self._idle[:n], self._idle[n:]
            return taken

    def put(self, holders: list[Any], keepalive_s: float) -> None:
        """Keep ``holders`` (empty, their exchange done) for ``keepalive_s`` seconds (``inf``: until released)."""
        if keepalive_s == 0:  # nothing waits, nor do holders kept before
            _kill(holders)
            self.release()
            return
        for holder in holders:
            holder.rest.remote()
        session = _current_session()
        with self._lock:
            self._follow_session(session)
            self._idle.extend(holders)
            excess, self._idle = self._idle[MAX_HOLDERS:], self._idle[:MAX_HOLDERS]
            self._generation += 1
            self._stop_timer()
            if not math.isinf(keepalive_s):
                self._timer = threading.Timer(keepalive_s, self._expire, args=(self._generation,))
                self._timer.name = "raybridge-shuffle-holders-keepalive"
                self._timer.daemon = True
                self._timer.start()
        _kill(excess)

    def _expire(self, generation: int) -> None:
        with self._lock:
            if generation != self._generation:  # used again since: a later timer stops them
                return
            idle, self._idle = self._idle, []
        _kill(idle)

    def release(self) -> int:
        """Stop every idle holder now; returns how many there were."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
            self._stop_timer()
        _kill(idle)
        return len(idle)


def _current_session() -> tuple[str, str]:
    context = ray.get_runtime_context()
    return context.get_job_id(), context.get_node_id()


def _kill(holders: Sequence[Any]) -> None:
    if not holders or not ray.is_initialized():  # a Ray shut down took its actors with it
        return
    for holder in holders:
        try:
            ray.kill(holder)
        except Exception:  # noqa: BLE001 - already gone (its Ray restarted, or it died)
            pass


_IDLE = _IdleHolders()
# Registered after Ray's own exit hook, so it runs first: the idle holders stop while Ray still works.
atexit.register(_IDLE.release)


def release_idle_holders() -> int:
    """Stop the shuffle holders kept for the next exchange (see ``DataContext.shuffle_holders_keepalive_s``).

    Returns how many were stopped.  They stop by themselves after the keep-alive, and with the driver.
    """
    return _IDLE.release()


def _start_holders(spans: list[tuple[int, int]], holders: list[Any]) -> None:
    """Fill ``holders`` with one holder per span: idle ones first (checked alive), new ones for the rest.

    Each holder goes into the list the moment it is the caller's, so that whatever
    interrupts this, the caller's cleanup finds every one.
    """
    holder_cls: Any = _Holder  # a Ray actor class (mypy sees the plain class)
    parts = [list(range(lo, hi)) for lo, hi in spans]
    holders += _IDLE.take(len(spans))
    # Map tasks send rows to holders from other processes, so a reused holder must have its
    # partitions before the first map task starts; a new one gets them in its constructor.
    starts = [holder.start.remote(p) for holder, p in zip(holders, parts)]
    for i, ref in enumerate(starts):
        try:
            ray.get(ref, timeout=START_TIMEOUT_S)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):  # lost while idle
            _kill([holders[i]])
            holders[i] = holder_cls.options(scheduling_strategy="SPREAD").remote(parts[i])
    for i in range(len(holders), len(spans)):
        holders.append(holder_cls.options(scheduling_strategy="SPREAD").remote(parts[i]))


def _holder_spans(n_out: int, n_holders: int) -> list[tuple[int, int]]:
    return [(h * n_out // n_holders, (h + 1) * n_out // n_holders) for h in range(n_holders)]


def _use_holders(metas: Sequence[BlockMetadata], n_out: int, ctx: DataContext) -> bool:
    _check_keepalive(ctx)  # a wrong setting says so whichever exchange runs
    mode = ctx.shuffle_exchange
    if mode not in EXCHANGES:
        raise ValueError(f"DataContext.shuffle_exchange must be one of {EXCHANGES}, got {mode!r}")
    if mode != "auto":
        return mode == "actor_memory" and n_out > 1
    if n_out <= 1:
        return False
    from bridge._ray import object_store_capacity

    total = sum(m.size_bytes for m in metas)
    store = object_store_capacity()
    if total <= STORE_FRACTION * store:
        return False
    if total <= LARGE_PIECES_STORE_FRACTION * store and total >= LARGE_PIECE_BYTES * len(metas) * n_out:
        return False
    budget = ctx.shuffle_memory_budget
    if budget is None:
        budget = int(MEMORY_FRACTION * ray.cluster_resources().get("memory", 0))
    return total <= budget


def run_exchange(
    map_fn: Callable[..., list[Block]], map_args: tuple[Any, ...],
    reduce_fn: Callable[..., Block], reduce_args: tuple[Any, ...],
    refs: list[ray.ObjectRef], metas: Sequence[BlockMetadata], n_out: int, ctx: DataContext,
) -> list[RefBundle]:
    """Map every block into ``n_out`` pieces and reduce each partition, through holders or the store.

    ``map_fn(block, index, *map_args) -> n_out pieces`` and ``reduce_fn(pieces, j, *reduce_args)``
    are the task exchange's functions.  Clears ``refs`` once nothing needs them: the holders'
    exchange keeps them until every map task has finished (a holder that dies before then
    makes the exchange run again through the store; one that dies after raises).
    """
    if _use_holders(metas, n_out, ctx):
        try:
            return _run_held(map_fn, map_args, reduce_fn, reduce_args, refs, metas, n_out, ctx)
        except ray.exceptions.RayActorError as err:
            if not refs:  # a holder died after the inputs were let go: its rows are gone
                from bridge.errors import BridgeError

                raise BridgeError(
                    f"a shuffle holder died while building its output ({type(err).__name__}: {err})",
                    "give the cluster more memory, lower DataContext.shuffle_memory_budget, or set "
                    "DataContext.shuffle_exchange = 'object_store' (slower, spills, rebuilt by lineage)",
                ) from err
            warnings.warn(
                f"a shuffle holder died ({type(err).__name__}); running the exchange again through the "
                "object store (it may spill). Hint: give the cluster more memory or lower "
                "DataContext.shuffle_memory_budget", RuntimeWarning, stacklevel=2)
    pieces = exchange.run_map(map_fn, refs, n_out, ctx, *map_args, metas=metas)
    refs.clear()
    return exchange.run_reduce(reduce_fn, pieces, ctx, *reduce_args)


def _check_keepalive(ctx: DataContext) -> None:
    value = ctx.shuffle_holders_keepalive_s
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise ValueError(
            f"DataContext.shuffle_holders_keepalive_s must be a number of seconds >= 0, got {value!r}. "
            "Hint: 0 stops the holders as each shuffle ends; float('inf') keeps them until "
            "bridge.ops.held_exchange.release_idle_holders()")


def _run_held(
    map_fn: Callable[..., list[Block]], map_args: tuple[Any, ...],
    reduce_fn: Callable[..., Block], reduce_args: tuple[Any, ...],
    refs: list[ray.ObjectRef], metas: Sequence[BlockMetadata], n_out: int, ctx: DataContext,
) -> list[RefBundle]:
    from bridge._ray import cluster_cpus

    cpus = cluster_cpus()
    n_holders = max(1, min(n_out, cpus, MAX_HOLDERS))
    spans = _holder_spans(n_out, n_holders)
    keepalive_s = float(ctx.shuffle_holders_keepalive_s)  # checked by _use_holders
    holders: list[Any] = []
    finished = False
    task = _held_map_task.options(max_retries=ctx.max_task_retries)
    # Fewer, larger map tasks (a few blocks each, several tasks per CPU), and a bounded number
    # in flight, so that pieces travelling to the holders stay in memory.
    total = sum(m.size_bytes for m in metas)
    target = max(MIN_TASK_BYTES, min(MAX_TASK_BYTES, total // (4 * cpus)))
    max_tasks = max(2, 2 * cpus)
    pending: dict[ray.ObjectRef, int] = {}
    outs: list[tuple[ray.ObjectRef, ray.ObjectRef]] = []
    try:
        _start_holders(spans, holders)
        budget = ctx.bytes_in_flight_budget()
        in_flight = 0
        for group in _groups(metas, target):
            size = sum(metas[i].size_bytes for i in group)
            # One task per CPU runs whatever its size; more only while their bytes fit the budget.
            while len(pending) >= max_tasks or (len(pending) >= cpus and in_flight + size > budget):
                done, _ = ray.wait(list(pending), num_returns=1)
                exchange.get_all(done)
                in_flight -= pending.pop(done[0])
            pending[task.remote(map_fn, n_out, group, holders, spans, map_args, *[refs[i] for i in group])] = size
            in_flight += size
        exchange.get_all(list(pending))
        pending.clear()
        refs.clear()  # every row is with the holders now; the inputs may go
        for h, (lo, hi) in enumerate(spans):
            reduce = holders[h].reduce.options(num_returns=2)
            outs += [reduce.remote(j, reduce_fn, reduce_args) for j in range(lo, hi)]
        out_metas = exchange.get_all([m for _, m in outs], also=[b for b, _ in outs])
        finished = True
        return [RefBundle([b], [m]) for (b, _), m in zip(outs, out_metas)]
    finally:
        if finished:  # every partition built and handed over: the holders are empty
            _IDLE.put(holders, keepalive_s)
        else:
            # Killing the holders ends the map tasks still running: each fails at once on its holders'
            # acks.  No ray.cancel of them: a cancel racing the task's own completion trips a fatal check
            # in Ray 2.60's task manager ("Check failed: it != submissible_tasks_.end()") and kills this
            # driver.
            _kill(holders)
