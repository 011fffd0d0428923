"""A user's first hour: Ctrl-C and errors stop everything at once and print one message.

Ctrl-C (SIGINT) in the middle of ``for batch in ds.iter_batches()`` must return
the prompt at once with the executor stopped, its actors released and its
progress bars closed; an error in a task must reach the user as the library's
one message, without Ray's "Unhandled error" traceback for each sibling task.
Signals and Ray's error log are process-wide, so these run in a fresh process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import bridge

_PRELUDE = """
import os, signal, sys, threading, time
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
import ray
ray.init(address="local", num_cpus=2, object_store_memory=128 * 1024**2, include_dashboard=False,
         configure_logging=False)
import bridge
from ray._private.state import actors

def alive_actors():
    return sum(1 for a in actors().values() if a["State"] == "ALIVE")

def bridge_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("raybridge")]
"""


def _run(body: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAYBRIDGE_PROGRESS_BARS": "0"}
    code = _PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_sigint_mid_iteration_stops_executor_and_releases_actors():
    # A pool whose next batch takes 30 s: before the fix the interrupted loop waited for it
    # (5 s, then gave up with the executor and its actor still running).
    out = _run("""
        class Slow:
            def __call__(self, batch):
                time.sleep(30 if batch["id"][0] >= 200 else 0)
                return batch

        for where in ("waiting in next()", "in the loop body"):
            ds = bridge.range(2_000, override_num_blocks=20).map_batches(Slow, concurrency=1, batch_size=100)
            t0 = None
            try:
                for i, batch in enumerate(ds.iter_batches(batch_size=100)):
                    if i == 1:
                        t0 = time.time()
                        if where == "in the loop body":
                            os.kill(os.getpid(), signal.SIGINT)
                            time.sleep(30)
                        else:
                            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
            except KeyboardInterrupt:
                pass
            took = time.time() - t0
            time.sleep(0.5)
            print(f"{where}: took={took:.1f} actors={alive_actors()} threads={bridge_threads()}", flush=True)
    """)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [ln for ln in out.stdout.splitlines() if "took=" in ln]
    assert len(lines) == 2, out.stdout + out.stderr[-3000:]
    for line in lines:
        took = float(line.split("took=")[1].split()[0])
        assert took < 3, line
        assert "actors=0 " in line, line
        assert line.endswith("threads=[]"), line


def test_task_error_is_reported_once_without_unhandled_error_logs():
    out = _run("""
        def bad(batch):
            raise ValueError("boom")

        class Bad:
            def __call__(self, batch):
                raise ValueError("boom in actor")

        for fn, kw in ((bad, {}), (Bad, {"concurrency": 2})):
            try:
                bridge.range(1_000, override_num_blocks=8).map_batches(fn, **kw).materialize()
            except bridge.BridgeError as err:
                print("CAUGHT", type(err).__name__, flush=True)
        import gc
        gc.collect()
        time.sleep(2)  # Ray logs an unread error when its ref is dropped; give the log time to arrive
    """)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("CAUGHT UserCodeError") == 2, out.stdout + out.stderr[-3000:]
    assert "Unhandled error" not in out.stderr, out.stderr[-3000:]


class _Slow:
    def __call__(self, batch):
        time.sleep(8 if batch["id"][0] >= 300 else 0)
        return batch


def _pool_actors() -> int:
    from ray._private.state import actors

    return sum(1 for a in actors().values() if a["State"] == "ALIVE" and "_PoolWorker" in a.get("ActorClassName", ""))


def _wait_until(cond, timeout: float = 5.0) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def test_error_in_loop_body_stops_execution_at_once():
    # Before the fix, leaving the loop waited for the pool's next batch (8 s here), or 5 s at most.
    ds = bridge.range(4_000, override_num_blocks=40).map_batches(_Slow, concurrency=1, batch_size=100)
    t0 = None
    try:
        for i, _ in enumerate(ds.iter_batches(batch_size=100)):
            if i == 2:
                t0 = time.time()
                raise RuntimeError("the training step failed")
    except RuntimeError:
        pass
    assert t0 is not None and time.time() - t0 < 2.5
    assert _wait_until(lambda: not [t for t in threading.enumerate() if t.name.startswith("raybridge-executor")],
                       timeout=2)
    assert _wait_until(lambda: _pool_actors() == 0, timeout=3)

