"""Actor pools: callable classes in map_batches/map/filter/flat_map, on the shared test Ray.

Tests that assert on pool sizing derive their numbers from ``ray.cluster_resources()``
(2 CPUs by default; ``RAYBRIDGE_TEST_CPUS`` in conftest.py sets another size).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import ray

import bridge
from bridge.errors import BridgeError, UserCodeError


class CountInits:
    """Reports how often __init__ ran in its process and which process ran each batch."""

    inits = 0

    def __init__(self, offset: int = 1) -> None:
        CountInits.inits += 1
        self.offset = offset

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        n = len(batch["id"])
        return {"id": batch["id"] + self.offset, "inits": np.full(n, CountInits.inits),
                "pid": np.full(n, os.getpid())}


def _cluster_cpus() -> int:
    return int(ray.cluster_resources()["CPU"])


def _pool_stats(ds: bridge.Dataset, name: str) -> dict:
    stats = ds._last_stats
    assert stats is not None
    (op,) = [o for o in stats.ops if o.name.startswith(name)]
    return op.extra


@pytest.mark.timeout(180)
def test_class_is_constructed_once_per_actor_not_per_batch():
    ds = bridge.range(2000, override_num_blocks=20).map_batches(
        CountInits, concurrency=2, fn_constructor_kwargs={"offset": 10})
    rows = ds.take_all()
    assert [r["id"] for r in rows] == list(range(10, 2010))
    assert {r["inits"] for r in rows} == {1}
    assert 1 <= len({r["pid"] for r in rows}) <= 2
    extra = _pool_stats(ds, "MapBatches(CountInits)")
    assert extra["batches"] == 20
    assert extra["actors_peak"] == 2


@pytest.mark.timeout(180)
@pytest.mark.parametrize("concurrency", [2, (1, 4)], ids=["fixed2", "auto1-4"])
def test_two_cpus_pool_does_not_deadlock(concurrency):
    # Ray Data 2.60 hangs here: its actors take every CPU and no read task can run.
    # The pool asks for every CPU of the cluster (2 on the default test Ray), whatever its size.
    cpus = _cluster_cpus()
    concurrency = cpus if concurrency == 2 else (1, 2 * cpus)
    ds = bridge.range(5000, override_num_blocks=10).map_batches(CountInits, concurrency=concurrency)
    assert ds.count() == 5000
    extra = _pool_stats(ds, "MapBatches(CountInits)")
    # The pool borrowed CPUs (fractional reservations) instead of taking every CPU: one stays for tasks.
    # (stats round cpus_per_actor to 3 decimals: allow that rounding per actor)
    actors = int(extra["pool"].split("-")[1])
    assert extra["cpus_per_actor"] * actors <= cpus - 1.0 + 5e-4 * actors + 1e-6


@pytest.mark.timeout(180)
def test_explicit_num_cpus_starts_fewer_actors_and_warns():
    # As many 1-CPU actors as the cluster has CPUs: one CPU must stay free for the read tasks.
    cpus = _cluster_cpus()
    ds = bridge.range(1000, override_num_blocks=4).map_batches(CountInits, concurrency=cpus, num_cpus=1)
    with pytest.warns(UserWarning, match="kept for the plan's tasks"):
        rows = ds.take_all()
    assert [r["id"] for r in rows] == list(range(1, 1001))
    assert _pool_stats(ds, "MapBatches(CountInits)")["actors_peak"] == cpus - 1


class SlowStart:
    """Takes a while to start, as a model does to load; writes down when it became ready."""

    def __init__(self, log: str) -> None:
        time.sleep(2.0)
        with open(log, "a") as f:
            f.write(f"ready {time.time()}\n")

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return batch


def _tasks_before_first_ready(log: str) -> int:
    events = [line.split() for line in open(log)]
    ready = min(float(t) for kind, t in events if kind == "ready")
    return sum(1 for kind, t in events if kind == "task" and float(t) < ready)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fills_the_machine", [True, False], ids=["actors-fill-the-cores", "cores-to-spare"])
def test_tasks_feeding_a_starting_pool_wait_while_its_actors_take_every_core(tmp_path, fills_the_machine):
    """While every actor of a pool is starting (a whole core each, whatever fraction of a CPU Ray charges it),
    the tasks feeding it run only the input of one first call per actor when nothing else is left of the
    machine: they would only slow the actors' start, and with it the first output. With cores to spare they
    run on as before. Either way every row comes out once, in order."""
    cpus = _cluster_cpus()
    log = str(tmp_path / "events")

    def mark(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with open(log, "a") as f:
            f.write(f"task {time.time()}\n")
        return batch

    actors = cpus if fills_the_machine else 1
    ds = bridge.range(40, override_num_blocks=40).map_batches(mark).map_batches(
        SlowStart, concurrency=actors, num_cpus=0.5, fn_constructor_kwargs={"log": log})
    assert [r["id"] for r in ds.take_all()] == list(range(40))
    early = _tasks_before_first_ready(log)
    if fills_the_machine:
        assert 1 <= early <= actors  # one first call's input per starting actor, then they wait
    else:
        assert early > actors + 1  # one actor leaves cores free: the tasks ran while it started


class Slow:
    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        time.sleep(0.15)
        return {"id": batch["id"], "pid": np.full(len(batch["id"]), os.getpid())}


@pytest.mark.timeout(180)
def test_autoscaling_pool_scales_up_under_load_and_result_is_complete():
    ds = bridge.range(3000, override_num_blocks=40).map_batches(Slow, concurrency=(1, 2))
    rows = ds.take_all()
    assert [r["id"] for r in rows] == list(range(3000))
    extra = _pool_stats(ds, "MapBatches(Slow)")
    assert extra["actors_peak"] == 2
    assert len({r["pid"] for r in rows}) == 2


@ray.remote(num_cpus=0)
class _Registry:
    def __init__(self) -> None:
        self.handles: list = []

    def add(self, handle) -> None:
        self.handles.append(handle)

    def get(self) -> list:
        return self.handles


class Registered:
    def __init__(self, registry) -> None:
        registry.add.remote(ray.get_runtime_context().current_actor)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        time.sleep(0.05)
        return {"id": batch["id"] * 2}


@pytest.mark.timeout(240)
def test_killed_actor_is_replaced_and_output_equals_no_failure_output():
    registry = _Registry.remote()
    ds = bridge.range(4000, override_num_blocks=40).map_batches(
        Registered, concurrency=2, fn_constructor_args=(registry,))
    got: list[int] = []
    killed = False
    for batch in ds.iter_batches(batch_size=None):
        got.extend(batch["id"].tolist())
        if not killed:
            handles = []
            while not handles:
                handles = ray.get(registry.get.remote())
            ray.kill(handles[0])
            killed = True
    assert got == [2 * i for i in range(4000)]
    assert _pool_stats(ds, "MapBatches(Registered)")["restarts"] >= 1


class CrashOnce:
    """Kills its own worker process the first time it sees row 500 (a crash mid-batch)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if 500 in batch["id"] and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        return {"id": batch["id"]}


