"""One local Ray for the whole test session (tests and integration share it).

The object store is deliberately small (256 MiB) so that the tests which stream
a Dataset several times larger than it prove the executor's memory bound.
The cluster has 2 CPUs unless ``RAYBRIDGE_TEST_CPUS`` says otherwise (a bigger
host can run the suite at its own size; tests that assert on pool sizes read
``ray.cluster_resources()``).
"""

from __future__ import annotations

import os

import pytest

OBJECT_STORE_BYTES = 256 * 1024 * 1024

os.environ.setdefault("RAYBRIDGE_PROGRESS_BARS", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
# The tests that compare with Ray Data run its groupby on a few rows; its default shuffle (shuffle_v2)
# starts hash-aggregator actors for 200 partitions, ~9 s a call on 2 CPUs (15 of the suite's minutes).
# Its sort-based shuffle computes the same aggregations in ~0.15 s. Read before ray.data is imported.
os.environ.setdefault("RAY_DATA_DEFAULT_SHUFFLE_STRATEGY", "sort_shuffle_pull_based")


@pytest.fixture(scope="session", autouse=True)
def ray_session():
    import ray

    if not ray.is_initialized():
        ray.init(
            address="local",  # always a fresh instance, never another process's cluster
            num_cpus=int(os.environ.get("RAYBRIDGE_TEST_CPUS", 2)),
            object_store_memory=OBJECT_STORE_BYTES,
            include_dashboard=False,
            configure_logging=False,
            log_to_driver=True,
        )
    yield ray
    ray.shutdown()
