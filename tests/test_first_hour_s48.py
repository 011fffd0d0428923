"""A user's first-hour mistakes (found by a hunt): errors that now say where and what to do, and
mistakes that gave wrong results without a word."""

from __future__ import annotations

import pandas as pd
import pytest

import bridge
from bridge.errors import BridgeError, BridgeTypeError, UserCodeError


def _features(batch):
    doubled = batch["id"] * 2
    return {"y": batch["idd"] * doubled}  # the typo this test points at


def test_a_user_function_s_error_names_its_file_and_line():
    with pytest.raises(UserCodeError) as info:
        bridge.range(10).map_batches(_features).take(1)
    text = str(info.value)
    assert "KeyError: 'idd'" in text
    assert "test_first_hour_s48.py" in text and 'return {"y": batch["idd"] * doubled}' in text
    assert "line above" in info.value.hint


def test_a_filter_function_without_return_is_refused_not_an_empty_dataset():
    def keep(row):
        row["id"] > 2  # noqa: B015 - the missing return this test is about

    with pytest.raises(UserCodeError, match="returned None for a row"):
        bridge.range(5).filter(keep).take_all()
    assert bridge.range(5).filter(lambda r: r["id"] > 2).count() == 2


def test_from_items_of_a_dict_is_refused_not_its_keys_as_rows():
    with pytest.raises(BridgeTypeError, match=r"got a dict \(2 keys\)") as info:
        bridge.from_items({"a": [1, 2], "b": [3, 4]})
    assert "from_items([d])" in info.value.hint


def test_select_columns_of_a_set_is_refused():
    ds = bridge.from_items([{"a": 1, "b": 2}])
    with pytest.raises(BridgeTypeError, match="a set of column names"):
        ds.select_columns({"a", "b"})
    with pytest.raises(BridgeTypeError, match="a set of column names"):
        ds.drop_columns({"a"})


def test_from_pandas_of_a_series_or_rows_says_what_to_pass():
    with pytest.raises(BridgeError, match="got Series") as info:
        bridge.from_pandas(pd.Series([1, 2], name="a"))
    assert "to_frame()" in info.value.hint
    with pytest.raises(BridgeError, match="got dict") as info:
        bridge.from_pandas([{"a": 1}])
    assert "from_items(rows)" in info.value.hint
