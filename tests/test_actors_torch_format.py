"""map_batches(..., batch_format="torch"): tensors in, one thread of user code, the next batch prepared meanwhile."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import bridge

torch = pytest.importorskip("torch")


class Doubler:
    def __init__(self) -> None:
        self.active = 0
        self.overlaps = 0
        self.lock = threading.Lock()

    def __call__(self, batch: dict) -> dict:
        assert isinstance(batch["x"], torch.Tensor) and batch["x"].dtype == torch.float32
        assert tuple(batch["img"].shape[1:]) == (2, 3)
        with self.lock:
            self.active += 1
            overlaps = self.overlaps = self.overlaps + (self.active > 1)
        time.sleep(0.01)
        with self.lock:
            self.active -= 1
        n = len(batch["x"])
        return {"y": batch["x"] * 2, "s": batch["img"].sum(dim=(1, 2)), "overlaps": torch.full((n,), overlaps)}


def _data(rows: int) -> bridge.Dataset:
    def make(b: dict) -> dict:
        ids = b["id"]
        return {"x": ids.astype(np.float32), "img": np.repeat(ids[:, None, None], 6, axis=1).reshape(-1, 2, 3)}

    return bridge.range(rows, override_num_blocks=4).map_batches(make)


def test_torch_batches_in_an_actor_pool_are_right_and_in_order():
    rows = 1000
    out = _data(rows).map_batches(Doubler, batch_format="torch", batch_size=64, concurrency=1).to_arrow()
    ids = np.arange(rows)
    assert out.column("y").to_pylist() == (ids * 2.0).tolist()
    assert out.column("s").to_pylist() == (ids * 6).tolist()
    # Two actor threads prepare and run calls, but the user's __call__ never runs on both at once.
    assert max(out.column("overlaps").to_pylist()) == 0


def test_torch_batches_in_tasks():
    out = _data(100).map_batches(lambda b: {"y": b["x"] + 1}, batch_format="torch").to_arrow()
    assert out.column("y").to_pylist() == (np.arange(100) + 1.0).tolist()


def test_device_without_torch_format_is_refused():
    with pytest.raises(ValueError, match="batch_format='torch'"):
        bridge.range(4).map_batches(lambda b: b, device="cuda")
