"""Dask DataFrame <-> Dataset, both directions, under any Dask scheduler.

``from_dask`` cuts the Dask graph into one sub-graph per output partition and
computes each sub-graph inside a Ray task that turns the pandas partition into
an Arrow block right there: partitions never pass through the driver, the
driver owns the blocks, and the Dataset outlives the Dask client.  The user's
Dask scheduler is not involved in that step, so the same code works for the
threaded default, Dask-on-Ray (``ray.util.dask``) and a ``distributed.Client``.
Two rules:

* Partitions persisted on a ``distributed`` cluster are fetched from that
  cluster by the Ray task itself (it connects to the scheduler).
* When partitions share work (a shuffle, ``set_index``), the collection is
  persisted first with the user's own scheduler, so that shared work runs once.

Dask turns object columns into ``string[pyarrow]`` when it builds a frame from
pandas; for columns that hold lists, dicts or arrays that stringifies them
(``[1, 2]`` -> ``'[1, 2]'``).  ``from_dask`` turns that conversion off for such
sources so nested values stay nested.

``to_dask`` builds one partition per block (or ``npartitions``), with ``meta``
from the Arrow schema and known divisions when the index is known to be sorted,
and changes no global Dask configuration.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import ray

from bridge.block import BlockMetadata
from bridge.errors import BridgeError

from ._protocol import module_of

if TYPE_CHECKING:
    from bridge.dataset import Dataset, MaterializedDataset


# ---------------------------------------------------------------- Dask -> Dataset
class _DistributedKey:
    """Stands in for a ``distributed.Future`` in a shipped sub-graph: the Ray task fetches it.

    The futures are published on the scheduler under ``dataset`` for the duration
    of ``from_dask``; a bare ``Future(key)`` made in another client never resolves.
    """

    def __init__(self, address: str, dataset: str, position: int) -> None:
        self.address = address
        self.dataset = dataset
        self.position = position


_clients: dict[str, Any] = {}


def _fetch_distributed(ref: _DistributedKey) -> Any:
    from distributed import Client

    client = _clients.get(ref.address)
    if client is None or client.status != "running":
        client = Client(ref.address, set_as_default=False)
        _clients[ref.address] = client
    return client.get_dataset(ref.dataset)[ref.position].result()


@ray.remote(num_returns=2)
def _compute_partition(graph: dict[Hashable, Any], key: Hashable, index: int,
                       keep_index: bool | None = None) -> tuple[pa.Table, BlockMetadata]:
    import dask

    from bridge.batch import frame_to_block

    graph = {k: (_fetch_distributed(v) if isinstance(v, _DistributedKey) else v) for k, v in graph.items()}
    try:
        part = dask.get(graph, key)  # type: ignore[arg-type]  # dask keys are Hashable at runtime
    except Exception as err:
        msg = f"from_dask: computing partition {index} failed: {type(err).__name__}: {err}"
        hint = "the error comes from the Dask graph; check the same partition with ddf.get_partition(i).compute()"
        raise BridgeError(msg, hint) from err
    if hasattr(part, "to_frame") and not hasattr(part, "columns"):
        part = part.to_frame()
    block = frame_to_block(part, keep_index=keep_index)
    return block, BlockMetadata.of(block)


def _keeps_range_index(ddf: Any) -> bool | None:
    """``True`` where ``ddf``'s index is an unnamed ``RangeIndex`` that does not start at 0 (by its known
    divisions): each partition holds a ``RangeIndex`` piece, which alone looks like a default index to
    drop; ``None`` (each partition decides) otherwise."""
    import pandas as pd

    index = ddf._meta.index
    if isinstance(index, pd.RangeIndex) and index.name is None and ddf.known_divisions and ddf.divisions[0] != 0:
        return True
    return None


def _keep_nested_objects(ddf: Any) -> Any:
    """Rebuild ``ddf`` with Dask's string conversion off for pandas sources holding nested objects."""
    from dask.dataframe.dask_expr import new_collection
    from dask.dataframe.dask_expr.io.io import FromPandas

    expr = ddf.expr
    for node in list(expr.walk()):
        if not isinstance(node, FromPandas) or not node.operand("pyarrow_strings_enabled"):
            continue
        frame = node.frame._data if hasattr(node.frame, "_data") else node.frame
        series = [frame] if not hasattr(frame, "columns") else [frame[c] for c in frame.columns]  # a Series too
        if any(_holds_nested(s) for s in series if s.dtype == object):
            expr = expr.substitute(node, node.substitute_parameters({"pyarrow_strings_enabled": False}))
    return ddf if expr is ddf.expr else new_collection(expr)


