"""Progress bars: an overall bar with resources, scaled rates, a summary line that says how it ended."""

from __future__ import annotations

import re

import pytest

import bridge


@pytest.fixture
def bars_on():
    ctx = bridge.DataContext.get_current()
    before = ctx.enable_progress_bars
    ctx.enable_progress_bars = True
    yield
    ctx.enable_progress_bars = before


def _lines(text: str) -> list[str]:
    return [line.strip() for line in re.split(r"[\r\n]", text) if line.strip()]


def test_a_finished_execution_leaves_one_summary_line_with_scaled_rates_and_resources(bars_on, capsys):
    ds = bridge.range(300_000, override_num_blocks=12).map_batches(lambda b: {"id": b["id"] * 2})
    assert ds.materialize().count() == 300_000
    err = capsys.readouterr().err
    lines = _lines(err)
    assert any(line.startswith("- ReadRange->MapBatches") for line in lines)  # one bar per operator
    assert re.search(r"CPU [\d.]+/\d+, in flight \d+ MiB/[\d.]+ [MG]iB", err)  # the cluster and our bytes
    summary = [line for line in lines if line.startswith("Dataset execution finished in")]
    assert summary and "300,000 rows" in summary[-1]
    assert re.search(r"[\d.]+[kM]? row/s", summary[-1]) and not re.search(r"\d{6,}\.\d+ ?rows?/s", err)
    assert err.endswith("\n")  # the next output starts at the left margin


def test_a_stopped_iteration_says_stopped_and_closes_its_bars(bars_on, capsys):
    ds = bridge.range(200_000, override_num_blocks=20).map_batches(lambda b: b)
    for i, _ in enumerate(ds.iter_batches(batch_size=1000)):
        if i == 2:
            break
    err = capsys.readouterr().err
    assert any(line.startswith("Dataset execution stopped in") for line in _lines(err))
    assert err.endswith("\n")


def test_no_bars_unless_asked(capsys):
    ctx = bridge.DataContext.get_current()
    before, ctx.enable_progress_bars = ctx.enable_progress_bars, False
    try:
        bridge.range(1000).count()
        bridge.range(1000).map(lambda r: r).take_all()
    finally:
        ctx.enable_progress_bars = before
    assert "Dataset execution" not in capsys.readouterr().err
