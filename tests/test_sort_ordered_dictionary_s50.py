"""Sorting by an ordered dictionary (a pandas ``Categorical(ordered=True)``) put "hi" before "lo" (session 50).

A sort compares a dictionary column by its values (Arrow's rule: text order for text). An ordered
dictionary means its own order, which pandas sorts by; sorting it by its text gave an order that looked
right and was not. Refused, with a hint whose two ways are run here.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bridge
from bridge.errors import BridgeValueError

ORDER = ["lo", "hi", "top"]


def _levels() -> tuple[bridge.Dataset, pd.DataFrame]:
    pdf = pd.DataFrame({"level": pd.Categorical(["top", "lo", "hi", "lo"], categories=ORDER, ordered=True),
                        "n": [1, 2, 3, 4]})
    return bridge.from_pandas(pdf), pdf


def test_sorting_by_an_ordered_dictionary_is_refused_naming_both_ways():
    ds, _ = _levels()
    with pytest.raises(BridgeValueError, match=r"(?s)'level' is an ordered dictionary.*index_in") as err:
        ds.sort("level").take_all()
    assert "value_set=pa.array(order)" in str(err.value)


def test_the_hints_two_ways_sort_by_the_order_and_by_the_values():
    ds, pdf = _levels()
    order = ORDER
    ranked = ds.add_column("level_rank", lambda t: pc.index_in(t["level"].cast(t["level"].type.value_type),
                                                               value_set=pa.array(order)), batch_format="pyarrow")
    assert [r["n"] for r in ranked.sort("level_rank").take_all()] == pdf.sort_values("level", kind="stable")["n"].tolist()
    as_text = ds.add_column("level", lambda t: t["level"].cast(t["level"].type.value_type), batch_format="pyarrow")
    assert [r["level"] for r in as_text.sort("level").take_all()] == ["hi", "lo", "lo", "top"]


def test_an_unordered_dictionary_still_sorts_by_its_values():
    pdf = pd.DataFrame({"c": pd.Categorical(["top", "lo", "hi"], categories=ORDER)})
    assert [r["c"] for r in bridge.from_pandas(pdf).sort("c").take_all()] == ["hi", "lo", "top"]


def test_min_and_max_of_an_ordered_dictionary_are_refused_and_the_hint_gives_the_order():
    ds, _ = _levels()
    for call in (lambda: ds.min("level"), lambda: ds.max("level"),
                 lambda: ds.groupby("n").aggregate(bridge.Max("level")).take_all()):
        with pytest.raises(BridgeValueError, match=r"(?s)'level', an ordered dictionary.*index_in"):
            call()
    order = ORDER
    ranked = ds.add_column("level_rank", lambda t: pc.index_in(t["level"].cast(t["level"].type.value_type),
                                                               value_set=pa.array(order)), batch_format="pyarrow")
    assert (order[ranked.min("level_rank")], order[ranked.max("level_rank")]) == ("lo", "top")  # pandas: lo, top
    unordered = bridge.from_pandas(pd.DataFrame({"c": pd.Categorical(["top", "lo"], categories=ORDER)}))
    assert (unordered.min("c"), unordered.max("c")) == ("lo", "top")