@pytest.mark.timeout(240)
def test_actor_crash_mid_batch_reruns_the_batch_exactly_once(tmp_path):
    marker = str(tmp_path / "crashed")
    ds = bridge.range(2000, override_num_blocks=20).map_batches(
        CrashOnce, concurrency=2, fn_constructor_args=(marker,))
    ids = [r["id"] for r in ds.take_all()]
    assert os.path.exists(marker)
    assert ids == list(range(2000))
    assert _pool_stats(ds, "MapBatches(CrashOnce)")["restarts"] == 1


class RaisesInCall:
    def __call__(self, batch):
        raise ValueError("bad batch")


@pytest.mark.timeout(180)
def test_user_error_in_call_is_user_code_error_naming_the_class():
    ds = bridge.range(100, override_num_blocks=2).map_batches(RaisesInCall, concurrency=1)
    with pytest.raises(UserCodeError, match=r"RaisesInCall raised ValueError: bad batch") as info:
        ds.take_all()
    assert "Hint:" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)


class FailsFirstTime:
    def __init__(self, marker_dir: str) -> None:
        self.marker_dir = marker_dir

    def __call__(self, batch):
        marker = os.path.join(self.marker_dir, str(int(batch["id"][0])))
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("flaky")
        return batch


@pytest.mark.timeout(180)
def test_max_retries_retries_user_errors(tmp_path):
    ds = bridge.range(300, override_num_blocks=3).map_batches(
        FailsFirstTime, concurrency=1, fn_constructor_args=(str(tmp_path),), max_retries=1)
    assert [r["id"] for r in ds.take_all()] == list(range(300))
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(UserCodeError, match="flaky"):
        bridge.range(300, override_num_blocks=3).map_batches(
            FailsFirstTime, concurrency=1, fn_constructor_args=(str(fresh),)).take_all()


class RaisesInInit:
    def __init__(self) -> None:
        raise OSError("model file missing")

    def __call__(self, batch):
        return batch


