"""iter_torch_batches(4096, device="cuda") over rows of 3,104 bytes: GB/s onto the GPU.

Rows: 8 float32 columns + one (3, 32, 32) uint8 tensor column (3,104 B per row),
blocks of 16,384 rows in the object store.  Contenders: raybridge, Ray Data
over the very same blocks, and the ceiling: the same batches sliced from
tensors already in pinned host memory and copied to the device by the same
loop.  Every contender's consumer reads each batch on the GPU (a sum per
batch, synchronised at the end), so a copy that is not finished counts.
Skipped where CUDA is absent.  ``python -m integration.bench.bench_gpu_ingest``
runs the three in one process and prints GB/s and the sampled GPU use.
"""

from __future__ import annotations

import time

import numpy as np

from integration.bench.registry import Benchmark, cuda_missing

SIZES = {"small": 200_000, "full": 2_000_000}
BATCH = 4096
BLOCK_ROWS = 16_384
ROW_BYTES = 8 * 4 + 3 * 32 * 32


def base_columns(rows: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    cols = {f"f{i}": rng.random(rows, dtype=np.float32) for i in range(8)}
    cols["img"] = rng.integers(0, 255, size=(rows, 3, 32, 32), dtype=np.uint8)
    return cols


def _block_refs(rows: int, ray_format: bool) -> list:
    import ray

    from bridge.batch import to_block

    cols = base_columns(rows)
    refs = []
    for s in range(0, rows, BLOCK_ROWS):
        part = {k: v[s:s + BLOCK_ROWS] for k, v in cols.items()}
        if ray_format:
            from ray.data.block import BlockAccessor

            block = BlockAccessor.batch_to_block(part)
        else:
            block = to_block(part)
        refs.append(ray.put(block))
    return refs


def _consume(batches) -> int:
    import torch

    n = 0
    acc = torch.zeros((), device="cuda", dtype=torch.float64)
    for b in batches:
        acc += b["img"].sum() + b["f0"].sum()
        n += int(b["img"].shape[0])
    torch.cuda.synchronize()
    return n


def _timed(make_batches, rows: int):
    def run() -> float:
        t = time.perf_counter()
        n = _consume(make_batches())
        assert n == rows, (n, rows)
        return n * ROW_BYTES / (time.perf_counter() - t) / 1e6

    return run


def _raybridge(scale: str):
    import bridge

    rows = SIZES[scale]
    ds = bridge.from_arrow_refs(_block_refs(rows, ray_format=False))
    return _timed(lambda: ds.iter_torch_batches(batch_size=BATCH, device="cuda", prefetch_batches=4), rows)


def _ray_data(scale: str):
    import ray.data

    rows = SIZES[scale]
    ds = ray.data.from_arrow_refs(_block_refs(rows, ray_format=True))
    return _timed(lambda: ds.iter_torch_batches(batch_size=BATCH, device="cuda", prefetch_batches=4), rows)


def _pinned_ceiling(scale: str):
    import torch

    rows = SIZES[scale]
    pinned = {k: torch.from_numpy(v).pin_memory() for k, v in base_columns(rows).items()}

    def batches():
        for s in range(0, rows, BATCH):
            yield {k: v[s:s + BATCH].to("cuda", non_blocking=True) for k, v in pinned.items()}

    return _timed(batches, rows)


BENCHMARK = Benchmark(
    name="gpu_ingest",
    title="iter_torch_batches(4096, device='cuda'), rows of 3,104 B",
    unit="MB/s",
    contenders={"raybridge": _raybridge, "ray_data": _ray_data, "pinned_slices": _pinned_ceiling},
    params={s: f"{r:,} rows x {ROW_BYTES:,} B" for s, r in SIZES.items()},
    goals={"ray_data": 3.0, "pinned_slices": 0.5},
    ray_init={"object_store_memory": 16 * 1024**3},
    requires=cuda_missing,
)


if __name__ == "__main__":
    from integration.bench.registry import run_in_process

    run_in_process(BENCHMARK, "full")
