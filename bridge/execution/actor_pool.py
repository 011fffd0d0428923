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

Three parts: :class:`ActorPoolOp` (this module) turns input into calls and results
into output, in order, re-running failed calls; :class:`~bridge.execution.batch_cutter.BatchCutter`
cuts the input into calls of exactly ``batch_size`` rows; :class:`~bridge.execution.pool.ActorPool`
owns the actors, sized by an :class:`~bridge.execution.pool.AutoscalingPolicy`.

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
import heapq
import itertools
import logging
import time

import ray

from bridge.block import BlockMetadata
from bridge.context import DataContext
from bridge.errors import BridgeError
from bridge.execution.actor_sizing import fit_pools_to_cluster, pool_size
from bridge.execution.batch_cutter import BatchCutter, WorkItem
from bridge.execution.bundle import RefBundle
from bridge.execution.operators import PhysicalOp
from bridge.execution.pool import ACTOR_FAILURES, ActorPool, AutoscalingPolicy
from bridge.plan.logical import MapLike

logger = logging.getLogger(__name__)


def _read_quietly(ref: ray.ObjectRef) -> None:
    """Consume a finished call's result whose error was already reported another way."""
    try:
        ray.get(ref, timeout=5)
    except Exception:  # noqa: BLE001 - the error was reported through the call's other return
        pass


