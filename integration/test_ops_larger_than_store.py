"""Shuffle and sort of a Dataset 3x larger than the test session's object store (256 MiB).

Intermediate pieces live in the object store and spill to disk; only metadata
and per-block summaries (a few numbers each) reach the driver.
"""

from __future__ import annotations

import numpy as np

import bridge

ROWS = 25_000_000  # 4 float64/int64 columns: ~800 MB, about 3x the 256 MiB store
BLOCKS = 32


def _wide(batch):
    ids = batch["id"]
    rng = np.random.default_rng(int(ids[0]))
    return {"id": ids, "key": rng.random(len(ids)), "a": ids * 2.0, "b": ids % 7}


def _big() -> bridge.Dataset:
    return bridge.range(ROWS, override_num_blocks=BLOCKS).map_batches(_wide)


def _summary(batch):
    ids, key = batch["id"], batch["key"]
    ok = bool(np.all(batch["a"] == ids * 2.0))
    return {
        "n": np.array([len(ids)]), "id_sum": np.array([int(ids.sum())]),
        "id_sq": np.array([float((ids.astype(np.float64) ** 2).sum())]),
        "kmin": np.array([key.min() if len(key) else np.inf]), "kmax": np.array([key.max() if len(key) else -np.inf]),
        "sorted": np.array([bool(np.all(key[:-1] <= key[1:]))]), "rows_ok": np.array([ok]),
        "first_id": np.array([int(ids[0]) if len(ids) else -1]),
    }


def _check_permutation(rows: list[dict]) -> None:
    assert sum(r["n"] for r in rows) == ROWS
    assert sum(r["id_sum"] for r in rows) == ROWS * (ROWS - 1) // 2
    want_sq = (ROWS - 1) * ROWS * (2 * ROWS - 1) / 6
    assert abs(sum(r["id_sq"] for r in rows) - want_sq) / want_sq < 1e-9
    assert all(r["rows_ok"] for r in rows)  # columns of a row stay together


def test_random_shuffle_3x_object_store():
    rows = _big().random_shuffle(seed=0).map_batches(_summary, batch_size=None).take_all()
    _check_permutation(rows)
    assert [r["first_id"] for r in rows] != sorted(r["first_id"] for r in rows)


def test_sort_3x_object_store():
    rows = _big().sort("key").map_batches(_summary, batch_size=None).take_all()
    _check_permutation(rows)
    rows = [r for r in rows if r["n"]]
    assert all(r["sorted"] for r in rows)
    assert all(a["kmax"] <= b["kmin"] for a, b in zip(rows, rows[1:]))
