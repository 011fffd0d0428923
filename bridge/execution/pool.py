"""The actors of one pool, and the policy that decides how many there are.

:class:`ActorPool` owns the long-lived Ray actors of one ``map_batches(Cls, ...)``
operator: starting them, knowing which are ready and how loaded, picking the least
loaded for the next batch, replacing the ones that die, failing a call stuck past
the stall timeout, and measuring how busy they were.  :class:`AutoscalingPolicy`
is the decision alone (add one, release one), a plain object with no Ray in it.
The operator that feeds them batches is :class:`bridge.execution.actor_pool.ActorPoolOp`.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import ray

from bridge.block import Block, BlockMetadata
from bridge.context import DataContext
from bridge.errors import BridgeError, StallError
from bridge.execution.operators import run_block_transform
from bridge.execution.transform import BlockTransform, TaskContext, UserCallLock, set_user_call_lock

logger = logging.getLogger(__name__)

#: Failures that mean "the actor died", not "the user's code raised": re-run the batch.
ACTOR_FAILURES: tuple[type[BaseException], ...] = (
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


@dataclasses.dataclass
class AutoscalingPolicy:
    """How many actors a pool keeps: between ``min_actors`` and ``max_actors``.

    Example:
        >>> policy = AutoscalingPolicy(min_actors=1, max_actors=3)
        >>> policy.should_add(actors=1, starting=False, queued=5, free_slots=4)
        True
        >>> policy.should_add(actors=1, starting=True, queued=5, free_slots=4)  # one is already coming
        False
        >>> policy.should_release(actors=2, idle_for=6.0, queued=0, finished_input=False)
        True
        >>> policy.should_release(actors=1, idle_for=60.0, queued=0, finished_input=False)  # keeps min
        False
    """

    min_actors: int
    max_actors: int
    idle_release_s: float = IDLE_RELEASE_S

    def should_add(self, *, actors: int, starting: bool, queued: int, free_slots: int) -> bool:
        """Add one actor: input waits, every actor is saturated, none is already starting."""
        return queued > free_slots and not starting and actors < self.max_actors

    def should_release(self, *, actors: int, idle_for: float, queued: int, finished_input: bool) -> bool:
        """Release an idle actor: beyond ``min`` after ``idle_release_s``, or any once no input can come."""
        return finished_input or (actors > self.min_actors and idle_for > self.idle_release_s and not queued)

    def should_replace(self, *, actors: int, work_left: bool) -> bool:
        """Start a replacement for a dead actor: work is left, or the pool fell below ``min`` (at least one)."""
        return actors < max(self.min_actors, 1) or work_left


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


@dataclasses.dataclass
class _Usage:
    """What the pool's actors cost and did, including the ones already released."""

    peak_actors: int = 0
    restarts: int = 0
    retired_busy_s: float = 0.0
    retired_alive_s: float = 0.0
    startup_s: list[float] = dataclasses.field(default_factory=list)