def _holds_nested(column: Any) -> bool:
    values = column.dropna()
    return len(values) > 0 and not isinstance(values.iloc[0], (str, bytes))


def _subgraphs(ddf: Any) -> tuple[list[dict[Hashable, Any]], list[Hashable], bool]:
    """One culled sub-graph per output partition, and whether partitions share computed tasks."""
    from dask.core import get_dependencies

    graph = dict(ddf.__dask_graph__())
    keys = list(ddf.__dask_keys__())
    deps = {k: get_dependencies(graph, k) for k in graph}
    seen_by: dict[Hashable, int] = {}
    shared = False
    subs = []
    for key in keys:
        sub: dict[Hashable, Any] = {}
        stack = [key]
        while stack:
            k = stack.pop()
            if k in sub:
                continue
            sub[k] = graph[k]
            stack.extend(deps[k])
        for k, v in sub.items():
            if _is_computed_task(v) and seen_by.setdefault(k, id(sub)) != id(sub):
                shared = True
        subs.append(sub)
    return subs, keys, shared


def _is_computed_task(value: Any) -> bool:
    from dask._task_spec import Alias, DataNode, GraphNode

    return isinstance(value, GraphNode) and not isinstance(value, (DataNode, Alias)) or (
        isinstance(value, tuple) and bool(value) and callable(value[0]))


class _PublishedFutures:
    """Publishes the ``distributed`` futures found in sub-graphs so that Ray tasks can fetch them."""

    def __init__(self) -> None:
        import uuid

        self.name = f"raybridge-from-dask-{uuid.uuid4().hex}"
        self.futures: list[Any] = []
        self.client: Any = None

    def replace(self, sub: dict[Hashable, Any]) -> dict[Hashable, Any]:
        dist = sys.modules.get("distributed")
        if dist is None:
            return sub
        out = {}
        for k, v in sub.items():
            if isinstance(v, dist.Future) and v.client.scheduler.address.startswith("inproc://"):
                # An in-process cluster cannot be reached from Ray workers: fetch here.
                v = v.result()
            elif isinstance(v, dist.Future):
                self.client = self.client or v.client
                self.futures.append(v)
                v = _DistributedKey(v.client.scheduler.address, self.name, len(self.futures) - 1)
            out[k] = v
        return out

    def __enter__(self) -> _PublishedFutures:
        return self

    def publish(self) -> None:
        if self.futures:
            self.client.publish_dataset(**{self.name: self.futures})

    def __exit__(self, *exc: object) -> None:
        if self.futures:
            try:
                self.client.unpublish_dataset(self.name)
            except Exception:  # noqa: BLE001 - the client may be closing; the data is already copied
                pass


