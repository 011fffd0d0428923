"""Modin DataFrame <-> Dataset.

On Modin's Ray engine, ``from_modin`` takes the frame's row partitions as
object references (``unwrap_partitions(axis=0)``) and converts each one to an
Arrow block in a Ray task: nothing passes through the driver.  The index comes
along when it is named or not a plain ``RangeIndex`` (Arrow's pandas metadata),
and pandas dtypes (categorical, nullable, datetime with zone) map to their Arrow
equivalents and back.

``to_modin`` converts each block to pandas in a Ray task and hands Modin the
references with their row lengths, columns and (for a default index) the index,
so Modin need not make a pass over the partitions to learn them.

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
    from modin.distributed.dataframe.pandas import unwrap_partitions

    try:
        parts = unwrap_partitions(mdf, axis=0)
    except Exception as err:
        msg = f"from_modin: Modin could not hand over its row partitions: {type(err).__name__}: {err}"
        raise BridgeError(msg, "check that Modin runs on Ray (modin.config.Engine.put('ray'))") from err
    if not parts:
        return from_pandas(mdf._to_pandas())
    return from_pandas_refs(parts)


@ray.remote
def _block_to_pandas(block: pa.Table, start: int, range_index: bool, nullable: frozenset[str]) -> Any:
    import pandas as pd

    from bridge.pandas_types import block_to_pandas

    df = block_to_pandas(block, nullable, schema_attr=True)
    if range_index:
        df.index = pd.RangeIndex(start, start + len(df))
    return df


def dataset_to_modin(ds: Dataset) -> Any:
    """Dataset -> Modin DataFrame whose row partitions are this Dataset's blocks."""
    import modin.pandas as mpd
    import pandas as pd

    from bridge._ray import ensure_ray

    ensure_ray()
    layout = ds.block_layout()
    nonempty = layout.blocks
    from bridge.pandas_types import block_to_pandas, nullable_columns

    # One dtype per column in every partition: masked where any block has nulls (or NaN).
    nullable = frozenset(nullable_columns(layout.refs))
    meta = block_to_pandas(layout.schema.empty_table(), nullable, schema_attr=True)
    index_cols = layout.index_columns
    if _engine() != "Ray":
        # No Ray engine: build it from one pandas frame.
        return mpd.DataFrame(ds.to_pandas() if nonempty else meta)
    from modin.distributed.dataframe.pandas import from_partitions

    if not nonempty:
        # No rows: one empty partition, so the schema in its attrs travels (Modin's own frame drops attrs).
        return from_partitions([ray.put(meta)], axis=0, index=pd.RangeIndex(0, 0), columns=meta.columns,
                               row_lengths=[0], column_widths=[len(meta.columns)])

    range_index = not index_cols
    refs = [_block_to_pandas.remote(r, s, range_index, nullable) for (r, _), s in zip(nonempty, layout.starts)]
    index = pd.RangeIndex(0, layout.num_rows) if range_index else None
    try:
        return from_partitions(refs, axis=0, index=index, columns=meta.columns,
                               row_lengths=[n for _, n in nonempty], column_widths=[len(meta.columns)])
    except Exception as err:
        msg = f"to_modin: Modin rejected the {len(refs)} partitions: {type(err).__name__}: {err}"
        raise BridgeError(msg, "check that Modin runs on Ray (modin.config.Engine.put('ray'))") from err


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
