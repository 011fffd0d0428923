"""The contract every adapter meets: one object per foreign framework, both directions."""

from __future__ import annotations

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


def module_of(obj: Any) -> str:
    """The top-level package of ``obj``'s type (``"pandas"`` for a DataFrame)."""
    return type(obj).__module__.split(".", 1)[0]
