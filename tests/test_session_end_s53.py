"""Ray shut down under a live execution, and a task whose worker process dies (session 53, from a hunt).

These start a Ray of their own in a subprocess: the test session's shared Ray must not be shut down."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import bridge
from bridge.errors import BridgeError

_SHUTDOWN_UNDER_AN_ITERATOR = textwrap.dedent("""
    import threading, time
    import ray, bridge
    started = []
    original = ray.init
    def spy(*args, **kwargs):
        started.append(threading.current_thread().name)
        return original(*args, **kwargs)
    ray.init = spy
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2)
    class Ident:
        def __call__(self, batch):
            return batch
    ds = bridge.range(200_000, override_num_blocks=40).map_batches(Ident, concurrency=1)
    it = iter(ds.iter_batches(batch_size=1000))
    next(it)
    ray.shutdown()
    time.sleep(2)
    print("RUNNING", ray.is_initialized(), flush=True)
    try:
        for _ in it:
            pass
        print("ITERATED TO THE END")
    except bridge.errors.BridgeError as err:
        print("REFUSED", str(err).splitlines()[0])
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2)
    print("AGAIN", bridge.range(100).map_batches(Ident, concurrency=1).count())
    print("STARTS", started)
""")


def test_ray_shutdown_under_an_open_iterator_starts_no_ray_of_its_own():
    """The execution's loop (a daemon thread) kept calling Ray after ray.shutdown(): Ray's auto-init started a
    cluster from that thread behind the user's back, and the user's own ray.init() then failed ("called
    ray.init twice") or waited on it; the iterator read on with Ray's raw "owner is unknown" error."""
    out = subprocess.run([sys.executable, "-c", _SHUTDOWN_UNDER_AN_ITERATOR], capture_output=True, text=True,
                         timeout=240)
    lines = [line for line in out.stdout.splitlines() if line.split(" ")[0] in
             ("RUNNING", "REFUSED", "ITERATED", "AGAIN", "STARTS")]
    assert out.returncode == 0, out.stderr[-3000:]
    assert lines[0] == "RUNNING False"  # no Ray started behind the user's back
    assert lines[1].startswith("REFUSED ") and "ended while it was read" in lines[1], lines
    assert lines[2] == "AGAIN 100"
    assert lines[3] == "STARTS ['MainThread', 'MainThread']"


def test_a_task_whose_worker_dies_names_the_step_and_block():
    """Ray's bare WorkerCrashedError named neither (the actor pool's path did)."""
    def die_on_block_3(batch):
        import os

        if batch["id"][0] == 30:
            os._exit(1)
        return batch

    ds = bridge.range(60, override_num_blocks=6).map_batches(die_on_block_3)
    with pytest.raises(BridgeError, match=r"(?s)MapBatches\(die_on_block_3\).*input block 3 lost its worker process "
                                          r"on every try Ray made \(WorkerCrashedError\).*Hint: the block likely runs out of "
                                          r"memory"):
        ds.take_all()
