"""Print the exact versions raybridge is tested with, for ``pip install -c``.

Example:
    python -m bridge.constraints > constraints.txt
    pip install 'raybridge[all]' -c constraints.txt
"""

from __future__ import annotations

from importlib import resources


def text() -> str:
    """The pinned versions (``constraints.txt`` of the release), one ``name==version`` per line."""
    return resources.files("bridge").joinpath("constraints.txt").read_text()


if __name__ == "__main__":
    print(text(), end="")