def dask_to_dataset(ddf: Any) -> MaterializedDataset:
    """Compute ``ddf`` partition by partition in Ray tasks that emit Arrow blocks."""
    import dask.dataframe as dd

    from bridge import from_block_refs
    from bridge._ray import ensure_ray
    from bridge.constructors.memory import in_threads

    if isinstance(ddf, dd.Series):
        ddf = ddf.to_frame()
    if not isinstance(ddf, dd.DataFrame):
        msg = f"from_dask() needs a dask.dataframe.DataFrame or Series; got {type(ddf).__module__}.{type(ddf).__name__}"
        raise BridgeError(msg, "build one with dask.dataframe.from_pandas(...) or dd.read_parquet(...)")
    ensure_ray()
    ddf = _keep_nested_objects(ddf).optimize()
    subs, keys, shared = _subgraphs(ddf)
    if shared:
        # Shuffles and the like: run the shared work once, with the user's own scheduler.
        ddf = ddf.persist()
        subs, keys, _ = _subgraphs(ddf)
    local = [_held_by_driver(sub, key) for sub, key in zip(subs, keys)]
    with _PublishedFutures() as published:
        shipped = [published.replace(sub) for sub in subs]
        published.publish()
        blocks: list[Any] = [None] * len(keys)
        metas: list[Any] = [None] * len(keys)
        keep = _keeps_range_index(ddf)
        remote: dict[int, Any] = {i: _compute_partition.remote(sub, key, i, keep)
                                  for i, (sub, key, part) in enumerate(zip(shipped, keys, local)) if part is None}
        # Partitions this process holds: converted and put from a few threads (Arrow's conversion and
        # the copy into the object store release the GIL; one thread alone is bound by page faults).
        held = [i for i, part in enumerate(local) if part is not None]
        put = functools.partial(_put_partition, keep_index=keep)
        for i, (block, meta) in zip(held, in_threads(put, [local[i] for i in held])):
            blocks[i], metas[i] = block, meta
        for i, meta in zip(remote, ray.get([m for _, m in remote.values()])):
            blocks[i], metas[i] = remote[i][0], meta
        kept = [_index_kept(m) for m in metas]
        if keep is None and any(kept) and not all(kept):
            # Each partition decided alone, and they disagree (a filter left some with a RangeIndex piece,
            # others with labels): the blocks would differ in columns and lose the index. Keep it in all.
            redo = [i for i, k in enumerate(kept) if not k]
            again = {i: _compute_partition.remote(shipped[i], keys[i], i, True) for i in redo if local[i] is None}
            for i in redo:
                if local[i] is not None:
                    blocks[i], metas[i] = _put_partition(local[i], keep_index=True)
            for i, meta in zip(again, ray.get([m for _, m in again.values()])):
                blocks[i], metas[i] = again[i][0], meta
    return from_block_refs(blocks, metas, name="FromDask")


def _index_kept(meta: BlockMetadata) -> bool:
    """Whether a partition's block holds its index as column(s) (named in its pandas metadata)."""
    md = meta.schema.pandas_metadata if meta.schema is not None else None
    return md is not None and any(isinstance(c, str) for c in md.get("index_columns", []))


def _held_by_driver(sub: dict[Hashable, Any], key: Hashable) -> Any:
    """The partition itself when the graph holds it as data in this process (``from_pandas``, a
    local ``persist()``): nothing to compute, and shipping it to a task would copy it twice."""
    from dask._task_spec import Alias, DataNode

    value = sub.get(key)
    # A persisted frame's partition is an alias of the key that holds the data.
    for _ in range(len(sub)):
        if not isinstance(value, Alias):
            break
        target = value.target
        value = sub.get(target.key if hasattr(target, "key") else target)
    if isinstance(value, DataNode):
        value = value.value
    if type(value).__module__.startswith("pandas") and hasattr(value, "iloc"):
        return value
    return None


def _put_partition(part: Any, keep_index: bool | None = None) -> tuple[ray.ObjectRef, BlockMetadata]:
    """A driver-held partition -> one Arrow block put by (and owned by) the driver: a single copy."""
    from bridge.batch import frame_to_block

    if hasattr(part, "to_frame") and not hasattr(part, "columns"):
        part = part.to_frame()
    block = frame_to_block(part, keep_index=keep_index)
    return ray.put(block), BlockMetadata.of(block)


