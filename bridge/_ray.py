"""Starting Ray on first use and reading what the cluster has."""

from __future__ import annotations

import os
import threading

import ray

from bridge import _ray_arrow

_init_lock = threading.Lock()


#: Ray's setting of how often a raylet frees the objects nothing refers to any more (its default is
#: once a second), and the period a cluster started by :func:`ensure_ray` gets.  Until the raylet
#: frees them, dropped blocks keep their store pages, so the next conversion's blocks go into
#: pages never written before, each faulting on its first write: a ``from_dask`` started within a
#: second of the previous one's end put its blocks at a fraction of the speed (measured in
#: ``integration/bench/RESULTS.md``, "Calls one free period apart").
FREE_OBJECTS_PERIOD_ENV = "RAY_free_objects_period_milliseconds"
FREE_OBJECTS_PERIOD_MS = 100


def ray_session() -> str | None:
    """The name of the Ray session this process is connected to (one per cluster start), or ``None``."""
    if not ray.is_initialized():
        return None
    try:
        return ray.get_runtime_context().get_session_name()
    except Exception:  # noqa: BLE001 - Ray Client, or a Ray without it: nothing to compare
        return None


def session_ended_error(what: str, session: str | None = None) -> Exception:
    """The error for work whose Ray session ended under it (``ray.shutdown()`` while it was read)."""
    from bridge.errors import BridgeError

    which = f"the Ray session {session}" if session else "the Ray session it ran in"
    now = "Ray is not running now" if not ray.is_initialized() else "Ray was started again since"
    msg = f"{what}: {which} ended while it was read ({now}), and its tasks, actors and blocks with it"
    return BridgeError(msg, "read to the end, or close the iterator (break out of the loop, it.close()), before "
                            "ray.shutdown(); after ray.init(), build the Dataset again from its source")


def _no_auto_init_in_our_threads() -> None:
    """Ray starts a local cluster at the first Ray call of a process that has none (its auto-init), from
    whichever thread makes it: after a ``ray.shutdown()``, a call from one of this library's threads (an
    execution's loop, between its checks) started a Ray of its own behind the user's back, whose own
    ``ray.init()`` then failed or raced it.  Those threads (named ``raybridge-*``) get Ray's "not started"
    error instead, which they report as the session's end; any other thread auto-starts Ray as before."""
    try:
        from ray._private import auto_init_hook
    except ImportError:  # another Ray layout: nothing to change
        return
    original = auto_init_hook.auto_init_ray
    if getattr(original, "_raybridge", False):
        return

    def auto_init_ray() -> None:
        if not threading.current_thread().name.startswith("raybridge-"):
            original()

    auto_init_ray._raybridge = True  # type: ignore[attr-defined]
    auto_init_hook.auto_init_ray = auto_init_ray


def ensure_ray() -> None:
    """Connect to Ray if nothing has yet.

    ``RAY_ADDRESS`` names an existing cluster; without it a local cluster is
    started (the embedded default), whose raylet frees dropped objects every
    :data:`FREE_OBJECTS_PERIOD_MS` unless the environment sets
    ``RAY_free_objects_period_milliseconds``.  An initialised Ray is used as it is.  Either way
    blocks are then pickled by :func:`bridge._ray_arrow.reduce_table` in this process.
    """
    _no_auto_init_in_our_threads()
    if ray.is_initialized():
        _ray_arrow.install()
        return
    with _init_lock:
        if ray.is_initialized():
            return
        address = os.environ.get("RAY_ADDRESS")
        # The raylet a local start spawns reads its settings from the environment it inherits;
        # the variable is set for that start only and removed from this process's environment after.
        own_period = not address and FREE_OBJECTS_PERIOD_ENV not in os.environ
        if own_period:
            os.environ[FREE_OBJECTS_PERIOD_ENV] = str(FREE_OBJECTS_PERIOD_MS)
        try:
            ray.init(
                address=address or None,
                ignore_reinit_error=True,
                include_dashboard=False,
                log_to_driver=True,
                configure_logging=False,
            )
        finally:
            if own_period:
                os.environ.pop(FREE_OBJECTS_PERIOD_ENV, None)
        _ray_arrow.install()


def cluster_cpus() -> int:
    ensure_ray()
    return max(int(ray.cluster_resources().get("CPU", 1)), 1)


def cluster_gpus() -> int:
    ensure_ray()
    return int(ray.cluster_resources().get("GPU", 0))


def object_store_capacity() -> int:
    """Total object store memory of the cluster, in bytes."""
    ensure_ray()
    return int(ray.cluster_resources().get("object_store_memory", 2 * 1024**3))


def cluster_is_this_machine() -> bool:
    """Whether this process is a driver that started the Ray cluster itself, and that cluster is one node.

    ``ray.init()`` on a laptop or a single machine: yes. Connected to a cluster started
    elsewhere (``ray start``, KubeRay, an autoscaler that may add nodes), through Ray
    Client, or running inside a Ray task or actor: no.  The callers (reads in the driver,
    exchanges that pack each map task's pieces into one object) take their general path on no.
    """
    try:
        from ray._private import worker

        node = worker._global_node
        if worker.global_worker.mode != worker.SCRIPT_MODE or node is None or not node.head:
            return False
        if ray.util.client.ray.is_connected():
            return False
        alive = [n for n in ray.nodes() if n.get("Alive")]
        return len(alive) == 1 and alive[0].get("NodeID") == ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - anything unclear: no (the general path always works)
        return False
