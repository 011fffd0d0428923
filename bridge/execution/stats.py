"""Execution statistics: per-operator wall/CPU time, rows, bytes; ``ds.stats()``."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from bridge.block import BlockMetadata


@dataclasses.dataclass
class OpStats:
    name: str
    num_tasks: int = 0
    rows_out: int = 0
    bytes_out: int = 0
    task_wall_s: float = 0.0
    task_cpu_s: float = 0.0
    first_start: float | None = None
    last_end: float | None = None
    #: (start_ts, end_ts, worker_pid) of every task, for timelines.
    spans: list[tuple[float, float, int | None]] = dataclasses.field(default_factory=list)
    #: Filled by actor-pool operators: {"actors": n, "busy_fraction": f, ...}.
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def record(self, meta: BlockMetadata) -> None:
        self.num_tasks += 1
        self.rows_out += meta.num_rows
        self.bytes_out += meta.size_bytes
        es = meta.exec_stats
        if es is not None:
            self.task_wall_s += es.wall_s
            self.task_cpu_s += es.cpu_s
            self.spans.append((es.start_ts, es.end_ts, es.worker_pid))
            self.first_start = es.start_ts if self.first_start is None else min(self.first_start, es.start_ts)
            self.last_end = es.end_ts if self.last_end is None else max(self.last_end, es.end_ts)

    def summary(self) -> str:
        span = (self.last_end - self.first_start) if self.first_start and self.last_end else 0.0
        rate = self.rows_out / span if span > 0 else 0.0
        line = (
            f"{self.name}: {self.num_tasks} tasks, {self.rows_out:,} rows, {_fmt_bytes(self.bytes_out)} out; "
            f"task wall {self.task_wall_s:.2f}s, task CPU {self.task_cpu_s:.2f}s, "
            f"active {span:.2f}s ({rate:,.0f} rows/s)"
        )
        if self.extra:
            line += "; " + ", ".join(f"{k}={_fmt(v)}" for k, v in self.extra.items())
        return line


@dataclasses.dataclass
class DatasetStats:
    ops: list[OpStats] = dataclasses.field(default_factory=list)
    start: float = dataclasses.field(default_factory=time.time)
    end: float | None = None
    #: Stats of the execution that produced a materialised input, shown first.
    parent: DatasetStats | None = None
    #: Wall time the consumer spent waiting on the executor, and formatting batches.
    iter_wait_s: float = 0.0
    iter_format_s: float = 0.0

    def to_string(self) -> str:
        lines = []
        if self.parent is not None:
            lines.append(self.parent.to_string())
        total = (self.end or time.time()) - self.start
        lines.append(f"Execution: {total:.2f}s wall")
        for op in self.ops:
            lines.append("  " + op.summary())
        if self.iter_wait_s or self.iter_format_s:
            lines.append(f"  Iterator: waited {self.iter_wait_s:.2f}s for blocks, {self.iter_format_s:.2f}s formatting")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_string()


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}TiB"


def _fmt(v: Any) -> str:
    return f"{v:.2f}" if isinstance(v, float) else str(v)
