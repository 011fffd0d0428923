"""A real two-node Ray cluster on this machine, as the README's "Running on an existing Ray cluster"
describes: ``ray start --head`` and a second ``ray start --address`` (separate processes, token
authentication on every one), then a driver that joins with ``RAY_ADDRESS`` and runs Job 2's path
(Dask -> Dataset -> map_batches -> batches).  Every row must arrive once, and both nodes must have
run tasks.  The cluster's processes are stopped by pid (never ``ray stop``, which would stop the
test session's Ray too)."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

psutil = pytest.importorskip("psutil")
pytest.importorskip("dask")

DRIVER = r'''
import os, time
import numpy as np, pandas as pd, ray
import dask.dataframe as dd
import bridge

ray.init(address=os.environ["RAY_ADDRESS"])
deadline = time.time() + 90
while len([n for n in ray.nodes() if n["Alive"]]) < 2:
    assert time.time() < deadline, "the second node never joined"
    time.sleep(0.5)

def tag(b):
    time.sleep(0.3)  # long enough that one node's CPU is busy and the scheduler uses the other
    b["node"] = np.array([ray.get_runtime_context().get_node_id()] * len(b["x"]))
    return b

pdf = pd.DataFrame({"x": np.arange(20_000, dtype="int64"), "y": np.arange(20_000) % 2})
ds = bridge.from_dask(dd.from_pandas(pdf, npartitions=8)).map_batches(tag)
rows, total, nodes = 0, 0, set()
for batch in ds.iter_batches(batch_size=1000, batch_format="numpy"):
    rows += len(batch["x"]); total += int(batch["x"].sum()); nodes |= set(batch["node"].tolist())
print("RESULT", rows, total, len(nodes))
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(procs: list[subprocess.Popen]) -> None:
    family = []
    for p in procs:
        try:
            family += psutil.Process(p.pid).children(recursive=True) + [psutil.Process(p.pid)]
        except psutil.NoSuchProcess:
            pass
    for p in family:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=15)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.mark.timeout(420)
def test_a_driver_joins_a_two_process_cluster_with_token_auth_and_uses_both_nodes(tmp_path):
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    port = _free_port()
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16),
               RAYBRIDGE_PROGRESS_BARS="0")
    env.pop("RAY_ADDRESS", None)
    common = ["--num-cpus=1", "--object-store-memory=150000000", "--block"]
    ray_tmp = tempfile.mkdtemp(prefix="rbc", dir="/tmp")  # Unix socket paths must stay under 108 bytes
    procs: list[subprocess.Popen] = []
    logs = {name: open(tmp_path / f"{name}.log", "w") for name in ("head", "worker")}  # noqa: SIM115
    try:
        procs.append(subprocess.Popen(
            [ray_cli, "start", "--head", f"--port={port}", f"--ray-client-server-port={_free_port()}",
             "--include-dashboard=false", f"--temp-dir={ray_tmp}", *common],
            stdout=logs["head"], stderr=subprocess.STDOUT, env=env, start_new_session=True))
        deadline = time.time() + 120
        while "Ray runtime started" not in (tmp_path / "head.log").read_text():
            assert procs[0].poll() is None and time.time() < deadline, (tmp_path / "head.log").read_text()[-3000:]
            time.sleep(0.5)
        procs.append(subprocess.Popen(
            [ray_cli, "start", f"--address=127.0.0.1:{port}", *common],
            stdout=logs["worker"], stderr=subprocess.STDOUT, env=env, start_new_session=True))
        driver = subprocess.run([sys.executable, "-c", DRIVER], env={**env, "RAY_ADDRESS": f"127.0.0.1:{port}"},
                                capture_output=True, text=True, timeout=300)
        result = [line for line in driver.stdout.splitlines() if line.startswith("RESULT")]
        assert driver.returncode == 0 and result, (driver.stdout[-2000:], driver.stderr[-4000:],
                                                   (tmp_path / "worker.log").read_text()[-2000:])
        rows, total, nodes = map(int, result[0].split()[1:])
        assert rows == 20_000 and total == sum(range(20_000))  # every row once
        assert nodes == 2  # tasks ran on both nodes
    finally:
        _stop(procs)
        for f in logs.values():
            f.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)
