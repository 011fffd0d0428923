"""Dataset methods that write files (``write_parquet``, ``write_csv``, ...).

:class:`bridge.dataset.Dataset` inherits this mixin.
"""

from __future__ import annotations


class WriteMethods:
    """File-writing methods of :class:`bridge.Dataset`."""
