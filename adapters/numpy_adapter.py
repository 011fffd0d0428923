"""NumPy <-> Dataset.  n-d arrays travel as ``arrow.fixed_shape_tensor`` columns."""

from __future__ import annotations

import sys
from typing import Any


class NumpyAdapter:
    name = "numpy"
    package = "numpy"
    extra = "raybridge"

    def is_native(self, obj: Any) -> bool:
        np = sys.modules.get("numpy")
        if np is None:
            return False
        if isinstance(obj, np.ndarray):
            return True
        return isinstance(obj, dict) and bool(obj) and all(isinstance(v, np.ndarray) for v in obj.values())

    def to_dataset(self, obj: Any, **options: Any) -> Any:
        from bridge import from_numpy

        return from_numpy(obj, **options)

    def from_dataset(self, ds: Any, *, column: str | None = None, **options: Any) -> Any:
        """All rows as a dict of ndarrays (or one ndarray for ``column``)."""
        from bridge.arrow_values import refuse_unions
        from bridge.batch import column_to_numpy, to_numpy_batch

        table = ds.to_arrow()
        if column is not None:
            from bridge.dataset import check_numpy_column

            check_numpy_column(column, table.column_names, "to_numpy")
            refuse_unions(table.select([column]).schema, "NumPy")
            return column_to_numpy(table.column(column))
        return to_numpy_batch(table)


ADAPTER = NumpyAdapter()
