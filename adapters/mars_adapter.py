"""Mars (Xorbits) DataFrame <-> Dataset.

Mars lives on as Xorbits (``xorbits.pandas``), its maintained fork; upstream
``pymars`` 0.10 needs numpy<2 and pandas<2 and cannot share an environment
with the rest of the stack (see README).  Xorbits keeps its chunks in its own
actor pools, outside Ray, and has no Arrow export, so the conversion streams:

* ``from_mars`` executes the frame and fetches it batch by batch
  (``iterbatch``), turning each batch into an Arrow block put in Ray's object
  store by the driver (which therefore owns it: the Dataset outlives the
  Xorbits session).  At most one batch is held on the driver at a time; nothing
  is written to disk.
* ``to_mars`` hands Xorbits one pandas frame per block and concatenates them
  lazily, so Xorbits gets one chunk per block (a Dataset with zoned datetimes
  or Arrow-typed columns, which Xorbits' concat cannot join, is joined by
  pandas and cut in chunks of its largest block's rows).

Types: both ways follow ``bridge.pandas_types``.  Xorbits drops ``DataFrame.attrs``
(where the pandas, Dask and Modin paths carry the Arrow schema), so ``to_mars``
remembers the schema of each frame it returns, keyed by the frame object, while
its column dtypes stay as made: ``from_mars`` of that frame restores the types
pandas cannot name (large strings, dictionary index widths, the columns of an
empty frame, a fixed-shape tensor with a null row).
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import ray

from bridge.errors import BridgeError

if TYPE_CHECKING:
    from bridge.dataset import Dataset, MaterializedDataset

#: Rows per block when ``batch_size`` is not given.
DEFAULT_BATCH_ROWS = 1_000_000


def _is_xorbits_frame(obj: Any) -> bool:
    xpd = sys.modules.get("xorbits.pandas")
    return xpd is not None and isinstance(obj, (xpd.DataFrame, xpd.Series))


#: id(frame) -> (its dtypes when made, the Arrow schema it was made from); an entry leaves with its frame.
_MADE: dict[int, tuple[list[tuple[str, str]], pa.Schema]] = {}


def _dtypes(df: Any) -> list[tuple[str, str]]:
    return [(str(name), str(dtype)) for name, dtype in df.dtypes.items()]


def _remember_schema(df: Any, schema: pa.Schema) -> None:
    key = id(df)
    _MADE[key] = (_dtypes(df), schema)
    weakref.finalize(df, _MADE.pop, key, None)  # before the id can name another frame


def _schema_made_with(df: Any) -> pa.Schema | None:
    """The schema ``to_mars`` made ``df`` from, while ``df`` is that object with the same dtypes."""
    entry = _MADE.get(id(df))
    if entry is None or entry[0] != _dtypes(df):
        return None
    return entry[1]


def mars_to_dataset(df: Any, *, batch_size: int = DEFAULT_BATCH_ROWS) -> MaterializedDataset:
    """An Xorbits DataFrame -> Dataset, one block per ``batch_size`` rows."""
    from bridge import from_blocks
    from bridge._ray import ensure_ray
    from bridge.batch import frame_to_block, keeps_frame_index

    if not _is_xorbits_frame(df):
        msg = f"from_mars() needs an xorbits.pandas DataFrame; got {type(df).__module__}.{type(df).__name__}"
        raise BridgeError(msg, "build one with xorbits.pandas.DataFrame(...) after xorbits.init()")
    if batch_size < 1:
        msg = f"from_mars(batch_size={batch_size}): the batch size must be a positive row count"
        raise BridgeError(msg, "leave batch_size unset for 1,000,000 rows per block")
    ensure_ray()
    if hasattr(df, "to_frame") and not hasattr(df, "columns"):
        df = df.to_frame()
    like = _schema_made_with(df)
    fetched = [0]

    def blocks() -> Any:
        keep = None  # decided by the first batch for all: a frame indexed 2, 3, ... keeps its labels
        try:
            for part in df.iterbatch(batch_size=batch_size):
                fetched[0] += 1
                if keep is None:
                    keep = keeps_frame_index([part.index])
                yield frame_to_block(part, like, keep_index=keep)
        except BridgeError:
            raise
        except Exception as err:
            msg = f"from_mars: Xorbits failed while fetching batch {fetched[0]}: {type(err).__name__}: {err}"
            raise BridgeError(msg, "check the frame computes with df.head().to_pandas(); is xorbits.init() "
                                   "running?") from err
        if not fetched[0]:  # an empty frame keeps its schema
            yield frame_to_block(df.head(0).to_pandas(), like)

    return from_blocks(blocks(), name="FromMars")


def dataset_to_mars(ds: Dataset) -> Any:
    """Dataset -> Xorbits DataFrame with one chunk per non-empty block."""
    import xorbits.pandas as xpd

    from bridge.pandas_types import block_to_pandas, nullable_columns, shared_categories, with_categories

    layout = ds.block_layout()
    # One dtype per column in every chunk: masked where any block has nulls (or NaN); exact pandas rules.
    nullable = frozenset(nullable_columns(layout.refs))
    # The same categories in every chunk: each block's own dictionary made its own (Xorbits' concat of a
    # Categorical of ints whose chunks' categories differ gave float64, and 2**53 + 1 came back changed).
    categories = shared_categories(layout.refs, layout.schema)
    parts = [with_categories(block_to_pandas(ray.get(ref), nullable), categories) for ref, _ in layout.blocks]
    if not parts:
        from bridge.block import empty_table

        out = xpd.DataFrame(block_to_pandas(empty_table(layout.schema), nullable))
    elif len(parts) == 1:
        out = xpd.DataFrame(parts[0])
    else:
        import pandas as pd

        if any(isinstance(t, (pd.ArrowDtype, pd.DatetimeTZDtype)) for t in parts[0].dtypes):
            # Xorbits' concat builds its empty frame with astype from placeholders: a zoned datetime
            # raised at once, an Arrow list raised when computed ("Converting strings to list").  One
            # frame joined by pandas instead, in chunks of the largest block's rows.
            whole = pd.concat(parts, ignore_index=not layout.index_columns)
            out = xpd.DataFrame(whole, chunk_size=max(len(p) for p in parts))
        else:
            out = xpd.concat([xpd.DataFrame(p) for p in parts], ignore_index=not layout.index_columns)
    del parts
    _remember_schema(out, layout.schema)
    return out


class MarsAdapter:
    name = "mars"
    package = "xorbits"
    extra = "raybridge[mars]"

    def is_native(self, obj: Any) -> bool:
        return _is_xorbits_frame(obj)

    def to_dataset(self, obj: Any, **options: Any) -> MaterializedDataset:
        """An Xorbits (Mars) DataFrame -> Dataset.

        Example:
            >>> import bridge, xorbits, xorbits.pandas as xpd  # doctest: +SKIP
            >>> xorbits.init()  # doctest: +SKIP
            >>> bridge.from_mars(xpd.DataFrame({"x": [1, 2]})).count()  # doctest: +SKIP
            2
        """
        return mars_to_dataset(obj, **options)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        """Dataset -> Xorbits DataFrame (``ds.to_mars()``)."""
        if options:
            msg = f"to_mars() takes no options; got {sorted(options)}"
            raise BridgeError(msg, "call ds.repartition(n) before converting")
        return dataset_to_mars(ds)


ADAPTER = MarsAdapter()
