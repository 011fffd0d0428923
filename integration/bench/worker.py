"""One contender of one benchmark, in a fresh process: ``python -m integration.bench.worker ...``.

Prints one JSON line: the figures of every call (the first is the warm-up),
peak RSS of this process tree and peak object-store use.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable


class PeakSampler:
    """Samples RSS of this process and all its descendants (Ray workers, JVMs) and object-store use."""

    def __init__(self, interval: float = 0.05) -> None:
        import psutil

        self._proc = psutil.Process()
        self.peak_rss = 0
        self.peak_store = 0
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PeakSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        import psutil

        tick = 0
        while not self._stop.is_set():
            total = 0
            try:
                procs = [self._proc, *self._proc.children(recursive=True)]
            except psutil.Error:
                procs = [self._proc]
            for p in procs:
                try:
                    # USS-like figure: resident minus shared file pages keeps the object store's
                    # shared memory from being counted once per process that maps it.
                    mem = p.memory_info()
                    total += mem.rss - getattr(mem, "shared", 0)
                except psutil.Error:
                    pass
            self.peak_rss = max(self.peak_rss, total)
            if tick % 4 == 0:
                self.peak_store = max(self.peak_store, _store_used())
            tick += 1
            self._stop.wait(self._interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def _store_used() -> int:
    try:
        import ray

        if not ray.is_initialized():
            return 0
        total = ray.cluster_resources().get("object_store_memory", 0)
        free = ray.available_resources().get("object_store_memory", total)
        return int(total - free)
    except Exception:  # noqa: BLE001 - sampling must never break a run
        return 0


#: Seconds between two calls of a Ray benchmark.  The raylet frees objects whose last reference
#: is gone in batches, once a second (Ray's ``free_objects_period_milliseconds``, 1,000 by
#: default), so a call started right after another puts its blocks beside the previous call's
#: garbage, into store pages never touched before (page faults), instead of into the freed ones:
#: its time then depends on how long ago the previous call ended.  Waiting out one free period
#: starts every measured call, of every contender, from the same store.  ``RAYBRIDGE_BENCH_SETTLE_S``
#: overrides it (``0``: calls back to back, as before 2026-11-24).
SETTLE_S = float(os.environ.get("RAYBRIDGE_BENCH_SETTLE_S", "1.2"))


def measure(run: Callable[[], float], calls: int, *, settle: Callable[[], None] | None = None,
            after_warmup: Callable[[], object] | None = None) -> list[float]:
    """``calls`` figures of ``run()``: ``after_warmup()`` right after the first (the warm-up), and
    ``settle()`` before every call but the first, so no measured call starts on the previous one's heels."""
    figures = []
    for call in range(calls):
        if call and settle is not None:
            settle()
        figures.append(float(run()))
        if call == 0 and after_warmup is not None:
            after_warmup()
    return figures


def _settle() -> None:
    import gc
    import time

    gc.collect()
    time.sleep(SETTLE_S)


def _spilled_bytes() -> int:
    """Bytes the cluster's object stores have spilled to disk since they started."""
    try:
        import ray
        from ray._private.internal_api import get_memory_info_reply, get_state_from_address

        reply = get_memory_info_reply(get_state_from_address(ray.get_runtime_context().gcs_address))
        return int(reply.store_stats.spilled_bytes_total)
    except Exception:  # noqa: BLE001 - sampling must never break a run
        return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("benchmark")
    ap.add_argument("contender")
    ap.add_argument("--name", default=None, help="which Benchmark of the module (default: BENCHMARK)")
    ap.add_argument("--scale", default="small")
    ap.add_argument("--calls", type=int, default=3, help="calls including the warm-up")
    ap.add_argument("--cpus", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("RAYBRIDGE_PROGRESS_BARS", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
    mod = importlib.import_module(f"integration.bench.bench_{args.benchmark}")
    from integration.bench.registry import Benchmark

    candidates = [v for k, v in vars(mod).items() if k.startswith("BENCHMARK") and isinstance(v, Benchmark)]
    candidates += list(getattr(mod, "BENCHMARKS", []))
    bench = next(b for b in candidates if args.name in (None, b.name))
    out: dict[str, object] = {"benchmark": bench.name, "contender": args.contender}
    sampler = None
    try:
        if bench.needs_ray:
            import ray

            ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, configure_logging=False,
                     log_to_driver=False, **bench.ray_init)
        run = bench.contenders[args.contender](args.scale)
        sampler = PeakSampler().start()
        warm_spill: list[int] = []
        out["figures"] = measure(run, args.calls, settle=_settle if bench.needs_ray else None,
                                 after_warmup=(lambda: warm_spill.append(_spilled_bytes())) if bench.needs_ray else None)
        if warm_spill and args.calls > 1:
            # Bytes the object store wrote to disk per measured call (the warm-up excluded).
            out["spilled_per_call"] = (_spilled_bytes() - warm_spill[0]) / (args.calls - 1)
    except Exception as err:  # noqa: BLE001 - reported, not raised: other contenders still run
        out["error"] = f"{type(err).__name__}: {err}"
        out["traceback"] = traceback.format_exc()[-4000:]
    finally:
        if sampler is not None:
            sampler.stop()
            out["peak_rss"] = sampler.peak_rss
            out["peak_store"] = sampler.peak_store
    sys.stdout.write("BENCH-RESULT " + json.dumps(out) + "\n")
    sys.stdout.flush()
    _teardown()
    os._exit(0)  # skip the slow interpreter teardown; the parent only needs the line above


def _teardown() -> None:
    try:
        import ray

        if ray.is_initialized():
            ray.shutdown()
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    main()