class ActorPoolOp(PhysicalOp):
    """Runs a map-like transform in an autoscaling pool of actors, one batch per call."""

    uses_actors = True

    def __init__(self, name: str, deps: list[PhysicalOp], op: MapLike, ctx: DataContext) -> None:
        super().__init__(name, deps)
        self.ctx = ctx
        self.transform = op.make()
        compute = op.compute
        remote = dict(compute.ray_remote_args)
        max_in_flight = int(remote.pop("max_tasks_in_flight_per_actor", 4))
        self.user_retries = int(remote.pop("max_retries", ctx.max_user_retries))
        max_restarts = int(remote.pop("max_restarts", max(4 * ctx.max_task_retries, 4)))
        remote.pop("compute", None)
        remote.pop("retry_exceptions", None)
        min_actors, max_actors = pool_size(name, compute.concurrency)
        self.pool = ActorPool(
            name, self.transform, ctx, scaling=AutoscalingPolicy(min_actors, max_actors),
            num_cpus=float(compute.num_cpus if compute.num_cpus is not None else 1),
            cpus_explicit=compute.num_cpus is not None, num_gpus=float(compute.num_gpus or 0), remote_args=remote,
            max_in_flight=max_in_flight, max_restarts=max_restarts)
        #: With a batch_size every call gets exactly that many rows (small blocks combined, large ones cut).
        self.cutter = BatchCutter(op.min_rows_per_bundle) if op.min_rows_per_bundle else None

        self._pending: collections.deque[tuple[int, WorkItem]] = collections.deque()
        self._retry: list[tuple[int, int, WorkItem]] = []  # heap: (index, seq, item)
        self._seq = itertools.count()
        self._counter = itertools.count()
        #: meta ref -> (index, block ref, input, actor id)
        self._running: dict[ray.ObjectRef, tuple[int, ray.ObjectRef, WorkItem, int]] = {}
        self._attempts: dict[int, int] = collections.defaultdict(int)
        self._user_failures: dict[int, int] = collections.defaultdict(int)
        self._avg_out = 0.0
        self._started = False

    # ------------------------------------------------------------------ inputs
    def add_input(self, bundle: RefBundle, input_index: int) -> None:
        items = [WorkItem.whole(bundle)] if self.cutter is None else self.cutter.add(bundle)
        self._pending.extend((next(self._counter), item) for item in items)

    def mark_inputs_done(self, input_index: int) -> None:
        super().mark_inputs_done(input_index)
        if self.cutter is not None:
            items = self.cutter.finish(keep_schema=self._nothing_dispatched_yet())
            self._pending.extend((next(self._counter), item) for item in items)

    def starting_cores(self) -> float:
        """While none of the pool's actors is ready: a whole core at least for each, whatever its ``num_cpus``.

        A starting actor imports its libraries and builds its model, on a core of its own; Ray charges it
        only the ``num_cpus`` it asked for, often a fraction. 0 once one is ready.
        """
        actors = self.pool.actors.values()
        if not actors or any(a.ready for a in actors):
            return 0.0
        return len(actors) * max(self.pool.num_cpus, 1.0)

    def first_calls_unfed(self) -> int:
        """One call per starting actor: those the queued input does not cover yet."""
        return max(len(self.pool.actors) - len(self._pending) - len(self._retry), 0)

    def _nothing_dispatched_yet(self) -> bool:
        return not self._pending and not self._running and self.stats.num_tasks == 0 and not self._done

    def _has_pending_inputs(self) -> bool:
        carried = self.cutter is not None and self.cutter.carry_rows > 0
        return bool(self._pending) or bool(self._retry) or carried

    def pending_input_bytes(self) -> int:
        carried = 0 if self.cutter is None else self.cutter.pending_bytes()
        return sum(w.size_bytes for _, w in self._pending) + sum(w.size_bytes for _, _, w in self._retry) + carried

    # ------------------------------------------------------------------ actors
    def tick(self) -> None:
        if self.aborted:
            return
        if not self._started:
            self._started = True
            for _ in range(self.pool.scaling.min_actors):
                self.pool.start()
        now = time.time()
        finished_input = self.all_inputs_done() and not self._has_pending_inputs()
        self.pool.scale(queued=len(self._pending) + len(self._retry), finished_input=finished_input, now=now)
        self.pool.check_stalled(now, self._batch_of)
        self.pool.warn_if_none_started(now)
        self._update_stats()

    def _batch_of(self, meta_ref: ray.ObjectRef) -> int:
        return self._running[meta_ref][0] if meta_ref in self._running else -1

    def _work_left(self) -> bool:
        return self._has_pending_inputs() or bool(self._running)

    # ------------------------------------------------------------------ work
    def can_dispatch(self) -> bool:
        return (bool(self._pending) or bool(self._retry)) and not self.aborted and self.pool.pick() is not None

    def dispatch(self) -> None:
        key = self.pool.pick()
        assert key is not None
        if self._retry:
            index, _, item = heapq.heappop(self._retry)
        else:
            index, item = self._pending.popleft()
        block_ref, meta_ref = self.pool.submit(key, index, item.slices, item.refs)
        self._running[meta_ref] = (index, block_ref, item, key)

    def waitables(self) -> list[ray.ObjectRef]:
        return list(self._running) + self.pool.starting_refs()

    def num_running(self) -> int:
        return len(self._running)

    def running_bytes(self) -> int:
        return sum(int(self._avg_out or w.size_bytes) for _, _, w, _ in self._running.values())

    def on_ready(self, ref: ray.ObjectRef) -> None:
        if self.pool.is_starting(ref):
            try:
                self.pool.on_started(ref, work_left=self._work_left())
            except ray.exceptions.RayTaskError:
                # The user's __init__ raised: fail fast, it would raise again in every actor.
                self.abort()
                raise
            return
        index, block_ref, item, key = self._running.pop(ref)
        try:
            meta: BlockMetadata = ray.get(ref)
        except ACTOR_FAILURES as err:
            self._on_actor_death(key, err, ref, index, item)
            return
        except ray.exceptions.RayTaskError as err:
            # Read the failed call's other return too: an error object dropped unread makes Ray
            # print "Unhandled error" and the worker's traceback to the user's terminal.
            _read_quietly(block_ref)
            self._user_failures[index] += 1
            self.pool.call_done(key, ref)
            if self._user_failures[index] > self.user_retries:
                raise
            logger.warning("%s: retrying input block %d after a user error (%d of %d): %s", self.name, index,
                           self._user_failures[index], self.user_retries, err)
            heapq.heappush(self._retry, (index, next(self._seq), item))
            return
        self.pool.call_done(key, ref, meta)
        self.stats.record(meta)
        self._avg_out += (meta.size_bytes - self._avg_out) / self.stats.num_tasks
        self._emit(index, RefBundle([block_ref], [meta]), self.ctx.preserve_order)

    def _on_actor_death(self, key: int, err: BaseException, ref: ray.ObjectRef, index: int, item: WorkItem) -> None:
        # Only the batch the actor was running when it died is charged a retry; the ones
        # queued behind it never started.
        running_first = self.pool.was_running(key, ref)
        self.pool.call_done(key, ref)
        if running_first:
            self._attempts[index] += 1
        if self._attempts[index] > max(self.ctx.max_task_retries, 1):
            msg = (f"{self.name}: input block {index} killed its actor {self._attempts[index]} times "
                   f"(last: {type(err).__name__}: {err})")
            raise BridgeError(msg, "the batch likely runs out of memory: lower batch_size, or give each actor "
                              "more memory with memory=<bytes> in map_batches") from err
        heapq.heappush(self._retry, (index, next(self._seq), item))
        self.pool.replace_dead(key, err, work_left=self._work_left())

    # ------------------------------------------------------------------ stats and teardown
    def _update_stats(self) -> None:
        now = time.time()
        span = (self.stats.last_end or now) - (self.stats.first_start or now)
        pool = self.pool.stats()
        self.stats.extra.update({
            **{k: pool[k] for k in ("actors_alive", "actors_peak", "pool", "cpus_per_actor", "gpus_per_actor")},
            "batches": self.stats.num_tasks,
            "busy_fraction": pool["busy_fraction"],
            "rows_per_s": round(self.stats.rows_out / span) if span > 0 else 0,
            "restarts": pool["restarts"],
            "actor_startup_s": pool["actor_startup_s"],
        })

    def abort(self) -> None:
        super().abort()
        self._running.clear()
        self._pending.clear()
        self._retry.clear()
        if self.cutter is not None:
            self.cutter.clear()
        self.shutdown()

    def shutdown(self) -> None:
        self._update_stats()
        self.pool.shutdown()
        self._running.clear()


def build_actor_pool(group: list[MapLike], deps: list[PhysicalOp], ctx: DataContext) -> PhysicalOp:
    (op,) = group  # actor operators are never fused (planner._fusable)
    return ActorPoolOp(op.name, deps, op, ctx)


__all__ = ["ActorPoolOp", "build_actor_pool", "fit_pools_to_cluster"]
