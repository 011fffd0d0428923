"""The read contract every source meets.

A :class:`Datasource` plans :class:`ReadTask` s; each read task is a small
picklable callable that runs inside a Ray task and yields blocks.  Sources
that can read fewer columns or rows say so with ``supports_projection`` /
``supports_limit`` and the optimizer pushes ``select_columns`` and ``limit``
into them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from bridge.block import Block, BlockMetadata

if TYPE_CHECKING:
    import pyarrow as pa


@dataclasses.dataclass
class ReadTask:
    """One unit of reading: ``read_fn()`` yields the blocks, ``metadata`` estimates them."""

    read_fn: Callable[[], Iterable[Block]]
    metadata: BlockMetadata

    def __call__(self) -> Iterable[Block]:
        return self.read_fn()


class Datasource:
    """Base class of sources.  Subclasses implement :meth:`get_read_tasks`."""

    #: Short name shown in plans, stats and progress bars ("Range", "Parquet").
    name: str = "Datasource"
    supports_projection: bool = False
    supports_limit: bool = False
    #: Whether lost blocks can be re-created by reading again (lineage).
    rereadable: bool = True
    #: Whether ``estimate_num_rows()`` is exact, so ``count()`` need not read.
    exact_num_rows: bool = False
    #: Whether an iterator on a one-machine cluster may run the read tasks on threads of its
    #: own process, skipping the object store (:mod:`bridge.execution.driver_read`): only for
    #: tasks that need nothing of a Ray worker and spend their time outside the GIL.
    reads_in_driver: bool = False

    def estimate_inmemory_data_size(self) -> int | None:
        return None

    def estimate_num_rows(self) -> int | None:
        return None

    def get_read_tasks(self, parallelism: int) -> list[ReadTask]:
        """The read tasks, one block list each.

        ``parallelism`` is how many tasks the planner asks for (always at least 1):
        ``read_datasource(ds, override_num_blocks=n)``'s ``n``, else enough for every CPU
        twice over with blocks of at least ``target_min_block_size``, from
        :meth:`estimate_inmemory_data_size` / :meth:`estimate_num_rows`.  Return about
        that many (Ray Data's contract).  The built-in sources take their count when they
        are built (``read_parquet(..., override_num_blocks=)``) and return that.
        """
        raise NotImplementedError

    def with_projection(self, columns: list[str]) -> Datasource:
        raise NotImplementedError

    def with_limit(self, limit: int) -> Datasource:
        raise NotImplementedError

    def describe(self) -> str:
        return self.name

    def known_schema(self) -> pa.Schema | None:
        """The schema of the blocks, when known without reading (``repr`` and ``schema()`` use it)."""
        return None


def default_num_blocks(size_bytes: int | None, num_rows: int | None, override: int | None = None) -> int:
    """How many read tasks a source of this size should become.

    Enough to keep every CPU busy twice over and to stream, few enough that each
    block is at least ``target_min_block_size`` (task overhead dominates below).
    """
    if override is not None:
        if override < 1:
            from bridge.errors import BridgeError

            msg = f"override_num_blocks must be at least 1; got {override}"
            raise BridgeError(msg, "pass a positive number of blocks, or leave it unset")
        return override
    from bridge._ray import cluster_cpus
    from bridge.context import DataContext

    ctx = DataContext.get_current()
    wanted = max(ctx.read_op_min_num_blocks, 2 * cluster_cpus())
    if size_bytes is not None and size_bytes > 0:
        by_size_min = max(1, size_bytes // ctx.target_min_block_size)
        by_size_max = -(-size_bytes // ctx.target_max_block_size)
        wanted = max(min(wanted, by_size_min), by_size_max)
    if num_rows is not None:
        wanted = min(wanted, max(num_rows, 1))
    return max(1, int(wanted))


def split_even(n: int, parts: int) -> list[tuple[int, int]]:
    """``[start, end)`` ranges cutting ``n`` into ``parts`` nearly equal pieces."""
    parts = max(1, min(parts, n)) if n else 1
    base, extra = divmod(n, parts)
    out, start = [], 0
    for i in range(parts):
        end = start + base + (1 if i < extra else 0)
        out.append((start, end))
        start = end
    return out


def meta(num_rows: int, size_bytes: int, schema: Any = None, input_files: list[str] | None = None) -> BlockMetadata:
    return BlockMetadata(num_rows=num_rows, size_bytes=size_bytes, schema=schema, input_files=input_files)
