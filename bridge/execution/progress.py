"""Progress bars, only when asked (default: stderr is a terminal).

One overall bar (rows out of the last operator, the cluster's CPUs and GPUs in
use, and the bytes this execution holds in flight against its budget), then one
bar per operator, with scaled units (``1.97M row/s``).  When the execution ends
the operator bars are removed, bottom first, so the cursor goes back to where
the bars began, and the overall bar stays as a one-line summary; when it is
stopped (Ctrl-C, an error, ``break``) the summary says so.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bridge.execution.operators import PhysicalOp

#: Seconds between refreshes of the resource figures (each asks Ray's GCS).
_RESOURCE_PERIOD_S = 1.0


def _mib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def resource_summary(in_flight: int, budget: int) -> str:
    """``"CPU 2/2, GPU 0/1, in flight 120 MiB/500 MiB"``: the cluster's use and this execution's bytes."""
    parts = []
    try:
        import ray

        total, free = ray.cluster_resources(), ray.available_resources()
        for key in ("CPU", "GPU"):
            if total.get(key):
                parts.append(f"{key} {total[key] - free.get(key, 0.0):g}/{total[key]:g}")
    except Exception:  # noqa: BLE001, S110 - progress never fails the work
        pass
    parts.append(f"in flight {_mib(in_flight)}/{_mib(budget)}")
    return ", ".join(parts)


class ProgressBars:
    """The bars of one execution (no-ops when disabled)."""

    def __init__(self, ops: list[PhysicalOp], enabled: bool, *, budget: int = 0, file: Any = None) -> None:
        self._bars: dict[int, Any] = {}
        self._ops = ops
        self._overall: Any = None
        self._budget = budget
        self._next_refresh = 0.0
        self._start = time.perf_counter()
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:  # tqdm is a dependency, but a broken env should not stop the work
            return
        out = file if file is not None else sys.stderr
        width = min(28, max(len(op.name) for op in ops)) if ops else 0
        common = {"unit": " row", "unit_scale": True, "dynamic_ncols": True, "file": out, "mininterval": 0.2}
        self._overall = tqdm(total=ops[-1].estimated_rows if ops else None, desc="Running".ljust(width + 2),
                             position=0, leave=True, **common)
        for pos, op in enumerate(ops, start=1):
            name = op.name if len(op.name) <= width else op.name[: width - 1] + "…"
            self._bars[id(op)] = tqdm(total=op.estimated_rows, desc=f"- {name}".ljust(width + 2), position=pos,
                                      leave=False, **common)

    @property
    def enabled(self) -> bool:
        return self._overall is not None

    def update(self, op: PhysicalOp, rows: int) -> None:
        bar, overall = self._bars.get(id(op)), self._overall  # close() may run on another thread
        if bar is None or overall is None:
            return
        bar.update(rows)
        if op is self._ops[-1]:
            overall.update(rows)

    def refresh(self, in_flight: Callable[[], int]) -> None:
        """Update the overall bar's resource figures, at most once per second."""
        overall = self._overall
        if overall is None:
            return
        now = time.perf_counter()
        if now < self._next_refresh:
            return
        self._next_refresh = now + _RESOURCE_PERIOD_S
        overall.set_postfix_str(resource_summary(in_flight(), self._budget), refresh=True)

    def close(self, finished: bool = True) -> None:
        """Remove the operator bars (last first) and leave the overall bar as a summary line."""
        for op in reversed(self._ops):
            bar = self._bars.pop(id(op), None)
            if bar is None:
                continue
            if finished and op.completed() and bar.total is not None and bar.n < bar.total:
                bar.total = bar.n  # the estimate was high (a filter, a limit): the operator is done
            bar.close()
        if self._overall is not None:
            elapsed = time.perf_counter() - self._start
            rows = self._overall.n
            state = "finished" if finished else "stopped"
            self._overall.set_description_str(f"Dataset execution {state} in {elapsed:.2f}s")
            self._overall.total = rows if finished else self._overall.total
            self._overall.set_postfix_str(f"{rows:,} row{'' if rows == 1 else 's'}", refresh=False)
            self._overall.close()
            self._overall = None
