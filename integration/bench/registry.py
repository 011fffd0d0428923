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
    #: ``() -> reason or None``: why this machine cannot run the benchmark (e.g. no CUDA); skipped then.
    requires: Callable[[], str | None] | None = None

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


def cuda_missing() -> str | None:
    """``None`` where torch sees a CUDA device, else why not (the GPU benchmarks' ``requires``)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return None if torch.cuda.is_available() else "no CUDA device"


class GpuSampler:
    """Samples GPU utilisation (%) with ``nvidia-smi`` every ``interval`` seconds on a thread."""

    def __init__(self, interval: float = 0.2) -> None:
        import threading

        self.samples: list[float] = []
        self.times: list[float] = []
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> GpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import subprocess
        import time

        while not self._stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5).stdout
                self.samples.append(float(out.split()[0]))
                self.times.append(time.perf_counter())
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                return
            self._stop.wait(self._interval)

    def steady(self, window: tuple[float, float] | None = None) -> float | None:
        """Median utilisation over ``window`` (``time.perf_counter()`` bounds: the steady phase a
        contender measured), else leaving out the first and last fifth of the samples."""
        import statistics

        if window is not None:
            inside = [u for t, u in zip(self.times, self.samples) if window[0] <= t <= window[1]]
            if inside:
                return statistics.median(inside)
        cut = len(self.samples) // 5
        body = self.samples[cut:len(self.samples) - cut] or self.samples
        return statistics.median(body) if body else None


#: A contender may put ``[start, end]`` (``time.perf_counter()``) of its steady phase here; the GPU use
#: reported by :func:`run_in_process` is then sampled over that phase only.
STEADY_WINDOW: list[float] = []


def run_in_process(bench: Benchmark, scale: Scale, calls: int = 3, cpus: int | None = None) -> dict[str, Any]:
    """Every contender of ``bench`` in this process, one Ray, ``calls`` calls each (the first a warm-up).

    For hosts where the fresh-process runner cannot run (an offline GPU host);
    prints one line per contender with the median figure and the sampled GPU use.
    """
    import os
    import statistics

    import ray

    reason = bench.requires() if bench.requires is not None else None
    if reason:
        print(f"[{bench.name}] skipped: {reason}")
        return {}
    ray.init(num_cpus=cpus or os.cpu_count(), include_dashboard=False, configure_logging=False,
             **bench.ray_init)
    out: dict[str, Any] = {}
    try:
        for name, setup in bench.contenders.items():
            try:
                run = setup(scale)
                figures, utils = [], []
                for _ in range(calls):
                    STEADY_WINDOW.clear()
                    with GpuSampler() as gpu:
                        figures.append(run())
                    utils.append(gpu.steady(tuple(STEADY_WINDOW) if len(STEADY_WINDOW) == 2 else None))  # type: ignore[arg-type]
            except Exception as err:  # noqa: BLE001 - reported, the next contender still runs
                print(f"[{bench.name}] {name:<16} error: {type(err).__name__}: {str(err)[:300]}", flush=True)
                continue
            kept = figures[1:] or figures
            util = [u for u in utils[1:] if u is not None]
            out[name] = {"median": statistics.median(kept), "figures": figures,
                         "gpu_util": statistics.median(util) if util else None}
            print(f"[{bench.name}] {name:<16} {statistics.median(kept):,.1f} {bench.unit} "
                  f"(calls {', '.join(f'{f:,.1f}' for f in figures)}; steady GPU use "
                  f"{out[name]['gpu_util']}%)", flush=True)
    finally:
        ray.shutdown()
    rb = out.get("raybridge", {}).get("median")
    for name, entry in out.items():
        if rb and name != "raybridge":
            ratio = rb / entry["median"] if bench.higher_is_better else entry["median"] / rb
            print(f"[{bench.name}] raybridge vs {name}: {ratio:.2f}x")
    return out
