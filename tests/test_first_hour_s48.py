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

    with pytest.raises(UserCodeError, match="returned None for every row"):
        bridge.range(5).filter(keep).take_all()
    assert bridge.range(5).filter(lambda r: r["id"] > 2).count() == 2
    # A value that is None for some rows (truthiness of a nullable column) still filters them out.
    rows = [{"x": None}, {"x": 3}]
    assert bridge.from_items(rows).filter(lambda r: r["x"]).take_all() == [{"x": 3}]


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


def test_pandas_style_and_or_in_a_filter_expression_says_to_write_and_or():
    ds = bridge.from_items([{"x": i} for i in range(6)])
    with pytest.raises(bridge.BridgeValueError, match="'&' joins bits") as info:
        ds.filter(expr="(x > 1) & (x < 3)")
    assert "expr='x > 1 and x < 3'" in info.value.hint
    with pytest.raises(bridge.BridgeValueError, match="'[|]' joins bits"):
        ds.filter(expr="(x > 4) | (x < 1)")
    assert ds.filter(expr="x > 1 and x < 3").take_all() == [{"x": 2}]


def test_argument_types_users_pass_to_sort_and_split_at_indices():
    import numpy as np

    ds = bridge.from_items([{"x": i} for i in range(4)])
    assert [r["x"] for r in ds.sort("x", descending=np.bool_(True)).take_all()] == [3, 2, 1, 0]
    assert [r["x"] for r in ds.sort("x", descending=1).take_all()] == [3, 2, 1, 0]
    with pytest.raises(bridge.BridgeValueError, match="got 'false'"):
        ds.sort("x", descending="false")
    with pytest.raises(bridge.BridgeValueError, match="needs a list of row indices; got 2") as info:
        ds.split_at_indices(2)
    assert "split_at_indices([2])" in info.value.hint


def test_ray_data_names_raybridge_lacks_say_so_and_how_to_reach_them():
    ds = bridge.range(3)
    with pytest.raises(AttributeError, match=r"Ray Data's Dataset.join is not part of raybridge") as info:
        ds.join  # noqa: B018
    assert "to_ray_data().join" in str(info.value)
    with pytest.raises(AttributeError, match="Ray Data's ray.data.read_tfrecords"):
        bridge.read_tfrecords  # noqa: B018
    assert not hasattr(ds, "join") and not hasattr(ds, "no_such_thing") and hasattr(ds, "count")
    with pytest.raises(AttributeError, match="^'Dataset' object has no attribute 'no_such_thing'$"):
        ds.no_such_thing  # noqa: B018


def test_a_filtered_frame_s_index_handed_to_torch_is_warned_about():
    import warnings

    from bridge.errors import ConversionWarning

    df = pd.DataFrame({"f1": [0.0, 1.0, 2.0, 3.0], "label": [0, 1, 0, 1]})
    ds = bridge.from_pandas(df[df["f1"] > 1])  # row labels 2, 3: kept as a column, as to_pandas restores them
    with pytest.warns(ConversionWarning, match="'__index_level_0__' is the index of a pandas frame"):
        batch = next(iter(ds.iter_torch_batches()))
    assert batch["__index_level_0__"].tolist() == [2, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        clean = next(iter(bridge.from_pandas(df[df["f1"] > 1].reset_index(drop=True)).iter_torch_batches()))
    assert set(clean) == {"f1", "label"}


def test_a_misspelt_keyword_is_named_at_the_call_with_the_right_spelling():
    with pytest.raises(BridgeTypeError, match=r"unknown keyword argument\(s\) \['fn_kwarg'\]") as info:
        bridge.range(8).map_batches(lambda b, scale=1: b, fn_kwarg={"scale": 2})
    assert info.value.hint == "did you mean fn_kwargs=?"
    assert bridge.range(8).map_batches(lambda b: b, memory=10**6, max_retries=1).count() == 8  # Ray options pass


def test_an_in_place_change_to_a_read_only_batch_says_how_to_write_it():
    import numpy as np

    def double(b):
        b["x"] *= 2
        return b

    ds = bridge.from_numpy({"x": np.arange(10.0)})
    with pytest.raises(UserCodeError, match="read-only") as info:
        ds.map_batches(double).take(2)
    assert "zero_copy_batch=False" in info.value.hint
    assert [r["x"] for r in ds.map_batches(double, zero_copy_batch=False).take(2)] == [0.0, 2.0]
