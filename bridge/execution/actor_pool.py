"""The actor-pool operator: callable classes in long-lived Ray actors.

``ds.map_batches(Cls, concurrency=(1, 4), num_gpus=1)`` constructs ``Cls`` once
per actor (load a model once), then sends it batches.  The pool starts ``min``
actors, adds one while input waits and every actor is saturated, releases idle
ones, sends each batch to the least-loaded actor, restarts actors that die and
re-runs their batches (each input block is emitted exactly once, in order).

Upstream read/map tasks keep streaming while the actors compute: before the
run, :func:`fit_pools_to_cluster` makes the pools leave CPUs for the plan's
tasks, so a 2-CPU machine never deadlocks with every CPU held by an idle actor
waiting for input that no task can produce.

Example:
    >>> import bridge
    >>> class AddOne:
    ...     def __init__(self):
    ...         self.offset = 1  # e.g. load a model here, once per actor
    ...     def __call__(self, batch):
    ...         return {"id": batch["id"] + self.offset}
    >>> bridge.range(4).map_batches(AddOne, concurrency=2).take_all()
    [{'id': 1}, {'id': 2}, {'id': 3}, {'id': 4}]
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import itertools
import logging
import os
import time
from typing import Any

import ray

from bridge.block import Block, BlockMetadata
from bridge.context import DataContext
from bridge.errors import BridgeError, StallError
from bridge.execution.actor_sizing import fit_pools_to_cluster, pool_size
from bridge.execution.bundle import RefBundle
from bridge.execution.operators import PhysicalOp, run_block_transform
from bridge.execution.transform import BlockTransform, TaskContext, UserCallLock, set_user_call_lock
from bridge.plan.logical import MapLike

logger = logging.getLogger(__name__)

#: Failures that mean "the actor died", not "the user's code raised": re-run the batch.
_ACTOR_FAILURES: tuple[type[BaseException], ...] = (
    ray.exceptions.RayActorError,
    ray.exceptions.ActorUnavailableError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.OutOfMemoryError,
    ray.exceptions.ObjectLostError,
)
#: An actor idle this long is released while more than ``min`` are alive.
IDLE_RELEASE_S = 5.0
#: Warn when no actor has started after this long (resources the cluster lacks).
START_WARN_S = 60.0


@ray.remote(concurrency_groups={"control": 1})  # type: ignore[call-overload]  # Ray's stub lacks it
class _PoolWorker:
    """One actor of a pool: holds the (fused) transform and the user's instance."""

    def __init__(self, transform: BlockTransform, op_name: str) -> None:
        self.transform = transform
        self.op_name = op_name
        # Ray Data's contract: a synchronous __call__ runs on one thread at a time, whatever the
        # actor's max_concurrency (user code keeps unguarded state: a model, a counter, a CUDA stream).
        # Only a class whose __call__ is a coroutine function opts into concurrent calls.
        # The lock is held around each call of user code only (call_user_fn), so with the actor's
        # second thread the next batch is fetched, sliced and formatted (for torch: copied to the
        # GPU) while this one runs, and its output converted while the next one runs.
        user = transform.user
        concurrent = user is not None and user.is_async_class
        self.lock = None if concurrent else UserCallLock()
        set_user_call_lock(self.lock)

    def ready(self) -> int:
        # Running the transform over no blocks constructs the user's class (UserFn.resolve),
        # so an error in __init__ surfaces here, before any batch is sent.
        list(self.transform(iter(()), TaskContext(-1, self.op_name)))
        return os.getpid()

    @ray.method(concurrency_group="control")
    def user_call(self) -> tuple[int, float] | None:
        """``(input batch, seconds in user code)`` of the call running user code now, if any.

        Answered on its own thread, so a call hung in user code does not hold the answer back.
        """
        holder = None if self.lock is None else self.lock.holder
        return None if holder is None else (holder[0], time.time() - holder[1])

    @ray.method(num_returns=2)
    def run(self, index: int, slices: list[tuple[int, int]] | None, *blocks: Block) -> tuple[Block, BlockMetadata]:
        if slices is not None:
            # Slicing here is zero-copy: the driver never splits blocks with extra tasks.
            blocks = tuple(b.slice(offset, length) for b, (offset, length) in zip(blocks, slices))
        return run_block_transform(self.transform, self.op_name, index, None, blocks)


