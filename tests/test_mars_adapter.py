"""Xorbits (Mars) <-> Dataset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bridge

pytest.importorskip("xorbits")


@pytest.fixture(scope="module")
def xpd():
    from tests.constructors_engines import ensure_xorbits

    ensure_xorbits()
    import xorbits.pandas as xpd

    return xpd


def test_round_trip_keeps_values_index_and_order(xpd):
    pdf = pd.DataFrame({"x": np.arange(25), "s": [f"s{i}" for i in range(25)]},
                       index=pd.Index(np.arange(25) + 100, name="key"))
    ds = bridge.from_mars(xpd.DataFrame(pdf, chunk_size=7), batch_size=10)
    assert ds.num_blocks() == 3 and ds.count() == 25
    back = ds.to_mars().to_pandas()
    pd.testing.assert_frame_equal(back, pdf)


def test_default_index_is_contiguous_after_to_mars(xpd):
    ds = bridge.range(30, override_num_blocks=3)
    back = ds.to_mars().to_pandas()
    assert back.index.tolist() == list(range(30)) and back["id"].tolist() == list(range(30))


def test_bad_batch_size_is_refused(xpd):
    with pytest.raises(bridge.BridgeError, match="Hint:"):
        bridge.from_mars(xpd.DataFrame({"x": [1]}), batch_size=0)
