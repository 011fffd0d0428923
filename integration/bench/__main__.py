"""The benchmark runner: ``python -m integration.bench [names...] [--scale small|full]``.

For every benchmark module ``integration/bench/bench_<name>.py`` (see
``registry.py`` for the contract), each contender runs in a fresh process, in
alternating rounds (A B A B), each process making one warm-up call (excluded)
and ``--calls - 1`` measured calls.  The medians, spreads and peaks go to
``integration/bench/RESULTS.md`` (plus ``results.json`` and ``results.png``).
``results.json`` is written after every benchmark (marked ``"partial"`` until
the run ends), so a run cut short keeps what it measured: run the remaining
names with ``--merge`` to complete it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def discover() -> dict[str, tuple[str, object]]:
    """name -> (module, Benchmark) for every Benchmark a ``bench_*`` module defines (BENCHMARK, BENCHMARK_*,
    or a BENCHMARKS list)."""
    from integration.bench.registry import Benchmark

    out: dict[str, tuple[str, object]] = {}
    for info in pkgutil.iter_modules([str(HERE)]):
        if not info.name.startswith("bench_"):
            continue
        mod = importlib.import_module(f"integration.bench.{info.name}")
        found = [v for k, v in vars(mod).items() if k.startswith("BENCHMARK") and isinstance(v, Benchmark)]
        found += [b for b in getattr(mod, "BENCHMARKS", []) if isinstance(b, Benchmark)]
        for bench in found:
            out.setdefault(bench.name, (info.name[len("bench_"):], bench))
    return out


def run_one(module: str, name: str, contender: str, scale: str, calls: int, cpus: int, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "integration.bench.worker", module, contender, "--name", name, "--scale", scale,
           "--calls", str(calls), "--cpus", str(cpus)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return {"contender": contender, "error": f"timed out after {timeout:.0f}s"}
    for line in proc.stdout.splitlines()[::-1]:
        if line.startswith("BENCH-RESULT "):
            return json.loads(line[len("BENCH-RESULT "):])
    tail = (proc.stderr or proc.stdout)[-2000:]
    return {"contender": contender, "error": f"exit code {proc.returncode}: {tail}"}


def summarize(bench, runs: dict[str, list[dict]]) -> dict:
    rows = {}
    for name, results in runs.items():
        figures = [f for r in results for f in r.get("figures", [])[1:]]
        errors = [r["error"] for r in results if "error" in r]
        entry = {
            "figures": figures,
            "median": statistics.median(figures) if figures else None,
            "min": min(figures) if figures else None,
            "max": max(figures) if figures else None,
            "peak_rss": max((r.get("peak_rss", 0) for r in results), default=0),
            "peak_store": max((r.get("peak_store", 0) for r in results), default=0),
        }
        spills = [r["spilled_per_call"] for r in results if "spilled_per_call" in r]
        if spills:
            entry["spilled_per_call"] = statistics.median(spills)
        if errors:
            entry["error"] = errors[0].splitlines()[0][:300]
        rows[name] = entry
    rb = rows.get("raybridge", {}).get("median")
    for name, entry in rows.items():
        peer = entry.get("median")
        if rb and peer and name != "raybridge":
            # "speedup": how many times better raybridge is than this peer.
            entry["speedup"] = rb / peer if bench.higher_is_better else peer / rb
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m integration.bench")
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    ap.add_argument("--scale", choices=["small", "full"], default="small")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds per contender")
    ap.add_argument("--calls", type=int, default=None, help="calls per process, the first is a warm-up")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "out"), help="folder for results.json and results.png")
    ap.add_argument("--report", default=None, help="Markdown report (default: RESULTS.md for --scale full)")
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--merge", action="store_true",
                    help="keep the other benchmarks of the last results.json in --out; replace only those run now")
    args = ap.parse_args()
    rounds = args.rounds or (2 if args.scale == "full" else 1)
    calls = args.calls or (3 if args.scale == "full" else 4)
    timeout = args.timeout or (900 if args.scale == "full" else 240)
    benches = discover()
    names = args.names or sorted(benches)
    unknown = [n for n in names if n not in benches]
    if unknown:
        sys.exit(f"unknown benchmark(s) {unknown}; known: {sorted(benches)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    previous: dict = {}
    if args.merge and (out / "results.json").exists():
        last = json.loads((out / "results.json").read_text())
        if last["meta"]["scale"] == args.scale:
            previous = last["results"]
    results: dict = {}
    started = time.time()

    def save(done: bool) -> dict:
        """results.json after every benchmark, so a run cut short keeps what it measured (rerun the rest
        with ``--merge``)."""
        meta = {"scale": args.scale, "rounds": rounds, "calls": calls, "cpus": args.cpus,
                "wall_s": time.time() - started, **({} if done else {"partial": True})}
        (out / "results.json").write_text(json.dumps({"meta": meta, "results": {**previous, **results}}, indent=1))
        return meta

    for name in names:
        module, bench = benches[name]
        reason = bench.requires() if bench.requires is not None else None  # type: ignore[attr-defined]
        if reason:
            print(f"[{name}] skipped: {reason}", flush=True)
            continue
        order = list(bench.contenders)
        runs: dict[str, list[dict]] = {c: [] for c in order}
        for r in range(rounds):
            for c in (order if r % 2 == 0 else order[::-1]):
                t0 = time.time()
                res = run_one(module, name, c, args.scale, calls, args.cpus, timeout)
                runs[c].append(res)
                status = res.get("error", "").splitlines()[0][:120] if "error" in res else \
                    " ".join(f"{f:,.3g}" for f in res.get("figures", []))
                print(f"[{name}] {c:<14} round {r + 1}: {status}  ({time.time() - t0:.0f}s)", flush=True)
        results[name] = {"title": bench.title, "unit": bench.unit, "params": bench.params.get(args.scale),
                         "goals": bench.goals, "rows": summarize(bench, runs)}
        save(done=False)
    from integration.bench.report import write_report

    meta = save(done=True)
    results = {**previous, **results}
    report = args.report or (str(HERE / "RESULTS.md") if args.scale == "full" else str(out / "RESULTS.md"))
    # The full-scale report and its chart are committed next to this file; other runs stay in --out.
    chart = HERE / "results.png" if args.report is None and args.scale == "full" else out / "results.png"
    text = write_report(results, meta, Path(report), chart)
    print(text)


if __name__ == "__main__":
    main()
