"""Per-block transforms: what a map task runs, and how consecutive ones fuse.

A :class:`BlockTransform` takes an iterator of blocks and yields blocks.  The
optimizer fuses a chain of them into one, so ``read -> map_batches ->
filter -> map`` is one Ray task per block.  User code runs inside
:func:`call_user_fn`, which turns its exceptions into :class:`UserCodeError`
naming the operator and the block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from bridge import batch as batch_mod
from bridge.block import Block, concat_blocks, slice_rows, tail
from bridge.errors import BridgeError, UserCodeError


@dataclasses.dataclass
class TaskContext:
    """What a transform knows about the task running it."""

    task_index: int
    op_name: str = ""


class BlockTransform:
    """A named ``(blocks, ctx) -> blocks`` function; ``+`` fuses two."""

    def __init__(self, fn: Callable[[Iterable[Block], TaskContext], Iterable[Block]], label: str,
                 user: UserFn | None = None) -> None:
        self.fn = fn
        self.label = label
        #: The user's function or class this transform calls (``None``: none, or fused from several).
        self.user = user

    def __call__(self, blocks: Iterable[Block], ctx: TaskContext) -> Iterable[Block]:
        return self.fn(blocks, ctx)

    def __add__(self, other: BlockTransform) -> BlockTransform:
        first, second = self, other

        def fused(blocks: Iterable[Block], ctx: TaskContext) -> Iterable[Block]:
            return second(first(blocks, ctx), ctx)

        return BlockTransform(fused, f"{first.label}->{second.label}")


# ------------------------------------------------------------------ user callables

_instances: dict[str, Any] = {}
_instances_lock = threading.Lock()


@dataclasses.dataclass
class UserFn:
    """A user function, or a callable class constructed once per worker process."""

    fn: Any
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    ctor_args: tuple[Any, ...] = ()
    ctor_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    token: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def is_class(self) -> bool:
        return isinstance(self.fn, type)

    @property
    def label(self) -> str:
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    @property
    def is_async_class(self) -> bool:
        """A class whose ``__call__`` is a coroutine function (it may run several calls at once)."""
        import inspect

        return self.is_class and inspect.iscoroutinefunction(self.fn.__call__)

    def resolve(self, op_name: str) -> Callable[..., Any]:
        if not self.is_class:
            return self.fn
        inst = _instances.get(self.token)
        if inst is None:
            with _instances_lock:
                inst = _instances.get(self.token)
                if inst is None:
                    try:
                        inst = self.fn(*self.ctor_args, **self.ctor_kwargs)
                    except Exception as err:
                        msg = f"{op_name}: constructing {self.label}(...) raised {type(err).__name__}: {err}"
                        raise UserCodeError(
                            msg, "fix the class's __init__; it runs once per worker",
                            operator=op_name, original=err,
                        ) from err
                    _instances[self.token] = inst
        return inst


class UserCallLock:
    """Held around each call of user code in a pool actor; says which input batch holds it, since when.

    Ray starts a threaded actor's calls in no fixed order, so the oldest call the driver sent is
    not always the one in user code: the driver asks the actor (``holder``) before it names a
    batch as hung.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: ``(input batch index, time.time() it entered)`` of the call in user code, or ``None``.
        self.holder: tuple[int, float] | None = None

    @contextlib.contextmanager
    def hold(self, index: int) -> Iterator[None]:
        with self._lock:
            self.holder = (index, time.time())
            try:
                yield
            finally:
                self.holder = None


#: Set in a pool actor (``set_user_call_lock``): every call of user code in that process holds it,
#: so the user's code runs on one thread at a time while the actor's other thread fetches and
#: formats the next batch (and writes back the last one).
_user_call_lock: UserCallLock | None = None


def set_user_call_lock(lock: UserCallLock | None) -> None:
    global _user_call_lock
    _user_call_lock = lock


