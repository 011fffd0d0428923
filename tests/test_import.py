"""`import bridge` must not import any foreign framework (they load inside adapters only)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "torch", "tensorflow", "dask", "pyspark", "modin", "raydp", "polars", "xorbits")


def test_import_bridge_imports_no_framework():
    code = (
        "import sys, bridge, adapters\n"
        "adapters.names(); adapters.is_available('dask')\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import bridge pulled in: {out.stdout.strip()}"


def test_pipeline_on_arrow_data_imports_no_framework():
    code = (
        "import sys, ray, bridge\n"
        "ray.init(address='local', num_cpus=1, include_dashboard=False)\n"
        "ds = bridge.range(100).map_batches(lambda b: {'x': b['id'] * 2}).filter(lambda r: r['x'] > 10)\n"
        "assert ds.count() == 94\n"
        "list(ds.iter_batches(batch_size=10))\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1:] in ([], [""]), f"the pipeline pulled in: {out.stdout.strip()}"
