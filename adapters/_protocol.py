"""The contract every adapter meets (:class:`bridge.registry.Adapter`), and small helpers adapters share."""

from __future__ import annotations

from typing import Any

from bridge.registry import Adapter

__all__ = ["Adapter", "module_of"]


def module_of(obj: Any) -> str:
    """The top-level package of ``obj``'s type (``"pandas"`` for a DataFrame)."""
    return type(obj).__module__.split(".", 1)[0]