@pytest.mark.timeout(120)
def test_error_in_init_fails_fast_with_the_class_name():
    ds = bridge.range(100).map_batches(RaisesInInit, concurrency=2)
    with pytest.raises(UserCodeError, match=r"constructing RaisesInInit\(\.\.\.\) raised OSError: model file"):
        ds.take_all()


@pytest.mark.timeout(60)
def test_num_gpus_without_gpus_is_a_clear_error_before_any_work():
    if ray.cluster_resources().get("GPU", 0):
        pytest.skip("this cluster has GPUs")
    ds = bridge.range(100).map_batches(CountInits, concurrency=1, num_gpus=1)
    with pytest.raises(BridgeError, match="no GPUs") as info:
        ds.take_all()
    assert "Hint: run with num_gpus=0" in str(info.value)
    with pytest.raises(BridgeError, match="no GPUs"):
        bridge.range(100).map_batches(lambda b: b, num_gpus=1).take_all()


@pytest.mark.timeout(60)
def test_plain_function_asking_more_than_any_node_has_fails_fast():
    # A task that no node can hold would wait for resources forever.
    if not ray.cluster_resources().get("GPU", 0):
        start = time.monotonic()
        with pytest.raises(BridgeError, match=r"num_gpus=1 per task, but the Ray cluster has no GPUs") as info:
            bridge.range(100).map_batches(lambda b: b, num_gpus=1).take_all()
        assert "Hint: run with num_gpus=0" in str(info.value)
        assert time.monotonic() - start < 20
    cpus = _cluster_cpus()
    start = time.monotonic()
    with pytest.raises(BridgeError, match=rf"num_cpus={cpus + 1} per task, but the largest node has {cpus} CPU"):
        bridge.range(100).map_batches(lambda b: b, num_cpus=cpus + 1).take_all()
    assert time.monotonic() - start < 20


_ONE_GPU_CLUSTER = textwrap.dedent("""
    import sys, time, ray, bridge
    from bridge.errors import BridgeError

    class Model:
        def __call__(self, batch):
            return batch

    # One node that reports one GPU: Ray schedules by the declared count, no device is needed.
    ray.init(address="local", num_cpus=2, num_gpus=1, object_store_memory=80 * 1024**2,
             include_dashboard=False, configure_logging=False)
    for label, ds in [("task", bridge.range(10).map_batches(lambda b: b, num_gpus=2)),
                      ("actor", bridge.range(10).map_batches(Model, concurrency=1, num_gpus=2)),
                      ("pool", bridge.range(10).map_batches(Model, concurrency=3, num_gpus=0.5))]:
        start = time.monotonic()
        try:
            ds.take_all()
            print(label, "NO ERROR")
        except BridgeError as err:
            print(label, round(time.monotonic() - start, 1), repr(str(err)))
        sys.stdout.flush()
""")


@pytest.mark.timeout(240)
def test_gpu_requests_a_one_gpu_cluster_cannot_hold_fail_fast_with_a_useful_hint():
    # A separate Ray with one (declared) GPU: the shared test cluster has none.
    try:
        out = subprocess.run([sys.executable, "-c", _ONE_GPU_CLUSTER], capture_output=True, text=True,
                             timeout=180, env={**os.environ, "RAYBRIDGE_PROGRESS_BARS": "0"})
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"a request for more GPUs than the cluster has hung:\n{err.stdout}")
    lines = {line.split(" ", 1)[0]: line for line in out.stdout.splitlines() if line.split(" ", 1)[0]
             in ("task", "actor", "pool")}
    assert set(lines) == {"task", "actor", "pool"}, out.stdout + out.stderr
    task, actor, pool = lines["task"], lines["actor"], lines["pool"]
    assert "num_gpus=2 per task, but the largest node has 1 GPU" in task, task
    assert "Hint: lower num_gpus to at most 1 per task" in task, task
    # concurrency is already 1: the hint must name what to change instead.
    assert "num_gpus=2 per actor, but the largest node has 1 GPU" in actor, actor
    assert "concurrency to at most 1" not in actor and "lower num_gpus to at most 1 per actor" in actor, actor
    assert "3 actor(s) x num_gpus=0.5 need 1.5 GPUs" in pool and "lower concurrency to at most 2" in pool, pool
    for line in (task, actor, pool):
        assert float(line.split(" ", 2)[1]) < 20, line


class KeepEven:
    def __call__(self, row):
        return row["id"] % 2 == 0


class Double:
    def __call__(self, row):
        return {"id": row["id"] * 2}


class Twice:
    def __call__(self, row):
        return [row, row]


