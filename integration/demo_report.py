"""The demo's report: per-stage ``ds.stats()``, a JSON summary and a timeline PNG of operators and actors.

The timeline draws one lane per operator of every execution a stage ran (task
operators) and one lane per actor of an actor-pool operator, from the task
spans in ``DatasetStats.ops[i].spans`` = ``(start_ts, end_ts, worker_pid)``;
a second panel shows each actor pool's busy fraction from ``OpStats.extra``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


def _with_parents(stats: Any) -> list[Any]:
    chain = []
    while stats is not None:
        chain.append(stats)
        stats = getattr(stats, "parent", None)
    return list(reversed(chain))


def _executions(stages: list[Any]) -> list[tuple[str, str, Any]]:
    """(stage, label, DatasetStats) for every execution, parents first, each execution once."""
    seen: set[int] = set()
    out = []
    for stage in stages:
        for label, stats in stage.executions:
            for s in _with_parents(stats):
                if id(s) in seen or not s.ops:
                    continue
                seen.add(id(s))
                out.append((stage.name, label if s is stats else f"{label} (input)", s))
    return out


def _summary(stages: list[Any], started: float, scale: float) -> dict[str, Any]:
    pools = []
    for stage_name, label, stats in _executions(stages):
        for op in stats.ops:
            if op.extra:
                pools.append({"stage": stage_name, "execution": label, "operator": op.name, **op.extra})
    import resource

    return {
        "ok": all(s.ok for s in stages),
        "driver_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "scale": scale,
        "seconds": round(time.time() - started, 1),
        "stages": [{"name": s.name, "ok": s.ok, "rows": s.rows, "seconds": s.seconds, "error": s.error, **s.facts}
                   for s in stages],
        "actor_pools": pools,
    }


def _own_text(stats: Any) -> str:
    """One execution's ``ds.stats()`` without the executions of its inputs (printed once, earlier)."""
    lines = [f"Execution: {(stats.end or time.time()) - stats.start:.2f}s wall"]
    lines += ["  " + op.summary() for op in stats.ops]
    if stats.iter_wait_s or stats.iter_format_s:
        lines.append(f"  Iterator: waited {stats.iter_wait_s:.2f}s for blocks, {stats.iter_format_s:.2f}s formatting")
    return "\n".join(lines)


def _stats_text(stages: list[Any]) -> str:
    parts = []
    executions = _executions(stages)
    for stage in stages:
        parts.append(f"##### {stage.name}: {'ok' if stage.ok else 'FAILED'}, {stage.rows:,} rows, {stage.seconds}s")
        if stage.error:
            parts.append(f"error: {stage.error}")
        for stage_name, label, stats in executions:
            if stage_name == stage.name:
                parts.append(f"--- {label}\n{_own_text(stats)}")
    return "\n".join(parts) + "\n"


def _lanes(stages: list[Any]) -> list[tuple[str, list[tuple[float, float]], bool]]:
    """(lane label, [(start, end)], is_actor) per operator, or per actor of an actor-pool operator."""
    lanes = []
    for stage in stages:
        if stage.end_ts:
            lanes.append((f"stage {stage.name}"[:60], [(stage.start_ts, stage.end_ts)], False))
        for label, start, end in stage.phases:
            lanes.append((f"stage {stage.name.split('.')[0]}: {label}", [(start, end)], False))
    for _stage, label, stats in _executions(stages):
        short = label.split(":", 1)[0]
        for op in stats.ops:
            if not op.spans:
                continue
            if op.extra:  # an actor pool: one lane per actor process
                pids = sorted({pid for _s, _e, pid in op.spans}, key=lambda p: (p is None, p))
                for i, pid in enumerate(pids):
                    spans = [(s, e) for s, e, p in op.spans if p == pid]
                    lanes.append((f"{short}: {op.name[:40]} actor {i}", spans, True))
            else:
                lanes.append((f"{short}: {op.name[:48]}", [(s, e) for s, e, _p in op.spans], False))
    return lanes


def plot_timeline(path: Path, stages: list[Any], started: float) -> Path:
    """Write the timeline PNG: when each operator's tasks ran, and how busy the actors were."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lanes = _lanes(stages)
    pools = [(f"{label.split(':', 1)[0]}: {op.name[:40]}", op.extra.get("busy_fraction", 0.0))
             for _stage, label, stats in _executions(stages) for op in stats.ops if op.extra]
    height = 2.5 + 0.28 * max(len(lanes), 1) + 0.4 * len(pools)
    fig, axes = plt.subplots(2 if pools else 1, 1, figsize=(13, height), squeeze=False,
                             gridspec_kw={"height_ratios": [max(len(lanes), 1), max(len(pools), 1)]} if pools else None)
    ax = axes[0][0]
    for row, (name, spans, is_actor) in enumerate(lanes):
        bars = [(s - started, max(e - s, 0.002)) for s, e in spans]
        color = "tab:gray" if name.startswith("stage ") else "tab:orange" if is_actor else "tab:blue"
        ax.broken_barh(bars, (row - 0.4, 0.8), color=color, alpha=0.8)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([name for name, _s, _a in lanes], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the demo started")
    ax.set_title("raybridge demo: stages and driver phases (grey), task spans per operator (blue) and per actor "
                 "(orange)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    if pools:
        bx = axes[1][0]
        bx.barh(range(len(pools)), [b * 100 for _n, b in pools], color="tab:orange")
        bx.set_yticks(range(len(pools)))
        bx.set_yticklabels([n for n, _b in pools], fontsize=7)
        bx.set_xlim(0, 100)
        bx.set_xlabel("actor pool busy time, % of actor lifetime")
        bx.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(out: Path, stages: list[Any], started: float, *, scale: float) -> dict[str, Path]:
    """Write ``stats.txt``, ``summary.json`` and ``timeline.png`` under ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"stats": out / "stats.txt", "summary": out / "summary.json", "timeline": out / "timeline.png"}
    text = _stats_text(stages)
    paths["stats"].write_text(text)
    print("\n" + text)
    paths["summary"].write_text(json.dumps(_summary(stages, started, scale), indent=2, default=str))
    try:
        plot_timeline(paths["timeline"], stages, started)
    except Exception as err:  # noqa: BLE001 - a missing plot must not hide the stage results
        print(f"timeline not written: {type(err).__name__}: {err}")
        paths.pop("timeline")
    return paths