def call_user_fn(fn: Callable[..., Any], arg: Any, user: UserFn, ctx: TaskContext, op: str) -> Any:
    try:
        lock = _user_call_lock
        if lock is None:
            return _awaited(fn(arg, *user.args, **user.kwargs))
        with lock.hold(ctx.task_index):
            out = _awaited(fn(arg, *user.args, **user.kwargs))
            # A generator's body is user code too: run it here, under the lock (its batches stay several).
            return _Yielded(out) if _is_generator(out) else out
    except BridgeError:
        raise
    except Exception as err:
        msg = f"{op}: user function {user.label} raised {type(err).__name__}: {err} (input block {ctx.task_index})"
        hint = "fix the function at the line above"
        if isinstance(err, ValueError) and "read-only" in str(err):
            # NumPy's "output array is read-only" / "assignment destination is read-only"
            hint = ("the batch's arrays are read-only views of the object store: assign a new array "
                    "(b['x'] = b['x'] * 2, not b['x'] *= 2), or pass zero_copy_batch=False for writable copies")
        raise UserCodeError(msg + _user_frames(err), hint, operator=op, block_index=ctx.task_index,
                            original=err) from err


def _user_frames(err: BaseException, most: int = 4) -> str:
    """The innermost frames of ``err``'s traceback below :func:`call_user_fn`, as Python prints them: the
    traceback itself does not survive the trip from a Ray worker to the driver (the chained exception
    came with no frame, so the user saw no file and no line)."""
    import traceback

    frames = traceback.extract_tb(err.__traceback__)[1:]  # (the first is call_user_fn's own call)
    if not frames:
        return ""
    return "\n" + "".join(traceback.format_list(frames[-most:])).rstrip()


def _bad_output(op: str, ctx: TaskContext, err: Exception, expected: str) -> UserCodeError:
    # Our own conversion errors know the fix for their column (bfloat16: ``.float()``): that is the hint.
    what: object = err
    hint = f"return {expected}"
    if isinstance(err, (BridgeError, batch_mod.BatchTypeError)) and err.hint:
        what, hint = err.what, f"{err.hint} (the function must return {expected})"
    msg = f"{op}: the function returned something raybridge cannot use (input block {ctx.task_index}): {what}"
    return UserCodeError(msg, hint, operator=op, block_index=ctx.task_index, original=err)


# ------------------------------------------------------------------ the transforms


def _no_output(b: Block | Pieces) -> bool:
    """A block of no rows and no columns: what a task gives where its transforms yielded nothing (a
    ``map`` / ``flat_map`` with no output row, a read of nothing), whose columns no one knows.  Column
    operators pass it on as it is: the input's columns would be a guess, and a later
    ``select_columns`` / ``map_batches`` would fail on (or ``sort`` add) columns the function never made."""
    return b.num_rows == 0 and b.num_columns == 0


def rebatch(blocks: Iterable[Block], batch_size: int | None) -> Iterator[Block]:
    """Regroup a stream of blocks into batches of exactly ``batch_size`` rows (the last may be short)."""
    if batch_size is None:
        for b in blocks:
            yield b
        return
    pending: list[Block] = []
    have = 0
    for b in blocks:
        if have == 0 and b.num_rows >= batch_size:
            for piece in slice_rows(b, batch_size):
                if piece.num_rows == batch_size:
                    yield piece
                else:
                    pending, have = [piece], piece.num_rows
            continue
        pending.append(b)
        have += b.num_rows
        while have >= batch_size:
            merged = concat_blocks(pending)
            yield merged.slice(0, batch_size)
            rest = tail(merged, batch_size)
            pending, have = ([rest], rest.num_rows) if rest.num_rows else ([], 0)
    if have:
        yield concat_blocks(pending)


class Pieces(list):
    """One batch as the zero-copy slices of the blocks it spans (``rebatch_pieces``)."""

    @property
    def num_rows(self) -> int:
        return sum(p.num_rows for p in self)

    @property
    def num_columns(self) -> int:
        return int(self[0].num_columns) if self else 0

    @property
    def schema(self) -> pa.Schema:
        return self[0].schema


def rebatch_pieces(blocks: Iterable[Block], batch_size: int | None) -> Iterator[Pieces]:
    """Like :func:`rebatch`, but each batch is the list of slices it spans, not joined."""
    if batch_size is None:
        for b in blocks:
            yield Pieces([b])
        return
    pending = Pieces()
    have = 0
    for b in blocks:
        start, n = 0, b.num_rows
        while start < n:
            take = min(batch_size - have, n - start)
            pending.append(b.slice(start, take))
            have += take
            start += take
            if have == batch_size:
                yield pending
                pending, have = Pieces(), 0
    if have:
        yield pending


