"""Every ```python block in README.md runs, so the README never rots.

Blocks run in order in one namespace per block.  A block whose first line is
``# needs: <package>`` is skipped when that package is not installed.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index):
    code = BLOCKS[index]
    first = code.splitlines()[0] if code.strip() else ""
    if first.startswith("# needs:"):
        for pkg in first.split(":", 1)[1].split(","):
            if importlib.util.find_spec(pkg.strip()) is None:
                pytest.skip(f"{pkg.strip()} not installed")
    exec(compile(code, f"README.md block {index}", "exec"), {"__name__": f"readme_{index}"})


def test_readme_has_blocks_and_commands():
    text = README.read_text()
    assert len(BLOCKS) >= 2
    assert "make demo" in text and "make test" in text