@pytest.mark.timeout(180)
def test_map_filter_flat_map_accept_classes():
    ds = bridge.range(20, override_num_blocks=2)
    assert [r["id"] for r in ds.map(Double, concurrency=1).take_all()] == [2 * i for i in range(20)]
    assert [r["id"] for r in ds.filter(KeepEven, concurrency=1).take_all()] == list(range(0, 20, 2))
    assert [r["id"] for r in ds.flat_map(Twice, concurrency=(1, 2)).take_all()] == [i for i in range(20)
                                                                                     for _ in (0, 1)]


@pytest.mark.timeout(180)
def test_stats_show_the_actor_pool_and_plain_functions_stay_tasks():
    ds = bridge.range(1000, override_num_blocks=5).map_batches(lambda b: b).map_batches(CountInits, concurrency=1)
    assert ds.count() == 1000
    text = ds.stats()
    pool_line = next(line for line in text.splitlines() if "MapBatches(CountInits)" in line)
    for key in ("actors_alive=", "batches=5", "busy_fraction=", "rows_per_s="):
        assert key in pool_line
    task_line = next(line for line in text.splitlines() if "<lambda>" in line)
    assert "actors_peak" not in task_line


@pytest.mark.timeout(120)
@pytest.mark.parametrize("bad", [0, (2, 1), (0, 2), "2"])
def test_invalid_concurrency_is_rejected(bad):
    with pytest.raises(BridgeError, match="concurrency must be"):
        bridge.range(10).map_batches(CountInits, concurrency=bad).take_all()


@pytest.mark.timeout(120)
def test_limit_after_actor_pool_stops_early():
    rows = bridge.range(10_000, override_num_blocks=50).map_batches(CountInits, concurrency=1).take(5)
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 5]


class BatchLen:
    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"id": batch["id"], "n": np.full(len(batch["id"]), len(batch["id"]))}


@pytest.mark.timeout(120)
def test_batch_size_cuts_large_blocks_and_combines_small_ones():
    big = bridge.range(1000, override_num_blocks=1).map_batches(BatchLen, batch_size=128, concurrency=2)
    rows = big.take_all()
    assert [r["id"] for r in rows] == list(range(1000))
    assert [r["n"] for r in rows] == [128] * 896 + [104] * 104
    assert _pool_stats(big, "MapBatches(BatchLen)")["batches"] == 8
    small = bridge.range(1000, override_num_blocks=50).map_batches(BatchLen, batch_size=300, concurrency=1)
    assert [r["n"] for r in small.take_all()] == [300] * 900 + [100] * 100


@pytest.mark.timeout(120)
def test_empty_input_through_actor_pool():
    assert bridge.range(0).map_batches(BatchLen, batch_size=10, concurrency=1).take_all() == []


@pytest.mark.timeout(120)
def test_plain_function_with_concurrency_runs_as_capped_tasks():
    ds = bridge.range(400, override_num_blocks=8).map_batches(
        lambda b: {"id": b["id"], "pid": np.full(len(b["id"]), os.getpid())}, concurrency=1)
    rows = ds.take_all()
    assert [r["id"] for r in rows] == list(range(400))
    line = next(x for x in ds.stats().splitlines() if "<lambda>" in x)
    assert "actors_peak" not in line and "8 tasks" in line



def _wait_cpus_free(total: float | None = None, timeout: float = 60.0) -> float:
    total = float(_cluster_cpus()) if total is None else total
    deadline = time.time() + timeout
    free = ray.available_resources().get("CPU", 0.0)
    while free < total and time.time() < deadline:
        time.sleep(0.2)
        free = ray.available_resources().get("CPU", 0.0)
    return free


@pytest.mark.timeout(240)
def test_two_pools_and_downstream_tasks_on_two_cpus_complete_and_release_actors():
    ds = (bridge.range(3000, override_num_blocks=12)
          .map_batches(CountInits, concurrency=2, batch_size=250)
          .map_batches(lambda b: {"id": b["id"] * 3})
          .map_batches(Slow, concurrency=(1, 3)))
    assert [r["id"] for r in ds.take_all()] == [3 * (i + 1) for i in range(3000)]
    assert _wait_cpus_free() == _cluster_cpus()  # every actor was released


@pytest.mark.timeout(180)
def test_early_stop_releases_the_actors():
    it = iter(bridge.range(20_000, override_num_blocks=40).map_batches(Slow, concurrency=2).iter_batches(
        batch_size=None))
    next(it)
    it.close()
    assert _wait_cpus_free() == _cluster_cpus()
