"""Mistakes of a first hour refused at the call, naming the way that works (session 51, from a hunt)."""

from __future__ import annotations

import pytest

import bridge


def test_what_is_no_function_is_refused_at_the_call_with_the_way_that_works():
    """It failed only when the Dataset ran, as the user's own error: "'str' object is not callable ...
    Hint: fix the function at the line above" (and a function given as expr= as a raw Ray traceback)."""
    import pyarrow.compute as pc

    from bridge.errors import BridgeTypeError

    ds = bridge.range(5)
    with pytest.raises(BridgeTypeError, match=r"(?s)filter: the function must be .* got str 'id > 3'.*filter\(expr='id > 3'\)"):
        ds.filter("id > 3")
    with pytest.raises(BridgeTypeError, match=r"(?s)got Expression.*filter\(expr=\.\.\.\)"):
        ds.filter(pc.field("id") > 3)
    with pytest.raises(BridgeTypeError, match=r"filter\(expr=\.\.\.\) takes an expression; got the function <lambda>"):
        ds.filter(expr=lambda r: r["id"] > 3)
    with pytest.raises(BridgeTypeError, match=r"map_batches\(normalize\) rather than map_batches\('normalize'\)"):
        ds.map_batches("normalize")
    for call in (lambda: ds.map(3), lambda: ds.flat_map(None), lambda: ds.add_column("x", 5),
                 lambda: ds.groupby("id").map_groups("f")):
        with pytest.raises(BridgeTypeError, match="must be a function or a callable class"):
            call()
    assert ds.filter(expr="id > 3").take_all() == [{"id": 4}]  # what works still does


_AFTER_SHUTDOWN = r"""
import time, ray, bridge
from bridge.errors import BridgeError
m = bridge.range(20).materialize()
ray.shutdown()
t = time.time()
try:
    m.take(2)
    print("no error")
except BridgeError as err:
    print("refused", round(time.time() - t, 1), ray.is_initialized(), str(err).replace(chr(10), " "))
print("count", m.count())  # metadata: still answered
again = bridge.range(3).materialize()
ray.shutdown()
ray.init(include_dashboard=False, num_cpus=1)
for name, call in [("again", again.take_all), ("split", lambda: again.split(2))]:
    try:
        call()
        print(name, "no error")
    except BridgeError as err:
        print(name, "refused", "started again" in str(err))
"""


def test_a_materialized_dataset_after_ray_shutdown_is_refused_by_name():
    """Its blocks went with the Ray session: a run started Ray again (10-15 s) and then failed inside
    Ray ("a Ray object whose owner is unknown") naming no Dataset. Run in a process of its own: the
    test session's Ray stays up."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAYBRIDGE_PROGRESS_BARS="0")
    env.pop("RAY_ADDRESS", None)
    out = subprocess.run([sys.executable, "-c", _AFTER_SHUTDOWN], capture_output=True, text=True, timeout=300,
                         env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))).stdout
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    refused = lines.get("refused", "")
    assert refused.split()[2] == "False", out  # refused without starting a Ray that holds none of the blocks
    assert "Materialized: its blocks were held by the Ray session" in refused
    assert "Hint: build the Dataset again" in refused
    assert float(refused.split()[1]) < 2.0, out
    assert lines.get("count") == "count 20", out
    assert lines.get("again") == "again refused True" and lines.get("split") == "split refused True", out


def test_drop_last_that_drops_every_row_warns_and_flags_must_be_bools():
    """batch_size above the row count with drop_last=True gave no batch and no word: a training loop ran
    no step. "yes" was taken as true."""
    import warnings

    from bridge.errors import BridgeValueError

    ds = bridge.range(10)
    with pytest.warns(UserWarning, match="all 10 rows of this pass were dropped"):
        assert list(ds.iter_batches(batch_size=32, drop_last=True)) == []
    with pytest.warns(UserWarning, match="all 10 rows"):
        assert list(ds.iter_torch_batches(batch_size=32, drop_last=True)) == []
    with pytest.warns(UserWarning, match="all 10 rows"):  # (to_torch's passes end at a stop row: it warned not)
        assert list(ds.to_torch(batch_size=32, drop_last=True)) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a pass that handed out batches, or had no rows, says nothing
        assert len(list(ds.iter_batches(batch_size=4, drop_last=True))) == 2
        assert list(bridge.range(0).iter_batches(batch_size=4, drop_last=True)) == []
    with pytest.raises(BridgeValueError, match="drop_last must be True or False; got 'yes'"):
        ds.iter_batches(drop_last="yes")
    with pytest.raises(BridgeValueError, match="shuffle must be True or False; got 'yes'"):
        ds.repartition(2, shuffle="yes")


def test_ray_data_to_torch_arguments_and_batch_format_typos_say_what_to_do():
    from bridge.errors import BridgeTypeError, BridgeValueError

    ds = bridge.range(4)
    with pytest.raises(BridgeTypeError, match=r"(?s)to_torch: unexpected keyword argument\(s\) \['label_column'\].*"
                                              r"Hint: label_column=: batches are dicts of tensors"):
        ds.to_torch(label_column="id")
    with pytest.raises(BridgeTypeError, match=r"(?s)\['batchsize'\].*did you mean batch_size=\?"):
        ds.to_torch(batchsize=2)
    with pytest.raises(BridgeValueError, match=r"(?s)unknown batch_format 'panda'.*did you mean batch_format='pandas'"):
        ds.iter_batches(batch_format="panda")  # at the call, not at the first batch
    with pytest.raises(BridgeValueError, match=r"(?s)'torch'.*iter_torch_batches"):
        ds.iter_batches(batch_format="torch")
    assert len(ds.to_torch(batch_size=2)) == 2


def test_a_missing_column_names_the_nearest_and_what_a_pandas_label_became():
    import numpy as np
    import pandas as pd

    from bridge.errors import BridgeError, SchemaMismatchError

    labelled = bridge.from_pandas(pd.DataFrame({0: [1], 1: [2]}))  # pandas' labels 0, 1 are columns '0', '1'
    with pytest.raises(SchemaMismatchError, match=r"(?s)\[0\] not found.*column names are strings: pass '0' for 0"):
        labelled.select_columns([0]).take_all()
    with pytest.raises(SchemaMismatchError, match=r"(?s)'idd'.*did you mean 'id'\?"):
        bridge.range(3).filter(expr="idd > 1").take_all()
    with pytest.raises(SchemaMismatchError, match=r"(?s)\['idd'\] not found.*did you mean 'id'\?"):
        bridge.range(3).groupby("idd").count().take_all()
    with pytest.raises(BridgeError, match=r"(?s)different lengths: \{'x': 3, 'y': 4\}.*one value per row"):
        bridge.from_numpy({"x": np.arange(3), "y": np.arange(4)})
    with pytest.raises(BridgeError, match=r"(?s)got generator.*list\(\.\.\.\)"):
        bridge.from_numpy(a for a in [np.arange(2)])
    with pytest.raises(BridgeError, match="different lengths"):
        bridge.from_numpy({"x": np.arange(3), "y": np.arange(4), "s": np.array(5)})  # (a 0-d array has no len)
