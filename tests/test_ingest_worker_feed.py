"""The DataLoader-worker feed leaves nothing behind in the temporary directory."""

from __future__ import annotations

import gc
import os

import pytest

import bridge
from raybridge_adapters.worker_feed import WorkerFeed


def test_feed_folder_removed_on_close_and_when_dropped():
    feed = WorkerFeed(lambda epoch: iter(()))
    folder = os.path.dirname(feed.address)
    assert os.path.isdir(folder)
    feed.close()
    assert not os.path.exists(folder)

    feed = WorkerFeed(lambda epoch: iter(()))
    folder = os.path.dirname(feed.address)
    del feed
    gc.collect()
    assert not os.path.exists(folder)


def test_to_torch_with_workers_leaves_no_feed_folder():
    torch = pytest.importorskip("torch")
    tds = bridge.range(200).to_torch(batch_size=50)
    folder = os.path.dirname(tds._feed.address)
    loader = torch.utils.data.DataLoader(tds, batch_size=None, num_workers=2)
    assert sum(len(b["id"]) for b in loader) == 200
    del loader, tds
    gc.collect()
    assert not os.path.exists(folder)


def test_no_accept_thread_outlives_its_feed():
    """Closing the listener does not wake a thread blocked in accept() (Linux): every to_torch() left one
    thread behind, iterated or not (a per-epoch to_torch loop grew one a pass)."""
    import threading
    import time

    def feeds() -> int:
        return sum(t.name == "raybridge-worker-feed" for t in threading.enumerate())

    before = feeds()
    ds = bridge.range(10)
    for _ in range(5):
        tds = ds.to_torch(batch_size=4)
        assert sum(len(b["id"]) for b in tds) == 10
        del tds
    closed = WorkerFeed(lambda epoch: iter(()))
    closed.close()
    gc.collect()
    deadline = time.monotonic() + 10
    while feeds() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert feeds() == before
