"""Actor pools: callable classes in map_batches/map/filter/flat_map, on the 2-CPU test Ray."""

from __future__ import annotations

import os
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
    # Ray Data 2.60 hangs here: its actors take both CPUs and no read task can run.
    ds = bridge.range(5000, override_num_blocks=10).map_batches(CountInits, concurrency=concurrency)
    assert ds.count() == 5000
    extra = _pool_stats(ds, "MapBatches(CountInits)")
    # The pool borrowed CPUs (fractional reservations) instead of taking every CPU.
    assert extra["cpus_per_actor"] * int(extra["pool"].split("-")[1]) <= 1.0


@pytest.mark.timeout(180)
def test_explicit_num_cpus_starts_fewer_actors_and_warns():
    ds = bridge.range(1000, override_num_blocks=4).map_batches(CountInits, concurrency=2, num_cpus=1)
    with pytest.warns(UserWarning, match="kept for the plan's tasks"):
        rows = ds.take_all()
    assert [r["id"] for r in rows] == list(range(1, 1001))
    assert _pool_stats(ds, "MapBatches(CountInits)")["actors_peak"] == 1


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



def _wait_cpus_free(total: float = 2.0, timeout: float = 60.0) -> float:
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
    assert _wait_cpus_free() == 2.0  # every actor was released


@pytest.mark.timeout(180)
def test_early_stop_releases_the_actors():
    it = iter(bridge.range(20_000, override_num_blocks=40).map_batches(Slow, concurrency=2).iter_batches(
        batch_size=None))
    next(it)
    it.close()
    assert _wait_cpus_free() == 2.0
