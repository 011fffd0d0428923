"""The torch exporters: dtype rules, DataLoader workers, ranks, length, resume, from_torch (issue 3)."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import UnsupportedTypeError

torch = pytest.importorskip("torch")


def _batch(table: pa.Table, **kw):
    return next(iter(bridge.from_arrow(table).iter_torch_batches(batch_size=len(table), **kw)))


@pytest.mark.parametrize(
    ("arrow_type", "torch_dtype"),
    [
        (pa.int8(), torch.int8), (pa.int16(), torch.int16), (pa.int32(), torch.int32), (pa.int64(), torch.int64),
        (pa.uint8(), torch.uint8), (pa.uint16(), torch.int64), (pa.uint32(), torch.int64),
        (pa.float16(), torch.float16), (pa.float32(), torch.float32), (pa.float64(), torch.float64),
        (pa.bool_(), torch.bool),
    ],
)
def test_dtype_rules(arrow_type, torch_dtype):
    values = [0, 1, 2] if arrow_type != pa.bool_() else [True, False, True]
    if arrow_type == pa.float16():
        arr = pa.array(np.array(values, dtype=np.float16))
    else:
        arr = pa.array(values, type=arrow_type)
    out = _batch(pa.table({"c": arr}))["c"]
    assert out.dtype == torch_dtype
    assert out.tolist() == [type(out.tolist()[0])(v) for v in values]


def test_uint64_raises_with_hint_unless_cast():
    t = pa.table({"big": pa.array([1, 2], type=pa.uint64())})
    with pytest.raises(UnsupportedTypeError, match="'big'.*uint64") as err:
        _batch(t)
    assert "Hint: pass dtypes" in str(err.value)
    assert _batch(t, dtypes={"big": torch.int64})["big"].tolist() == [1, 2]


def test_timestamps_strings_tensors_and_lists():
    ts = [datetime.datetime(2024, 1, 1), datetime.datetime(2024, 1, 2)]
    t = pa.table({
        "ts": pa.array(ts, type=pa.timestamp("ms")),
        "s": ["a", "b"],
        "img": pa.FixedShapeTensorArray.from_numpy_ndarray(np.arange(24, dtype=np.uint8).reshape(2, 3, 2, 2)),
        "seq": pa.array([[1.0], [2.0, 3.0]]),
    })
    with pytest.warns(UserWarning, match="'ts'.*int64 ms"):
        out = _batch(t)
    assert out["ts"].dtype == torch.int64 and out["ts"][1] - out["ts"][0] == 86_400_000
    assert out["s"] == ["a", "b"]
    assert out["img"].shape == (2, 3, 2, 2) and out["img"][1, 2, 1, 1] == 23
    assert [x.tolist() for x in out["seq"]] == [[1.0], [2.0, 3.0]]


def test_nulls_name_the_column_or_are_filled():
    t = pa.table({"x": pa.array([1.0, None, 3.0])})
    with pytest.raises(UnsupportedTypeError, match="'x'.*1 null") as err:
        _batch(t)
    assert "fill_nulls" in str(err.value)
    assert _batch(t, fill_nulls={"x": -1.0})["x"].tolist() == [1.0, -1.0, 3.0]


def test_device_cuda_without_gpu_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(bridge.BridgeError, match="no CUDA device"):
        bridge.range(4).iter_torch_batches(device="cuda")


def test_collate_fn_and_dtypes():
    ds = bridge.range(6)
    out = next(iter(ds.iter_torch_batches(batch_size=6, dtypes=torch.float32)))
    assert out["id"].dtype == torch.float32
    got = next(iter(ds.iter_torch_batches(batch_size=6, collate_fn=lambda b: torch.as_tensor(b["id"] * 2))))
    assert got.tolist() == [0, 2, 4, 6, 8, 10]


@pytest.mark.parametrize("batch_size", [None, 64])
def test_dataloader_two_workers_delivers_every_row_once(batch_size):
    src = bridge.range(1000, override_num_blocks=7).map_batches(lambda b: {"id": b["id"], "f": b["id"] * 0.5})
    tds = src.to_torch(batch_size=batch_size)
    loader = torch.utils.data.DataLoader(tds, batch_size=None if batch_size else 50, num_workers=2)
    ids = torch.cat([b["id"] for b in loader]).tolist()
    assert sorted(ids) == list(range(1000))
    assert ids == list(range(1000))  # round-robin feeding keeps the num_workers=0 order
    assert len(tds) == (16 if batch_size else 1000)


def test_ranks_get_disjoint_equal_shares_with_equal_lengths():
    ds = bridge.range(1001, override_num_blocks=5).materialize().randomize_block_order()
    shares = []
    for rank in range(3):
        tds = ds.to_torch(batch_size=100, rank=rank, world_size=3)
        assert len(tds) == 4
        shares.append([int(x) for b in tds for x in b["id"]])
    assert [len(s) for s in shares] == [333, 333, 333]
    assert len(set().union(*map(set, shares))) == 999


def test_to_torch_resume_continues_mid_epoch():
    ds = bridge.range(500, override_num_blocks=4).materialize()
    tds = ds.to_torch(batch_size=50, local_shuffle_buffer_size=100)
    seen = []
    for i, b in enumerate(tds):
        seen += b["id"].tolist()
        if i == 3:
            break
    state = tds.state_dict()
    fresh = ds.to_torch(batch_size=50, local_shuffle_buffer_size=100)
    fresh.load_state_dict(state)
    rest = [x for b in fresh for x in b["id"].tolist()]
    assert sorted(seen + rest) == list(range(500))


def test_from_torch_tensor_dataset_round_trip():
    tds = torch.utils.data.TensorDataset(torch.arange(10.0).reshape(5, 2), torch.arange(5))
    ds = bridge.from_torch(tds)
    rows = ds.take_all()
    assert len(rows) == 5 and rows[4]["item_1"] == 4
    assert list(rows[2]["item_0"]) == [4.0, 5.0]


def _numbered_block(start: int, rows: int, int_type: pa.DataType = pa.int64()) -> pa.Table:
    if rows == 0:
        return _numbered_block(start, 1, int_type).slice(0, 0)
    ids = np.arange(start, start + rows)
    return pa.table({
        "x": pa.array(ids.astype(np.float32)),
        "i": pa.array(ids, int_type),
        "img": pa.FixedShapeTensorArray.from_numpy_ndarray(
            (ids[:, None, None] + np.zeros((rows, 2, 3), np.int64)).astype(np.uint8)),
        "s": pa.array([f"r{k}" for k in ids], pa.string()),
        "seq": pa.array([list(range(k % 3)) for k in ids], pa.list_(pa.int64())),
    })


def _assert_numbered(batches, total: int, batch_size: int, drop_last: bool) -> None:
    sizes = [len(b["x"]) for b in batches]
    assert sizes == [batch_size] * (total // batch_size) + ([total % batch_size] if total % batch_size and not drop_last
                                                             else [])
    pos = 0
    for b, n in zip(batches, sizes):
        ids = list(range(pos, pos + n))
        assert b["x"].tolist() == ids and b["i"].tolist() == ids and b["i"].dtype == torch.int64
        assert b["img"].shape == (n, 2, 3) and b["img"][:, 1, 2].tolist() == [k % 256 for k in ids]
        assert b["s"] == [f"r{k}" for k in ids]
        assert [t.tolist() for t in b["seq"]] == [list(range(k % 3)) for k in ids]
        pos += n


def test_batches_that_straddle_blocks_of_every_size_keep_every_row_once():
    """Batches cut across blocks of mixed sizes (empty, tiny, several batches, several runs of batches).

    A batch that straddles blocks is concatenated from them, the others are
    views of a converted run: either way every row arrives once, in order,
    with its type and shape, with and without the background thread.
    """
    rng = np.random.default_rng(7)
    for _ in range(12):
        sizes = [int(rng.choice([0, 1, 3, 9, 40, 100, 700])) for _ in range(int(rng.integers(2, 9)))]
        starts = np.cumsum([0, *sizes]).tolist()
        blocks = [_numbered_block(s, n) for s, n in zip(starts, sizes)]
        ds = bridge.from_arrow(blocks)
        assert ds.num_blocks() == len(blocks)
        for batch_size in (1, 7, 32):
            for drop_last in (False, True):
                for prefetch in (0, 2):
                    got = list(ds.iter_torch_batches(batch_size=batch_size, drop_last=drop_last,
                                                     prefetch_batches=prefetch))
                    _assert_numbered(got, starts[-1], batch_size, drop_last)


def test_straddling_batch_of_blocks_whose_types_differ_is_converted_together():
    # int64 in one block, int32 in the next: the rows meet in Arrow first, and the batch is int64 throughout.
    blocks = [_numbered_block(0, 50, pa.int64()), _numbered_block(50, 50, pa.int64())]
    blocks[1] = blocks[1].set_column(1, "i", blocks[1].column("i").cast(pa.int32()))
    got = list(bridge.from_arrow(blocks).iter_torch_batches(batch_size=30))
    assert [len(b["x"]) for b in got] == [30, 30, 30, 10]
    assert got[1]["i"].tolist() == list(range(30, 60)) and got[1]["i"].dtype == torch.int64


@pytest.mark.parametrize(("column", "dtype", "error", "message"), [
    (pa.array([1, 2, 2**40], pa.uint64()), torch.int32, UnsupportedTypeError, "holds 1099511627776, above int32"),
    (pa.array([1, 2**40]), torch.int32, bridge.errors.BridgeValueError, "holds 1099511627776, above int32"),
    (pa.array([1, -200]), torch.uint8, bridge.errors.BridgeValueError, "holds -200, below uint8"),
    (pa.array([1.0, 2.5]), torch.int64, bridge.errors.BridgeValueError, "holds 2.5, not a whole number"),
    (pa.array([1.0, float("nan")]), torch.int64, bridge.errors.BridgeValueError, "holds nan"),
])
def test_a_narrowing_dtypes_cast_that_would_change_a_value_is_refused(column, dtype, error, message):
    # torch's cast wrapped (2**40 -> 0 in int32) or cut (2.5 -> 2) without a word.
    with pytest.raises(error, match=f"column 'x'.*{message}.*dtypes={dtype}") as err:
        _batch(pa.table({"x": column}), dtypes=dtype)
    assert "Hint: " in str(err.value)


def test_a_narrowing_dtypes_cast_of_values_that_fit_keeps_them():
    t = pa.table({"i": pa.array([1, -2], pa.int64()), "u": pa.array([3, 4], pa.uint64()), "f": [1.0, -2.0],
                  "r": [0.1, 2.0**100]})
    out = _batch(t, dtypes={"i": torch.int8, "u": torch.int16, "f": torch.int32, "r": torch.float32})
    assert out["i"].tolist() == [1, -2] and out["i"].dtype == torch.int8
    assert out["u"].tolist() == [3, 4] and out["f"].tolist() == [1, -2] and out["f"].dtype == torch.int32
    assert out["r"].dtype == torch.float32  # float64 -> float32 rounds: not refused


def test_a_device_torch_does_not_know_is_a_bridge_error_with_the_names_to_use():
    with pytest.raises(bridge.errors.BridgeValueError, match="device='gpu'") as err:
        bridge.range(4).iter_torch_batches(device="gpu")
    assert "'cuda', 'cuda:0', 'cpu'" in str(err.value)


def test_to_torch_rows_with_a_collate_fn_that_returns_a_tuple():
    ds = bridge.from_items([{"x": i, "y": 2 * i} for i in range(5)])
    rows = list(ds.to_torch(collate_fn=lambda b: (b["x"], b["y"])))
    assert [(int(x), int(y)) for x, y in rows] == [(i, 2 * i) for i in range(5)]
    rows = list(ds.to_torch(collate_fn=lambda b: torch.as_tensor(b["x"])))
    assert [int(r) for r in rows] == list(range(5))
    with pytest.raises(bridge.errors.BridgeValueError, match="cannot be cut into rows"):
        list(ds.to_torch(collate_fn=lambda b: 3))


@pytest.mark.parametrize(("column", "fill"), [
    (pa.array([True, None]), "False"),
    (pa.array([[1, 2], None]), "[]"),
    (pa.array([b"a", None]), "b''"),
    (pa.array([[1, 2], None], pa.list_(pa.int64(), 2)), "[0] * 2"),
])
def test_the_null_hint_names_a_fill_value_that_works(column, fill):
    t = pa.table({"c": column})
    with pytest.raises(UnsupportedTypeError, match="'c'.*null") as err:
        _batch(t)
    assert f"fill_nulls={{'c': {fill}}}" in str(err.value)
    _batch(t, fill_nulls={"c": eval(fill)})  # following the hint works


def test_the_null_hint_of_a_null_typed_column_says_it_cannot_be_filled():
    with pytest.raises(UnsupportedTypeError, match="'c' \\(null\\)") as err:
        _batch(pa.table({"c": pa.array([None, None])}))
    assert "fill_nulls={" not in str(err.value) and "ds.drop_columns(['c'])" in str(err.value)
