"""The base of the mixins that give :class:`bridge.Dataset` its methods by domain.

``Dataset`` inherits ``IngestMethods`` (bridge/iteration), ``GlobalOpsMethods``
(bridge/ops) and ``WriteMethods`` (bridge/io), so each domain's methods live beside
their code.  A mixin's methods run on a ``Dataset`` and only there; :attr:`DatasetMixin._ds`
says so to the type checker once, instead of an ignore at every call that needs the
whole Dataset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from bridge.dataset import Dataset
    from bridge.plan.logical import LogicalOp


class DatasetMixin:
    """What every Dataset mixin may use: the plan, ``_with`` and the Dataset itself."""

    _plan: LogicalOp

    def _with(self, op: LogicalOp) -> Dataset:  # provided by Dataset
        raise NotImplementedError

    @property
    def _ds(self) -> Dataset:
        """``self`` as the :class:`bridge.Dataset` it is (a mixin is never used on its own)."""
        return cast("Dataset", self)


__all__ = ["DatasetMixin"]
