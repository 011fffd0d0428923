"""docs/API.md, generated from the public docstrings (the ones tests/test_docstrings.py runs).

``python -m tests.api_reference`` prints it; ``--write`` writes docs/API.md.
``test_api_reference_is_current`` fails when a docstring changed and the file was not regenerated.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

from tests.test_docstrings import PUBLIC

API = Path(__file__).resolve().parent.parent / "docs" / "API.md"

SECTIONS = [
    ("Constructors, readers and helpers (`bridge.*`)", "bridge.", lambda o: inspect.isfunction(o)),
    ("Classes (`bridge.*`)", "bridge.", lambda o: inspect.isclass(o) and not issubclass(o, BaseException)),
    ("Errors (`bridge.*`)", "bridge.", lambda o: inspect.isclass(o) and issubclass(o, BaseException)),
    ("Dataset", "Dataset.", lambda o: True),
    ("MaterializedDataset (only what it adds)", "MaterializedDataset.", lambda o: True),
    ("DataIterator (`streaming_split`, `iterator()`)", "DataIterator.", lambda o: True),
    ("GroupedData (`groupby`)", "GroupedData.", lambda o: True),
]


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _entry(name: str, obj: Any) -> list[str]:
    doc = inspect.getdoc(obj) or "(no docstring)"
    summary, _, rest = doc.partition("\n")
    lines = [f"### `{name}{_signature(obj)}`", "", summary.strip()]
    if rest.strip():
        lines += ["", "```text", rest.strip("\n"), "```"]
    return [*lines, ""]


def render() -> str:
    from bridge.dataset import Dataset

    out = ["# raybridge API reference", "",
           "Generated from the docstrings by `python -m tests.api_reference --write`; every example in it",
           "runs in `tests/test_docstrings.py` (those marked `+SKIP` need Spark, a GPU or a cluster).", ""]
    for title, prefix, keep in SECTIONS:
        names = [n for n, o in PUBLIC.items() if n.startswith(prefix) and keep(o)]
        if prefix == "MaterializedDataset.":  # what Dataset already documents is not repeated
            names = [n for n in names if n.split(".", 1)[1] not in vars(Dataset)
                     and not any(n.split(".", 1)[1] in vars(k) for k in Dataset.__mro__)]
        if not names:
            continue
        out += [f"## {title}", ""]
        for name in sorted(names):
            out += _entry(name, PUBLIC[name])
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        API.parent.mkdir(exist_ok=True)
        API.write_text(render())
    else:
        print(render())
