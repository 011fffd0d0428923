"""The adapter registry: framework name -> adapter, decided without importing the framework.

This is the core's one door to ``adapters/``: built-in adapters are listed in
``_BUILTIN`` as ``name -> (module, package, extra)`` and loaded by name
(``importlib``) on first use, so ``bridge`` never imports an adapter module
itself (``tests/test_import.py`` holds it to that), and adapters import the core
freely.  Third parties register through the entry-point group
``raybridge.adapters`` (the entry point loads an object satisfying :class:`Adapter`),
or call :func:`register`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from bridge.dataset import Dataset


@runtime_checkable
class Adapter(Protocol):
    """A bridge between one framework's objects and :class:`bridge.Dataset`.

    ``is_native`` must never import the framework: if the user holds one of its
    objects, the framework is already in ``sys.modules``.
    """

    name: str
    package: str
    extra: str

    def is_native(self, obj: Any) -> bool: ...

    def to_dataset(self, obj: Any, **options: Any) -> Dataset: ...

    def from_dataset(self, ds: Dataset, **options: Any) -> Any: ...

#: name -> (module holding ADAPTER, import name of the framework, pip extra)
_BUILTIN: dict[str, tuple[str, str, str]] = {
    "arrow": ("raybridge_adapters.arrow_adapter", "pyarrow", "raybridge"),
    "pandas": ("raybridge_adapters.pandas_adapter", "pandas", "raybridge[pandas]"),
    "numpy": ("raybridge_adapters.numpy_adapter", "numpy", "raybridge"),
    "dask": ("raybridge_adapters.dask_adapter", "dask", "raybridge[dask]"),
    "spark": ("raybridge_adapters.spark_adapter", "pyspark", "raybridge[spark]"),
    "modin": ("raybridge_adapters.modin_adapter", "modin", "raybridge[modin]"),
    "mars": ("raybridge_adapters.mars_adapter", "xorbits", "raybridge[mars]"),
    "torch": ("raybridge_adapters.torch_adapter", "torch", "raybridge[torch]"),
    "tf": ("raybridge_adapters.tf_adapter", "tensorflow", "raybridge[tf]"),
    "ray_data": ("raybridge_adapters.ray_data_adapter", "ray", "raybridge"),
}
_ALIASES = {"pyarrow": "arrow", "np": "numpy", "pd": "pandas", "pyspark": "spark", "tensorflow": "tf",
            "pytorch": "torch", "xorbits": "mars", "ray.data": "ray_data"}
# Checked first by from_any: more specific frameworks before the ones they build on.
_DISPATCH_ORDER = ["modin", "mars", "dask", "spark", "ray_data", "torch", "tf", "pandas", "arrow", "numpy"]

_loaded: dict[str, Adapter] = {}
_lock = threading.Lock()
_entry_points_read = False


def _read_entry_points() -> None:
    global _entry_points_read
    if _entry_points_read:
        return
    _entry_points_read = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="raybridge.adapters"):
        try:
            adapter = ep.load()
        except Exception as err:  # noqa: BLE001 - a broken plugin must not break the registry
            import warnings

            warnings.warn(f"raybridge adapter entry point {ep.name!r} failed to load: {err}", stacklevel=2)
            continue
        register(adapter)


def register(adapter: Adapter) -> None:
    """Add (or replace) an adapter at runtime."""
    if not isinstance(adapter, Adapter):
        from bridge.errors import BridgeError

        msg = f"{adapter!r} is not an adapter (needs name, package, extra, is_native, to_dataset, from_dataset)"
        raise BridgeError(msg, "see bridge.registry.Adapter for the protocol")
    with _lock:
        _loaded[adapter.name] = adapter
        if adapter.name not in _DISPATCH_ORDER:
            _DISPATCH_ORDER.insert(0, adapter.name)


def names() -> list[str]:
    """Every known adapter name (built-in and registered)."""
    _read_entry_points()
    return sorted(set(_BUILTIN) | set(_loaded))


def is_available(name: str) -> bool:
    """Whether the framework behind ``name`` is installed (found, not imported)."""
    name = _ALIASES.get(name, name)
    if name in _loaded:
        return True
    if name not in _BUILTIN:
        return False
    module, package, _ = _BUILTIN[name]
    if importlib.util.find_spec(package) is None:
        return False
    return importlib.util.find_spec(module) is not None


def get_adapter(name: str) -> Adapter:
    """The adapter for ``name``; :class:`MissingDependencyError` if its framework is absent."""
    from bridge.errors import BridgeError, missing_dependency

    _read_entry_points()
    key = _ALIASES.get(name, name)
    if key in _loaded:
        return _loaded[key]
    if key not in _BUILTIN:
        msg = f"no adapter named {name!r}"
        raise BridgeError(msg, f"known adapters: {', '.join(names())}")
    module, package, extra = _BUILTIN[key]
    if importlib.util.find_spec(package) is None:
        raise missing_dependency(package, extra, f"the {key} adapter")
    if importlib.util.find_spec(module) is None:
        msg = f"the {key} adapter is not part of this raybridge build"
        raise BridgeError(msg, "upgrade raybridge, or register your own adapter with bridge.registry.register(...)")
    with _lock:
        if key not in _loaded:
            _loaded[key] = importlib.import_module(module).ADAPTER
        return _loaded[key]


def find_adapter(obj: Any) -> Adapter | None:
    """The adapter whose framework produced ``obj``, looking only at frameworks already imported."""
    _read_entry_points()
    for key in list(_DISPATCH_ORDER):
        if key in _loaded:
            adapter = _loaded[key]
        elif key in _BUILTIN:
            module, package, _ = _BUILTIN[key]
            if package not in sys.modules or importlib.util.find_spec(module) is None:
                continue
            adapter = get_adapter(key)
        else:
            continue
        if adapter.is_native(obj):
            return adapter
    return None


def from_any(obj: Any, **options: Any) -> Dataset:
    """Convert any supported object to a Dataset through the matching adapter.

    Objects with ``__arrow_c_stream__`` (polars, DuckDB, pyarrow readers) convert
    without a dedicated adapter.
    """
    from bridge.dataset import Dataset
    from bridge.errors import UnsupportedTypeError

    if isinstance(obj, Dataset):
        return obj
    adapter = find_adapter(obj)
    if adapter is not None:
        return adapter.to_dataset(obj, **options)
    if hasattr(obj, "__arrow_c_stream__"):
        from bridge.constructors.memory import from_arrow

        return from_arrow(obj, **options)
    msg = f"raybridge does not know how to convert a {type(obj).__module__}.{type(obj).__name__}"
    hint = (f"known adapters: {', '.join(names())}; any object with __arrow_c_stream__ also works; "
            "or register an adapter with bridge.registry.register(...)")
    raise UnsupportedTypeError(msg, hint)


__all__ = ["Adapter", "find_adapter", "from_any", "get_adapter", "is_available", "names", "register"]