# ---------------------------------------------------------------- Dataset -> Dask
class _BlockSlices:
    """The rows of one Dask partition: ``(block ref, start, length)`` pieces plus the global row offset.

    Dask tokenises it by the block ids, and it pickles with its references, so
    the partition can be computed in any process connected to the same Ray.
    """

    def __init__(self, pieces: list[tuple[ray.ObjectRef, int, int]], offset: int, range_index: bool,
                 arrow_strings: bool, nullable: frozenset[str] = frozenset(),
                 categories: dict[str, Any] | None = None) -> None:
        self.pieces = pieces
        self.offset = offset
        self.range_index = range_index
        self.arrow_strings = arrow_strings
        #: Columns with a masked dtype in every partition (nulls or NaN in some block).
        self.nullable = nullable
        #: Dictionary columns' categories, the same in every partition (:func:`shared_categories`).
        self.categories = categories or {}

    def __dask_tokenize__(self) -> Any:
        return ("raybridge-block-slices", [(r.hex(), s, n) for r, s, n in self.pieces], self.offset)

    def __reduce__(self) -> Any:
        address = ray.get_runtime_context().gcs_address if ray.is_initialized() else None
        pieces = ray.cloudpickle.dumps(self.pieces)
        return (_rebuild_slices, (address, pieces, self.offset, self.range_index, self.arrow_strings,
                                  self.nullable, self.categories))


def _rebuild_slices(address: str | None, pieces: bytes, offset: int, range_index: bool,
                    arrow_strings: bool, nullable: frozenset[str] = frozenset(),
                    categories: dict[str, Any] | None = None) -> _BlockSlices:
    if not ray.is_initialized():
        # A Dask worker outside Ray (distributed.Client): join the cluster that holds the blocks.
        ray.init(address=address, include_dashboard=False, configure_logging=False, log_to_driver=False)
    return _BlockSlices(ray.cloudpickle.loads(pieces), offset, range_index, arrow_strings, nullable, categories)


def _load_partition(part: _BlockSlices) -> Any:
    import pandas as pd

    from bridge.block import concat_blocks
    from bridge.pandas_types import with_categories

    tables = [t.slice(s, n) for t, (_, s, n) in zip(ray.get([r for r, _, _ in part.pieces]), part.pieces)]
    df = with_categories(_to_pandas(concat_blocks(tables), part.arrow_strings, part.nullable), part.categories)
    if part.range_index:
        df.index = pd.RangeIndex(part.offset, part.offset + len(df))
    return df


def _to_pandas(table: pa.Table, arrow_strings: bool, nullable: frozenset[str] = frozenset()) -> Any:
    """One partition by the exact pandas rules of :mod:`bridge.pandas_types` (masked dtypes for the
    ``nullable`` columns, ``ArrowDtype`` for nested ones, the Arrow schema in ``attrs``); strings
    become ``string[pyarrow]`` when Dask's string conversion is on (what Dask itself would make
    of them), so lists never go through Dask's object -> string conversion."""
    import pandas as pd

    from bridge.pandas_types import block_to_pandas

    strings = pd.StringDtype("pyarrow") if arrow_strings else None
    return block_to_pandas(table, nullable, schema_attr=True, strings=strings)


@ray.remote
def _index_bounds(block: pa.Table, start: int, length: int, column: str) -> tuple[Any, Any, bool]:
    import pyarrow.compute as pc

    block = block.slice(start, length)
    col = block.column(column)
    if block.num_rows == 0 or col.null_count:
        return None, None, False
    values = col.combine_chunks()
    ordered = block.num_rows < 2 or bool(pc.all(pc.less_equal(values[:-1], values[1:])).as_py())
    return values[0].as_py(), values[-1].as_py(), ordered


def _divisions(pieces: list[list[tuple[ray.ObjectRef, int, int]]], index: list[str], offsets: list[int],
               total: int) -> tuple[Any, ...] | None:
    if not index:
        return (*offsets, max(total - 1, 0)) if total else None
    if len(index) != 1 or any(len(p) != 1 for p in pieces):
        return None
    bounds = ray.get([_index_bounds.remote(*p[0], index[0]) for p in pieces])
    if not all(ok for _, _, ok in bounds):
        return None
    firsts = [b[0] for b in bounds]
    lasts = [b[1] for b in bounds]
    # Dask needs strictly increasing division starts: a key may not straddle two partitions.
    if any(not (lasts[i] < firsts[i + 1]) for i in range(len(bounds) - 1)):
        return None
    return (*firsts, lasts[-1])