def map_batches_transform(user: UserFn, batch_format: str, batch_size: int | None, label: str,
                          device: str | None = None) -> BlockTransform:
    """``fn(batch)`` per batch; ``batch_format="torch"`` gives ``{column: tensor}`` on ``device``.

    The torch format's tensors are copied to a CUDA ``device`` through pinned memory on a
    side stream while the previous batch runs (in a pool actor, on its second thread), and
    handed to the user's code ordered against the stream it runs on.
    """
    fmt = "torch" if batch_format == "torch" else batch_mod.normalize_format(batch_format)

    def run(blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        fn = user.resolve(label)
        to_batch: Callable[[Block], Any] = lambda b: batch_mod.to_batch(b, fmt)  # noqa: E731
        if fmt == "torch":
            from bridge.registry import get_adapter

            torch_adapter: Any = get_adapter("torch")
            to_batch, handoff = torch_adapter.batch_converter(device)
            if handoff is not None:
                user_fn = fn

                def fn(batch: Any, *args: Any, **kwargs: Any) -> Any:
                    return user_fn(handoff(batch), *args, **kwargs)
        # The torch converter takes a batch's pieces as they are (a batch straddling two blocks is
        # copied once, straight into pinned memory, instead of joined in Arrow and then copied).
        batches = rebatch_pieces(blocks, batch_size) if fmt == "torch" else rebatch(blocks, batch_size)
        empty: Any = None
        produced = False
        for b in batches:
            if b.num_rows == 0:
                # Not a batch (as in Ray Data): a function giving one row per batch gave a row for each block
                # a filter had emptied, and one reading b["x"][0] failed.  See the schema probe below.
                if batch_size is None and not _no_output(b) and empty is None:
                    empty = b
                continue
            out = call_user_fn(fn, to_batch(b), user, ctx, label)
            results = out if _is_generator(out) or isinstance(out, _Yielded) else [out]
            for res in results:
                produced = True
                yield to_output_block(res, b, label, ctx)
        if empty is not None and not produced:
            # Only empty blocks came: the function's output columns, with no rows, so that an emptied
            # Dataset still has a schema.  Where it fails on an empty batch, the task has no output.
            try:
                out = call_user_fn(fn, to_batch(empty), user, ctx, label)
                results = list(out) if _is_generator(out) or isinstance(out, _Yielded) else [out]
                first = batch_mod.to_block(results[0], like=empty.schema) if results else None
            except Exception:  # noqa: BLE001 - a function not written for empty batches: Ray Data never calls it so
                first = None
            if first is not None:
                yield first.slice(0, 0)

    return BlockTransform(run, label, user)


def to_output_block(res: Any, b: Any, label: str, ctx: TaskContext) -> Block:
    try:
        return batch_mod.to_block(res, like=b.schema)
    except batch_mod.BatchTypeError as err:
        raise _bad_output(label, ctx, err, "a dict of column name -> array, a pandas.DataFrame "
                          "or a pyarrow.Table (one batch), or yield several") from err


def _awaited(out: Any) -> Any:
    """An ``async def __call__``'s coroutine run to its result (an async generator's batches collected),
    on this actor thread's own event loop: the pool runs such classes without its lock, several calls
    at once (they were returned un-awaited, and failed as "not a batch")."""
    import asyncio
    import inspect

    if inspect.iscoroutine(out):
        return asyncio.run(out)
    if inspect.isasyncgen(out):
        async def collect() -> list[Any]:
            return [item async for item in out]

        return _Yielded(asyncio.run(collect()))
    return out


class _Yielded(list[Any]):
    """What a generator yielded, run to its end under a pool actor's lock: several results, not one."""


def _is_generator(obj: Any) -> bool:
    import types

    return isinstance(obj, types.GeneratorType)


def map_rows_transform(user: UserFn, label: str) -> BlockTransform:
    def run(blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        fn = user.resolve(label)
        for b in blocks:
            rows = [call_user_fn(fn, r, user, ctx, label) for r in batch_mod.block_to_rows(b)]
            if not rows:
                continue  # no output row says the output's columns (not the input's): no block, see _no_output
            try:
                yield batch_mod.rows_to_block(rows, like=b.schema)
            except batch_mod.BatchTypeError as err:
                raise _bad_output(label, ctx, err, "a dict (one output row) from map()") from err

    return BlockTransform(run, label, user)


def flat_map_transform(user: UserFn, label: str) -> BlockTransform:
    def run(blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        fn = user.resolve(label)
        for b in blocks:
            rows: list[Any] = []
            for r in batch_mod.block_to_rows(b):
                out = call_user_fn(fn, r, user, ctx, label)
                if isinstance(out, dict):
                    raise _bad_output(label, ctx, TypeError("got a dict"), "a list of dicts from flat_map()")
                rows.extend(out)
            if not rows:
                continue  # as in map_rows_transform
            try:
                yield batch_mod.rows_to_block(rows, like=b.schema)
            except batch_mod.BatchTypeError as err:
                raise _bad_output(label, ctx, err, "a list of dicts (output rows) from flat_map()") from err

    return BlockTransform(run, label, user)


def filter_transform(user: UserFn, label: str) -> BlockTransform:
    """Keep the rows for which the user's function returns a true value.  (``filter(expr=...)``:
    :func:`bridge.ops.string_expr.expr_filter_transform`.)"""
    def run(blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        fn = user.resolve(label)
        for b in blocks:
            answers = [call_user_fn(fn, r, user, ctx, label) for r in batch_mod.block_to_rows(b)]
            if answers and all(a is None for a in answers):
                # A predicate without `return` (def keep(r): r["x"] > 2) dropped every row without a word.
                raise UserCodeError(f"{label}: the function returned None for every row of input block "
                                    f"{ctx.task_index}; a filter's function returns True to keep a row, False to drop it",
                                    "add the missing return: def keep(row): return row['x'] > 2 (for a value that "
                                    "may be None, return bool(row['x']))", operator=label, block_index=ctx.task_index)
            keep = [bool(a) for a in answers]
            yield _kept(b, b.filter(pa.array(keep, type=pa.bool_()))) if keep else b

    return BlockTransform(run, label, user)


def _kept(block: Block, filtered: Block) -> Block:
    """``filtered``, or where no row is left, :func:`~bridge.block.empty_like` ``block``: pyarrow's filter
    leaves a table of no chunks, and with no chunk a dictionary column has no dictionary (a
    ``Categorical`` filtered to no rows came back with no categories)."""
    from bridge.block import empty_like

    return filtered if filtered.num_rows else empty_like(block)


def project_transform(
    label: str,
    select: list[str] | None = None,
    drop: list[str] | None = None,
    rename: dict[str, str] | None = None,
) -> BlockTransform:
    def run(blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        from bridge.pandas_types import fitted_metadata, renamed_metadata

        for b in blocks:
            if _no_output(b):
                yield b
                continue
            names = b.column_names
            wanted = select or drop or list(rename or {})
            missing = [c for c in wanted if c not in names]
            if missing:
                from bridge.errors import SchemaMismatchError, missing_columns_hint

                msg = f"{label}: column(s) {missing} not found; the block has {names}"
                raise SchemaMismatchError(msg, missing_columns_hint(
                    missing, names, "check the spelling, or call ds.schema() to list the columns"))
            if select is not None:
                b = fitted_metadata(b.select(select))  # (a dropped column's pandas entry would name a later one)
            if drop is not None:
                b = fitted_metadata(b.drop_columns(drop))
            if rename is not None:
                meta = b.schema.metadata
                b = b.rename_columns([rename.get(c, c) for c in b.column_names])  # (drops the schema's metadata)
                if meta:
                    b = b.replace_schema_metadata(renamed_metadata(meta, rename))
            yield b

    return BlockTransform(run, label)


def same_layout(a: pa.Schema, b: pa.Schema) -> bool:
    """The same column names and types in the same order (nullability and metadata aside)."""
    return a.names == b.names and all(x.type.equals(y.type) for x, y in zip(a, b))


def conform_transform(label: str, schema: pa.Schema) -> BlockTransform:
    """Blocks of one ``union`` input given the union's ``schema``: its column order, and its types where the
    input's were narrower (int32 -> int64, null -> int64), by the promotion that ``to_arrow`` makes (so
    a value that would change, 2**53 + 1 into float64, fails here as it fails there).  Without it the
    union's batches changed dtype and column order from one input to the next under one ``schema()``."""
    from bridge.block import concat_blocks, empty_table
    from bridge.errors import SchemaMismatchError

    def run(blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        for b in blocks:
            if _no_output(b) or same_layout(b.schema, schema) or sorted(b.column_names) != sorted(schema.names):
                yield b  # (other columns: the union's own check names them)
                continue
            meta = b.schema.metadata
            try:
                out = concat_blocks([empty_table(schema), b.select(schema.names)])
            except SchemaMismatchError as err:
                changed = [f"{f.name}: {f.type} -> {schema.field(f.name).type}" for f in b.schema
                           if not f.type.equals(schema.field(f.name).type)]
                msg = f"{label}: a block of an input does not fit the union's types ({'; '.join(changed)}): {err.what}"
                raise SchemaMismatchError(msg, "cast the columns to one type in every input before the union "
                                               "(map_batches / add_column), as you mean the values") from err
            yield out.replace_schema_metadata(meta) if meta else out

    return BlockTransform(run, label)


def _aligned(value: Any, batch: Any) -> Any:
    """A pandas Series holding the batch's own labels in another order (``df["x"].sort_values()``)
    put back in the batch's row order, as pandas' assignment aligns it (it went in by position:
    values landed on other rows).  Any other Series goes in by position."""
    index = getattr(value, "index", None)
    if index is None or not hasattr(value, "reindex") or index.equals(batch.index):
        return value
    if len(index) == len(batch.index) and index.is_unique and batch.index.is_unique \
            and index.sort_values().equals(batch.index.sort_values()):
        return value.reindex(batch.index)
    return value


def add_column_transform(col: str, user: UserFn, batch_format: str, label: str) -> BlockTransform:
    from bridge.pandas_types import fitted_metadata

    fmt = batch_mod.normalize_format(batch_format)

    def run(blocks: Iterable[Block], ctx: TaskContext) -> Iterator[Block]:
        fn = user.resolve(label)
        for b in blocks:
            if _no_output(b):
                yield b
                continue
            batch = batch_mod.to_batch(b, fmt)
            if b.num_rows == 0:
                try:
                    value = call_user_fn(fn, batch, user, ctx, label)
                except Exception:  # noqa: BLE001 - a function not written for an empty batch (df.iloc[0]):
                    value = pa.nulls(0)  # Ray Data never calls it on one; the column's type comes from others
            else:
                value = call_user_fn(fn, batch, user, ctx, label)
            if fmt == "pandas":
                value = _aligned(value, batch)
            if value is None or isinstance(value, (bool, int, float, str, bytes)) or (
                    hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0):
                value = pa.array([value.item() if hasattr(value, "item") else value] * b.num_rows)  # a scalar
            try:
                # Where it replaces a column of a NumPy batch, the column's type comes back as map_batches
                # gives it back (a zone NumPy held as UTC instants, a dictionary, uint64 with nulls), where the
                # values fit. pandas and Arrow carry the types themselves: what the function made is its own
                # (a dictionary cast to its values stays text).
                like = pa.schema([b.schema.field(col)]) if col in b.column_names and fmt == "numpy" else None
                arr = batch_mod.to_block({col: value}, like=like).column(0)
            except batch_mod.BatchTypeError as err:
                raise _bad_output(label, ctx, err, "an array with one value per row") from err
            if len(arr) != b.num_rows:
                raise _bad_output(label, ctx, ValueError(f"got {len(arr)} values for {b.num_rows} rows"),
                                  "an array with one value per row")
            if col in b.column_names:
                out = b.set_column(b.column_names.index(col), col, arr)
            else:
                out = b.append_column(col, arr)
            yield fitted_metadata(out, b.schema)  # (the old column's pandas dtype is not the new values')

    return BlockTransform(run, label)
