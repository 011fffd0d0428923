"""The main job, end to end: ``make demo`` (or ``python -m integration.demo``).

Runs the pipelines raybridge exists for on a local Ray started here.  Each
stage prints its rows and time; the process exits non-zero if a stage fails.
Stages that need a framework that is not installed are reported and skipped
only when ``--allow-missing`` is given.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

OUT = Path(os.environ.get("RAYBRIDGE_DEMO_OUT", "demo_out"))


def stage(name: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    def wrap(fn: Callable[..., int]) -> Callable[..., int]:
        def run(*args, **kwargs) -> int:
            print(f"\n=== {name} ===", flush=True)
            t = time.perf_counter()
            rows = fn(*args, **kwargs)
            print(f"--- {name}: {rows:,} rows in {time.perf_counter() - t:.1f}s", flush=True)
            return rows

        run.__name__ = fn.__name__
        return run

    return wrap


@stage("Core: range -> map_batches -> filter -> iter_batches")
def core_pipeline(scale: float) -> int:
    import pyarrow.compute as pc

    import bridge

    n = int(2_000_000 * scale)
    ds = bridge.range(n).map_batches(lambda b: {"id": b["id"], "x": b["id"] * 0.5})
    ds = ds.filter(expr=pc.equal(pc.bit_wise_and(pc.field("id"), 1), 0))
    rows = sum(len(b["id"]) for b in ds.iter_batches(batch_size=8192))
    assert rows == (n + 1) // 2, rows
    print(ds.stats())
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m integration.demo")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the full data sizes")
    args = ap.parse_args(argv)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, configure_logging=False)
    OUT.mkdir(parents=True, exist_ok=True)
    failed = []
    for fn in (core_pipeline,):
        try:
            fn(args.scale)
        except Exception as err:  # noqa: BLE001 - report every stage, then fail the run
            import traceback

            traceback.print_exc()
            failed.append((fn.__name__, err))
    if failed:
        print(f"\nFAILED stages: {[name for name, _ in failed]}", file=sys.stderr)
        return 1
    print("\nAll stages passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