def dataset_to_dask(ds: Dataset, *, npartitions: int | None = None) -> Any:
    """``ds`` as a Dask DataFrame whose partitions read the blocks from Ray's object store."""
    import dask.dataframe as dd

    from bridge.io.datasource import split_even

    layout = ds.block_layout()
    schema, nonempty, total = layout.schema, layout.blocks, layout.num_rows
    if npartitions is not None and npartitions < 1:
        msg = f"to_dask(npartitions={npartitions}): the partition count must be at least 1"
        raise BridgeError(msg, "pass npartitions=None for one partition per block")
    if npartitions is None:
        ranges = [(s, s + n) for s, (_, n) in zip(layout.starts, nonempty)]
    else:
        ranges = split_even(total, npartitions)
    ranges = ranges or [(0, 0)]
    pieces = [_pieces_for(nonempty, s, e) for s, e in ranges]
    from dask.dataframe.utils import pyarrow_strings_enabled

    arrow_strings = pyarrow_strings_enabled()
    index = layout.index_columns
    from bridge.pandas_types import nullable_columns, shared_categories, with_categories

    nullable = frozenset(nullable_columns(layout.refs))
    from bridge.block import empty_table

    categories = shared_categories(layout.refs or layout.empty[:1], schema)
    meta = with_categories(_to_pandas(empty_table(schema), arrow_strings, nullable), categories)
    parts = [_BlockSlices(p, s, not index, arrow_strings, nullable, categories) for p, (s, _) in zip(pieces, ranges)]
    divisions = _divisions(pieces, index, [s for s, _ in ranges], total) if total else None
    if not index:
        import pandas as pd

        meta.index = pd.RangeIndex(0, 0)
    if not total:
        # No rows: one empty partition that still has every column and dtype (and the schema in attrs).
        return dd.from_pandas(meta, npartitions=1, sort=False)
    from dask.dataframe.dask_expr import new_collection
    from dask.dataframe.dask_expr._expr import ArrowStringConversion

    ddf = dd.from_map(_load_partition, parts, meta=meta, divisions=divisions, enforce_metadata=False,
                      label="raybridge-blocks")
    if isinstance(ddf.expr, ArrowStringConversion):
        # Strings are already Arrow strings; the object -> string pass would stringify lists.
        ddf = new_collection(ddf.expr.frame)
    return ddf


def _pieces_for(blocks: list[tuple[ray.ObjectRef, int]], start: int, end: int) -> list[tuple[ray.ObjectRef, int, int]]:
    out, pos = [], 0
    for ref, n in blocks:
        lo, hi = max(start, pos), min(end, pos + n)
        if lo < hi:
            out.append((ref, lo - pos, hi - lo))
        pos += n
    return out


# ---------------------------------------------------------------- the adapter
class DaskAdapter:
    name = "dask"
    package = "dask"
    extra = "raybridge[dask]"

    def is_native(self, obj: Any) -> bool:
        if "dask.dataframe" not in sys.modules or module_of(obj) != "dask":
            return False
        dd = sys.modules["dask.dataframe"]
        return isinstance(obj, (dd.DataFrame, dd.Series))

    def to_dataset(self, obj: Any, **options: Any) -> MaterializedDataset:
        """A Dask DataFrame -> Dataset (see the module docstring).

        Example:
            >>> import bridge, dask.dataframe as dd, pandas as pd
            >>> ddf = dd.from_pandas(pd.DataFrame({"x": range(6)}), npartitions=3)
            >>> bridge.from_dask(ddf).count()
            6
        """
        if options:
            msg = f"from_dask() takes no options; got {sorted(options)}"
            raise BridgeError(msg, "repartition the Dask DataFrame first (ddf.repartition(npartitions=n))")
        return dask_to_dataset(obj)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        """Dataset -> Dask DataFrame, one partition per block unless ``npartitions=`` is given.

        Example:
            >>> import bridge
            >>> int(bridge.range(10).to_dask(npartitions=2).id.sum().compute())
            45
        """
        return dataset_to_dask(ds, **options)


ADAPTER = DaskAdapter()
