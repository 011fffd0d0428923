"""pyarrow <-> Dataset: zero conversion, blocks are Arrow tables."""

from __future__ import annotations

import sys
from typing import Any


class ArrowAdapter:
    name = "arrow"
    package = "pyarrow"
    extra = "raybridge"

    def is_native(self, obj: Any) -> bool:
        pa = sys.modules.get("pyarrow")
        return pa is not None and isinstance(obj, (pa.Table, pa.RecordBatch, pa.RecordBatchReader))

    def to_dataset(self, obj: Any, **options: Any) -> Any:
        from bridge import from_arrow

        return from_arrow(obj, **options)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        return ds.to_arrow(**options)


ADAPTER = ArrowAdapter()
