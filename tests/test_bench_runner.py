"""The benchmark runner keeps what it measured when a long run is cut short (then ``--merge`` the rest)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from integration.bench import __main__ as runner
from integration.bench.registry import Benchmark


def _bench(name: str) -> Benchmark:
    never_run = {c: (lambda scale: (lambda: 0.0)) for c in ("raybridge", "ray_data")}  # run_one is replaced
    return Benchmark(name=name, title=name, unit="s", contenders=never_run, needs_ray=False)


def _run(monkeypatch, tmp_path, names: list[str], *extra: str) -> None:
    monkeypatch.setattr(sys, "argv", ["bench", *names, "--out", str(tmp_path), "--report", str(tmp_path / "R.md"),
                                      *extra])
    runner.main()


@pytest.fixture
def two_benchmarks(monkeypatch):
    benches = {"a": ("fake", _bench("a")), "b": ("fake", _bench("b"))}
    monkeypatch.setattr(runner, "discover", lambda: benches)
    monkeypatch.setattr("integration.bench.report.write_report", lambda *a, **k: "report")


def test_a_run_cut_short_keeps_the_benchmarks_it_finished(monkeypatch, tmp_path, two_benchmarks):
    def run_one(module, name, contender, *rest):
        if name == "b":
            raise KeyboardInterrupt
        return {"contender": contender, "figures": [9.0, 1.0 if contender == "raybridge" else 2.0]}

    monkeypatch.setattr(runner, "run_one", run_one)
    with pytest.raises(KeyboardInterrupt):
        _run(monkeypatch, tmp_path, ["a", "b"])
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["meta"]["partial"] is True
    assert list(saved["results"]) == ["a"]
    assert saved["results"]["a"]["rows"]["ray_data"]["speedup"] == pytest.approx(2.0)

    # The rest, merged: both benchmarks, no longer partial.
    monkeypatch.setattr(runner, "run_one", lambda module, name, contender, *rest:
                        {"contender": contender, "figures": [9.0, 3.0]})
    _run(monkeypatch, tmp_path, ["b"], "--merge")
    saved = json.loads((tmp_path / "results.json").read_text())
    assert "partial" not in saved["meta"]
    assert sorted(saved["results"]) == ["a", "b"]
    assert saved["results"]["a"]["rows"]["raybridge"]["median"] == 1.0
    assert saved["results"]["b"]["rows"]["raybridge"]["median"] == 3.0


def test_without_merge_a_run_replaces_the_last_results(monkeypatch, tmp_path, two_benchmarks):
    monkeypatch.setattr(runner, "run_one", lambda module, name, contender, *rest:
                        {"contender": contender, "figures": [9.0, 1.0]})
    _run(monkeypatch, tmp_path, ["a"])
    _run(monkeypatch, tmp_path, ["b"])
    assert list(json.loads((tmp_path / "results.json").read_text())["results"]) == ["b"]


def test_the_worker_settles_before_every_measured_call_and_only_then():
    from integration.bench import worker

    events: list[str] = []
    figures = worker.measure(lambda: events.append("run") or float(len(events)), 3,
                             settle=lambda: events.append("settle"), after_warmup=lambda: events.append("warm"))
    assert events == ["run", "warm", "settle", "run", "settle", "run"]
    assert figures == [1.0, 4.0, 6.0]
    events.clear()
    assert worker.measure(lambda: events.append("run") or 1.0, 2) == [1.0, 1.0]
    assert events == ["run", "run"]
    if "RAYBRIDGE_BENCH_SETTLE_S" not in os.environ:
        assert worker.SETTLE_S > 1.0  # longer than Ray's default free period (1,000 ms), the reason it exists
