"""iter_torch_batches over 8 float32 columns + one (3, 32, 32) uint8 tensor column, batch 1024.

The rows are one in-memory base table (blocks of 8,192 rows in the object
store) streamed ``repeats`` times, so 10M rows (31 GB) fit a 24 GiB machine.
Contenders: raybridge (each batch its own memory, the default: one copy of
what would be a view of the store), raybridge with ``zero_copy=True`` (views of
the store, as Ray Data's), Ray Data over the very same blocks, and the ceiling: a
plain torch generator cutting the very same batches (1,024 rows each, a batch
that crosses from one repeat into the next concatenated) out of the same data
already in memory as tensors, consumed by the same loop.
"""

from __future__ import annotations

import time

import numpy as np

from integration.bench.registry import Benchmark

#: scale -> (base rows, repeats)
SIZES = {"small": (50_000, 4), "full": (100_000, 100)}
BATCH = 1024
BLOCK_ROWS = 8192


def base_columns(rows: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    cols = {f"f{i}": rng.random(rows, dtype=np.float32) for i in range(8)}
    cols["img"] = rng.integers(0, 255, size=(rows, 3, 32, 32), dtype=np.uint8)
    return cols


def _block_refs(scale: str, ray_format: bool) -> tuple[list, int]:
    import pyarrow as pa
    import ray

    from bridge.batch import to_block

    rows, repeats = SIZES[scale]
    cols = base_columns(rows)
    refs = []
    for s in range(0, rows, BLOCK_ROWS):
        part = {k: v[s:s + BLOCK_ROWS] for k, v in cols.items()}
        if ray_format:
            from ray.data.block import BlockAccessor

            block = BlockAccessor.batch_to_block(part)  # Ray Data's own tensor extension type
        else:
            block = to_block(part)
        assert isinstance(block, pa.Table)
        refs.append(ray.put(block))
    return refs * repeats, rows * repeats


def _consume(batches) -> int:
    n = 0
    for b in batches:
        n += int(b["img"].shape[0])
    return n


def _raybridge(scale: str, zero_copy: bool = False):
    import bridge

    refs, total = _block_refs(scale, ray_format=False)
    ds = bridge.from_arrow_refs(refs)

    def run() -> float:
        t = time.perf_counter()
        n = _consume(ds.iter_torch_batches(batch_size=BATCH, prefetch_batches=2, zero_copy=zero_copy))
        assert n == total
        return n / (time.perf_counter() - t)

    return run


def _raybridge_zero_copy(scale: str):
    """The opt-in: batches that are views of the object store (read-only by contract), as Ray Data's are."""
    return _raybridge(scale, zero_copy=True)


def _ray_data(scale: str):
    import ray.data

    refs, total = _block_refs(scale, ray_format=True)
    ds = ray.data.from_arrow_refs(refs)

    def run() -> float:
        t = time.perf_counter()
        n = _consume(ds.iter_torch_batches(batch_size=BATCH, prefetch_batches=2))
        assert n == total
        return n / (time.perf_counter() - t)

    return run


def ceiling_batches(tensors: dict, rows: int, repeats: int):
    """The batches raybridge yields, cut from tensors already in memory.

    The base table is streamed ``repeats`` times as one row stream, so a batch
    that crosses from one repeat into the next is concatenated (``torch.cat``),
    exactly as the ingest path concatenates a batch that crosses two blocks:
    same batch count, same sizes, same dict of tensors.
    """
    import torch

    tail: dict | None = None
    for _ in range(repeats):
        start = 0
        if tail is not None:
            start = BATCH - int(tail["img"].shape[0])
            yield {k: torch.cat([tail[k], v[:start]]) for k, v in tensors.items()}
        while start + BATCH <= rows:
            yield {k: v[start:start + BATCH] for k, v in tensors.items()}
            start += BATCH
        tail = {k: v[start:] for k, v in tensors.items()} if start < rows else None
    if tail is not None:
        yield tail


def _torch_ceiling(scale: str):
    import torch

    rows, repeats = SIZES[scale]
    tensors = {k: torch.from_numpy(v) for k, v in base_columns(rows).items()}

    def run() -> float:
        t = time.perf_counter()
        n = _consume(ceiling_batches(tensors, rows, repeats))
        assert n == rows * repeats
        return n / (time.perf_counter() - t)

    return run


BENCHMARK = Benchmark(
    name="torch_ingest",
    title="iter_torch_batches(1024): 8 x float32 + (3,32,32) uint8 tensor",
    unit="rows/s",
    contenders={"raybridge": _raybridge, "raybridge_zero_copy": _raybridge_zero_copy, "ray_data": _ray_data,
                "torch_in_memory": _torch_ceiling},
    params={s: f"{r:,} rows x {k} epochs = {r * k:,} rows" for s, (r, k) in SIZES.items()},
    goals={"ray_data": 1.5, "torch_in_memory": 0.5},
    ray_init={"object_store_memory": 2 * 1024**3},
)
