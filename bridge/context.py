"""DataContext: the knobs every execution reads.

One context per process, reachable with ``DataContext.get_current()``.  A
Dataset captures a copy of the context when it is executed, so a change made
after ``iter_batches()`` started does not affect that run.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
import threading
from typing import ClassVar

from bridge.errors import UnknownSettingError

MiB = 1024 * 1024


def _default_progress() -> bool:
    env = os.environ.get("RAYBRIDGE_PROGRESS_BARS")
    if env is not None:
        return env not in ("0", "false", "False", "")
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


@dataclasses.dataclass
class DataContext:
    """Settings for planning and running Datasets.

    Example:
        >>> import bridge
        >>> ctx = bridge.DataContext.get_current()
        >>> ctx.target_max_block_size = 64 * 1024 * 1024
    """

    #: Blocks larger than this are split by the task that produces them.
    target_max_block_size: int = 128 * MiB
    #: Sources aim for blocks at least this large when choosing a block count.
    target_min_block_size: int = 1 * MiB
    #: Default number of blocks a source splits into when nothing says otherwise
    #: (``max(this, 2 * CPUs)``, capped by ``target_min_block_size``).
    read_op_min_num_blocks: int = 32
    #: Bytes of blocks held in flight (produced but not yet consumed, plus the
    #: estimate of running tasks) as a fraction of the object store.
    max_bytes_in_flight_fraction: float = 0.25
    #: Absolute cap on bytes in flight; ``None`` derives it from the fraction.
    max_bytes_in_flight: int | None = None
    #: Upper bound on tasks running at once per operator (``None``: 2 x CPUs).
    max_tasks_in_flight_per_op: int | None = None
    #: Retries of a task whose worker died (system failures only).
    max_task_retries: int = 3
    #: Retries of a task whose user code raised; 0 means fail fast.
    max_user_retries: int = 0
    #: Keep the output order equal to the input order.
    preserve_order: bool = True
    #: tqdm progress bars per operator.  Default: on when stderr is a terminal.
    enable_progress_bars: bool = dataclasses.field(default_factory=_default_progress)
    #: Seconds a streaming_split consumer may stall before the others give up.
    stall_timeout_s: float = 600.0
    #: Number of batches iterators prepare ahead on a background thread.
    prefetch_batches: int = 1
    #: Bytes a conversion may gather on the driver (``to_arrow``, ``to_pandas``) before it
    #: raises ``InsufficientMemoryError``; ``None``: half the memory available when it starts.
    driver_memory_budget: int | None = None
    #: Iterating a bare read (``read_parquet(...).iter_batches()``) on a one-machine cluster runs
    #: its read tasks on threads of the iterating process, with no copy through the object
    #: store (:mod:`bridge.execution.driver_read`). ``False``: always in Ray tasks.
    read_in_driver: bool = True

    #: Where the pieces of a shuffle or sort wait for their reducer: ``"object_store"`` (Ray
    #: tasks; pieces spill when the store is full), ``"actor_memory"`` (one holder actor per CPU
    #: copies them into its memory as they arrive; only the output goes to the store), or
    #: ``"auto"``: the store while the input fits in half of it, else the holders while it fits
    #: in ``shuffle_memory_budget``.
    shuffle_exchange: str = "auto"
    #: Bytes the shuffle holders may take together; ``None``: half the cluster's ``memory`` resource.
    shuffle_memory_budget: int | None = None
    #: Seconds the holders of a finished shuffle stay up, empty, for the next one (starting a
    #: holder is a new worker process and its imports; a shuffle per epoch finds them ready).
    #: ``0``: stopped as each shuffle ends; ``float("inf")``: until
    #: ``bridge.ops.held_exchange.release_idle_holders()`` or the driver's exit.
    shuffle_holders_keepalive_s: float = 60.0

    _local: ClassVar[threading.local] = threading.local()
    _global: ClassVar[DataContext | None] = None
    _lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def get_current(cls) -> DataContext:
        """Return the process-wide context, creating it on first use."""
        with cls._lock:
            if cls._global is None:
                cls._global = DataContext()
            return cls._global

    @classmethod
    def _set_current(cls, ctx: DataContext) -> None:
        with cls._lock:
            cls._global = ctx

    def __setattr__(self, name: str, value: object) -> None:
        # A misspelt or Ray-Data-only setting was taken without a word and changed nothing.
        if not name.startswith("_") and name not in _FIELDS:
            raise _unknown_setting(name, "set")
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> object:
        # (Only reached for a name that is not a field: the fields live in the instance.)
        if name.startswith("_"):
            raise AttributeError(name)
        raise _unknown_setting(name, "read")

    def copy(self) -> DataContext:
        """A snapshot that later edits to the process context do not touch."""
        return copy.copy(self)

    def bytes_in_flight_budget(self) -> int:
        """The byte budget for blocks in flight in one execution."""
        if self.max_bytes_in_flight is not None:
            return self.max_bytes_in_flight
        from bridge._ray import object_store_capacity

        return max(int(object_store_capacity() * self.max_bytes_in_flight_fraction), 16 * MiB)


#: The settings (the dataclass fields), filled in below the class.
_FIELDS: frozenset[str] = frozenset(f.name for f in dataclasses.fields(DataContext))

#: Ray Data settings a user brings along -> what does that here.
_RAY_DATA_SETTINGS = {
    "execution_options": "order: ctx.preserve_order = True; concurrency: map_batches(concurrency=...)",
    "shuffle_strategy": "ctx.shuffle_exchange = 'object_store' | 'actor_memory' | 'auto'",
    "use_push_based_shuffle": "ctx.shuffle_exchange = 'object_store' | 'actor_memory' | 'auto'",
    "target_shuffle_max_block_size": "ctx.target_max_block_size",
    "actor_prefetcher_enabled": "ctx.prefetch_batches (iterators), or iter_batches(prefetch_batches=...)",
    "max_errored_blocks": "no block is skipped: a task whose code raises is retried ctx.max_user_retries times, "
                          "then the run fails; to skip bad rows, catch in your function and filter them out",
}


def _unknown_setting(name: str, verb: str) -> UnknownSettingError:
    """The error for a setting ``DataContext`` does not have: a Ray Data one, or the nearest spelling."""
    import difflib

    settings = sorted(_FIELDS)
    if name in _RAY_DATA_SETTINGS:
        hint = f"it is a Ray Data setting; here: {_RAY_DATA_SETTINGS[name]}"
    else:
        near = difflib.get_close_matches(name, settings, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]!r}? " if near else ""
        hint += f"the settings: {', '.join(settings)}"
    msg = f"DataContext has no setting {name!r}" + ("; setting it would change nothing" if verb == "set" else "")
    return UnknownSettingError(msg, hint)
