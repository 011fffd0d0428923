"""The driver-side memory budget: fail early instead of being OOM-killed.

Conversions that gather a whole Dataset on the driver (``to_arrow``,
``to_pandas``, ``to_numpy``) know each block's size from its metadata before
they fetch it.  :class:`DriverBudget` adds those sizes up as bundles arrive and
raises :class:`~bridge.errors.InsufficientMemoryError` as soon as the total
would pass ``DataContext.driver_memory_budget`` (default: half the memory the
machine has available when the conversion starts), before any block is fetched.

Example:
    >>> from bridge.execution.driver_memory import DriverBudget
    >>> budget = DriverBudget("to_arrow", limit=1024)
    >>> budget.add(512)
"""

from __future__ import annotations

import os

from bridge.context import DataContext
from bridge.errors import InsufficientMemoryError

MiB = 1024 * 1024


def available_memory() -> int:
    """Bytes of physical memory available now (Linux/macOS sysconf; 8 GiB when unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 1024 * MiB


def driver_budget(ctx: DataContext | None = None) -> int:
    ctx = ctx or DataContext.get_current()
    if ctx.driver_memory_budget is not None:
        return int(ctx.driver_memory_budget)
    return available_memory() // 2


class DriverBudget:
    """Running total of bytes a conversion will hold on the driver."""

    def __init__(self, what: str, limit: int | None = None) -> None:
        self.what = what
        self.limit = driver_budget() if limit is None else limit
        self.total = 0

    def add(self, nbytes: int) -> None:
        self.total += int(nbytes)
        if self.total > self.limit:
            msg = (f"{self.what}: the driver would have to hold at least {self.total / MiB:,.1f} MiB, over its "
                   f"budget of {self.limit / MiB:,.1f} MiB (DataContext.driver_memory_budget); stopped before "
                   f"fetching the blocks")
            hint = ("stream instead of collecting: iter_batches(), iter_torch_batches(), write_parquet(path), or "
                    "to_arrow_refs(); or, if the machine has the memory, raise "
                    "bridge.DataContext.get_current().driver_memory_budget")
            raise InsufficientMemoryError(msg, hint)
