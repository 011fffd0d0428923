"""One module per foreign framework, both directions; the registry itself is :mod:`bridge.registry`.

``raybridge_adapters.get_adapter`` etc. are kept as names for the registry's functions.
"""

from bridge.registry import Adapter, find_adapter, from_any, get_adapter, is_available, names, register

__all__ = ["Adapter", "find_adapter", "from_any", "get_adapter", "is_available", "names", "register"]