class ActorPool:
    """The actors of one operator, each running ``transform`` on the batches it is sent."""

    def __init__(self, name: str, transform: BlockTransform, ctx: DataContext, *, scaling: AutoscalingPolicy,
                 num_cpus: float, cpus_explicit: bool, num_gpus: float, remote_args: dict[str, Any],
                 max_in_flight: int, max_restarts: int) -> None:
        self.name = name
        self.transform = transform
        self.ctx = ctx
        self.scaling = scaling
        #: What each actor asks of Ray; :func:`~bridge.execution.actor_sizing.fit_pools_to_cluster`
        #: may lower ``num_cpus`` and the scaling bounds before the run.
        self.num_cpus = num_cpus
        self.cpus_explicit = cpus_explicit
        self.num_gpus = num_gpus
        self.remote_args = remote_args
        self.max_in_flight = max_in_flight
        self.max_restarts = max_restarts
        self.notes: list[str] = []
        self.actors: dict[int, _Actor] = {}
        self.usage = _Usage()
        self._starting: dict[ray.ObjectRef, int] = {}
        self._ids = itertools.count()
        self._created_at = time.time()
        self._warned_start = False

    # ------------------------------------------------------------------ lifecycle
    def options(self) -> dict[str, Any]:
        # Two threads: one runs the user's code, the other prepares the next call (see _PoolWorker).
        # A GPU actor gets a third: two batches are copied to the host's pinned memory at once.
        opts: dict[str, Any] = {"max_restarts": 0, "max_task_retries": 0,
                                "max_concurrency": 3 if self.num_gpus else 2}
        opts.update(self.remote_args)
        opts["num_cpus"] = self.num_cpus
        if self.num_gpus:
            opts["num_gpus"] = self.num_gpus
        return opts

    def start(self) -> None:
        handle = _PoolWorker.options(**self.options()).remote(  # type: ignore[attr-defined]
            self.transform, self.name)
        key = next(self._ids)
        ready_ref = handle.ready.remote()
        self.actors[key] = _Actor(handle, ready_ref)
        self._starting[ready_ref] = key
        self.usage.peak_actors = max(self.usage.peak_actors, len(self.actors))

    def release(self, key: int, *, kill: bool = True) -> None:
        actor = self.actors.pop(key, None)
        if actor is None:
            return
        self._starting.pop(actor.ready_ref, None)
        if actor.ready_at is not None:
            self.usage.retired_alive_s += time.time() - actor.ready_at
            self.usage.retired_busy_s += actor.busy_s
        if kill:
            try:
                ray.kill(actor.handle)
            except Exception:  # noqa: BLE001 - an actor that is already gone cannot be killed
                pass

    def is_starting(self, ref: ray.ObjectRef) -> bool:
        return ref in self._starting

    def starting_refs(self) -> list[ray.ObjectRef]:
        return list(self._starting)

    def on_started(self, ref: ray.ObjectRef, *, work_left: bool) -> None:
        """An actor's ``ready`` call finished: mark it ready, or replace it if it died while starting.

        An error the user's ``__init__`` raised propagates (as ``RayTaskError``): it would raise in
        every actor.
        """
        key = self._starting.pop(ref)
        actor = self.actors.get(key)
        try:
            pid = ray.get(ref)
        except ACTOR_FAILURES as err:
            self.replace_dead(key, err, work_left=work_left)
            return
        if actor is not None:
            actor.ready = True
            actor.pid = pid
            actor.ready_at = actor.idle_since = time.time()
            self.usage.startup_s.append(actor.ready_at - actor.started_at)

    def replace_dead(self, key: int, err: BaseException, *, work_left: bool) -> None:
        if key not in self.actors:
            return
        self.release(key, kill=False)
        self.usage.restarts += 1
        if self.usage.restarts > self.max_restarts:
            msg = f"{self.name}: actors died {self.usage.restarts} times (last: {type(err).__name__}: {err})"
            raise BridgeError(msg, "check the actor logs for the cause (out of memory, a crash in native code); "
                              "raise max_restarts=<n> in map_batches to tolerate more") from err
        logger.warning("%s: an actor died (%s); starting a replacement and re-running its batches",
                       self.name, type(err).__name__)
        if self.scaling.should_replace(actors=len(self.actors), work_left=work_left):
            self.start()

    def shutdown(self) -> None:
        for key in list(self.actors):
            self.release(key)

    # ------------------------------------------------------------------ scaling
    def scale(self, *, queued: int, finished_input: bool, now: float) -> None:
        """Add an actor or release idle ones, as :class:`AutoscalingPolicy` decides."""
        if self.scaling.should_add(actors=len(self.actors), starting=bool(self._starting), queued=queued,
                                   free_slots=self.free_slots()):
            self.start()
        for key, a in list(self.actors.items()):
            if not a.ready or a.in_flight:
                continue
            if self.scaling.should_release(actors=len(self.actors), idle_for=now - a.idle_since, queued=queued,
                                           finished_input=finished_input):
                self.release(key)

    def warn_if_none_started(self, now: float) -> None:
        if (not self._warned_start and self._starting and not any(a.ready for a in self.actors.values())
                and now - self._created_at > START_WARN_S):
            self._warned_start = True
            logger.warning(
                "%s: no actor has started after %.0fs (each asks for %s); the cluster may lack these "
                "resources (ray.available_resources(): %s)", self.name, START_WARN_S, self.options(),
                ray.available_resources())

    # ------------------------------------------------------------------ calls
    def free_slots(self) -> int:
        return sum(self.max_in_flight - len(a.in_flight) for a in self.actors.values() if a.ready)

    def pick(self) -> int | None:
        """The ready actor with the fewest calls in flight, if one has room for another."""
        best, best_load = None, self.max_in_flight
        for key, a in self.actors.items():
            if a.ready and len(a.in_flight) < best_load:
                best, best_load = key, len(a.in_flight)
        return best

    def submit(self, key: int, index: int, slices: list[tuple[int, int]] | None,
               refs: list[ray.ObjectRef]) -> tuple[ray.ObjectRef, ray.ObjectRef]:
        """Send one batch to actor ``key``: ``(block ref, metadata ref)``."""
        actor = self.actors[key]
        block_ref, meta_ref = actor.handle.run.remote(index, slices, *refs)
        if not actor.in_flight:
            actor.head_since = time.time()
        actor.in_flight.append(meta_ref)
        return block_ref, meta_ref

    def call_done(self, key: int, ref: ray.ObjectRef, meta: BlockMetadata | None = None) -> None:
        """Call ``ref`` of actor ``key`` finished (``meta`` when it succeeded)."""
        actor = self.actors.get(key)
        if actor is None or ref not in actor.in_flight:
            return
        actor.in_flight.remove(ref)
        if meta is None:
            return
        actor.head_since = time.time()
        if meta.exec_stats is not None:
            actor.busy_s += meta.exec_stats.wall_s
        if not actor.in_flight:
            actor.idle_since = time.time()

    def was_running(self, key: int, ref: ray.ObjectRef) -> bool:
        """Whether ``ref`` was the call actor ``key`` was running (not one queued behind it)."""
        actor = self.actors.get(key)
        return actor is None or not actor.in_flight or actor.in_flight[0] == ref

    def check_stalled(self, now: float, batch_of: Callable[[ray.ObjectRef], int]) -> None:
        """An actor stuck in one call longer than ``DataContext.stall_timeout_s`` fails the run, by name."""
        limit = self.ctx.stall_timeout_s
        for key, a in self.actors.items():
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
                index, elapsed = batch_of(a.in_flight[0]), now - a.head_since
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

    # ------------------------------------------------------------------ stats
    def stats(self) -> dict[str, Any]:
        now = time.time()
        u = self.usage
        alive_s = u.retired_alive_s + sum(now - a.ready_at for a in self.actors.values() if a.ready_at)
        busy_s = u.retired_busy_s + sum(a.busy_s for a in self.actors.values())
        return {
            "actors_alive": sum(1 for a in self.actors.values() if a.ready),
            "actors_peak": u.peak_actors,
            "pool": f"{self.scaling.min_actors}-{self.scaling.max_actors}",
            "cpus_per_actor": round(self.num_cpus, 3),
            "gpus_per_actor": self.num_gpus,
            "busy_fraction": min(busy_s / alive_s, 1.0) if alive_s > 0 else 0.0,
            "restarts": u.restarts,
            "actor_startup_s": round(sum(u.startup_s) / len(u.startup_s), 2) if u.startup_s else 0.0,
        }


__all__ = ["ACTOR_FAILURES", "ActorPool", "AutoscalingPolicy"]
