"""pandas <-> Dataset.  Blocks stay Arrow; pandas is only the format at the edges."""

from __future__ import annotations

import sys
from typing import Any

from ._protocol import module_of


class PandasAdapter:
    name = "pandas"
    package = "pandas"
    extra = "raybridge[pandas]"

    def is_native(self, obj: Any) -> bool:
        pd = sys.modules.get("pandas")
        if pd is None or module_of(obj) != "pandas":
            return False
        return isinstance(obj, pd.DataFrame) or (
            isinstance(obj, list) and bool(obj) and all(isinstance(x, pd.DataFrame) for x in obj))

    def to_dataset(self, obj: Any, **options: Any) -> Any:
        from bridge import from_pandas

        return from_pandas(obj, **options)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        return ds.to_pandas(**options)


ADAPTER = PandasAdapter()
