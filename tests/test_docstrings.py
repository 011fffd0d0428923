"""Every example in a public docstring runs and prints what it says (the API reference cannot rot).

The public surface is ``bridge``'s exported names (loading the lazy ones) and the methods of
``Dataset``, ``MaterializedDataset``, ``DataIterator`` and ``GroupedData``.  Examples that need
something this suite does not start (a SparkSession, a GPU, a cluster) say ``# doctest: +SKIP``.
Every public ``bridge.*`` function and every public method of those four classes must have an example.
"""

from __future__ import annotations

import doctest
import inspect
from typing import Any

import pytest

import bridge


def _public() -> dict[str, Any]:
    from bridge.dataset import Dataset, MaterializedDataset
    from bridge.iteration.data_iterator import DataIterator
    from bridge.ops.grouped_data import GroupedData

    objs: dict[str, Any] = {}
    for name in sorted(dir(bridge)):
        if not name.startswith("_"):
            obj = getattr(bridge, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                objs[f"bridge.{name}"] = obj
    for cls in (Dataset, MaterializedDataset, DataIterator, GroupedData):
        for klass in cls.__mro__:
            if not klass.__module__.startswith("bridge"):
                continue
            for name, member in vars(klass).items():
                if not name.startswith("_") and callable(member):
                    objs.setdefault(f"{cls.__name__}.{name}", member)
    return objs


PUBLIC = _public()
_FINDER = doctest.DocTestFinder(recurse=False)
WITH_EXAMPLES = sorted(name for name, obj in PUBLIC.items()
                       if any(t.examples for t in _FINDER.find(obj, name, globs={})))


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_example_runs(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    obj = PUBLIC[name]
    module = inspect.getmodule(obj)
    globs = {**(vars(module) if module is not None else {}), "bridge": bridge}  # as doctest gives a module
    for test in _FINDER.find(obj, name, globs=globs):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def _adapter_modules() -> list[str]:
    import pkgutil

    import raybridge_adapters

    return sorted(f"raybridge_adapters.{m.name}" for m in pkgutil.iter_modules(raybridge_adapters.__path__))


def test_adapter_docstring_examples_run():
    """The adapters' own examples (``DaskAdapter.from_dataset``, ``to_torch``, ...) run too."""
    import importlib

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for module_name in _adapter_modules():
        module = importlib.import_module(module_name)
        for test in doctest.DocTestFinder().find(module, module_name, globs={**vars(module), "bridge": bridge}):
            runner.run(test, out=report.append)
    assert runner.tries >= 15, f"only {runner.tries} adapter examples were found"  # 18 today
    assert runner.failures == 0, "".join(report)


def test_every_example_in_the_core_runs():
    """Examples beyond the public surface too: module docstrings and internal classes
    (``BatchOptions``, ``AutoscalingPolicy``, ...) that adapters and readers of the code meet."""
    import importlib
    import pkgutil

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for info in pkgutil.walk_packages(bridge.__path__, "bridge."):
        module = importlib.import_module(info.name)
        for test in doctest.DocTestFinder().find(module, info.name, globs={**vars(module), "bridge": bridge}):
            runner.run(test, out=report.append)
    assert runner.tries >= 300, f"only {runner.tries} examples were found"  # 328 today
    assert runner.failures == 0, "".join(report)


def test_every_public_function_and_class_of_bridge_has_an_example():
    names = [name for name in PUBLIC if name.startswith("bridge.")]
    assert len(names) > 50  # bridge's names were found (a broken _public() must not pass vacuously)
    missing = [name for name in names if name not in WITH_EXAMPLES]
    assert not missing, f"public functions and classes without an Example: {missing}"


def test_every_public_method_has_an_example():
    """Every public method of Dataset, MaterializedDataset, DataIterator and GroupedData (inherited ones
    included: ``MaterializedDataset.take`` is ``Dataset.take``, so one example serves both)."""
    methods = [name for name in PUBLIC if not name.startswith("bridge.")]
    assert len(methods) > 100  # the four classes were found (a broken _public() must not pass vacuously)
    missing = [name for name in methods if name not in WITH_EXAMPLES]
    assert not missing, f"public methods without an Example: {missing}"


def test_api_reference_is_current():
    from tests import api_reference

    assert api_reference.API.exists() and api_reference.API.read_text() == api_reference.render(), (
        "docs/API.md differs from the docstrings; run `python -m tests.api_reference --write` and commit it")


def test_docstrings_carry_no_timings():
    """Figures go stale: measurements live in the benchmarks (integration/bench/RESULTS.md), not in docstrings."""
    import ast
    import re
    from pathlib import Path

    timing = re.compile(r"\b\d+(\.\d+)?\s?(ms|µs|us|ns|GB/s|MB/s|GiB/s|MiB/s|img/s|rows/s)\b|measured on", re.I)
    root = Path(__file__).resolve().parent.parent
    found = []
    for path in sorted([*root.joinpath("bridge").rglob("*.py"), *root.joinpath("adapters").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node) or ""
                found += [f"{path.relative_to(root)}: {m.group(0)!r}" for m in timing.finditer(doc)]
    assert not found, found
