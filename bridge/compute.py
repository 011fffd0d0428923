"""Compute strategies: Ray Data's ``compute=`` spelling of ``concurrency=``.

``map_batches(Cls, compute=ActorPoolStrategy(size=2))`` is
``map_batches(Cls, concurrency=2)``; ``ActorPoolStrategy(min_size=1, max_size=4)``
is ``concurrency=(1, 4)``; ``TaskPoolStrategy(size=n)`` caps a function's tasks
in flight like ``concurrency=n``.  As in Ray Data, an actor pool needs a
callable class and a task pool a function (``ValueError`` otherwise).

Example:
    >>> import bridge
    >>> class AddOne:
    ...     def __call__(self, b):
    ...         return {"id": b["id"] + 1}
    >>> bridge.range(3).map_batches(AddOne, compute=bridge.ActorPoolStrategy(size=1)).take_all()
    [{'id': 1}, {'id': 2}, {'id': 3}]
"""

from __future__ import annotations

from typing import Any

from bridge.errors import BridgeValueError

Concurrency = int | tuple[int, int] | None


class ComputeStrategy:
    """Base of :class:`ActorPoolStrategy` and :class:`TaskPoolStrategy`."""


class TaskPoolStrategy(ComputeStrategy):
    """Stateless Ray tasks; ``size`` caps the tasks in flight (``None``: as many as the executor runs).

    Example:
        >>> import bridge
        >>> add_one = lambda b: {"id": b["id"] + 1}
        >>> bridge.range(3).map_batches(add_one, compute=bridge.TaskPoolStrategy(size=1)).take_all()
        [{'id': 1}, {'id': 2}, {'id': 3}]
    """

    def __init__(self, size: int | None = None) -> None:
        if size is not None and (not isinstance(size, int) or size < 1):
            raise BridgeValueError(f"TaskPoolStrategy: size must be an int >= 1 or None; got {size!r}",
                                   "pass TaskPoolStrategy(size=4)")
        self.size = size

    def concurrency(self) -> Concurrency:
        return self.size

    def __repr__(self) -> str:
        return f"TaskPoolStrategy(size={self.size})"


class ActorPoolStrategy(ComputeStrategy):
    """An actor pool: ``size`` actors, or autoscaling from ``min_size`` to ``max_size``.

    ``max_size=None`` scales up to the cluster's CPU count; ``initial_size`` and
    ``max_tasks_in_flight_per_actor`` are accepted for Ray Data compatibility
    (the pool starts at ``min_size`` and sizes its queues itself).

    Example:
        >>> import bridge
        >>> class Double:
        ...     def __call__(self, b):
        ...         return {"id": b["id"] * 2}
        >>> strategy = bridge.ActorPoolStrategy(min_size=1, max_size=2)
        >>> bridge.range(3).map_batches(Double, compute=strategy).take_all()
        [{'id': 0}, {'id': 2}, {'id': 4}]
    """

    def __init__(self, *, size: int | None = None, min_size: int | None = None, max_size: int | None = None,
                 initial_size: int | None = None, max_tasks_in_flight_per_actor: int | None = None) -> None:
        def check(name: str, v: Any) -> None:
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise BridgeValueError(f"ActorPoolStrategy: {name} must be an int >= 1; got {v!r}",
                                       "pass ActorPoolStrategy(size=2) or ActorPoolStrategy(min_size=1, max_size=4)")

        for name, v in (("size", size), ("min_size", min_size), ("max_size", max_size),
                        ("initial_size", initial_size)):
            check(name, v)
        if size is not None and (min_size is not None or max_size is not None):
            raise BridgeValueError("ActorPoolStrategy: pass either size or min_size/max_size, not both",
                                   "ActorPoolStrategy(size=2) is a fixed pool; (min_size=1, max_size=4) autoscales")
        if min_size is not None and max_size is not None and min_size > max_size:
            msg = f"ActorPoolStrategy: min_size ({min_size}) is larger than max_size ({max_size})"
            raise BridgeValueError(msg, "pass min_size <= max_size")
        self.size = size
        self.min_size = size if size is not None else (min_size or 1)
        self.max_size = size if size is not None else max_size
        self.initial_size = initial_size
        self.max_tasks_in_flight_per_actor = max_tasks_in_flight_per_actor

    def concurrency(self) -> Concurrency:
        if self.max_size is not None:
            return self.max_size if self.min_size == self.max_size else (self.min_size, self.max_size)
        if self.min_size == 1:
            return None  # the default pool: 1 to the cluster's CPU count
        from bridge._ray import cluster_cpus

        return (self.min_size, max(self.min_size, cluster_cpus()))

    def __repr__(self) -> str:
        return f"ActorPoolStrategy(min_size={self.min_size}, max_size={self.max_size})"


def _from_ray_data(compute: Any) -> Any:
    """Ray Data's own ``ray.data.ActorPoolStrategy`` / ``TaskPoolStrategy`` as ours (the first thing a Ray Data
    user passes; it was refused as "not an ActorPoolStrategy"); anything else as it is."""
    kind = type(compute)
    if not kind.__module__.startswith("ray.data"):
        return compute
    if kind.__name__ == "TaskPoolStrategy":
        return TaskPoolStrategy(getattr(compute, "size", None))
    if kind.__name__ == "ActorPoolStrategy":
        low, high = getattr(compute, "min_size", 1), getattr(compute, "max_size", None)
        high = None if high is None or high == float("inf") else int(high)
        if high == low:
            return ActorPoolStrategy(size=int(low))
        return ActorPoolStrategy(min_size=int(low), max_size=high, initial_size=getattr(compute, "initial_size", None),
                                 max_tasks_in_flight_per_actor=getattr(compute, "max_tasks_in_flight_per_actor", None))
    return compute


def resolve_compute(label: str, compute: Any, concurrency: Concurrency, is_class: bool) -> Concurrency:
    """The ``concurrency`` that ``compute`` spells (``compute=None``: ``concurrency`` unchanged)."""
    if compute is None:
        return concurrency
    if concurrency is not None:
        msg = f"{label}: got both compute={compute!r} and concurrency={concurrency!r}"
        raise BridgeValueError(msg, "pass one of them; compute=ActorPoolStrategy(size=n) is concurrency=n")
    if compute == "tasks":
        compute = TaskPoolStrategy()
    elif compute == "actors":
        compute = ActorPoolStrategy()
    compute = _from_ray_data(compute)
    if isinstance(compute, ActorPoolStrategy) and not is_class:
        msg = f"{label}: compute={compute!r} needs a callable class; got a function"
        raise BridgeValueError(msg, "make fn a class with __call__ (built once per actor), or drop compute=")
    if isinstance(compute, TaskPoolStrategy) and is_class:
        msg = f"{label}: compute={compute!r} runs stateless tasks; got the callable class"
        raise BridgeValueError(msg, "use compute=ActorPoolStrategy(size=n) for a class")
    if not isinstance(compute, ComputeStrategy):
        msg = f"{label}: compute must be an ActorPoolStrategy, a TaskPoolStrategy, 'tasks' or 'actors'; got {compute!r}"
        raise BridgeValueError(msg, "pass compute=bridge.ActorPoolStrategy(size=2)")
    return compute.concurrency()  # type: ignore[attr-defined]


__all__ = ["ActorPoolStrategy", "ComputeStrategy", "TaskPoolStrategy", "resolve_compute"]
