"""Sizing actor pools to the cluster: pool bounds, CPUs left for tasks, GPUs.

Before a plan runs, :func:`fit_pools_to_cluster` makes its actor pools leave
enough CPUs for the plan's read/map tasks (a 2-CPU machine must not hand every
CPU to actors that then wait for input no task can produce), and turns GPU
requests the cluster cannot meet into an error instead of a hang.
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING

import ray

from bridge.errors import BridgeError, BridgeValueError
from bridge.execution.operators import AllToAllOp, LimitOp, MapOp, PhysicalOp

if TYPE_CHECKING:
    from bridge.execution.pool import ActorPool

logger = logging.getLogger(__name__)


def pool_size(name: str, concurrency: int | tuple[int, int] | None) -> tuple[int, int]:
    """``(min, max)`` actors for ``concurrency``: ``n``, ``(min, max)``, or ``None`` (1 to the CPU count)."""
    if concurrency is None:
        from bridge._ray import cluster_cpus

        return 1, max(cluster_cpus(), 1)
    if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency >= 1:
        return concurrency, concurrency
    if (isinstance(concurrency, tuple) and len(concurrency) == 2
            and all(isinstance(c, int) for c in concurrency) and 1 <= concurrency[0] <= concurrency[1]):
        return concurrency[0], concurrency[1]
    msg = f"{name}: concurrency must be a number of actors n >= 1 or a (min, max) pair; got {concurrency!r}"
    raise BridgeValueError(msg, "pass concurrency=2 for a fixed pool or concurrency=(1, 4) to autoscale")


def _task_cpus(op: PhysicalOp) -> float:
    """CPUs one task of ``op`` asks for (0 for operators that run no tasks)."""
    if isinstance(op, MapOp):
        return float(op.remote_args.get("num_cpus", 1))
    if isinstance(op, (AllToAllOp, LimitOp)):
        return 1.0
    return 0.0


def fit_pools_to_cluster(ops: list[PhysicalOp]) -> None:
    """Size every actor pool of a plan so that the plan's tasks can still run.

    The pools together get the cluster's CPUs minus what the largest task of the
    plan needs.  A pool whose CPUs were left at the default borrows: each actor
    reserves a fraction of a CPU.  A pool with explicit ``num_cpus`` keeps it and
    starts fewer actors, with a warning.  GPUs the cluster lacks are an error now,
    not a hang later.
    """
    from bridge._ray import cluster_cpus, cluster_gpus
    from bridge.execution.actor_pool import ActorPoolOp

    pools: list[ActorPool] = [op.pool for op in ops if isinstance(op, ActorPoolOp)]
    if not pools:
        return
    gpus = cluster_gpus()
    for pool in pools:
        _fit_gpus(pool, gpus)
    total = cluster_cpus()
    reserve = max((_task_cpus(op) for op in ops), default=0.0)
    available = max(total - reserve, 0.0)
    requested = sum(p.num_cpus * p.scaling.max_actors for p in pools)
    if requested <= available or requested == 0:
        return
    for pool in pools:
        share = available * (pool.num_cpus * pool.scaling.max_actors) / requested
        before = (pool.scaling.min_actors, pool.scaling.max_actors, pool.num_cpus)
        if pool.cpus_explicit and share >= pool.num_cpus:
            pool.scaling.max_actors = max(int(share // pool.num_cpus), 1)
            pool.scaling.min_actors = min(pool.scaling.min_actors, pool.scaling.max_actors)
        else:
            pool.num_cpus = round(share / pool.scaling.max_actors, 4)
        note = (f"{pool.name}: {total:g} CPUs, {reserve:g} kept for the plan's tasks; actors "
                f"{before[0]}-{before[1]} x {before[2]:g} CPU -> {pool.scaling.min_actors}-{pool.scaling.max_actors} "
                f"x {pool.num_cpus:g} CPU")
        pool.notes.append(note)
        if pool.cpus_explicit or pool.scaling.max_actors < before[1]:
            warnings.warn(note + " (so upstream tasks can run; pass a smaller num_cpus or concurrency to "
                          "silence this)", stacklevel=2)
        else:
            logger.info(note)


def node_resources() -> list[dict[str, float]]:
    """The total resources of every alive node (what one task or actor can be placed on)."""
    from bridge._ray import ensure_ray

    ensure_ray()
    return [dict(n.get("Resources", {})) for n in ray.nodes() if n.get("Alive")]


def check_request_fits(name: str, unit: str, num_cpus: float, num_gpus: float,
                       nodes: list[dict[str, float]] | None = None) -> None:
    """Fail now when no node can ever hold one ``unit`` (task or actor): Ray would wait for it forever."""
    nodes = node_resources() if nodes is None else nodes
    if not nodes:
        return
    largest_gpus = max(n.get("GPU", 0.0) for n in nodes)
    if num_gpus and largest_gpus == 0:
        msg = (f"{name}: asks for num_gpus={num_gpus:g} per {unit}, but the Ray cluster has no GPUs "
               f"(ray.cluster_resources(): {ray.cluster_resources()})")
        raise BridgeError(msg, "run with num_gpus=0 (CPU), or on a GPU node / a cluster with GPU workers")
    if num_gpus > largest_gpus:
        msg = (f"{name}: asks for num_gpus={num_gpus:g} per {unit}, but the largest node has "
               f"{largest_gpus:g} GPU(s) (the cluster: {sum(n.get('GPU', 0.0) for n in nodes):g})")
        raise BridgeError(msg, f"lower num_gpus to at most {largest_gpus:g} per {unit} (fractions share a GPU), "
                          f"or run on a node with {num_gpus:g} GPUs")
    largest_cpus = max(n.get("CPU", 0.0) for n in nodes)
    if num_cpus > largest_cpus:
        msg = f"{name}: asks for num_cpus={num_cpus:g} per {unit}, but the largest node has {largest_cpus:g} CPU(s)"
        raise BridgeError(msg, f"lower num_cpus to at most {largest_cpus:g}, or add a node with {num_cpus:g} CPUs")


def _fit_gpus(pool: ActorPool, gpus: int) -> None:
    if not pool.num_gpus:
        return
    nodes = node_resources()
    check_request_fits(pool.name, "actor", 0.0, pool.num_gpus, nodes)
    # One actor never spans nodes: count what fits on each (the epsilon keeps 1 // 0.1 at 10).
    fit = sum(int((n.get("GPU", 0.0) + 1e-9) // pool.num_gpus) for n in nodes) if nodes \
        else int((gpus + 1e-9) // pool.num_gpus)
    if fit < pool.scaling.min_actors:
        msg = (f"{pool.name}: {pool.scaling.min_actors} actor(s) x num_gpus={pool.num_gpus:g} need "
               f"{pool.scaling.min_actors * pool.num_gpus:g} GPUs; the cluster has {gpus} (room for {fit} such actor(s))")
        raise BridgeError(msg, f"lower concurrency to at most {fit} (or to a (min, max) range starting at {fit} "
                          "or less), or num_gpus per actor, or add GPU nodes")
    if pool.scaling.max_actors > fit:
        pool.notes.append(f"max actors {pool.scaling.max_actors} -> {fit} (cluster GPUs: {gpus})")
        pool.scaling.max_actors = fit