def _read_quietly(ref: ray.ObjectRef) -> None:
    """Consume a finished call's result whose error was already reported another way."""
    try:
        ray.get(ref, timeout=5)
    except Exception:  # noqa: BLE001 - the error was reported through the call's other return
        pass


@dataclasses.dataclass
class _WorkItem:
    """One call's input: block refs, with the (offset, length) of each to use when batching."""

    refs: list[ray.ObjectRef]
    slices: list[tuple[int, int]] | None
    num_rows: int
    size_bytes: int

    @classmethod
    def whole(cls, bundle: RefBundle) -> _WorkItem:
        return cls(list(bundle.refs), None, bundle.num_rows, bundle.size_bytes)


class _Actor:
    """Driver-side bookkeeping of one actor."""

    def __init__(self, handle: Any, ready_ref: ray.ObjectRef) -> None:
        self.handle = handle
        self.ready_ref = ready_ref
        self.ready = False
        self.in_flight: list[ray.ObjectRef] = []  # meta refs, in submission order
        self.started_at = time.time()
        self.ready_at: float | None = None
        self.idle_since = time.time()
        self.busy_s = 0.0
        self.pid: int | None = None
        #: When the call at the head of ``in_flight`` (the one running) started.
        self.head_since = time.time()


class ActorPoolOp(PhysicalOp):
    """Runs a map-like transform in an autoscaling pool of actors, one batch per call."""

    uses_actors = True

    def __init__(self, name: str, deps: list[PhysicalOp], op: MapLike, ctx: DataContext) -> None:
        super().__init__(name, deps)
        self.ctx = ctx
        self.transform = op.transform
        remote = dict(op.ray_remote_args)
        self.max_in_flight = int(remote.pop("max_tasks_in_flight_per_actor", 4))
        self.user_retries = int(remote.pop("max_retries", ctx.max_user_retries))
        self.max_restarts = int(remote.pop("max_restarts", max(4 * ctx.max_task_retries, 4)))
        remote.pop("compute", None)
        remote.pop("retry_exceptions", None)
        self.remote_args = remote
        self.cpus_explicit = op.num_cpus is not None
        self.num_cpus = float(op.num_cpus if op.num_cpus is not None else 1)
        self.num_gpus = float(op.num_gpus or 0)
        self.min_actors, self.max_actors = pool_size(name, op.concurrency)
        self.min_rows = op.min_rows_per_bundle
        self.notes: list[str] = []

        self._pending: collections.deque[tuple[int, _WorkItem]] = collections.deque()
        self._retry: list[tuple[int, int, _WorkItem]] = []  # heap: (index, seq, item)
        self._seq = itertools.count()
        #: Rows not yet cut into a batch: [block ref, metadata, first unused row].
        self._carry: collections.deque[list[Any]] = collections.deque()
        self._carry_rows = 0
        self._empty_seen: tuple[ray.ObjectRef, BlockMetadata] | None = None
        self._counter = itertools.count()
        self._actors: dict[int, _Actor] = {}
        self._ids = itertools.count()
        self._starting: dict[ray.ObjectRef, int] = {}
        #: meta ref -> (index, block ref, input, actor id)
        self._running: dict[ray.ObjectRef, tuple[int, ray.ObjectRef, _WorkItem, int]] = {}
        self._attempts: dict[int, int] = collections.defaultdict(int)
        self._user_failures: dict[int, int] = collections.defaultdict(int)
        self._avg_out = 0.0
        self._started = False
        self._created_at = time.time()
        self._warned_start = False
        self.restarts = 0
        self.peak_actors = 0
        self._retired_busy_s = 0.0
        self._retired_alive_s = 0.0
        self._startup_s: list[float] = []

    # ------------------------------------------------------------------ inputs
    def add_input(self, bundle: RefBundle, input_index: int) -> None:
        if not self.min_rows:
            self._pending.append((next(self._counter), _WorkItem.whole(bundle)))
            return
        # With a batch_size every call gets exactly that many rows: small blocks are
        # combined and large ones cut, so batches spread over actors and stream.
        for ref, meta in zip(bundle.refs, bundle.metas):
            if meta.num_rows == 0:
                self._empty_seen = self._empty_seen or (ref, meta)
                continue
            self._carry.append([ref, meta, 0])
            self._carry_rows += meta.num_rows
        while self._carry_rows >= self.min_rows:
            self._cut(self.min_rows)

    def _cut(self, rows: int) -> None:
        refs, slices, size, need = [], [], 0.0, rows
        while need > 0:
            piece = self._carry[0]
            ref, meta, offset = piece
            take = min(meta.num_rows - offset, need)
            refs.append(ref)
            slices.append((offset, take))
            size += meta.size_bytes * take / meta.num_rows
            need -= take
            if offset + take == meta.num_rows:
                self._carry.popleft()
            else:
                piece[2] = offset + take
        self._carry_rows -= rows
        self._pending.append((next(self._counter), _WorkItem(refs, slices, rows, int(size))))

    def mark_inputs_done(self, input_index: int) -> None:
        super().mark_inputs_done(input_index)
        if self._carry_rows:
            self._cut(self._carry_rows)
        elif self._empty_seen is not None and self._nothing_dispatched_yet():
            # Only empty blocks came: one call still runs, so the output keeps a schema.
            ref, meta = self._empty_seen
            self._pending.append((next(self._counter), _WorkItem([ref], None, 0, meta.size_bytes)))
        self._empty_seen = None

    def _nothing_dispatched_yet(self) -> bool:
        return not self._pending and not self._running and self.stats.num_tasks == 0 and not self._done

    def _has_pending_inputs(self) -> bool:
        return bool(self._pending) or bool(self._retry) or self._carry_rows > 0

    def pending_input_bytes(self) -> int:
        carried = sum(m.size_bytes * (m.num_rows - off) // max(m.num_rows, 1) for _, m, off in self._carry)
        return sum(w.size_bytes for _, w in self._pending) + sum(w.size_bytes for _, _, w in self._retry) + carried

    # ------------------------------------------------------------------ actors
    def _actor_options(self) -> dict[str, Any]:
        # Two threads: one runs the user's code, the other prepares the next call (see _PoolWorker).
        # A GPU actor gets a third: two batches are copied to the host's pinned memory at once.
        opts: dict[str, Any] = {"max_restarts": 0, "max_task_retries": 0,
                                "max_concurrency": 3 if self.num_gpus else 2}
        opts.update(self.remote_args)
        opts["num_cpus"] = self.num_cpus
        if self.num_gpus:
            opts["num_gpus"] = self.num_gpus
        return opts

    def _start_actor(self) -> None:
        handle = _PoolWorker.options(**self._actor_options()).remote(  # type: ignore[attr-defined]
            self.transform, self.name)
        key = next(self._ids)
        ready_ref = handle.ready.remote()
        self._actors[key] = _Actor(handle, ready_ref)
        self._starting[ready_ref] = key
        self.peak_actors = max(self.peak_actors, len(self._actors))

    def _release(self, key: int, *, kill: bool = True) -> None:
        actor = self._actors.pop(key, None)
        if actor is None:
            return
        self._starting.pop(actor.ready_ref, None)
        if actor.ready_at is not None:
            self._retired_alive_s += time.time() - actor.ready_at
            self._retired_busy_s += actor.busy_s
        if kill:
            try:
                ray.kill(actor.handle)
            except Exception:  # noqa: BLE001 - an actor that is already gone cannot be killed
                pass

    def tick(self) -> None:
        if self.aborted:
            return
        if not self._started:
            self._started = True
            for _ in range(self.min_actors):
                self._start_actor()
        now = time.time()
        ready = [a for a in self._actors.values() if a.ready]
        queued = len(self._pending) + len(self._retry)
        free_slots = sum(self.max_in_flight - len(a.in_flight) for a in ready)
        # Scale up: input waits, every actor is saturated, nothing is already starting.
        if queued > free_slots and not self._starting and len(self._actors) < self.max_actors:
            self._start_actor()
        # Scale down: idle actors beyond min, or every idle actor once no input can come.
        finished_input = self.all_inputs_done() and not self._has_pending_inputs()
        for key, a in list(self._actors.items()):
            if not a.ready or a.in_flight:
                continue
            if finished_input or (len(self._actors) > self.min_actors and now - a.idle_since > IDLE_RELEASE_S
                                  and not queued):
                self._release(key)
        self._check_stalled(now)
        if not ready and self._starting and not self._warned_start and now - self._created_at > START_WARN_S:
            self._warned_start = True
            logger.warning(
                "%s: no actor has started after %.0fs (each asks for %s); the cluster may lack these "
                "resources (ray.available_resources(): %s)", self.name, START_WARN_S, self._actor_options(),
                ray.available_resources())
        self._update_stats()

    def _check_stalled(self, now: float) -> None:
        """An actor stuck in one call longer than ``DataContext.stall_timeout_s`` fails the run, by name."""
        limit = self.ctx.stall_timeout_s
        for key, a in self._actors.items():
            if not a.in_flight or now - a.head_since <= limit:
                continue
            # Ray may start an actor's calls out of order: ask which batch is in user code.
            running = self._user_call(a)
            if running is not None and running[1] <= limit:
                a.head_since = now - running[1]  # busy, but not on one call for too long
                continue
            if running is not None:
                index, elapsed = running
            else:
                index = self._running[a.in_flight[0]][0] if a.in_flight[0] in self._running else -1
                elapsed = now - a.head_since
            msg = (f"{self.name}: actor {key} (pid {a.pid}) has been running one call on input batch {index} "
                   f"for {elapsed:.0f}s, over the stall timeout of {limit:g}s; "
                   f"{len(a.in_flight) - 1} more batch(es) wait behind it")
            hint = ("the user's __call__ is hung (a deadlock, a blocking read, a lost GPU) — check its logs; if it "
                    "is only slow, raise DataContext.get_current().stall_timeout_s")
            raise StallError(msg, hint)

    @staticmethod
    def _user_call(actor: _Actor) -> tuple[int, float] | None:
        try:
            answer: tuple[int, float] | None = ray.get(actor.handle.user_call.remote(), timeout=10)
        except Exception:  # noqa: BLE001 - a dead or unreachable actor: fall back to the driver's view
            return None
        return answer

    # ------------------------------------------------------------------ work
    def _pick_actor(self) -> int | None:
        best, best_load = None, self.max_in_flight
        for key, a in self._actors.items():
            if a.ready and len(a.in_flight) < best_load:
                best, best_load = key, len(a.in_flight)
        return best

    def can_dispatch(self) -> bool:
        return (bool(self._pending) or bool(self._retry)) and not self.aborted and self._pick_actor() is not None

    def dispatch(self) -> None:
        key = self._pick_actor()
        assert key is not None
        if self._retry:
            index, _, item = heapq.heappop(self._retry)
        else:
            index, item = self._pending.popleft()
        actor = self._actors[key]
        block_ref, meta_ref = actor.handle.run.remote(index, item.slices, *item.refs)
        if not actor.in_flight:
            actor.head_since = time.time()
        actor.in_flight.append(meta_ref)
        self._running[meta_ref] = (index, block_ref, item, key)

    def waitables(self) -> list[ray.ObjectRef]:
        return list(self._running) + list(self._starting)

    def num_running(self) -> int:
        return len(self._running)

    def running_bytes(self) -> int:
        return sum(int(self._avg_out or w.size_bytes) for _, _, w, _ in self._running.values())

    def on_ready(self, ref: ray.ObjectRef) -> None:
        if ref in self._starting:
            self._on_actor_ready(ref)
            return
        index, block_ref, item, key = self._running.pop(ref)
        actor = self._actors.get(key)
        try:
            meta: BlockMetadata = ray.get(ref)
        except _ACTOR_FAILURES as err:
            self._on_actor_death(key, err, ref, index, item)
            return
        except ray.exceptions.RayTaskError as err:
            # Read the failed call's other return too: an error object dropped unread makes Ray
            # print "Unhandled error" and the worker's traceback to the user's terminal.
            _read_quietly(block_ref)
            self._user_failures[index] += 1
            if actor is not None:
                actor.in_flight.remove(ref)
            if self._user_failures[index] > self.user_retries:
                raise
            logger.warning("%s: retrying input block %d after a user error (%d of %d): %s", self.name, index,
                           self._user_failures[index], self.user_retries, err)
            heapq.heappush(self._retry, (index, next(self._seq), item))
            return
        if actor is not None:
            actor.in_flight.remove(ref)
            actor.head_since = time.time()
            if meta.exec_stats is not None:
                actor.busy_s += meta.exec_stats.wall_s
            if not actor.in_flight:
                actor.idle_since = time.time()
        self.stats.record(meta)
        self._avg_out += (meta.size_bytes - self._avg_out) / self.stats.num_tasks
        self._emit(index, RefBundle([block_ref], [meta]), self.ctx.preserve_order)

    def _on_actor_ready(self, ref: ray.ObjectRef) -> None:
        key = self._starting.pop(ref)
        actor = self._actors.get(key)
        try:
            pid = ray.get(ref)
        except _ACTOR_FAILURES as err:
            self._replace_dead_actor(key, err)
            return
        except ray.exceptions.RayTaskError:
            # The user's __init__ raised: fail fast, it would raise again in every actor.
            self.abort()
            raise
        if actor is not None:
            actor.ready = True
            actor.pid = pid
            actor.ready_at = actor.idle_since = time.time()
            self._startup_s.append(actor.ready_at - actor.started_at)

    def _on_actor_death(self, key: int, err: BaseException, ref: ray.ObjectRef, index: int, item: _WorkItem) -> None:
        actor = self._actors.get(key)
        # Only the batch the actor was running when it died is charged a retry; the ones
        # queued behind it never started.
        running_first = actor is None or not actor.in_flight or actor.in_flight[0] == ref
        if actor is not None and ref in actor.in_flight:
            actor.in_flight.remove(ref)
        if running_first:
            self._attempts[index] += 1
        if self._attempts[index] > max(self.ctx.max_task_retries, 1):
            msg = (f"{self.name}: input block {index} killed its actor {self._attempts[index]} times "
                   f"(last: {type(err).__name__}: {err})")
            raise BridgeError(msg, "the batch likely runs out of memory: lower batch_size, or give each actor "
                              "more memory with memory=<bytes> in map_batches") from err
        heapq.heappush(self._retry, (index, next(self._seq), item))
        if actor is not None:
            self._replace_dead_actor(key, err)

    def _replace_dead_actor(self, key: int, err: BaseException) -> None:
        if key not in self._actors:
            return
        self._release(key, kill=False)
        self.restarts += 1
        if self.restarts > self.max_restarts:
            msg = f"{self.name}: actors died {self.restarts} times (last: {type(err).__name__}: {err})"
            raise BridgeError(msg, "check the actor logs for the cause (out of memory, a crash in native code); "
                              "raise max_restarts=<n> in map_batches to tolerate more") from err
        logger.warning("%s: an actor died (%s); starting a replacement and re-running its batches",
                       self.name, type(err).__name__)
        if len(self._actors) < max(self.min_actors, 1) or self._has_pending_inputs() or self._running:
            self._start_actor()

    # ------------------------------------------------------------------ stats and teardown
    def _update_stats(self) -> None:
        now = time.time()
        alive_s = self._retired_alive_s + sum(now - a.ready_at for a in self._actors.values() if a.ready_at)
        busy_s = self._retired_busy_s + sum(a.busy_s for a in self._actors.values())
        span = (self.stats.last_end or now) - (self.stats.first_start or now)
        self.stats.extra.update({
            "actors_alive": sum(1 for a in self._actors.values() if a.ready),
            "actors_peak": self.peak_actors,
            "pool": f"{self.min_actors}-{self.max_actors}",
            "cpus_per_actor": round(self.num_cpus, 3),
            "gpus_per_actor": self.num_gpus,
            "batches": self.stats.num_tasks,
            "busy_fraction": min(busy_s / alive_s, 1.0) if alive_s > 0 else 0.0,
            "rows_per_s": round(self.stats.rows_out / span) if span > 0 else 0,
            "restarts": self.restarts,
            "actor_startup_s": round(sum(self._startup_s) / len(self._startup_s), 2) if self._startup_s else 0.0,
        })

    def abort(self) -> None:
        super().abort()
        self._running.clear()
        self._pending.clear()
        self._retry.clear()
        self._carry.clear()
        self._carry_rows = 0
        self.shutdown()

    def shutdown(self) -> None:
        self._update_stats()
        for key in list(self._actors):
            self._release(key)
        self._running.clear()


def build_actor_pool(group: list[MapLike], deps: list[PhysicalOp], ctx: DataContext) -> PhysicalOp:
    (op,) = group  # actor operators are never fused (planner._fusable)
    return ActorPoolOp(op.name, deps, op, ctx)


__all__ = ["ActorPoolOp", "build_actor_pool", "fit_pools_to_cluster"]
