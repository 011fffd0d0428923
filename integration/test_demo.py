"""``make demo`` at a small scale: every stage runs, keeps its rows, and the models learn.

The demo runs in a subprocess (``python -m integration.demo --scale 0.05``) so it
starts its own Ray and Spark-on-Ray, exactly as ``make demo`` does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

for _pkg in ("pyspark", "raydp", "dask", "torch", "tensorflow", "sklearn", "matplotlib"):
    pytest.importorskip(_pkg)
pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SCALE = 0.05
DIGITS = 1797


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo_out")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAYBRIDGE_PROGRESS_BARS="0", RAY_AUTH_MODE="disabled", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "integration.demo", "--scale", str(SCALE), "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=840)
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    return proc, out, summary


def _stage(summary, number):
    return next(s for s in summary["stages"] if s["name"].startswith(f"{number}."))


@pytest.mark.timeout(900)
def test_demo_exits_zero_and_prints_rows_and_time_per_stage(demo_run):
    proc, _out, summary = demo_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "All stages passed" in proc.stdout
    printed = dict(re.findall(r"^--- (\d)\. .*?: ([\d,]+) rows in [\d.]+s \[ok\]$", proc.stdout, flags=re.M))
    assert printed == {str(s + 1): f"{_stage(summary, s + 1)['rows']:,}" for s in range(3)}


@pytest.mark.timeout(900)
def test_spark_feature_table_survives_stop_spark_with_every_row(demo_run):
    _proc, _out, summary = demo_run
    spark = _stage(summary, 1)
    assert spark["ok"] and spark["spark"] == "ray"
    assert spark["rows"] == spark["expected_rows"] == int(1_000_000 * SCALE)
    assert spark["returned"] == (spark["rows"] + 10) // 11  # pmod(id, 11) = 0, counted after Spark stopped
    assert spark["segments"] == 5 and spark["above_avg"] > 0


@pytest.mark.timeout(900)
def test_dask_stage_keeps_rows_and_the_torch_model_learns(demo_run):
    _proc, _out, summary = demo_run
    dask = _stage(summary, 2)
    copies = max(round(40 * SCALE), 2)
    assert dask["ok"] and dask["rows"] == DIGITS * copies
    assert dask["train_rows"] + dask["test_rows"] == dask["rows"]
    assert dask["test_rows"] == copies * len(range(0, DIGITS, 5))  # every fifth source digit is held out
    epochs = dask["epochs"]
    assert [e["rows"] for e in epochs] == [dask["train_rows"]] * 2
    assert epochs[1]["loss"] < epochs[0]["loss"]
    assert dask["test_accuracy"] > 0.3  # 10 classes: chance is 0.1


@pytest.mark.timeout(900)
def test_tf_export_fits_keras_on_the_same_rows(demo_run):
    _proc, _out, summary = demo_run
    tf, dask = _stage(summary, 3), _stage(summary, 2)
    assert tf["ok"] and tf["rows"] == tf["expected_rows"] == dask["train_rows"]
    assert tf["test_accuracy"] > 0.2


@pytest.mark.timeout(900)
def test_report_writes_stats_timeline_and_actor_pool_figures(demo_run):
    _proc, out, summary = demo_run
    png = (out / "timeline.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    stats = (out / "stats.txt").read_text()
    assert "MapBatches(DigitEncoder)" in stats and "busy_fraction" in stats
    pool = next(p for p in summary["actor_pools"] if p["operator"].startswith("MapBatches(DigitEncoder)"))
    assert pool["actors_peak"] >= 1 and pool["restarts"] == 0 and 0 < pool["busy_fraction"] <= 1


def test_a_failing_stage_is_reported_and_fails_the_run():
    from integration.demo import StageResult, run_stage

    def broken(result):
        result.rows = 3
        raise ValueError("boom")

    result = StageResult("x. broken")
    assert run_stage(result, broken) is None
    assert not result.ok and result.error == "ValueError: boom" and result.end_ts >= result.start_ts


def test_report_of_a_failed_run_still_writes_summary_and_timeline(tmp_path):
    from integration.demo import StageResult, run_stage
    from integration.demo_report import write_report

    def broken(result):
        with result.phase("setup"):
            pass
        raise RuntimeError("no engine")

    stage = StageResult("1. broken")
    run_stage(stage, broken)
    paths = write_report(tmp_path, [stage], stage.start_ts, scale=0.01)
    summary = json.loads(paths["summary"].read_text())
    assert summary["ok"] is False and summary["stages"][0]["error"] == "RuntimeError: no engine"
    assert paths["timeline"].read_bytes()[:4] == b"\x89PNG"
    assert "1. broken: FAILED" in paths["stats"].read_text()
