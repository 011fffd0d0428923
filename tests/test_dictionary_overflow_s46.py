"""Dictionary columns whose chunks hold more values together than their index type counts.

pandas gives a ``Categorical`` of fewer than 128 categories ``int8`` codes, so blocks made from
pandas frames (``from_pandas``, pandas ``map_batches``, Parquet files written by pandas) hold
``dictionary<int8, string>`` columns, each block or batch with its own categories.  Combining two
of 100 labels each needs 200 codes: pyarrow raised "The unified dictionary requires a larger index
type" from ``groupby``, ``sort``, ``unique``, the aggregations and a pandas ``map_batches`` of more
than 32 batches.  The values must come through; the index type widens where it has to.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import bridge
from bridge.ops.aggregate import CountDistinct, Unique


def _labels(prefix: str, n: int = 100) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(range(n), pa.int8()), pa.array([f"{prefix}{i}" for i in range(n)]))


@pytest.fixture(scope="module")
def two_blocks() -> Any:
    return bridge.from_arrow([pa.table({"c": _labels("s"), "v": range(100)}),
                              pa.table({"c": _labels("t"), "v": range(100, 200)})])


ALL = sorted([f"s{i}" for i in range(100)] + [f"t{i}" for i in range(100)])


def test_groupby(two_blocks: Any) -> None:
    rows = two_blocks.groupby("c").sum("v").take_all()
    assert sorted(r["c"] for r in rows) == ALL
    assert sum(r["sum(v)"] for r in rows) == sum(range(200))


def test_sort(two_blocks: Any) -> None:
    got = [r["c"] for r in two_blocks.sort("c").take_all()]
    assert got == ALL
    assert [r["c"] for r in two_blocks.sort("c", descending=True).take(2)] == ALL[::-1][:2]


def test_unique_and_aggregations(two_blocks: Any) -> None:
    assert sorted(two_blocks.unique("c")) == ALL
    assert two_blocks.aggregate(CountDistinct("c")) == {"count_distinct(c)": 200}
    assert sorted(two_blocks.aggregate(Unique("c"))["unique(c)"]) == ALL
    assert two_blocks.min("c") == "s0" and two_blocks.max("c") == "t99"


def test_local_shuffle_across_blocks(two_blocks: Any) -> None:
    got = [v for b in two_blocks.iter_batches(batch_size=50, local_shuffle_buffer_size=150, local_shuffle_seed=0)
           for v in b["c"].tolist()]
    assert sorted(got) == ALL


def test_pandas_map_batches_with_a_categorical_per_batch() -> None:
    def label(df: pd.DataFrame) -> pd.DataFrame:
        first = int(df["id"].iloc[0])
        df["c"] = pd.Categorical([f"u{first + i % 10}" for i in range(len(df))])
        return df

    ds = bridge.range(4000, override_num_blocks=1).map_batches(label, batch_format="pandas", batch_size=100)
    out = ds.to_arrow()
    assert out.num_rows == 4000
    assert pa.types.is_dictionary(out.schema.field("c").type)
    want = [f"u{(i // 100) * 100 + i % 100 % 10}" for i in range(4000)]
    assert out.column("c").to_pylist() == want


def test_helpers_widen_only_where_needed() -> None:
    from bridge.block import combine_chunks, unify_dictionaries

    fits = pa.table({"c": pa.chunked_array([_labels("s", 50), _labels("t", 50)])})
    assert unify_dictionaries(fits).schema.field("c").type.index_type == pa.int8()
    over = pa.table({"c": pa.chunked_array([_labels("s"), _labels("t")]), "n": pa.array([[1]] * 200)})
    for out in (unify_dictionaries(over), combine_chunks(over)):
        assert out.schema.field("c").type == pa.dictionary(pa.int32(), pa.string())
        assert out.column("c").to_pylist() == over.column("c").to_pylist()
        assert out.column("n").to_pylist() == over.column("n").to_pylist()
    nested = pa.table({"l": pa.chunked_array([pa.ListArray.from_arrays(pa.array([0, 100]), _labels("s")),
                                             pa.ListArray.from_arrays(pa.array([0, 100]), _labels("t"))])})
    combined = combine_chunks(nested)
    assert combined.column("l").num_chunks == 1
    assert combined.column("l").to_pylist() == nested.column("l").to_pylist()


# ----------------------------------------------------------------- after review


def test_only_the_column_that_overflows_widens() -> None:
    from bridge.block import combine_chunks, unify_dictionaries

    def three(prefix: str) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(pa.array([i % 3 for i in range(100)], pa.int8()),
                                              pa.array([f"{prefix}{i}" for i in range(3)]))

    t = pa.table({"small": pa.chunked_array([three("a"), three("b")]),
                  "over": pa.chunked_array([_labels("s"), _labels("t")])})
    for out in (unify_dictionaries(t), combine_chunks(t)):
        assert out.schema.field("small").type.index_type == pa.int8()
        assert out.schema.field("over").type.index_type == pa.int32()
        assert out.to_pylist() == t.to_pylist()


def test_sort_with_boundaries_over_blocks_of_two_index_widths() -> None:
    wide_values = pa.array([f"k{i:03d}" for i in range(300)])
    narrow = pa.DictionaryArray.from_arrays(pa.array([0, 5, 9], pa.int8()), wide_values.slice(0, 10))
    wide = pa.DictionaryArray.from_arrays(pa.array(range(260, 270), pa.int32()), wide_values)
    ds = bridge.from_arrow(pa.table({"c": narrow})).union(bridge.from_arrow(pa.table({"c": wide})))
    out = ds.sort("c", boundaries=["k100"]).materialize()
    assert [r["c"] for r in out.take_all()] == ["k000", "k005", "k009", *(f"k{i}" for i in range(260, 270))]
    first = out.to_arrow_refs()[0]
    import ray

    assert max(ray.get(first).column("c").to_pylist()) < "k100"  # the first range holds only keys below it


def test_combine_column_of_no_chunks_is_empty() -> None:
    from bridge.block import combine_column

    for typ in (pa.dictionary(pa.int8(), pa.string()), pa.int64()):
        out = combine_column(pa.chunked_array([], typ))
        assert len(out) == 0 and out.type == typ
