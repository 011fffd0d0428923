"""Batches copied to a CUDA device are right even when the consumer's GPU work lags behind.

The consumer below queues ~``LAG_MS`` of GPU work (``torch.cuda._sleep``) on its
own stream before each batch's checksum, and never synchronises until the end,
so the host runs far ahead of the GPU while the iterator's background thread
keeps copying new runs of batches.  If the caching allocator handed a dropped
batch's memory to the next copy before the consumer's queued kernels read it,
checksums would differ from the CPU path's.  Skipped only where CUDA is absent.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import bridge

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

ROWS = 400_000
BATCH = 2048
WIDTH = 16
LAG_MS = 4


def _dataset(rows: int = ROWS) -> bridge.Dataset:
    def widen(b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        ids = b["id"]
        return {"id": ids, "v": ids[:, None] * np.arange(1, WIDTH + 1, dtype=np.int64)[None, :]}

    return bridge.range(rows).map_batches(widen)


def _expected(rows: int = ROWS, batch: int = BATCH) -> list[tuple[int, int]]:
    """(sum of ids, sum of v) per batch, computed on the CPU."""
    ids = np.arange(rows, dtype=np.int64)
    scale = WIDTH * (WIDTH + 1) // 2
    return [(int(ids[s:s + batch].sum()), int(ids[s:s + batch].sum()) * scale) for s in range(0, rows, batch)]


def _cycles_per_ms() -> int:
    return int(torch.cuda.get_device_properties(0).clock_rate)  # kHz: cycles per millisecond


def _lagging_checksums(batches, get=lambda b: (b["id"], b["v"])) -> list[tuple[int, int]]:
    lag = LAG_MS * _cycles_per_ms()
    sums = []
    for b in batches:
        ids, v = get(b)
        assert ids.is_cuda and v.is_cuda
        torch.cuda._sleep(lag)  # GPU work queued on the consumer's stream before the batch is read
        sums.append((ids.sum(), v.sum()))
        del b, ids, v  # the batch is dropped while its checksum is still queued
    torch.cuda.synchronize()
    return [(int(a), int(b)) for a, b in sums]


@pytest.mark.parametrize("pin_memory", [None, False, True])
def test_iter_torch_batches_cuda_checksums_match_cpu_with_lagging_consumer(pin_memory):
    it = _dataset().iter_torch_batches(batch_size=BATCH, device="cuda", pin_memory=pin_memory, prefetch_batches=4)
    assert _lagging_checksums(it) == _expected()


def test_consumer_switching_streams_between_batches_of_one_run_reads_exact_values():
    """The hand-off orders a run once per consumer stream: a batch taken on another stream waits and records again."""
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    lag = LAG_MS * _cycles_per_ms()
    batches = iter(_dataset().iter_torch_batches(batch_size=BATCH, device="cuda", prefetch_batches=4))
    sums = []
    for i in range(len(_expected())):
        with torch.cuda.stream(streams[i % 2]):  # next() hands the batch to this stream
            b = next(batches)
            torch.cuda._sleep(lag * (1 + i % 2))  # the two streams lag by different amounts
            sums.append((b["id"].sum(), b["v"].sum()))
            del b
    assert next(batches, None) is None
    torch.cuda.synchronize()
    assert [(int(a), int(v)) for a, v in sums] == _expected()


def test_collate_fn_to_cuda_checksums_match_cpu_with_lagging_consumer():
    def collate(b: dict[str, np.ndarray]):
        return torch.as_tensor(b["id"]), torch.as_tensor(b["v"])

    it = _dataset().iter_torch_batches(batch_size=BATCH, device="cuda", collate_fn=collate, prefetch_batches=4)
    assert _lagging_checksums(it, get=lambda b: b) == _expected()


def test_to_torch_cuda_checksums_match_cpu_with_lagging_consumer():
    tds = _dataset().to_torch(batch_size=BATCH, device="cuda", prefetch_batches=4)
    loader = torch.utils.data.DataLoader(tds, batch_size=None)
    assert _lagging_checksums(loader) == _expected()


def test_to_torch_on_cuda_read_by_dataloader_workers_is_refused_naming_the_fix():
    """Workers made CPU tensors where the loop asked for CUDA ones; the refusal names both ways that work."""
    tds = bridge.range(1000).to_torch(batch_size=100, device="cuda")
    with pytest.raises(ValueError, match=r"(?s)to_torch\(device='cuda'\) with DataLoader\(num_workers=2\).*pin_memory=True"):
        list(torch.utils.data.DataLoader(tds, batch_size=None, num_workers=2))
    ids = [b["id"] for b in torch.utils.data.DataLoader(tds, batch_size=None)]  # no workers: on the device
    assert all(t.is_cuda for t in ids) and torch.cat(ids).cpu().tolist() == list(range(1000))
    cpu = bridge.range(1000).to_torch(batch_size=100, device="cpu")
    loader = torch.utils.data.DataLoader(cpu, batch_size=None, num_workers=2, pin_memory=True)
    got = [b["id"].to("cuda", non_blocking=True) for b in loader]  # the hint's way
    assert sorted(torch.cat(got).cpu().tolist()) == list(range(1000))


def test_streaming_split_cuda_rows_match_cpu_with_lagging_consumers():
    rows = ROWS // 2
    its = _dataset(rows).streaming_split(2, equal=False)
    copies: dict[int, list[tuple[object, object]]] = {}
    errors: list[BaseException] = []

    def consume(i: int) -> None:
        try:
            # Each consumer thread reads on a stream of its own, as a DDP-style worker may.
            with torch.cuda.stream(torch.cuda.Stream()):
                lag = LAG_MS * _cycles_per_ms()
                out = []
                for b in its[i].iter_torch_batches(batch_size=BATCH, device="cuda", prefetch_batches=4):
                    torch.cuda._sleep(lag)
                    out.append((b["id"].clone(), b["v"].clone()))  # read when the queued work gets there
                    del b
                torch.cuda.current_stream().synchronize()
            copies[i] = out
        except BaseException as err:  # noqa: BLE001 - re-raised on the test thread
            errors.append(err)

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    ids = torch.cat([a for i in range(2) for a, _ in copies[i]]).cpu()
    v = torch.cat([b for i in range(2) for _, b in copies[i]]).cpu()
    assert torch.equal(v, ids[:, None] * torch.arange(1, WIDTH + 1)[None, :])
    assert torch.equal(ids.sort().values, torch.arange(rows))


def test_device_index_beyond_the_visible_devices_is_a_bridge_error():
    count = torch.cuda.device_count()
    with pytest.raises(bridge.BridgeError, match=f"sees {count} CUDA device"):
        bridge.range(4).iter_torch_batches(device=f"cuda:{count}")


class _LaggingSums:
    """A GPU actor whose kernels lag: it queues GPU work before reading each batch."""

    def __init__(self) -> None:
        self.lag = LAG_MS * _cycles_per_ms()

    def __call__(self, batch: dict) -> dict:
        ids, v = batch["id"], batch["v"]
        assert ids.is_cuda and v.is_cuda
        torch.cuda._sleep(self.lag)
        ids_sum, v_sum = ids.sum(), v.sum()  # queued behind the sleep
        n = len(ids)
        return {"first": ids[:1].cpu().expand(n).clone(), "n": torch.full((n,), n),
                "ids_sum": ids_sum.cpu().expand(n).clone(), "v_sum": v_sum.cpu().expand(n).clone()}


def test_map_batches_torch_on_cuda_in_a_gpu_actor_is_exact():
    rows = ROWS // 4
    out = _dataset(rows).map_batches(_LaggingSums, batch_format="torch", device="cuda", batch_size=BATCH,
                                     num_gpus=1, concurrency=1).to_arrow()
    firsts = out.column("first").to_numpy()
    ns = out.column("n").to_numpy()
    sums = out.column("ids_sum").to_numpy()
    vsums = out.column("v_sum").to_numpy()
    scale = WIDTH * (WIDTH + 1) // 2
    assert len(out) == rows
    for i in range(0, rows, BATCH):
        first, n = int(firsts[i]), int(ns[i])
        assert first == i and n == min(BATCH, rows - i)
        want = sum(range(first, first + n))
        assert int(sums[i]) == want and int(vsums[i]) == want * scale


def _mixed_table(rows: int):
    import pyarrow as pa

    rng = np.random.default_rng(7)
    img = rng.integers(0, 255, size=(rows, 3, 5, 7), dtype=np.uint8)
    return pa.table({
        "flag": pa.array(rng.random(rows) < 0.5),
        "i8": pa.array(rng.integers(-128, 127, rows, dtype=np.int8)),
        "f16": pa.array(rng.random(rows).astype(np.float16)),
        "u16": pa.array(rng.integers(0, 65535, rows, dtype=np.uint16)),  # becomes int64
        "f64": pa.array(rng.random(rows)),
        "img": pa.FixedShapeTensorArray.from_numpy_ndarray(img),
        "text": pa.array([f"r{i}" for i in range(rows)]),
        "seq": pa.array([list(range(i % 4)) for i in range(rows)], pa.list_(pa.int32())),
    })


@pytest.mark.parametrize("prefetch", [0, 4])
def test_columns_of_every_dtype_reach_cuda_exact_in_dtype_shape_and_value(prefetch):
    """Every column of every dtype reaches the device as the CPU path gives it, each its own memory."""
    ds = bridge.from_arrow(_mixed_table(3000)).repartition(3)
    cpu = list(ds.iter_torch_batches(batch_size=512, device="cpu"))
    gpu = list(ds.iter_torch_batches(batch_size=512, device="cuda", prefetch_batches=prefetch))
    assert len(cpu) == len(gpu) == 6
    for c, g in zip(cpu, gpu):
        assert g.keys() == c.keys()
        for name in ("flag", "i8", "f16", "u16", "f64", "img"):
            assert g[name].is_cuda and g[name].dtype == c[name].dtype and g[name].shape == c[name].shape, name
            assert torch.equal(g[name].cpu(), c[name]), name
        assert g["text"] == c["text"]
        assert len(g["seq"]) == len(c["seq"]) and all(torch.equal(a.cpu(), b) for a, b in zip(g["seq"], c["seq"]))
    # An in-place change to one column leaves the others (no two share memory).
    g = gpu[0]
    before = {k: g[k].clone() for k in ("flag", "i8", "f16", "u16", "f64", "img")}
    g["f64"].add_(1.0)
    g["i8"].zero_()
    for name in ("flag", "f16", "u16", "img"):
        assert torch.equal(g[name], before[name]), name
    assert torch.equal(cpu[0]["f64"].cuda() + 1.0, g["f64"])


def test_map_batches_torch_on_cuda_gives_every_column_exactly():
    """A GPU actor's torch batches (one block, and pieces of several joined in pinned memory) are exact."""
    table = _mixed_table(2000).drop_columns(["text", "seq"])

    class Check:
        def __call__(self, batch: dict) -> dict:
            assert all(v.is_cuda for v in batch.values())
            n = len(batch["f64"])
            return {"f64": batch["f64"].cpu(), "img_sum": batch["img"].flatten(1).sum(1).cpu(),
                    "u16": batch["u16"].cpu(), "flag": batch["flag"].cpu(), "n": torch.full((n,), n)}

    ds = bridge.from_arrow(table).repartition(3)
    out = ds.map_batches(Check, batch_format="torch", device="cuda", batch_size=300, num_gpus=1,
                         concurrency=1).to_arrow()
    want_img = table.column("img").combine_chunks().to_numpy_ndarray().reshape(2000, -1).sum(1)
    assert out.column("f64").to_pylist() == table.column("f64").to_pylist()
    assert out.column("u16").to_pylist() == table.column("u16").to_pylist()
    assert out.column("flag").to_pylist() == table.column("flag").to_pylist()
    assert np.array_equal(out.column("img_sum").to_numpy(), want_img)
