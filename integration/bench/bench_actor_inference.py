"""CPU pre-processing -> torch inference in an actor pool: raybridge vs Ray Data, same actors.

The pipeline: ``range(N)`` -> ``decode`` (a task: derive and normalise 64
features per row) -> ``Predictor`` (a callable class holding a torch MLP, in a
pool of 2 actors) -> iterate to the end.  Both libraries get the same actor
count and the same CPUs per actor (0.5, so that on the 2-CPU CI machine
Ray Data's upstream tasks can still be scheduled; with 1 CPU per actor
Ray Data 2.60 waits forever there).

``BENCHMARK`` measures throughput (rows/s); ``BENCHMARK_FIRST_OUTPUT`` the
time to the first output batch (seconds), which the issue wants at most half
of Ray Data's.
"""

from __future__ import annotations

import time

import numpy as np

from integration.bench.registry import Benchmark, first_batch_setup

ROWS = {"small": 50_000, "full": 200_000}
#: Source blocks, the same for both libraries (range's default would be 1 block at this size).
BLOCKS = {"small": 25, "full": 100}
N_FEATURES = 64
BATCH = 2048
ACTORS = 2
CPUS_PER_ACTOR = 0.5


def decode(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    ids = batch["id"].astype(np.float32)
    k = np.arange(1, N_FEATURES + 1, dtype=np.float32)
    feats = np.sin(ids[:, None] * k[None, :] / 1000.0) + np.cos(ids[:, None] / (k[None, :] + 3.0))
    feats = (feats - feats.mean(axis=1, keepdims=True)) / (feats.std(axis=1, keepdims=True) + 1e-6)
    return {"id": batch["id"], "features": feats.astype(np.float32)}


class Predictor:
    """A torch MLP, built once per actor."""

    def __init__(self) -> None:
        import torch

        torch.manual_seed(0)
        self.torch = torch
        self.model = torch.nn.Sequential(
            torch.nn.Linear(N_FEATURES, 512), torch.nn.ReLU(),
            torch.nn.Linear(512, 512), torch.nn.ReLU(),
            torch.nn.Linear(512, 16),
        ).eval()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with self.torch.inference_mode():
            out = self.model(self.torch.as_tensor(batch["features"])).numpy()
        return {"id": batch["id"], "pred": out}


def _rb(n: int):
    import bridge

    return bridge.range(n, override_num_blocks=_blocks(n)).map_batches(decode).map_batches(
        Predictor, concurrency=ACTORS, num_cpus=CPUS_PER_ACTOR, batch_size=BATCH)


def _rd(n: int):
    import ray.data

    return ray.data.range(n, override_num_blocks=_blocks(n)).map_batches(decode, batch_size=None).map_batches(
        Predictor, concurrency=ACTORS, num_cpus=CPUS_PER_ACTOR, batch_size=BATCH)


def _blocks(n: int) -> int:
    return next(BLOCKS[s] for s, rows in ROWS.items() if rows == n)


def _throughput(make):
    def setup(scale: str):
        n = ROWS[scale]

        def run() -> float:
            t = time.perf_counter()
            rows = 0
            for b in make(n).iter_batches(batch_size=BATCH):
                rows += len(b["id"])
            assert rows == n, rows
            return n / (time.perf_counter() - t)

        return run

    return setup


def _first_output(make):
    return first_batch_setup(make, ROWS, BATCH)


BENCHMARK = Benchmark(
    name="actor_inference",
    title=f"range(N) -> decode (task) -> torch MLP in {ACTORS} actors -> iter_batches({BATCH}) to the end",
    unit="rows/s",
    contenders={"raybridge": _throughput(_rb), "ray_data": _throughput(_rd)},
    params={s: f"{n:,} rows x {N_FEATURES} features" for s, n in ROWS.items()},
    goals={"ray_data": 1.0},
)

BENCHMARK_FIRST_OUTPUT = Benchmark(
    name="actor_inference_first_output",
    title=f"time to first output batch of the {BENCHMARK.name} pipeline",
    unit="s",
    contenders={"raybridge": _first_output(_rb), "ray_data": _first_output(_rd)},
    params=BENCHMARK.params,
    goals={"ray_data": 2.0},
)
