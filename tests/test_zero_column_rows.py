"""A Dataset of rows without columns (``select_columns([])``) keeps its row count through every operator.

pyarrow's ``take`` and ``concat_tables`` of a table without columns give no rows, and the exchanges'
reducers once kept only the first of their column-less pieces: a shuffle of 10 such rows gave 0.
Ray Data keeps the count.  The other way round, empty pieces without columns (an exchange's
placeholders) must not change the types of the blocks that have columns.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest
import ray

import bridge
from bridge import Count, Sum
from bridge.block import concat_blocks, concat_same_schema, table_without_columns, take_rows
from bridge.errors import SchemaMismatchError
from bridge.ops import exchange, held_exchange

N = 10


def _columnless(n: int = N, blocks: int = 3) -> bridge.Dataset:
    return bridge.range(n, override_num_blocks=blocks).select_columns([])


def _rows(ds: bridge.Dataset) -> int:
    """Rows as the blocks themselves hold them (not the metadata's count)."""
    return sum(b.num_rows for b in ds.iter_batches(batch_size=None, batch_format="pyarrow"))


# ------------------------------------------------------------------ blocks (no Ray)


def test_concat_take_and_pack_keep_the_rows_of_tables_without_columns():
    pieces = [table_without_columns(3), table_without_columns(0), table_without_columns(4)]
    assert concat_blocks(pieces).num_rows == 7
    assert concat_blocks(pieces).num_columns == 0
    assert concat_same_schema(pieces).num_rows == 7
    assert take_rows(table_without_columns(5), pa.array([4, 0, 2])).num_rows == 3
    packed, edges = exchange.pack_pieces(pieces)
    assert packed.num_rows == 7 and edges.tolist() == [0, 3, 3, 7]
    whole = exchange.split_by_partition(table_without_columns(6), np.array([1, 0, 1, 2, 0, 1]), 3)
    assert [p.num_rows for p in whole] == [2, 3, 1] and whole.whole.num_rows == 6


def test_empty_pieces_without_columns_leave_the_types_alone():
    typed = pa.schema([("a", pa.int32()), ("d", pa.dictionary(pa.int8(), pa.string()))])
    empty = typed.empty_table()
    one = pa.table({"a": pa.array([1], pa.int32()), "d": pa.array(["x"]).dictionary_encode().cast(typed.field("d").type)})
    out = concat_blocks([table_without_columns(0), empty, table_without_columns(0), one])
    assert out.schema == typed and out.num_rows == 1
    assert concat_blocks([table_without_columns(0), one]).schema == typed


def test_rows_without_columns_among_blocks_with_columns_are_null_rows():
    one = pa.table({"a": pa.array([1], pa.int32()), "s": ["x"]})
    out = concat_blocks([table_without_columns(2), one, table_without_columns(0)])
    assert out.schema == one.schema
    assert out.to_pydict() == {"a": [None, None, 1], "s": [None, None, "x"]}


def test_range_split_sends_rows_without_columns_to_the_last_range():
    bounds = pa.table({"k": [5, 9]})
    pieces = exchange.range_split(table_without_columns(4), bounds, [("k", "ascending")], 4)
    assert [p.num_rows for p in pieces] == [0, 0, 4, 0]


# ------------------------------------------------------------------ exchanges


@pytest.fixture(params=["packed", "per_piece", "actor_memory"])
def exchange_path(request, monkeypatch):
    """Each way an exchange moves its pieces: packed per map task, one object per piece, holders' memory."""
    ctx = bridge.DataContext.get_current()
    before = ctx.shuffle_exchange
    held_exchange.release_idle_holders()
    ctx.shuffle_exchange = "actor_memory" if request.param == "actor_memory" else "object_store"
    if request.param == "per_piece":
        monkeypatch.setattr(exchange, "MAX_INLINE_FANOUT_BYTES", -1)
    yield request.param
    ctx.shuffle_exchange = before
    held_exchange.release_idle_holders()


def test_shuffles_keep_every_row(exchange_path):
    z = _columnless()
    for ds in (z.random_shuffle(seed=1), z.random_shuffle(), z.random_shuffle(seed=2, num_blocks=4),
               _columnless(blocks=1).random_shuffle(seed=3), z.repartition(4, shuffle=True)):
        assert ds.count() == N
        assert _rows(ds) == N
        assert len(ds.take_all()) == N
    assert [s.count() for s in z.random_shuffle(seed=1).split(2, equal=True)] == [5, 5]


def test_repartition_and_block_order_keep_every_row():
    z = _columnless()
    four = z.repartition(4).materialize()
    assert four.num_blocks() == 4 and four.count() == N and _rows(four) == N
    assert _rows(z.repartition(1)) == N
    rows = z.repartition(target_num_rows_per_block=3).materialize()
    assert rows.count() == N and _rows(rows) == N
    assert _rows(z.randomize_block_order(seed=1)) == N
    assert _rows(z.materialize()) == N


def test_splits_keep_every_row():
    z = _columnless()
    assert sum(_rows(s) for s in z.split(3)) == N
    assert [_rows(s) for s in z.split(5, equal=True)] == [2] * 5
    assert [_rows(s) for s in z.split_at_indices([2, 7])] == [2, 5, 3]
    assert [_rows(s) for s in z.split_proportionately([0.2, 0.3])] == [2, 3, 5]
    assert [_rows(s) for s in z.train_test_split(0.3)] == [7, 3]
    assert [_rows(s) for s in z.train_test_split(0.3, shuffle=True, seed=1)] == [7, 3]


def test_streaming_split_keeps_every_row():
    splits = _columnless().streaming_split(2, equal=True)
    counts = [0, 0]

    def consume(i: int) -> None:
        counts[i] = sum(b.num_rows for b in splits[i].iter_batches(batch_size=3, batch_format="pyarrow"))

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert counts == [5, 5]


def test_limit_sample_union_and_zip_keep_every_row():
    z = _columnless()
    assert _rows(z.limit(4)) == 4 and len(z.limit(4).take_all()) == 4
    sampled = _columnless(1000).random_sample(0.5, seed=1)
    assert 300 < _rows(sampled) < 700 and sampled.count() == _rows(sampled)
    assert _rows(z.union(_columnless(5))) == N + 5
    zipped = z.zip(_columnless(N, blocks=2))
    assert zipped.count() == N and _rows(zipped) == N and zipped.take_all() == [{}] * N


def test_batches_of_rows_without_columns_have_their_length():
    z = _columnless()
    assert [b.num_rows for b in z.iter_batches(batch_size=4, batch_format="pyarrow")] == [4, 4, 2]
    assert [len(b) for b in z.iter_batches(batch_size=4, batch_format="pandas")] == [4, 4, 2]
    # A NumPy batch is a dict of columns: with none, it is empty (as in Ray Data), whatever its rows.
    assert list(z.iter_batches(batch_size=4, batch_format="numpy")) == [{}, {}, {}]
    shuffled = z.random_shuffle(seed=4)
    assert sum(b.num_rows for b in shuffled.iter_batches(batch_size=3, batch_format="pyarrow")) == N


def test_local_shuffle_buffer_keeps_every_row():
    batches = _columnless().iter_batches(batch_size=3, batch_format="pyarrow", local_shuffle_buffer_size=5,
                                         local_shuffle_seed=1)
    assert sum(b.num_rows for b in batches) == N


def test_sort_and_groupby_refuse_the_missing_key_and_count_counts():
    z = _columnless()
    with pytest.raises(SchemaMismatchError, match=r"\['id'\] not found"):
        z.sort("id").materialize()
    with pytest.raises(SchemaMismatchError, match=r"\['id'\] not found"):
        z.groupby("id").count().materialize()
    with pytest.raises(SchemaMismatchError, match=r"\['id'\] not found"):
        z.unique("id")
    with pytest.raises(SchemaMismatchError, match=r"\['id'\] not found"):
        z.sum("id")
    assert z.aggregate(Count()) == {"count()": N}
    assert z.groupby(None).count().take_all() == [{"count()": N}]


# ------------------------------------------------------------------ blocks with columns next to blocks without


def _with_empty_columnless_blocks() -> bridge.Dataset:
    """ids 10..19 in two blocks, and two empty blocks without columns."""
    ds = bridge.range(20, override_num_blocks=4).map_batches(lambda b: b if b["id"][0] >= 10 else {},
                                                             batch_size=None).materialize()
    assert sorted(ray.get(r).num_columns for r in ds.get_internal_block_refs()) == [0, 0, 1, 1]
    return ds


def test_empty_blocks_without_columns_do_not_change_the_types_of_an_exchange():
    ds = _with_empty_columnless_blocks()
    want = pa.schema([("id", pa.int64())])
    for out in (ds.random_shuffle(seed=1), ds.sort("id"), ds.repartition(2), ds.repartition(1),
                ds.repartition(3, shuffle=True), ds.repartition(2, keys=["id"])):
        table = out.to_arrow()
        assert table.schema == want
        assert sorted(table.column("id").to_pylist()) == list(range(10, 20))
    assert ds.sort("id", descending=True).to_arrow().column("id").to_pylist() == list(range(19, 9, -1))
    counts = ds.groupby("id").count().to_arrow()
    assert counts.column("count()").to_pylist() == [1] * 10
    zipped = ds.zip(_columnless(N, blocks=3)).to_arrow()
    assert zipped.schema == want and zipped.column("id").to_pylist() == list(range(10, 20))


def test_a_union_with_rows_without_columns_gives_them_null_values():
    u = _columnless().union(bridge.range(3))
    assert _rows(u.repartition(1)) == N + 3
    assert u.repartition(1).take_all() == [{"id": None}] * N + [{"id": i} for i in range(3)]
    assert u.aggregate(Count(), Sum("id")) == {"count()": N + 3, "sum(id)": 3}
    assert u.groupby("id").count().take_all()[-1] == {"id": None, "count()": N}
    assert [r["id"] for r in u.sort("id", boundaries=[1]).take_all()] == [0, 1, 2] + [None] * N
