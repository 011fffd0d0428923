"""On one machine an exchange's map task returns its pieces as one object (see ``bridge/ops/exchange.py``).

The packed path must give exactly what the per-piece path gives (the one used across
machines): same rows, order, types, metadata and block count, for every operator built on it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import ray

import bridge
from bridge import tensor
from bridge.ops import exchange
from tests.ops_data import mixed_table


def _rich_table(n: int = 400) -> pa.Table:
    """mixed_table plus a dictionary column, a list column, a fixed-shape tensor and schema metadata."""
    rng = np.random.default_rng(1)
    t = mixed_table(n)
    t = t.append_column("d", pa.array(rng.choice(["a", "b", "c"], n)).dictionary_encode())
    t = t.append_column("l", pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())))
    t = t.append_column("img", tensor.fixed_tensor_array(rng.integers(0, 255, (n, 2, 3), dtype=np.uint8)))
    return t.replace_schema_metadata({b"origin": b"test"})


def test_pack_and_unpack_give_back_every_piece():
    t = _rich_table()
    pieces = [t.slice(0, 0), t.slice(0, 150), t.slice(150, 0), t.slice(150, 250)]
    packed, edges = exchange.pack_pieces(pieces)
    assert isinstance(packed, pa.Table) and edges is not None
    assert all(c.num_chunks == 1 for c in packed.columns)  # one object with one buffer per column
    for j, piece in enumerate(pieces):
        got = exchange.unpack_piece(packed, exchange.piece_span(edges, j), j)
        assert got.equals(piece, check_metadata=True), j


def test_pieces_of_differing_schemas_travel_as_a_list():
    pieces = [pa.table({"a": [1, 2]}), pa.table({}), pa.table({"a": ["x"]})]
    packed, edges = exchange.pack_pieces(pieces)
    assert edges is None
    assert [exchange.unpack_piece(packed, exchange.piece_span(edges, j), j) for j in range(3)] == pieces


def test_this_test_cluster_packs_and_a_single_output_does_not():
    ds = bridge.from_arrow(_rich_table(), override_num_blocks=4).materialize()
    refs = ds.get_internal_block_refs()
    ctx = bridge.DataContext.get_current()
    metas = [bridge.block.BlockMetadata.of(b) for b in ray.get(refs)]
    packed = exchange.run_map(lambda b, i: [b.slice(0, 10), b.slice(10)], refs, 2, ctx, metas=metas)
    assert isinstance(packed, exchange.PackedPieces) and len(packed.tables) == 4
    out = exchange.run_reduce(lambda pieces, j: exchange.concat_blocks(pieces), packed, ctx)
    assert [sum(m.num_rows for m in b.metas) for b in out] == [40, 360]
    assert not packed.tables  # handed to the reducers
    assert isinstance(exchange.run_map(lambda b, i: [b], refs, 1, ctx, metas=metas), list)
    assert isinstance(exchange.run_map(lambda b, i: [b, b], refs, 2, ctx), list)  # no metas: partial aggregates


OPERATIONS = {
    "random_shuffle": lambda ds: ds.random_shuffle(seed=11),
    "random_shuffle_3_blocks": lambda ds: ds.random_shuffle(seed=5, num_blocks=3),
    "sort": lambda ds: ds.sort(["k", "v"], descending=[False, True]),
    "groupby_map_groups": lambda ds: ds.groupby("k").map_groups(lambda t: t, batch_format="pyarrow"),
    "repartition_keys": lambda ds: ds.repartition(3, keys=["s"]),
}


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_packed_and_per_piece_exchanges_give_the_same_blocks(op, monkeypatch):
    def blocks() -> list[pa.Table]:
        out = OPERATIONS[op](bridge.from_arrow(_rich_table(), override_num_blocks=5)).materialize()
        return ray.get(out.get_internal_block_refs())

    monkeypatch.setattr(exchange, "MIN_PIECE_BYTES", 1)  # one output partition per input block, tiny as they are
    choices: list[tuple[int, bool]] = []
    decide = exchange._packs_pieces

    def spy(n_out: int, metas) -> bool:
        choices.append((n_out, decide(n_out, metas)))
        return choices[-1][1]

    monkeypatch.setattr(exchange, "_packs_pieces", spy)
    packed = blocks()
    assert any(n_out > 1 and packs for n_out, packs in choices), choices
    monkeypatch.setattr(exchange, "_packs_pieces", lambda n_out, metas: False)
    per_piece = blocks()
    assert len(packed) == len(per_piece) > 1
    for a, b in zip(packed, per_piece):
        assert a.equals(b, check_metadata=True)


def test_slices_of_one_table_pack_as_that_table_without_a_copy():
    t = _rich_table()
    part = np.random.default_rng(2).integers(0, 4, t.num_rows).astype(np.uint16)
    pieces = exchange.split_by_partition(t, part, 4)
    packed, edges = exchange.pack_pieces(pieces)
    assert packed is pieces.whole
    for j in range(4):
        expected = t.filter(pa.array(part == j))
        assert exchange.unpack_piece(packed, exchange.piece_span(edges, j), j).equals(expected, check_metadata=True)
        assert pieces[j].equals(expected)
    padded = pieces.padded(6)
    assert len(padded) == 6 and padded[4].num_rows == padded[5].num_rows == 0
    assert padded[5].schema.equals(t.schema, check_metadata=True)
    assert exchange.pack_pieces(padded)[0] is pieces.whole


def test_packing_stays_off_for_small_outputs_fanned_out_and_for_data_near_the_store_size():
    from bridge._ray import object_store_capacity

    store = object_store_capacity()
    small = bridge.block.BlockMetadata(num_rows=100, size_bytes=4096)

    def blocks(n: int, fraction_of_store: float) -> list:
        return [bridge.block.BlockMetadata(num_rows=1000, size_bytes=int(fraction_of_store * store / n))] * n

    assert exchange._packs_pieces(32, blocks(32, 0.1) + [small])  # this test session: one machine
    assert not exchange._packs_pieces(1, blocks(32, 0.1))
    assert not exchange._packs_pieces(1000, [small] * 1000)  # 4 MB copied into each of 1,000 reducers
    assert exchange._packs_pieces(100, blocks(100, 0.1))
    # Every reducer pins every map output: not for data near the store's size (the per-piece path spills less).
    assert not exchange._packs_pieces(32, blocks(32, exchange.PACK_STORE_FRACTION + 0.05))


def _boom(table):
    raise ValueError("map_groups failed on purpose")


@pytest.mark.parametrize("packs", [True, False])
def test_an_error_in_a_reducer_reaches_the_caller_either_way(packs, monkeypatch):
    monkeypatch.setattr(exchange, "MIN_PIECE_BYTES", 1)
    decide = exchange._packs_pieces
    choices: list[bool] = []

    def spy(n_out: int, metas) -> bool:
        choices.append(packs and decide(n_out, metas))
        return choices[-1]

    monkeypatch.setattr(exchange, "_packs_pieces", spy)
    ds = bridge.from_arrow(_rich_table(), override_num_blocks=5).groupby("s").map_groups(_boom, batch_format="pyarrow")
    with pytest.raises(Exception, match="map_groups failed on purpose"):
        ds.materialize()
    assert any(choices) is packs, choices  # the exchange took the path this case is about
