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
