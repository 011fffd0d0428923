"""Every ```python block in README.md runs, so the README never rots.

Blocks run in order, each in a namespace of its own.  A block whose first line is
``# needs: <package>, <package>`` is skipped when one of those packages is not
installed (CI installs them all, so there every block runs).  A block that needs
``pyspark`` starts from a process with no running SparkContext, as a reader's would.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _needs(code: str) -> list[str]:
    first = code.splitlines()[0] if code.strip() else ""
    if not first.startswith("# needs:"):
        return []
    return [pkg.strip() for pkg in first.split(":", 1)[1].split(",") if pkg.strip()]


def _stop_active_spark() -> None:
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index):
    code = BLOCKS[index]
    needs = _needs(code)
    for pkg in needs:
        if importlib.util.find_spec(pkg) is None:
            pytest.skip(f"{pkg} not installed")
    if "pyspark" in needs:
        _stop_active_spark()
    exec(compile(code, f"README.md block {index}", "exec"), {"__name__": f"readme_{index}"})


def test_readme_has_blocks_commands_and_sections():
    text = README.read_text()
    assert len(BLOCKS) >= 8
    assert "make demo" in text and "make test" in text
    for marker in ("<!-- BENCH-TABLE -->", "integration/bench/RESULTS.md", "RAY_ADDRESS", "## Tested versions",
                   "## Job 1", "## Job 2", "## Job 3", "## Errors you are likely to meet"):
        assert marker in text, marker


def test_needs_line_is_parsed():
    assert _needs("# needs: pyspark, raydp\nimport bridge\n") == ["pyspark", "raydp"]
    assert _needs("import bridge\n") == []
