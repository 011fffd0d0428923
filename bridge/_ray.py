"""Starting Ray on first use and reading what the cluster has."""

from __future__ import annotations

import os
import threading

import ray

_init_lock = threading.Lock()


def ensure_ray() -> None:
    """Connect to Ray if nothing has yet.

    ``RAY_ADDRESS`` names an existing cluster; without it a local cluster is
    started (the embedded default).  An initialised Ray is used as it is.
    """
    if ray.is_initialized():
        return
    with _init_lock:
        if ray.is_initialized():
            return
        address = os.environ.get("RAY_ADDRESS")
        ray.init(
            address=address or None,
            ignore_reinit_error=True,
            include_dashboard=False,
            log_to_driver=True,
            configure_logging=False,
        )


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
