"""Dataset methods for global (all-to-all) operations: shuffle, sort, groupby, aggregate, repartition, zip.

:class:`bridge.dataset.Dataset` inherits this mixin.
"""

from __future__ import annotations


class GlobalOpsMethods:
    """All-to-all methods of :class:`bridge.Dataset`."""
