"""Parts whose column holds no value there take the type the other parts give it (session 50).

pandas has no missing int: a chunk of a CSV read in pieces (``pd.read_csv(chunksize=...)``) whose int
column is empty in that chunk is float64 of NaN; one of text is float64 too, or object of None. Building
one Dataset from such chunks widened every int to float64 -- or, past 2**53, refused -- and refused text
next to the NaN chunk. A column without a value in a part now takes the type of the parts that hold
values; values never change (a part with values of another type is still promoted or refused).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import bridge
from bridge.errors import SchemaMismatchError

BIG = 2**53 + 1


def _from_refs(frames: list[pd.DataFrame]) -> bridge.Dataset:
    import ray

    return bridge.from_pandas_refs([ray.put(f) for f in frames])  # converted in a task per frame


@pytest.mark.parametrize("make", [bridge.from_pandas, _from_refs], ids=["from_pandas", "from_pandas_refs"])
@pytest.mark.parametrize("empty", [[np.nan, np.nan], [None, None]], ids=["nan", "none"])
def test_an_int_column_empty_in_one_chunk_stays_int(empty, make):
    ds = make([pd.DataFrame({"x": [BIG, 2], "s": ["a", "b"]}),
               pd.DataFrame({"x": empty, "s": [np.nan, np.nan]}),
               pd.DataFrame({"x": [7], "s": ["c"]})])
    assert ds.num_blocks() == 3
    assert ds.schema().field("x").type == pa.int64() and ds.schema().field("s").type == pa.string()
    assert ds.to_arrow().to_pylist() == [{"x": BIG, "s": "a"}, {"x": 2, "s": "b"}, {"x": None, "s": None},
                                         {"x": None, "s": None}, {"x": 7, "s": "c"}]
    df = ds.to_pandas()
    assert str(df["x"].dtype) == "Int64" and df["x"].tolist()[:2] == [BIG, 2]
    assert ds.sum("x") == BIG + 9


def test_a_chunk_empty_first_takes_the_later_type_and_nested_types_too():
    ds = bridge.from_pandas([pd.DataFrame({"x": [np.nan], "l": [np.nan]}),
                             pd.DataFrame({"x": [BIG], "l": [[1, 2]]})])
    assert ds.schema().field("x").type == pa.int64()
    assert ds.schema().field("l").type == pa.list_(pa.int64())  # (Arrow casts no double to a list)
    assert ds.to_arrow().to_pylist() == [{"x": None, "l": None}, {"x": BIG, "l": [1, 2]}]


def test_columns_empty_everywhere_and_values_of_another_type_keep_the_old_rules():
    nan_only = bridge.from_pandas([pd.DataFrame({"x": [np.nan, np.nan]}), pd.DataFrame({"x": [np.nan]})])
    assert nan_only.schema().field("x").type == pa.float64() and nan_only.count() == 3
    # Values of two types: promoted (1.5 next to ints), or refused where the promotion would change one.
    mixed = bridge.from_pandas([pd.DataFrame({"x": [1, 2]}), pd.DataFrame({"x": [1.5, np.nan]})])
    assert mixed.schema().field("x").type == pa.float64() and mixed.take_all()[2] == {"x": 1.5}
    with pytest.raises(SchemaMismatchError, match="cannot hold"):
        bridge.from_pandas([pd.DataFrame({"x": [BIG]}), pd.DataFrame({"x": [1.5]})])


def test_arrow_tables_whose_column_is_all_null_in_one_take_the_others_type():
    ds = bridge.from_arrow([pa.table({"x": [BIG]}), pa.table({"x": pa.array([None, None], pa.float64())})])
    assert ds.schema().field("x").type == pa.int64()
    assert ds.take_all() == [{"x": BIG}, {"x": None}, {"x": None}]


def test_the_rule_holds_when_tables_are_joined_and_narrows_no_type():
    parts = [pa.table({"x": [BIG]}), pa.table({"x": pa.array([None], pa.float64())})]
    joined = bridge.from_arrow(parts, override_num_blocks=2)  # (concatenated first, then cut)
    assert joined.schema().field("x").type == pa.int64() and joined.take_all() == [{"x": BIG}, {"x": None}]
    # Only a float column without a value (pandas' NaN) gives way: an all-null int64 still widens int8.
    wide = bridge.from_arrow([pa.table({"x": pa.array([100], pa.int8())}), pa.table({"x": pa.array([None], pa.int64())})])
    assert wide.schema().field("x").type == pa.int64()
