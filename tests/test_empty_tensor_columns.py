"""Tensor columns in empty tables: pyarrow cannot make them, so no exporter may ask it to.

pyarrow's own NumPy conversion gives every fixed-shape tensor type its permutation spelled
out (``permutation=[0, 1]``), and ``Schema.empty_table()`` / ``pa.array([], type=...)``
raise ``NotImplementedError`` on such a type.  So ``to_pandas`` / ``to_dask`` / ``to_modin``
of a Dataset with a tensor column and no rows failed, and ``filter(expr=...)`` on any
materialized Dataset with a tensor column failed at the call (the demo's stage 2).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bridge
from bridge.block import empty_table


def _no_rows() -> bridge.Dataset:
    return bridge.range_tensor(10, shape=(2, 2)).filter(lambda r: False).materialize()


def test_pyarrow_itself_cannot_make_the_empty_table():
    t = pa.fixed_shape_tensor(pa.float32(), (2, 3), permutation=[1, 0])
    with pytest.raises(NotImplementedError):
        pa.schema([("x", t)]).empty_table()
    got = empty_table(pa.schema([("x", t), ("y", pa.int8())]))
    assert got.num_rows == 0 and got.schema.field("x").type == t


@pytest.mark.parametrize("export", ["to_pandas", "to_dask", "to_modin"])
def test_empty_tensor_dataset_exports(export):
    out = getattr(_no_rows(), export)()
    frame = out.compute() if export == "to_dask" else out
    assert len(frame) == 0 and list(frame.columns) == ["data"]


def test_filter_expr_on_a_materialized_tensor_dataset():
    def emb(batch: dict) -> dict:
        ids = batch["id"]
        return {"id": ids, "emb": np.ones((len(ids), 3, 2), np.float32).transpose(0, 2, 1), "held": ids % 2 == 0}

    ds = bridge.range(6).map_batches(emb).materialize()
    assert ds.filter(expr=~pc.field("held")).count() == 3
    assert ds.filter(expr="id > 2").count() == 3
    assert ds.filter(expr="id > 100").to_pandas().shape == (0, 3)
