"""Modin DataFrame <-> Dataset.

On Modin's Ray engine, ``from_modin`` takes the object references of the
frame's partition grid as stored and converts each row of it to one Arrow block
in a Ray task: nothing passes through the driver, and the partitions are read
once.  (``unwrap_partitions`` would first copy every partition in a task of its
own to stamp its labels on it, and with ``axis=0`` once more to join a row's
column partitions; here the conversion task sets the labels, which Modin keeps
on the driver, and joins the columns itself.)  Where Modin's partition internals
are not as expected, ``unwrap_partitions(axis=0)`` is used.  The index comes
along unless it is the frame's default ``RangeIndex`` (Arrow's pandas metadata),
and pandas dtypes (categorical, nullable, datetime with zone) map to their Arrow
equivalents and back.

``to_modin`` hands Modin one partition per block, each the block's Arrow
buffers copied once by a task (``_BlockPartition``) and turned into the pandas
frame wherever it is read, so nothing is pickled (converting to pandas in the
task and storing the frame took ~1.6x as long at full scale: Ray pickles the
object strings, and every read unpickles them, which costs what the conversion
does).  Modin gets the row lengths, columns and (for a default index) the
index, so it need not make a pass over the partitions to learn them.

Modin must run on Ray to share partitions; a Modin using another engine is
converted through ``modin.pandas.DataFrame._to_pandas()`` (a written rule: the
data passes through the driver).  ``to_modin`` uses the Ray that is already
running; it never initialises Ray again.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import ray

from bridge.errors import BridgeError

from ._protocol import module_of

if TYPE_CHECKING:
    from bridge.dataset import Dataset, MaterializedDataset


def _engine() -> str:
    import modin.config as cfg

    return str(cfg.Engine.get())


def modin_to_dataset(mdf: Any) -> MaterializedDataset:
    """A Modin DataFrame (or Series) -> Dataset, one block per row partition."""
    import modin.pandas as mpd

    from bridge import from_pandas, from_pandas_refs
    from bridge._ray import ensure_ray

    if isinstance(mdf, mpd.Series):
        mdf = mdf.to_frame()
    if not isinstance(mdf, mpd.DataFrame):
        msg = f"from_modin() needs a modin.pandas.DataFrame; got {type(mdf).__module__}.{type(mdf).__name__}"
        raise BridgeError(msg, "build one with modin.pandas.DataFrame(...) or modin.pandas.read_csv(...)")
    ensure_ray()
    if _engine() != "Ray":
        return from_pandas(mdf._to_pandas())
    grid = _partition_grid(mdf)
    if grid:  # no partitions at all: below, from the collected (empty) frame, which keeps the columns
        return _grid_to_dataset(grid)
    from modin.distributed.dataframe.pandas import unwrap_partitions

    try:
        parts = unwrap_partitions(mdf, axis=0)
    except Exception as err:
        msg = f"from_modin: Modin could not hand over its row partitions: {type(err).__name__}: {err}"
        raise BridgeError(msg, "check that Modin runs on Ray (modin.config.Engine.put('ray'))") from err
    if not parts:
        return from_pandas(mdf._to_pandas())
    return from_pandas_refs(parts)


def _partition_grid(mdf: Any) -> list[tuple[Any, list[Any], list[ray.ObjectRef]]] | None:
    """``(index labels, [column labels per column partition], [partition refs])`` for each row of
    the frame's partition grid; ``None`` where Modin's internals are not the ones this reads.

    Modin keeps the labels on the driver and stamps them on a partition only when it must;
    the references are taken as they are (a partition's pending calls run first).
    """
    import numpy as np

    try:
        frame = mdf._query_compiler._modin_frame
        frame._filter_empties(compute_metadata=False)
        rows, widths = frame.row_lengths, frame.column_widths
        index, columns = frame.index, frame.columns
        partitions = frame._partitions
        if partitions.ndim != 2 or partitions.shape != (len(rows), len(widths)):
            return None
        row_edges, col_edges = np.cumsum([0, *rows]), np.cumsum([0, *widths])
        # Index slices, not lists: they keep the columns' axis name (and a MultiIndex's level names).
        col_labels = [columns[col_edges[j]:col_edges[j + 1]] for j in range(len(widths))]
        grid = []
        for i, row in enumerate(partitions):
            refs = []
            for part in row:
                if hasattr(part, "force_materialization"):
                    part = part.force_materialization()
                blocks = part.list_of_blocks
                if len(blocks) != 1 or not isinstance(blocks[0], ray.ObjectRef):
                    return None
                refs.append(blocks[0])
            grid.append((index[row_edges[i]:row_edges[i + 1]], col_labels, refs))
        return grid
    except (AttributeError, TypeError, ValueError, IndexError):
        return None


def _grid_to_dataset(grid: list[tuple[Any, list[Any], list[ray.ObjectRef]]]) -> MaterializedDataset:
    """A Dataset of one block per row of a Modin partition grid (see :func:`_partition_grid`)."""
    from bridge import from_block_refs
    from bridge.batch import keeps_frame_index

    keep = keeps_frame_index([index for index, _, _ in grid])  # as from_pandas of the whole frame decides
    pairs = [_row_to_block.remote(index, labels, keep, *refs) for index, labels, refs in grid]
    return from_block_refs([b for b, _ in pairs], ray.get([m for _, m in pairs]), name="FromModin")


@ray.remote(num_returns=2)
def _row_to_block(index: Any, labels: list[list[Any]], keep_index: bool, *frames: Any) -> tuple[pa.Table, Any]:
    import pandas as pd

    from bridge.batch import frame_to_block
    from bridge.block import BlockMetadata

    for df, cols in zip(frames, labels):
        # Frames unpickled in this task are this task's own: labelling them copies nothing.
        df.index = index
        df.columns = cols
    df = frames[0] if len(frames) == 1 else pd.concat(frames, axis=1, copy=False)
    block = frame_to_block(df, keep_index=keep_index)
    return block, BlockMetadata.of(block)


class _BlockPartition:
    """A Modin row partition stored as the Arrow block it is made of, read back as pandas.

    What goes into the object store is the block's Arrow buffers, not a pandas frame: reading the
    partition back (``ray.get`` in Modin's tasks or the driver) runs :func:`_partition_frame`,
    which maps the buffers (no copy) and converts them.  So ``to_modin`` only copies each block
    once, pickling nothing; each read of a partition pays the conversion, about what unpickling a
    pandas frame's object strings costs, with the numeric columns shared read-only as Ray shares a
    stored frame's.  (The block's reference instead of its buffers would copy nothing, but Ray then
    kept the blocks alive after Modin had read the partitions: a reference inside an object that
    Modin's tasks read is not released.)
    """

    __slots__ = ("args",)

    def __init__(self, block: pa.Table, start: int, range_index: bool, nullable: frozenset[str],
                 categories: dict[str, Any]) -> None:
        self.args = (block, start, range_index, nullable, categories)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _partition_frame, self.args


def _partition_frame(block: pa.Table, start: int, range_index: bool, nullable: frozenset[str],
                     categories: dict[str, Any] | None = None) -> Any:
    import pandas as pd

    from bridge.pandas_types import block_to_pandas, with_categories

    df = with_categories(block_to_pandas(block, nullable, schema_attr=True, writable=False), categories or {})
    if range_index:
        df.index = pd.RangeIndex(start, start + len(df))
    return df


@ray.remote
def _block_partition(block: pa.Table, start: int, range_index: bool, nullable: frozenset[str],
                     categories: dict[str, Any]) -> _BlockPartition:
    return _BlockPartition(block, start, range_index, nullable, categories)


def dataset_to_modin(ds: Dataset) -> Any:
    """Dataset -> Modin DataFrame whose row partitions are this Dataset's blocks."""
    import modin.pandas as mpd
    import pandas as pd

    from bridge._ray import ensure_ray

    ensure_ray()
    layout = ds.block_layout()
    nonempty = layout.blocks
    from bridge.pandas_types import block_to_pandas, nullable_columns, shared_categories, with_categories

    # One dtype per column in every partition: masked where any block has nulls (or NaN).
    nullable = frozenset(nullable_columns(layout.refs))
    from bridge.block import empty_table

    # The same categories in every partition (each block's own dictionary gave each its own codes).
    categories = shared_categories(layout.refs or layout.empty[:1], layout.schema)
    meta = with_categories(block_to_pandas(empty_table(layout.schema), nullable, schema_attr=True), categories)
    index_cols = layout.index_columns
    if _engine() != "Ray":
        # No Ray engine: build it from one pandas frame.
        return mpd.DataFrame(ds.to_pandas() if nonempty else meta)
    from modin.distributed.dataframe.pandas import from_partitions

    if not nonempty:
        # No rows: one empty partition, so the schema in its attrs travels (Modin's own frame drops attrs).
        empty = from_partitions([ray.put(meta)], axis=0, index=pd.RangeIndex(0, 0), columns=meta.columns,
                                row_lengths=[0], column_widths=[len(meta.columns)])
        # Modin builds the pandas frame of an empty Modin frame from its labels alone (every column
        # object) unless it knows the dtypes: asking for them reads them from the partition.
        empty.dtypes  # noqa: B018
        return empty

    range_index = not index_cols
    shared: Any = ray.put(categories) if categories else {}  # (put once, not pickled into every task's arguments)
    refs = [_block_partition.remote(r, s, range_index, nullable, shared) for (r, _), s in zip(nonempty, layout.starts)]
    index = pd.RangeIndex(0, layout.num_rows) if range_index else None
    try:
        mdf = from_partitions(refs, axis=0, index=index, columns=meta.columns,
                              row_lengths=[n for _, n in nonempty], column_widths=[len(meta.columns)])
    except Exception as err:
        msg = f"to_modin: Modin rejected the {len(refs)} partitions: {type(err).__name__}: {err}"
        raise BridgeError(msg, "check that Modin runs on Ray (modin.config.Engine.put('ray'))") from err
    if layout.one_schema:  # (blocks of different types: each partition's own; Modin computes them)
        _tell_dtypes(mdf, meta.dtypes)
    return mdf


def _tell_dtypes(mdf: Any, dtypes: Any) -> None:
    """Give Modin the columns' dtypes, which every partition has, so it need not compute them.

    Modin computes a frame's dtypes from its partitions when an operation asks (reading every
    partition), and its reduction of a categorical's dtype sorts the categories: an ordered
    ``[low, mid, high]`` became ``[high, low, mid]``, and ``sort_values`` ordered the rows by that.
    ``from_partitions`` takes no dtypes, so they are set on the frame it made (Modin's
    ``set_dtypes_cache``); a Modin without it computes them as before.
    """
    frame = getattr(getattr(mdf, "_query_compiler", None), "_modin_frame", None)
    setter = getattr(frame, "set_dtypes_cache", None)
    if setter is not None:
        setter(dtypes)


class ModinAdapter:
    name = "modin"
    package = "modin"
    extra = "raybridge[modin]"

    def is_native(self, obj: Any) -> bool:
        mpd = sys.modules.get("modin.pandas")
        return mpd is not None and module_of(obj) == "modin" and isinstance(obj, (mpd.DataFrame, mpd.Series))

    def to_dataset(self, obj: Any, **options: Any) -> MaterializedDataset:
        """A Modin DataFrame -> Dataset.

        Example:
            >>> import bridge, modin.pandas as mpd
            >>> bridge.from_modin(mpd.DataFrame({"x": [1, 2, 3]})).count()  # doctest: +SKIP
            3
        """
        if options:
            msg = f"from_modin() takes no options; got {sorted(options)}"
            raise BridgeError(msg, "repartition the Modin frame first")
        return modin_to_dataset(obj)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        """Dataset -> Modin DataFrame (``ds.to_modin()``)."""
        if options:
            msg = f"to_modin() takes no options; got {sorted(options)}"
            raise BridgeError(msg, "call ds.repartition(n) before converting")
        return dataset_to_modin(ds)


ADAPTER = ModinAdapter()
