"""GPU batch inference: ResNet-50 in bf16, batch 256, one actor with ``num_gpus=1``: images/s.

Rows are preprocessed images (3 x 224 x 224 float32, 602 KB) made by an upstream
CPU ``map_batches`` in blocks of 300 rows, so batches of 256 straddle blocks.
Contenders: raybridge (``batch_format="torch", device="cuda"``: tensors arrive on
the GPU, copied on the actor's second thread while the previous batch runs),
Ray Data 2.60 (NumPy batches, the same model, ``torch.as_tensor(...).cuda()``
in ``__call__``), and the ceiling: the model on one batch already on the GPU.
Steady throughput is measured from the first output to the last.  Skipped where
CUDA is absent; ``python -m integration.bench.bench_gpu_inference`` runs the
three in one process and prints images/s and the sampled GPU use.
"""

from __future__ import annotations

import time

import numpy as np

from integration.bench.registry import STEADY_WINDOW, Benchmark, cuda_missing

SIZES = {"small": 2_560, "full": 15_360}
BATCH = 256
BLOCK_ROWS = 300


def _images(b: dict) -> dict:
    ids = b["id"]
    img = np.empty((len(ids), 3, 224, 224), dtype=np.float32)
    img[:] = (ids % 255).astype(np.float32)[:, None, None, None] / 255.0
    return {"id": ids, "img": img}


def _model():
    import torch
    import torchvision

    model = torchvision.models.resnet50(weights=None).eval().to("cuda", dtype=torch.bfloat16)
    return model.to(memory_format=torch.channels_last)


class _TorchModel:
    """raybridge: the batch's tensors are already on the GPU."""

    def __init__(self) -> None:
        self.model = _model()

    def __call__(self, batch: dict) -> dict:
        import torch

        with torch.inference_mode():
            x = batch["img"].to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
            return {"id": batch["id"].cpu(), "pred": self.model(x).argmax(1).cpu()}


class _NumpyModel:
    """Ray Data: NumPy batches, copied to the GPU in ``__call__``."""

    def __init__(self) -> None:
        self.model = _model()

    def __call__(self, batch: dict) -> dict:
        import torch

        with torch.inference_mode():
            x = torch.as_tensor(batch["img"]).cuda().to(torch.bfloat16)
            x = x.contiguous(memory_format=torch.channels_last)
            return {"id": batch["id"], "pred": self.model(x).argmax(1).cpu().numpy()}


def _steady(rows_iter, total: int) -> float:
    n, first_t = 0, None
    first_n = 0
    for b in rows_iter:
        k = len(b["id"])
        if first_t is None:
            first_t, first_n = time.perf_counter(), k
        n += k
    assert n == total, (n, total)
    end = time.perf_counter()
    STEADY_WINDOW[:] = [first_t, end]
    return (n - first_n) / (end - first_t)


def _raybridge(scale: str, actors: int = 1):
    import bridge

    n = SIZES[scale]

    def run() -> float:
        ds = bridge.range(n, override_num_blocks=n // BLOCK_ROWS).map_batches(_images)
        out = ds.map_batches(_TorchModel, batch_format="torch", device="cuda", batch_size=BATCH,
                             num_gpus=1 / actors, concurrency=actors)
        return _steady(out.iter_batches(batch_size=None), n)

    return run


def _raybridge_two_actors(scale: str):
    return _raybridge(scale, actors=2)


def _ray_data(scale: str):
    import ray.data

    n = SIZES[scale]

    def run() -> float:
        ds = ray.data.range(n, override_num_blocks=n // BLOCK_ROWS).map_batches(_images)
        out = ds.map_batches(_NumpyModel, batch_size=BATCH, num_gpus=1, concurrency=1)
        return _steady(out.iter_batches(batch_size=None), n)

    return run


def _ceiling(scale: str):
    import torch

    n = SIZES[scale]
    model = _model()
    x = torch.as_tensor(_images({"id": np.arange(BATCH)})["img"]).cuda().to(torch.bfloat16)
    x = x.contiguous(memory_format=torch.channels_last)

    def run() -> float:
        with torch.inference_mode():
            model(x).argmax(1).cpu()
            t = time.perf_counter()
            for _ in range(n // BATCH):
                model(x).argmax(1).cpu()
        end = time.perf_counter()
        STEADY_WINDOW[:] = [t, end]
        return (n // BATCH) * BATCH / (end - t)

    return run


BENCHMARK = Benchmark(
    name="gpu_inference",
    title="ResNet-50 bf16, batch 256, 1 actor num_gpus=1: steady images/s",
    unit="rows/s",
    contenders={"raybridge": _raybridge, "ray_data": _ray_data, "gpu_resident": _ceiling,
                "raybridge_2x0.5gpu": _raybridge_two_actors},
    params={s: f"{r:,} images 3x224x224 float32 in blocks of {BLOCK_ROWS}" for s, r in SIZES.items()},
    goals={"ray_data": 3.0, "gpu_resident": 0.8},
    ray_init={"object_store_memory": 24 * 1024**3},
    requires=cuda_missing,
)


if __name__ == "__main__":
    from integration.bench.registry import run_in_process

    run_in_process(BENCHMARK, "full")
