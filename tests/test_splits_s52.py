"""streaming_split read as its docs say, found failing by a hunt (session 52)."""

from __future__ import annotations

import os
import subprocess
import sys

import ray

import bridge

_THREADS_WITH_LOCAL_SHUFFLE = r"""
import sys, threading, ray
ray.init(num_cpus=2, include_dashboard=False)
import bridge
print("pandas before", "pandas" in sys.modules)
for attempt in range(3):
    splits = bridge.range(100, override_num_blocks=4).streaming_split(2, equal=False)
    got, errors = [[], []], []
    def read(i):
        try:
            got[i] = [int(x) for b in splits[i].iter_batches(batch_size=8, local_shuffle_buffer_size=20) for x in b["id"]]
        except BaseException as err:
            errors.append(repr(err))
    threads = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print("attempt", attempt, sorted(got[0] + got[1]) == list(range(100)), errors)
"""


def test_splits_read_from_threads_with_a_local_shuffle():
    """Each split's reader thread shuffled with ``pa.array(permutation)``, and pyarrow imports pandas on its
    first ``pa.array`` call: two threads importing it at once died with Python's ``_DeadlockError``, that
    split's rows never delivered. In a fresh process (this one has pandas imported already)."""
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAYBRIDGE_PROGRESS_BARS="0")
    env.pop("RAY_ADDRESS", None)
    out = subprocess.run([sys.executable, "-c", _THREADS_WITH_LOCAL_SHUFFLE], capture_output=True, text=True,
                         timeout=300, env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lines = [line for line in out.stdout.splitlines() if line.startswith(("pandas", "attempt"))]
    assert lines[0] == "pandas before False", out.stdout + out.stderr[-3000:]
    assert lines[1:] == [f"attempt {i} True []" for i in range(3)], out.stdout + out.stderr[-3000:]


def test_a_split_handed_to_a_ray_task_each_epoch_reads_the_next_epoch():
    """The handle kept its epoch itself, and a copy pickled to a task each epoch asked for epoch 0 again:
    epoch 1 hung (past the stall timeout: both splits kept polling)."""
    splits = bridge.range(100, override_num_blocks=4).streaming_split(2, equal=False)

    @ray.remote(num_cpus=0)
    def epoch(split):
        return [int(x) for b in split.iter_batches(batch_size=8) for x in b["id"]]

    for _ in range(3):
        shares = ray.get([epoch.remote(s) for s in splits], timeout=120)
        assert sorted(shares[0] + shares[1]) == list(range(100))
