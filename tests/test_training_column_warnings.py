"""torch/tf's date, duration, time and timestamp -> int64 rules warn once per column, naming the rule.

Column names are unique per test: the warning is given once per framework, column and type in a process.
"""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pyarrow as pa
import pytest

import bridge
from bridge.errors import ConversionWarning
from raybridge_adapters.training_columns import training_column

DAY = datetime.date(2024, 1, 2)
CASES = [
    ("d32_col", pa.array([DAY], pa.date32()), "date32.*int64 days since the Unix epoch", 19724),
    ("d64_col", pa.array([DAY], pa.date64()), "date64.*int64 milliseconds since the Unix epoch", 19724 * 86_400_000),
    ("dur_col", pa.array([5], pa.duration("ms")), r"duration\[ms\].*int64 ms", 5),
    ("t32_col", pa.array([datetime.time(0, 0, 3)], pa.time32("s")), r"time32\[s\].*int64 s since midnight", 3),
    ("t64_col", pa.array([7], pa.time64("ns")), r"time64\[ns\].*int64 ns since midnight", 7),
    ("ts_col", pa.array([9], pa.timestamp("s", tz="UTC")), r"timestamp\[s, tz=UTC\].*int64 s since the Unix epoch", 9),
]


@pytest.mark.parametrize(("name", "arr", "match", "value"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("framework", ["torch", "tf"])
def test_time_like_columns_warn_once_naming_column_and_rule(name, arr, match, value, framework):
    name = f"{name}_{framework}"
    block = pa.table({name: arr})
    with pytest.warns(ConversionWarning, match=f"{framework}: column '{name}' .*{match}") as record:
        col = training_column(block, name, framework=framework)
    assert len(record) == 1
    assert col.kind == "dense" and col.value.dtype == np.int64 and col.value.tolist() == [value]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        training_column(block, name, framework=framework)  # once per column: the second batch is silent


def test_exact_columns_give_no_warning():
    block = pa.table({"i64": pa.array([1], pa.int64()), "f32": pa.array([1.0], pa.float32()),
                      "s": ["a"], "seq": pa.array([[1.0, 2.0]])})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in block.column_names:
            training_column(block, name)


def test_iter_torch_batches_warns_for_a_date_column_by_name():
    pytest.importorskip("torch")
    ds = bridge.from_arrow(pa.table({"x": [1.0, 2.0], "signup_day": pa.array([DAY, DAY], pa.date32())}))
    with pytest.warns(ConversionWarning, match="'signup_day'.*days"):
        batch = next(iter(ds.iter_torch_batches(batch_size=2)))
    assert batch["signup_day"].tolist() == [19724, 19724]


def test_each_framework_warns_for_itself():
    block = pa.table({"both_frameworks_col": pa.array([DAY], pa.date32())})
    with pytest.warns(ConversionWarning, match="torch: column 'both_frameworks_col'"):
        training_column(block, "both_frameworks_col", framework="torch")
    # The torch warning said nothing about tf: tf's own hand-over still says what it does.
    with pytest.warns(ConversionWarning, match="tf: column 'both_frameworks_col'"):
        training_column(block, "both_frameworks_col", framework="tf")
