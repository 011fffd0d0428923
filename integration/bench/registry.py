"""The benchmark contract.

A benchmark is a module ``integration/bench/bench_<name>.py`` that defines
``BENCHMARK = Benchmark(...)``.  The runner (``python -m integration.bench``)
imports every such module, and for each benchmark runs each contender in a
fresh process, alternating contenders (A B A B), one warm-up call excluded,
and reports medians, spreads, peak RSS of the process tree and peak
object-store use, as ratios against raybridge.

A contender is a function ``setup(scale) -> run``: ``setup`` builds the data
(same seed for every contender, not timed) and starts whatever the contender
needs (Ray is started by the runner with the same CPUs for everyone);
``run()`` does the measured work once and returns the figure (seconds or
rows/s, as ``Benchmark.unit`` says).  ``run`` must time itself, so that setup
inside it (e.g. building an iterator) can be included or excluded explicitly.

Example::

    def _rb(scale):
        import bridge
        n = SIZES[scale]
        def run():
            t = time.perf_counter()
            bridge.range(n).map_batches(f).count()
            return n / (time.perf_counter() - t)
        return run

    BENCHMARK = Benchmark(
        name="map_chain", title="3 x map_batches over range(N)", unit="rows/s",
        contenders={"raybridge": _rb, "ray_data": _rd}, params={"small": 2_000_000, "full": 20_000_000},
    )
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

Scale = str  # "small" | "full"


@dataclasses.dataclass
class Benchmark:
    name: str
    title: str
    #: "rows/s", "MB/s" (higher is better) or "s" (lower is better).
    unit: str
    #: contender name -> setup(scale) -> run() -> figure.  "raybridge" must be one.
    contenders: dict[str, Callable[[Scale], Callable[[], float]]]
    #: Free-form description of the data per scale, shown in the report.
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: Goal stated by the issue, shown next to the ratio, e.g. {"ray_data": 1.5}.
    goals: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Ray is started by the runner for every contender unless this is False.
    needs_ray: bool = True
    #: Extra ray.init kwargs (e.g. object_store_memory) — the same for all contenders.
    ray_init: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def higher_is_better(self) -> bool:
        return self.unit != "s"


def first_batch_setup(make: Callable[[int], Any], rows: dict[Scale, int], batch_size: int
                      ) -> Callable[[Scale], Callable[[], float]]:
    """A contender timing ``make(n).iter_batches(batch_size)`` up to its first batch (seconds)."""

    def setup(scale: Scale) -> Callable[[], float]:
        n = rows[scale]

        def run() -> float:
            import time

            t = time.perf_counter()
            it = iter(make(n).iter_batches(batch_size=batch_size))
            next(it)
            elapsed = time.perf_counter() - t
            close = getattr(it, "close", None)
            if close:
                close()
            return elapsed

        return run

    return setup
