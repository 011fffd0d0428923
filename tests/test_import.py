"""`import bridge` must not import any foreign framework (they load inside adapters only)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "torch", "tensorflow", "dask", "pyspark", "modin", "raydp", "polars", "xorbits")


def test_import_bridge_imports_no_framework():
    code = (
        "import sys, bridge, raybridge_adapters\n"
        "raybridge_adapters.names(); raybridge_adapters.is_available('dask')\n"
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


def test_numpy_batches_become_blocks_without_importing_pandas():
    """``pa.array`` imports pandas (some 0.3 s) to ask whether its input is a pandas object: a fresh worker's
    first output -- a NumPy batch of numbers and tensors, as a model returns -- becomes a block without it,
    and the block reads back as NumPy without it too."""
    code = (
        "import sys, numpy as np, bridge\n"
        "from bridge.batch import to_block, to_numpy_batch\n"
        "b = to_block({'id': np.arange(5), 'p': np.ones((5, 3), np.float32), 'h': np.zeros(5, np.float16),\n"
        "              'u': np.arange(10, dtype=np.uint8)[::2], 'img': np.zeros((5, 2, 2, 3), np.uint8)})\n"
        "to_numpy_batch(b)\n"
        "print(b.num_rows, 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.split() == ["5", "False"], out.stdout + out.stderr


def test_the_core_reaches_adapters_only_through_the_registry():
    """No module of ``bridge/`` imports the adapters (at module top or inside a function): the core finds an
    adapter by name in :mod:`bridge.registry`, which loads the module with importlib."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "bridge"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(root.parent)}:{node.lineno} imports {n}"
                          for n in names if n.split(".")[0] in ("adapters", "raybridge_adapters")]
    assert offenders == [], offenders
    from bridge.registry import _BUILTIN

    # ...and the registry names adapter modules as strings, loaded on first use.
    assert all(module.startswith("raybridge_adapters.") for module, _, _ in _BUILTIN.values())


def test_adapters_install_under_a_name_no_other_distribution_uses():
    """The ``adapters/`` folder is the import package ``raybridge_adapters`` (PyPI's unrelated ``adapters``
    would overwrite a top-level ``adapters``). Inside it, imports are relative, so nothing loads it twice
    under two names; a whole pipeline through several adapters never imports a module called ``adapters``."""
    from pathlib import Path

    import tomllib

    root = Path(__file__).resolve().parent.parent
    setup = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "adapters" not in setup["packages"] and "raybridge_adapters" in setup["packages"]
    assert setup["package-dir"] == {"raybridge_adapters": "adapters"}
    # The list is explicit: a subpackage missing from it would be missing from the wheel.
    subpackages = {".".join(p.relative_to(root).parent.parts) for p in (root / "bridge").rglob("__init__.py")}
    assert subpackages <= set(setup["packages"]), sorted(subpackages - set(setup["packages"]))
    for path in sorted((root / "adapters").glob("*.py")):
        text = path.read_text()
        assert "from adapters" not in text and "import adapters" not in text, path.name
    code = (
        "import sys, pandas as pd, pyarrow as pa, bridge\n"
        "ds = bridge.from_pandas(pd.DataFrame({'x': [1, 2]}))\n"
        "bridge.from_arrow(pa.table({'x': [1]})); bridge.from_numpy(__import__('numpy').arange(3))\n"
        "import raybridge_adapters.spark_adapter, raybridge_adapters.torch_iterable\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'adapters'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300,
                         cwd="/")
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_doors_have_real_signatures_and_dir_lists_lazy_names():
    import inspect

    import bridge

    assert list(inspect.signature(bridge.from_spark).parameters) == ["df", "parallelism", "method"]
    assert list(inspect.signature(bridge.from_torch).parameters) == ["dataset", "rows_per_block"]
    for door in (bridge.from_dask, bridge.from_spark, bridge.from_modin, bridge.from_mars, bridge.from_torch,
                 bridge.from_tf, bridge.from_ray_data):
        assert door.__doc__ and "Example:" in door.__doc__, door.__name__
        assert ".py" not in door.__doc__.split("Example:")[0], f"{door.__name__}'s docstring points at a file"
    names = dir(bridge)
    assert {"read_parquet", "init_spark", "stop_spark", "Count", "from_ray_data", "Dataset"} <= set(names)
