"""Dataset: a lazy handle over a logical plan of Arrow blocks in Ray's object store.

Transforms append a logical operator and return a new Dataset; nothing runs
until the Dataset is consumed (iterated, counted, materialised, converted).
Every consumption plans and runs again from the last ``materialize()``, so
steps after it run once per epoch.

Example:
    >>> import bridge
    >>> ds = bridge.range(1000).map_batches(lambda b: {"id": b["id"], "sq": b["id"] ** 2})
    >>> ds.filter(lambda r: r["id"] % 2 == 0).count()
    500
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import ray

from bridge import batch as batch_mod
from bridge.block import Block, concat_blocks
from bridge.compute import resolve_compute
from bridge.context import DataContext
from bridge.execution.bundle import ReadyBundles, RefBundle
from bridge.execution.stats import DatasetStats
from bridge.execution.transform import (
    BlockTransform,
    UserFn,
    add_column_transform,
    conform_transform,
    filter_transform,
    flat_map_transform,
    map_batches_transform,
    map_rows_transform,
    project_transform,
    same_layout,
)
from bridge.io.write_methods import WriteMethods
from bridge.iteration.ingest_methods import IngestMethods
from bridge.keywords import checked_keywords
from bridge.ops.ops_methods import GlobalOpsMethods
from bridge.plan.logical import Compute, InputData, Limit, LogicalOp, MapLike, Project, Read, Union, known_num_rows

if TYPE_CHECKING:
    import pandas

    from bridge.execution.bundle import BlockLayout


def _fn_label(fn: Any) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return "<lambda>" if name == "<lambda>" else name


def check_callable(op: str, fn: Any, takes: str = "batch") -> None:
    """Refuse, at the call, a ``fn`` that is no function or class: it failed only once the Dataset ran,
    as the user's own error ("'str' object is not callable ... fix the function at the line above")."""
    if callable(fn):
        return
    from bridge.errors import BridgeTypeError

    got = f"{type(fn).__name__} {fn!r}"[:120]
    msg = f"{op}: the function must be a function or a callable class (called with each {takes}); got {got}"
    if op == "filter" and (isinstance(fn, str) or _is_expression(fn)):
        hint = f"pass an expression by name: filter(expr={fn!r})" if isinstance(fn, str) else \
            "pass an expression by name: filter(expr=...)"
    elif isinstance(fn, str):
        hint = f"pass the function itself, not its name: {op}({fn}) rather than {op}({fn!r})"
    else:
        hint = f"pass e.g. {op}(lambda {takes}: ...) or a function defined with def"
    raise BridgeTypeError(msg, hint)


def _is_expression(value: Any) -> bool:
    import pyarrow.compute as pc

    from bridge.ops.string_expr import is_ray_expr

    return isinstance(value, pc.Expression) or is_ray_expr(value)


def writable_batches(fn: Any) -> Any:
    """``fn`` (a function or a callable class) called with a NumPy batch whose arrays are writable.

    ``zero_copy_batch=False``: read-only arrays (zero-copy views of Arrow buffers) are
    copied; arrays that are already writable are passed as they are.
    """
    import functools
    import inspect

    def copied(batch: Any) -> Any:
        if not isinstance(batch, dict):
            return batch
        import numpy as np

        return {k: np.array(v, copy=True) if isinstance(v, np.ndarray) and not v.flags.writeable else v
                for k, v in batch.items()}

    if isinstance(fn, type):
        cls: Any = fn
        if inspect.iscoroutinefunction(cls.__call__):
            async def acall(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
                return await cls.__call__(self, copied(batch), *args, **kwargs)

            call: Any = acall
        else:
            def call(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
                return cls.__call__(self, copied(batch), *args, **kwargs)

        return type(cls.__name__, (cls,), {"__call__": call, "__qualname__": cls.__qualname__,
                                           "__module__": cls.__module__})

    @functools.wraps(fn)
    def wrapper(batch: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(copied(batch), *args, **kwargs)

    return wrapper


#: The keyword arguments of map / map_batches / flat_map / filter / add_column themselves: where an unknown
#: keyword (which would go to Ray as a remote option) is one of these misspelt, the error says which.
_OWN_KEYWORDS = ("fn_args", "fn_kwargs", "fn_constructor_args", "fn_constructor_kwargs", "batch_size", "batch_format",
                 "zero_copy_batch", "concurrency", "num_cpus", "num_gpus", "compute", "expr")


def _check_remote_args(label: str, ray_remote_args: dict[str, Any]) -> None:
    """Extra keywords are Ray remote options (``memory=``, ``resources=``); a misspelt argument of our own
    (``fn_kwarg=``) failed at run time with Ray's "Invalid option keyword ... for remote functions"."""
    try:
        from ray._common.ray_option_utils import actor_options, task_options
    except ImportError:  # pragma: no cover - another Ray layout: Ray checks them itself
        return
    from bridge.errors import BridgeTypeError

    if "max_calls" in ray_remote_args:
        # A @ray.remote option, not an .options() one: Ray's own ValueError came at run time, naming nothing.
        raise BridgeTypeError(
            f"{label}: max_calls={ray_remote_args['max_calls']!r} is not taken: raybridge does not restart a "
            "worker after n calls (its tasks share Ray's workers; an actor pool's actors live for the run)",
            "drop max_calls; state built once per worker (a model, GPU memory) belongs in a callable class's "
            "__init__ (map_batches(MyClass, concurrency=n)), whose actors are freed when the run ends")
    valid = set(task_options) | set(actor_options)
    unknown = [k for k in ray_remote_args if k not in valid]
    if not unknown:
        return
    import difflib

    near = difflib.get_close_matches(unknown[0], [*_OWN_KEYWORDS, *sorted(valid)], n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}=?" if near else "check the spelling; extra keywords are Ray remote options"
    raise BridgeTypeError(f"{label}: unknown keyword argument(s) {unknown} (neither an argument of this method "
                          "nor a Ray remote option such as memory= or resources=)", hint)


def _unique_columns(op: str, cols: list[str] | str) -> list[str]:
    """``cols`` as a list; a name given twice is refused (as Ray Data does) rather than duplicated or failing in a task."""
    if isinstance(cols, (set, frozenset)):
        from bridge.errors import BridgeTypeError

        msg = f"{op}: got a set of column names, whose order changes from run to run: {sorted(cols)}"
        raise BridgeTypeError(msg, f"pass a list, in the order you want: {op}({sorted(cols)})")
    cols = [cols] if isinstance(cols, str) else list(cols)
    repeated = sorted({c for c in cols if cols.count(c) > 1})
    if repeated:
        from bridge.errors import BridgeValueError

        msg = f"{op}: column names must be unique; {repeated} given more than once in {cols}"
        raise BridgeValueError(msg, f"name each column once: {op}({list(dict.fromkeys(cols))})")
    return cols


def _renaming_transform(label: str, names: dict[str, str]) -> BlockTransform:
    return _unique_names(project_transform(label, rename=names), label)


def _unique_names(inner: BlockTransform, label: str) -> BlockTransform:
    """``inner``, failing clearly if a block comes out with two columns of one name (Arrow blocks need unique ones)."""

    def run(blocks: Any, ctx: Any) -> Iterator[Block]:
        for b in inner(blocks, ctx):
            names = b.column_names
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                from bridge.errors import SchemaMismatchError

                msg = f"{label}: the result would have two columns named {dup[0]!r} (columns: {names})"
                raise SchemaMismatchError(msg, "rename to a name no other column has, or drop_columns the other one")
            yield b

    return BlockTransform(run, label)


def check_datasets(method: str, others: tuple[Any, ...]) -> None:
    """Refuse arguments of ``union`` / ``zip`` that are not Datasets (a DataFrame, a list of Datasets):
    they failed with ``AttributeError: ... has no attribute '_plan'``."""
    for i, other in enumerate(others):
        if not isinstance(other, Dataset):
            from bridge.errors import BridgeTypeError

            got = type(other).__name__
            msg = f"{method}(): argument {i + 1} is a {got}, not a raybridge Dataset"
            hint = (f"unpack a list: ds.{method}(*datasets)" if isinstance(other, (list, tuple)) else
                    f"convert it first, e.g. ds.{method}(bridge.from_any(obj)) (from_pandas, from_arrow, ...)")
            raise BridgeTypeError(msg, hint)


#: Ray Data 2.60 ``Dataset`` methods raybridge does not have: asking for one says so and how to reach it.
RAY_DATA_ONLY_METHODS = frozenset({
    "join", "with_columns", "explain", "write_images", "write_tfrecords", "write_datasink",
    "streaming_train_test_split", "iter_jax_batches", "set_name", "copy", "summary", "mix",
    "to_random_access_dataset", "get_dataset_id", "write_orc", "write_sql", "write_delta", "write_iceberg",
    "write_lance", "write_kafka", "write_mongo", "write_bigquery", "write_snowflake", "write_clickhouse",
    "write_turbopuffer", "write_webdataset", "to_daft", "serialize_lineage", "deserialize_lineage",
})


class Dataset(IngestMethods, GlobalOpsMethods, WriteMethods):
    """A distributed table of Arrow blocks with lazy transforms.  See the module docstring.

    Domain methods live in mixins next to their code: training ingest in
    ``bridge/iteration/ingest_methods.py``, global operations in
    ``bridge/ops/ops_methods.py``, file writes in ``bridge/io/write_methods.py``;
    framework conversions (``to_dask``, ``to_spark``, ...) go through ``adapters``.

    Example:
        >>> import bridge
        >>> ds = bridge.range(4).map_batches(lambda b: {"id": b["id"] * 10})  # lazy: nothing runs yet
        >>> ds.take_all()
        [{'id': 0}, {'id': 10}, {'id': 20}, {'id': 30}]
    """

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name the class does not have: Ray Data's methods raybridge lacks say so.
        if name in RAY_DATA_ONLY_METHODS:
            raise AttributeError(
                f"'Dataset' object has no attribute {name!r}: Ray Data's Dataset.{name} is not part of raybridge\n\n"
                f"Hint: convert and use Ray Data's: bridge.from_ray_data(ds.to_ray_data().{name}(...)), or "
                "see README 'Coming from Ray Data' for raybridge's equivalents")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def __init__(self, plan: LogicalOp, stats_parent: DatasetStats | None = None) -> None:
        self._plan = plan
        self._stats_parent = stats_parent
        self._last_stats: DatasetStats | None = None

    # ------------------------------------------------------------------ plan building
    def _with(self, op: LogicalOp) -> Dataset:
        return Dataset(op, self._stats_parent)

    def map_batches(
        self,
        fn: Callable[..., Any] | type,
        *,
        batch_size: int | Literal["default"] | None = None,
        batch_format: str = "numpy",
        fn_args: tuple[Any, ...] = (),
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_args: tuple[Any, ...] = (),
        fn_constructor_kwargs: dict[str, Any] | None = None,
        concurrency: int | tuple[int, int] | None = None,
        num_cpus: float | None = None,
        num_gpus: float | None = None,
        zero_copy_batch: bool = True,
        device: str | None = None,
        compute: Any = None,
        **ray_remote_args: Any,
    ) -> Dataset:
        """Apply ``fn`` to batches: ``fn(batch) -> batch`` (dict of arrays, DataFrame or Table).

        Args:
            fn: A function, or a class whose instances are callable (constructed once
                per worker; with ``concurrency`` it runs in an actor pool).
            batch_size: Rows per call; ``None`` (default; Ray Data's ``"default"`` too) passes whole
                blocks, fastest.
            batch_format: ``"numpy"`` (dict of ndarrays), ``"pandas"``, ``"pyarrow"`` or ``"torch"``
                (``{column: torch.Tensor}``, dtype rules of ``adapters/torch_format.py``).
            device: With ``batch_format="torch"``: where the tensors are, e.g. ``"cuda"`` in a
                ``num_gpus=1`` actor -- copied through pinned memory on a side stream while the
                previous batch runs, ordered against the stream the function runs on.
            concurrency: For classes, the actor pool size ``n`` or ``(min, max)``.
            num_cpus, num_gpus: Ray resources per task or actor.
            zero_copy_batch: ``True`` (default): NumPy batches are read-only views of the
                Arrow buffers where Arrow allows (as in Ray Data; ``b["x"] += 1`` raises).
                ``False``: each read-only array is copied first, so the function may
                modify the batch in place.
            compute: Ray Data's spelling of ``concurrency``:
                ``bridge.ActorPoolStrategy(size=n | min_size=, max_size=)`` (see ``bridge/compute.py``).

        Example:
            >>> import bridge
            >>> bridge.range(4).map_batches(lambda b: {"x": b["id"] * 2}).take_all()
            [{'x': 0}, {'x': 2}, {'x': 4}, {'x': 6}]
        """
        from bridge.iteration.options import check_rows

        check_callable("map_batches", fn)
        label = f"MapBatches({_fn_label(fn)})"
        # Ray Data's "default" is our default: whole blocks (no batch of a size asked for).
        rows: int | None = check_rows(label, "batch_size", None if batch_size == "default" else batch_size,
                                      minimum=1, none_ok=True, hint="pass batch_size=None to process whole blocks")
        concurrency = resolve_compute(label, compute, concurrency, isinstance(fn, type))
        if not zero_copy_batch and batch_format in ("numpy", "default"):
            fn = writable_batches(fn)
        user = UserFn(fn, fn_args, fn_kwargs or {}, fn_constructor_args, fn_constructor_kwargs or {})
        if device is not None and batch_format != "torch":
            from bridge.errors import BridgeValueError

            msg = f"{label}: device={device!r} needs batch_format='torch'; got batch_format={batch_format!r}"
            raise BridgeValueError(msg, "pass batch_format='torch' to get tensors on the device")
        make = partial(map_batches_transform, user, batch_format, rows, label, device=device)
        return self._map_like(make, label, user, concurrency, num_cpus, num_gpus, ray_remote_args,
                              min_rows=rows)

    def _map_like(
        self,
        make: Callable[[], BlockTransform],
        label: str,
        user: UserFn | None,
        concurrency: int | tuple[int, int] | None,
        num_cpus: float | None,
        num_gpus: float | None,
        ray_remote_args: dict[str, Any],
        *,
        min_rows: int | None = None,
        preserves_rows: bool = False,
        bundle_after_read: bool = False,
        schema: pa.Schema | None = None,
    ) -> Dataset:
        if user is not None and not user.is_class and (user.ctor_args or user.ctor_kwargs):
            from bridge.errors import BridgeValueError

            msg = (f"{label}: fn_constructor_args / fn_constructor_kwargs are only for a callable class; "
                   f"got the function {user.label}")
            raise BridgeValueError(msg, "pass the arguments with fn_args / fn_kwargs, or make fn a class whose "
                                   "__init__ takes them")
        uses_actors = bool(user is not None and user.is_class and concurrency is not None)
        if user is not None and user.is_class and concurrency is None:
            # A class without a pool size still gets an actor pool: state must live in an actor.
            uses_actors = True
        _check_remote_args(label, ray_remote_args)
        make()  # the factory checks its arguments (batch_format, ...): a bad one fails here, at the call
        compute = Compute(actors=uses_actors, concurrency=concurrency, num_cpus=num_cpus, num_gpus=num_gpus,
                          ray_remote_args=dict(ray_remote_args))
        op = MapLike([self._plan], label, make, fn=user, compute=compute, min_rows_per_bundle=min_rows,
                     preserves_rows=preserves_rows, bundle_after_read=bundle_after_read, schema=schema)
        return self._with(op)

    def map(self, fn: Callable[[dict[str, Any]], dict[str, Any]] | type, *,
            fn_args: tuple[Any, ...] = (), fn_kwargs: dict[str, Any] | None = None,
            fn_constructor_args: tuple[Any, ...] = (), fn_constructor_kwargs: dict[str, Any] | None = None,
            concurrency: int | tuple[int, int] | None = None, num_cpus: float | None = None,
            num_gpus: float | None = None, compute: Any = None, **ray_remote_args: Any) -> Dataset:
        """Apply ``fn(row) -> row`` to every row (a row is a dict of column -> value).

        Example:
            >>> import bridge
            >>> bridge.range(3).map(lambda r: {"id": r["id"], "sq": r["id"] ** 2}).take_all()
            [{'id': 0, 'sq': 0}, {'id': 1, 'sq': 1}, {'id': 2, 'sq': 4}]
        """
        check_callable("map", fn, "row")
        label = f"Map({_fn_label(fn)})"
        concurrency = resolve_compute(label, compute, concurrency, isinstance(fn, type))
        user = UserFn(fn, fn_args, fn_kwargs or {}, fn_constructor_args, fn_constructor_kwargs or {})
        return self._map_like(partial(map_rows_transform, user, label), label, user, concurrency, num_cpus, num_gpus,
                              ray_remote_args, preserves_rows=True)

    def flat_map(self, fn: Callable[[dict[str, Any]], list[dict[str, Any]]] | type, *,
                 fn_args: tuple[Any, ...] = (), fn_kwargs: dict[str, Any] | None = None,
                 fn_constructor_args: tuple[Any, ...] = (), fn_constructor_kwargs: dict[str, Any] | None = None,
                 concurrency: int | tuple[int, int] | None = None, num_cpus: float | None = None,
                 num_gpus: float | None = None, compute: Any = None, **ray_remote_args: Any) -> Dataset:
        """Apply ``fn(row) -> list of rows`` and flatten the results.

        Example:
            >>> import bridge
            >>> bridge.range(2).flat_map(lambda r: [r, {"id": r["id"] + 10}]).take_all()
            [{'id': 0}, {'id': 10}, {'id': 1}, {'id': 11}]
        """
        check_callable("flat_map", fn, "row")
        label = f"FlatMap({_fn_label(fn)})"
        concurrency = resolve_compute(label, compute, concurrency, isinstance(fn, type))
        user = UserFn(fn, fn_args, fn_kwargs or {}, fn_constructor_args, fn_constructor_kwargs or {})
        return self._map_like(partial(flat_map_transform, user, label), label, user, concurrency, num_cpus, num_gpus,
                              ray_remote_args)

    def filter(self, fn: Callable[[dict[str, Any]], bool] | type | None = None, *, expr: Any = None,
               fn_args: tuple[Any, ...] = (), fn_kwargs: dict[str, Any] | None = None,
               fn_constructor_args: tuple[Any, ...] = (), fn_constructor_kwargs: dict[str, Any] | None = None,
               concurrency: int | tuple[int, int] | None = None, num_cpus: float | None = None,
               num_gpus: float | None = None, compute: Any = None, **ray_remote_args: Any) -> Dataset:
        """Keep rows where ``fn(row)`` is true, or where the pyarrow ``expr`` holds (vectorised).

        ``expr`` may also be a string in Python syntax, as in Ray Data: comparisons,
        ``and`` / ``or`` / ``not``, ``in (...)``, ``is None``, arithmetic (see
        ``bridge/ops/string_expr.py``; numbers of two kinds compare exactly), or a Ray
        Data expression (``col("x") > 5`` from ``ray.data.expressions``).  Where
        the schema is known without running anything (materialized data, Parquet),
        an expression that cannot hold on it (a missing column, a string compared
        with a number, no condition) raises here, at the call.

        Example:
            >>> import bridge, pyarrow.compute as pc
            >>> bridge.range(10).filter(expr=pc.field("id") >= 8).take_all()
            [{'id': 8}, {'id': 9}]
            >>> bridge.range(10).filter(expr="id > 2 and id <= 4").take_all()
            [{'id': 3}, {'id': 4}]
        """
        from bridge.errors import BridgeValueError

        if (fn is None) == (expr is None):
            msg = "filter() needs exactly one of fn (a row predicate) or expr (a pyarrow expression)"
            raise BridgeValueError(msg, 'pass filter(lambda r: r["x"] > 0) or filter(expr=pc.field("x") > 0)')
        if expr is not None and callable(expr) and not _is_expression(expr):
            from bridge.errors import BridgeTypeError

            msg = f"filter(expr=...) takes an expression; got the function {_fn_label(expr)}"
            raise BridgeTypeError(msg, "pass a function as filter(fn), first: filter(lambda r: ...); or an "
                                       "expression as expr: filter(expr=\"x > 3\") or filter(expr=pc.field(\"x\") > 3)")
        if isinstance(expr, str):
            from bridge.ops.string_expr import parse_filter_expr

            expr = parse_filter_expr(expr)
        elif expr is not None:
            from bridge.ops.string_expr import is_ray_expr, ray_filter_expr

            if is_ray_expr(expr):
                expr = ray_filter_expr(expr)
        if fn is None:
            from bridge.ops.string_expr import expr_filter_transform
            from bridge.plan.schema import known_schema

            schema = known_schema(self._plan)  # never runs anything
            if schema is not None:  # a missing column, a type mismatch, a non-condition: raised at the call
                from bridge.block import empty_table
                from bridge.errors import BridgeError
                from bridge.execution.transform import TaskContext

                try:
                    list(expr_filter_transform(expr, f"Filter({expr})")([empty_table(schema)], TaskContext(0)))
                except BridgeError:
                    raise
                except Exception:  # noqa: BLE001, S110 - not ours to judge on no rows: the run says
                    pass
            return self._map_like(partial(expr_filter_transform, expr, f"Filter({expr})"), f"Filter({expr})", None,
                                  None, num_cpus, num_gpus, ray_remote_args)
        check_callable("filter", fn, "row")
        label = f"Filter({_fn_label(fn)})"
        concurrency = resolve_compute(label, compute, concurrency, isinstance(fn, type))
        user = UserFn(fn, fn_args, fn_kwargs or {}, fn_constructor_args, fn_constructor_kwargs or {})
        return self._map_like(partial(filter_transform, user, label), label, user, concurrency, num_cpus, num_gpus,
                              ray_remote_args)

    def add_column(self, col: str, fn: Callable[[Any], Any], *, batch_format: str = "pandas",
                   num_cpus: float | None = None, **ray_remote_args: Any) -> Dataset:
        """Add (or replace) column ``col`` computed by ``fn(batch) -> array`` (or a scalar, repeated).

        ``batch_format`` defaults to pandas, as in Ray Data; ``"pyarrow"`` and ``"numpy"`` work too.

        Example:
            >>> import bridge
            >>> bridge.range(3).add_column("neg", lambda df: -df["id"]).take_all()
            [{'id': 0, 'neg': 0}, {'id': 1, 'neg': -1}, {'id': 2, 'neg': -2}]
        """
        check_callable("add_column", fn)
        label = f"AddColumn({col})"
        user = UserFn(fn)
        # Not marked as keeping rows: fn sees a whole batch (a mean, len(df)), so a limit pushed below it
        # changed the values it computed (take(3) differed from take_all()[:3]).
        return self._map_like(partial(add_column_transform, col, user, batch_format, label), label, None, None, num_cpus,
                              None, ray_remote_args)

    def with_column(self, column_name: str, expr: Any, *, compute: Any = None, num_cpus: float | None = None,
                    num_gpus: float | None = None, **ray_remote_args: Any) -> Dataset:
        """Add (or replace, in its place) column ``column_name`` computed from ``expr`` on each block, as Ray Data.

        ``expr`` is a Ray Data expression of ``col``, ``lit`` and operators (``+ - * / // %``,
        comparisons, ``& | ~``, ``is_null`` / ``is_not_null`` / ``is_in`` / ``not_in``) with Ray
        Data's results (``/`` of two ints is Arrow's integer division), a pyarrow expression, or a
        string in Python syntax as ``filter(expr=...)`` takes (Python's ``/``, ``//``, ``%``).
        Int arithmetic stays exact: an overflow raises (Ray Data's wraps); comparisons of numbers
        are exact.  A literal alone gives a constant column.  Ray Data ``udf`` expressions are
        refused (use ``map_batches`` / ``add_column``).  Where the schema is known without
        running anything, a missing column or types no operation takes raise here, at the call,
        and the new column's type is known too (``schema()``, and a ``filter(expr=...)`` on it
        checked at its call).

        Example:
            >>> import bridge
            >>> from ray.data.expressions import col
            >>> bridge.range(3).with_column("double", col("id") * 2).take_all()
            [{'id': 0, 'double': 0}, {'id': 1, 'double': 2}, {'id': 2, 'double': 4}]
            >>> bridge.range(2).with_column("half", "id / 2").take_all()
            [{'id': 0, 'half': 0.0}, {'id': 1, 'half': 0.5}]
        """
        from bridge.ops.string_expr import check_on_schema, value_expr, with_column_transform
        from bridge.plan.schema import known_schema

        label = f"WithColumn({column_name})"
        if not isinstance(column_name, str):
            from bridge.errors import BridgeTypeError

            msg = f"with_column(): column_name must be a str; got {type(column_name).__name__} {column_name!r}"
            raise BridgeTypeError(msg, 'pass the new column\'s name first: ds.with_column("y", col("x") * 2)')
        value = value_expr(expr, "with_column")
        resolve_compute(label, compute, None, False)
        make = partial(with_column_transform, column_name, value, label)
        schema = check_on_schema(make(), known_schema(self._plan))  # never runs anything
        return self._map_like(make, label, None, None, num_cpus, num_gpus, ray_remote_args, preserves_rows=True,
                              schema=schema)

    def _project(self, label: str, columns: list[str] | None = None, **kw: Any) -> Dataset:
        op = Project([self._plan], label, partial(project_transform, label, **kw), preserves_rows=True,
                     columns=columns)
        return self._with(op)

    @checked_keywords("select_columns")
    def select_columns(self, cols: list[str] | str) -> Dataset:
        """Keep only ``cols``, in that order.

        Example:
            >>> import bridge
            >>> bridge.from_items([{"a": 1, "b": "x", "c": 2.5}]).select_columns(["b", "a"]).take_all()
            [{'b': 'x', 'a': 1}]
        """
        cols = _unique_columns("select_columns", cols)
        return self._project(f"SelectColumns({cols})", columns=cols, select=cols)

    @checked_keywords("drop_columns")
    def drop_columns(self, cols: list[str] | str) -> Dataset:
        """Remove ``cols``.

        Example:
            >>> import bridge
            >>> bridge.from_items([{"a": 1, "b": "x", "c": 2.5}]).drop_columns("c").take_all()
            [{'a': 1, 'b': 'x'}]
        """
        cols = _unique_columns("drop_columns", cols)
        return self._project(f"DropColumns({cols})", drop=cols)

    @checked_keywords("rename_columns")
    def rename_columns(self, names: dict[str, str] | list[str]) -> Dataset:
        """Rename columns by ``{old: new}``, or give every column a new name: ``[new, ...]``, one per column, in order.

        As in Ray Data: the list form needs exactly one name per column (it learns the columns from
        :meth:`schema`, running the plan up to its first block where the plan does not know them);
        names must be strings, and two columns may not end up with one name (``SchemaMismatchError``
        names them).

        Example:
            >>> import bridge
            >>> bridge.from_items([{"a": 1, "b": "x"}]).rename_columns({"a": "id"}).take_all()
            [{'id': 1, 'b': 'x'}]
            >>> bridge.from_items([{"a": 1, "b": "x"}]).rename_columns(["id", "name"]).take_all()
            [{'id': 1, 'name': 'x'}]
        """
        from bridge.errors import BridgeTypeError, BridgeValueError, SchemaMismatchError

        if isinstance(names, (list, tuple)):
            names = self._renames_by_position(list(names))
        elif not isinstance(names, dict):
            msg = f"rename_columns: names must be a dict {{old: new}} or a list of new names; got {type(names).__name__}"
            raise BridgeTypeError(msg, 'pass rename_columns({"old": "new"}) or rename_columns(["a", "b", ...])')
        if not names:
            raise BridgeValueError("rename_columns: names has no entries; got {}",
                                   'pass rename_columns({"old": "new"}), or leave the Dataset as it is')
        bad = {k: v for k, v in names.items() if not isinstance(k, str) or not isinstance(v, str)}
        if bad:
            msg = f"rename_columns: old and new names must be strings; got {bad}"
            raise BridgeValueError(msg, 'pass column names as strings, e.g. rename_columns({"0": "x"})')
        targets = list(names.values())
        clashing = sorted({n for n in targets if targets.count(n) > 1})
        if clashing:
            sources = [old for old, new in names.items() if new in clashing]
            msg = f"rename_columns: columns {sources} would all be named {clashing[0]!r}; column names must be unique"
            raise SchemaMismatchError(msg, "give each column its own new name, or drop_columns the ones not needed")
        label = f"RenameColumns({names})"
        op = Project([self._plan], label, partial(_renaming_transform, label, dict(names)), preserves_rows=True)
        return self._with(op)

    def _renames_by_position(self, new: list[Any]) -> dict[str, str]:
        """``rename_columns([...])``: ``{old: new}`` pairing the schema's columns with ``new`` in order."""
        from bridge.errors import BridgeValueError, SchemaMismatchError

        if not new:
            raise BridgeValueError("rename_columns: the list of new names is empty; got []",
                                   "pass one new name per column, in order, e.g. rename_columns(['a', 'b'])")
        not_str = [n for n in new if not isinstance(n, str)]
        if not_str:
            msg = f"rename_columns: new names must be strings; got {not_str} in {new}"
            raise BridgeValueError(msg, "pass column names as strings, e.g. rename_columns(['a', 'b'])")
        repeated = sorted({n for n in new if new.count(n) > 1})
        if repeated:
            msg = f"rename_columns: {repeated} given more than once in {new}; column names must be unique"
            raise SchemaMismatchError(msg, "give each column its own new name")
        schema = self.schema()
        if schema is None:
            msg = f"rename_columns({new}): the Dataset has no blocks, so its columns (to rename in order) are unknown"
            raise BridgeValueError(msg, 'rename by name instead: rename_columns({"old": "new"})')
        old = list(schema.names)
        if len(old) != len(new):
            msg = f"rename_columns: a list of new names needs one per column; got {len(new)} names {new} " \
                  f"for {len(old)} columns {old}"
            raise BridgeValueError(msg, f"pass {len(old)} new name{'s' if len(old) != 1 else ''} in column order, "
                                        'or a dict {"old": "new"} to rename only some')
        return dict(zip(old, new))

    @checked_keywords("limit")
    def limit(self, limit: int) -> Dataset:
        """The first ``limit`` rows (a source that can read fewer rows is asked to).

        Example:
            >>> import bridge
            >>> bridge.range(1000).limit(3).take_all()
            [{'id': 0}, {'id': 1}, {'id': 2}]
        """
        from bridge.iteration.options import check_rows

        n = check_rows("limit", "limit", limit, hint="pass a row count such as limit(100)")
        return self._with(Limit([self._plan], n))

    def union(self, *others: Dataset) -> Dataset:
        """Rows of this Dataset followed by those of ``others``.

        Schemas must unify (same columns, promotable types), else ``SchemaMismatchError``
        naming the columns: at once for materialised inputs, otherwise when blocks arrive.
        Where the plan knows every input's schema, each input's blocks take the union's
        (its column order, int32 -> int64, null -> a type), so batches keep one dtype;
        a value the promotion would change (2**53 + 1 into float64) raises instead.

        Example:
            >>> import bridge
            >>> bridge.range(2).union(bridge.range(3)).take_all()
            [{'id': 0}, {'id': 1}, {'id': 0}, {'id': 1}, {'id': 2}]
        """
        from bridge.ops.zip_op import check_union_schemas

        check_datasets("union", others)
        known = [(i, d._plan) for i, d in enumerate((self, *others)) if isinstance(d._plan, InputData)]
        check_union_schemas("union", [_first_schema(p.bundles) for _, p in known], [i for i, _ in known])
        return self._with(Union(_conformed([self._plan, *[o._plan for o in others]])))

    # ------------------------------------------------------------------ execution
    def _execute(self, ctx: DataContext | None = None, *, to_iterate: bool = False
                 ) -> tuple[Iterator[RefBundle], DatasetStats]:
        """Start the plan: its output bundles (a stream that ``close()`` stops) and its stats.

        ``to_iterate``: the caller only iterates the blocks in this process, so a bare read
        may run in it (:mod:`bridge.execution.driver_read`): then the stream is a
        :class:`~bridge.execution.driver_read.DriverRead`, whose ``iter_blocks()`` gives the blocks.
        """
        from bridge._ray import ensure_ray
        from bridge.execution.planner import plan as physical_plan
        from bridge.execution.streaming_executor import StreamingExecutor
        from bridge.plan.logical import check_blocks_alive
        from bridge.plan.optimizer import optimize

        check_blocks_alive(self._plan)  # (before ensure_ray: it would start a Ray that holds none of them)
        ensure_ray()
        ctx = (ctx or DataContext.get_current()).copy()
        stats = DatasetStats(parent=self._stats_parent)
        self._last_stats = stats
        if isinstance(self._plan, InputData):
            stats.end = stats.start
            return ReadyBundles(self._plan.bundles), stats
        optimized = optimize(self._plan)
        if to_iterate:
            from bridge.execution.driver_read import driver_read

            local = driver_read(optimized, ctx, stats)
            if local is not None:
                return local, stats  # type: ignore[return-value]  # iterated through iter_blocks()
        ops = physical_plan(optimized, ctx)
        executor = StreamingExecutor(ops, ctx, stats)
        return executor.iter_bundles(), stats

    def block_layout(self) -> BlockLayout:
        """The blocks (executing the plan once), their row offsets and schema: what an adapter that hands
        blocks to another engine needs (see :class:`~bridge.execution.bundle.BlockLayout`).

        Example:
            >>> import bridge
            >>> layout = bridge.range(10, override_num_blocks=2).block_layout()
            >>> layout.starts, layout.num_rows, [rows for _, rows in layout.blocks]
            ([0, 5], 10, [5, 5])
        """
        from bridge.execution.bundle import BlockLayout

        return BlockLayout.of(self.iter_internal_ref_bundles())

    def iter_internal_ref_bundles(self) -> Iterator[RefBundle]:
        """The output as :class:`RefBundle` s of block references (no data fetched).

        Example:
            >>> import bridge
            >>> [b.num_rows for b in bridge.range(10, override_num_blocks=2).iter_internal_ref_bundles()]
            [5, 5]
        """
        bundles, _ = self._execute()
        yield from bundles

    @checked_keywords("materialize")
    def materialize(self) -> MaterializedDataset:
        """Run the plan once and hold the blocks in the object store.

        Transforms applied to the result start from these blocks, so they run per
        epoch while everything before runs once.  Blocks a function gave in types
        that widen exactly to one (int32 and int64, a column of None and strings)
        are held in that one type, the one ``schema()`` reports; others (int64
        here, float64 there) stay as they came, as in Ray Data.

        Example:
            >>> import bridge
            >>> bridge.range(10, override_num_blocks=2).map_batches(lambda b: {"x": b["id"] * 2}).materialize()
            MaterializedDataset(num_blocks=2, num_rows=10, schema=x: int64)
        """
        from bridge.constructors.memory import one_schema_where_exact

        bundles, stats = self._execute()
        collected = one_schema_where_exact([b for b in bundles], "materialize")
        return MaterializedDataset(InputData([], collected, "Materialized", lineage=self._plan), stats)

    def stats(self) -> str:
        """Per-operator wall time, CPU time, rows and bytes of the last execution.

        Example:
            >>> import bridge
            >>> ds = bridge.range(10).map_batches(lambda b: b)
            >>> ds.stats()
            'No execution yet: consume the Dataset (iterate, count, materialize) first.'
            >>> ds.count()
            10
            >>> "MapBatches(<lambda>)" in ds.stats()
            True
        """
        if self._last_stats is None:
            return "No execution yet: consume the Dataset (iterate, count, materialize) first."
        return self._last_stats.to_string()

    # ------------------------------------------------------------------ consumption
    @checked_keywords("iter_batches")
    def iter_batches(
        self,
        *,
        batch_size: int | None = 256,
        batch_format: str = "numpy",
        prefetch_batches: int = 1,
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
    ) -> Iterator[Any]:
        """Iterate over batches of ``batch_size`` rows.

        Example:
            >>> import bridge
            >>> [len(b["id"]) for b in bridge.range(10).iter_batches(batch_size=4)]
            [4, 4, 2]
        """
        # A resumable iterator (state_dict / load_state_dict): see bridge/iteration/resumable.py.
        from bridge.iteration.options import BatchOptions
        from bridge.iteration.resumable import BatchIterator

        return BatchIterator(self, BatchOptions(
            batch_size=batch_size, batch_format=batch_format, prefetch_batches=prefetch_batches,
            drop_last=drop_last, local_shuffle_buffer_size=local_shuffle_buffer_size,
            local_shuffle_seed=local_shuffle_seed,
        ))

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Iterate over rows as dicts; a second ``for`` over the result makes a new full pass.

        Example:
            >>> import bridge
            >>> for row in bridge.range(2).iter_rows():
            ...     print(row)
            {'id': 0}
            {'id': 1}
        """
        from bridge.iteration.data_iterator import RowIterator

        return RowIterator(lambda: self.iter_batches(batch_size=None, batch_format="pyarrow"))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iter_rows()

    def __len__(self) -> int:
        # Not a map-style torch dataset: torch.utils.data.DataLoader(ds) called len() and failed with
        # "object of type 'Dataset' has no len()". A TypeError, so list(ds) still works (it asks len() for a size hint only).
        from bridge.errors import BridgeTypeError

        msg = ("a raybridge Dataset has no len(): it is lazy, counting its rows runs it (ds.count()); "
               "torch.utils.data.DataLoader(ds) asks len() of a map-style dataset, which a Dataset is not")
        raise BridgeTypeError(msg, "for torch, pass DataLoader(ds.to_torch(batch_size=None), batch_size=32) "
                                   "(an IterableDataset), or loop over ds.iter_torch_batches(batch_size=32); "
                                   "for the row count call ds.count()")

    def __bool__(self) -> bool:
        return True  # (``__len__`` raises: ``if ds:`` must not call it)

    def _blocks(self) -> list[Block]:
        from bridge.iteration.batch_iterator import blocks_from_bundles

        bundles, _ = self._execute()
        return list(blocks_from_bundles(bundles))

    def to_arrow(self) -> pa.Table:
        """All rows as one ``pyarrow.Table`` on the driver.

        Example:
            >>> import bridge
            >>> bridge.range(3, override_num_blocks=2).to_arrow().to_pydict()
            {'id': [0, 1, 2]}
        """
        from bridge.execution.driver_memory import DriverBudget
        from bridge.execution.lineage import get_blocks

        bundles, _ = self._execute()
        budget, refs = DriverBudget("to_arrow"), []
        for b in bundles:
            budget.add(b.size_bytes)  # InsufficientMemoryError before anything is fetched
            refs.extend(b.refs)
        blocks = get_blocks(refs)
        nonempty = [b for b in blocks if b.num_rows] or blocks[:1]
        if not nonempty:
            return pa.table({})
        return concat_blocks(nonempty)

    @checked_keywords("to_pandas")
    def to_pandas(self, limit: int | None = None) -> pandas.DataFrame:
        """All rows as a ``pandas.DataFrame`` (index restored when the source had one).

        ``limit``: a safety cap, as in Ray Data: raises if the Dataset has more rows (use
        ``ds.limit(n).to_pandas()`` for the first ``n``).

        Example:
            >>> import bridge
            >>> bridge.from_items([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]).to_pandas()
               a  b
            0  1  x
            1  2  y
        """
        from bridge.pandas_types import block_to_pandas

        if limit is None:
            return block_to_pandas(self.to_arrow(), schema_attr=True)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            from bridge.errors import BridgeValueError

            raise BridgeValueError(f"to_pandas(limit={limit!r}) needs a row count >= 0",
                                   "pass the most rows you expect, e.g. to_pandas(limit=1_000_000)")
        table = self.limit(limit + 1).to_arrow()
        if table.num_rows > limit:
            from bridge.errors import BridgeValueError

            # It once returned the first `limit` rows: code that passes a cap lost the rest without a word.
            msg = f"to_pandas(limit={limit}): the Dataset has more than {limit} rows"
            raise BridgeValueError(msg, f"raise the limit, or take the first rows with ds.limit({limit}).to_pandas()")
        return block_to_pandas(table, schema_attr=True)

    @checked_keywords("take")
    def take(self, limit: int = 20) -> list[dict[str, Any]]:
        """The first ``limit`` rows as dicts.

        Example:
            >>> import bridge
            >>> bridge.range(100).take(2)
            [{'id': 0}, {'id': 1}]
        """
        from bridge.iteration.options import check_rows

        n = check_rows("take", "limit", limit, hint="pass a row count such as take(20)")
        out: list[dict[str, Any]] = []
        for row in self.limit(n).iter_rows():
            out.append(row)
        return out

    @checked_keywords("take_all")
    def take_all(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Every row as a dict (``limit`` raises if there are more).

        Example:
            >>> import bridge
            >>> bridge.range(3).take_all()
            [{'id': 0}, {'id': 1}, {'id': 2}]
        """
        from bridge.iteration.options import check_rows

        limit = check_rows("take_all", "limit", limit, none_ok=True,
                           hint="pass the most rows you expect, e.g. take_all(limit=1000), or None for no cap")
        rows = list(self.iter_rows())
        if limit is not None and len(rows) > limit:
            from bridge.errors import BridgeValueError

            msg = f"take_all(limit={limit}) found {len(rows)} rows"
            raise BridgeValueError(msg, "raise the limit, or use take(n) for the first n rows")
        return rows

    @checked_keywords("take_batch")
    def take_batch(self, batch_size: int = 20, *, batch_format: str = "numpy") -> Any:
        """The first ``batch_size`` rows as one batch.

        Example:
            >>> import bridge
            >>> bridge.range(10).take_batch(3)
            {'id': array([0, 1, 2])}
            >>> bridge.range(10).take_batch(2, batch_format="pandas")
               id
            0   0
            1   1
        """
        from bridge.iteration.options import check_rows

        fmt = batch_mod.normalize_format(batch_format)
        batch_size = check_rows("take_batch", "batch_size", batch_size, minimum=1, hint="pass e.g. take_batch(20)")
        block = self.limit(batch_size).to_arrow()
        if block.num_rows == 0:
            from bridge.errors import DatasetEmptyError

            msg = f"take_batch({batch_size}): the Dataset has no rows"
            raise DatasetEmptyError(msg, "check the source and any filters; take() returns [] instead of raising")
        return batch_mod.to_batch(block, fmt)

    @checked_keywords("show")
    def show(self, limit: int = 20) -> None:
        """Print the first ``limit`` rows.

        Example:
            >>> import bridge
            >>> bridge.range(100).show(2)
            {'id': 0}
            {'id': 1}
        """
        from bridge.iteration.options import check_rows

        for row in self.take(check_rows("show", "limit", limit, hint="pass a row count such as show(20)")):
            print(row)

    @checked_keywords("count")
    def count(self) -> int:
        """Number of rows: from the plan where it says, without running it (blocks in the store, an exact
        source, and sorts, shuffles, repartitions, selections, limits and unions of those: such a plan that
        would fail when run, a sort by a missing column, fails when read, not here, as in Ray Data); else
        from the blocks' metadata once run, without fetching them.

        Example:
            >>> import bridge
            >>> bridge.range(10).filter(lambda r: r["id"] < 4).count()
            4
        """
        known = known_num_rows(self._plan)
        if known is not None:
            return known
        bundles, _ = self._execute()
        return sum(b.num_rows for b in bundles)

    @checked_keywords("schema")
    def schema(self) -> pa.Schema | None:
        """The Arrow schema: from the plan when it says (sources, selections, limits), else by
        running the plan up to its first non-empty block.  A materialized Dataset's is the
        promotion of all its blocks' schemas (int32 + int64 -> int64), as Ray Data's; a
        union's the promotion of its inputs' (a column of None + ints -> int64).

        Example:
            >>> import bridge
            >>> bridge.from_items([{"a": 1, "b": "x"}]).schema()
            a: int64
            b: string
        """
        from bridge.plan.schema import known_schema

        plan = self._plan
        if isinstance(plan, InputData):
            # Every block is known: their schemas' promotion, as Ray Data's; SchemaMismatchError names
            # a column no one type holds (a function's output can differ by block).
            from bridge.plan.schema import blocks_schema

            return blocks_schema([m for b in plan.bundles for m in b.metas], "schema")
        known = known_schema(plan)
        if known is not None:
            return known
        if isinstance(plan, Union):
            from bridge.plan.schema import union_schema

            union = union_schema([Dataset(i, self._stats_parent).schema() for i in plan.inputs])
            if union is not None:
                return union
        bundles, _ = self._execute()
        seen: list[RefBundle] = []
        try:
            for b in bundles:
                seen.append(b)
                if b.num_rows:
                    break
        finally:
            close = getattr(bundles, "close", None)
            if close:
                close()
        return _first_schema(seen)

    @checked_keywords("columns")
    def columns(self, fetch_if_missing: bool = True) -> list[str] | None:
        """Column names; ``fetch_if_missing=False`` returns ``None`` rather than run the plan to learn them
        (names the plan knows without running, e.g. a Parquet source's or a selection's, still come back).

        Example:
            >>> import bridge
            >>> bridge.range(3).select_columns(["id"]).columns(fetch_if_missing=False)
            ['id']
        """
        if not fetch_if_missing and not isinstance(self._plan, InputData):
            from bridge.plan.schema import known_schema

            known = known_schema(self._plan)
            return list(known.names) if known is not None else None
        schema = self.schema()
        return list(schema.names) if schema is not None else []

    def num_blocks(self) -> int:
        """Number of blocks (runs the plan unless materialised).

        Example:
            >>> import bridge
            >>> bridge.range(10, override_num_blocks=2).num_blocks()
            2
        """
        plan = self._plan
        if isinstance(plan, InputData):
            return sum(len(b.refs) for b in plan.bundles)
        return sum(len(b.refs) for b in self.iter_internal_ref_bundles())

    def input_files(self) -> list[str]:
        """The files the Dataset reads or was read from, each once, in plan order (``[]`` for in-memory sources).

        Learned from the plan's read operators (their files were listed when the
        Dataset was made) and, for a materialized Dataset, from its blocks'
        metadata and the plan that produced them: nothing is read.

        Example:
            >>> import bridge
            >>> bridge.range(3).input_files()
            []
        """
        files: dict[str, None] = {}
        seen: set[int] = set()
        todo: list[LogicalOp] = [self._plan]
        while todo:
            op = todo.pop()
            if id(op) in seen:
                continue
            seen.add(id(op))
            if isinstance(op, Read):
                for task in op.datasource.get_read_tasks(op.parallelism_for()):
                    files.update(dict.fromkeys(task.metadata.input_files or ()))
            elif isinstance(op, InputData):
                for bundle in op.bundles:
                    for m in bundle.metas:
                        files.update(dict.fromkeys(m.input_files or ()))
                if op.lineage is not None:
                    todo.append(op.lineage)
            todo.extend(reversed(op.inputs))
        return list(files)

    def size_bytes(self) -> int:
        """Bytes of the blocks in the object store (runs the plan unless materialised).

        Example:
            >>> import bridge
            >>> bridge.range(10).size_bytes()  # ten int64 values
            80
        """
        plan = self._plan
        if isinstance(plan, InputData):
            return sum(b.size_bytes for b in plan.bundles)
        return sum(b.size_bytes for b in self.iter_internal_ref_bundles())

    # ------------------------------------------------------------------ refs
    def to_arrow_refs(self) -> list[ray.ObjectRef]:
        """References to the blocks (``pyarrow.Table`` each), in order.

        Example:
            >>> import bridge, ray
            >>> [t.to_pydict() for t in ray.get(bridge.range(4, override_num_blocks=2).to_arrow_refs())]
            [{'id': [0, 1]}, {'id': [2, 3]}]
        """
        return [r for b in self.iter_internal_ref_bundles() for r in b.refs]

    def get_internal_block_refs(self) -> list[ray.ObjectRef]:
        """The same as :meth:`to_arrow_refs` (Ray Data's older name).

        Example:
            >>> import bridge, ray
            >>> [t.num_rows for t in ray.get(bridge.range(4, override_num_blocks=2).get_internal_block_refs())]
            [2, 2]
        """
        return self.to_arrow_refs()

    def to_pandas_refs(self) -> list[ray.ObjectRef]:
        """References to one ``pandas.DataFrame`` per block, converted in Ray tasks.

        Example:
            >>> import bridge, ray
            >>> [df["id"].tolist() for df in ray.get(bridge.range(4, override_num_blocks=2).to_pandas_refs())]
            [[0, 1], [2, 3]]
        """
        return [_block_to_pandas.remote(r) for r in self.to_arrow_refs()]

    def to_numpy_refs(self, *, column: str | None = None) -> list[ray.ObjectRef]:
        """References to one dict of ndarrays per block (or one ndarray of ``column``).

        Example:
            >>> import bridge, ray
            >>> ray.get(bridge.range(4, override_num_blocks=2).to_numpy_refs())
            [{'id': array([0, 1])}, {'id': array([2, 3])}]
            >>> ray.get(bridge.range(4, override_num_blocks=2).to_numpy_refs(column="id"))
            [array([0, 1]), array([2, 3])]
        """
        refs = self.to_arrow_refs()
        if column is not None:
            check_numpy_column(column, self.columns() or [], "to_numpy_refs")
        return [_block_to_numpy.remote(r, column) for r in refs]

    # ------------------------------------------------------------------ interchange
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream: polars, DuckDB and pyarrow read a Dataset directly."""
        batches = self.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=1)
        first = next(batches, None)
        if first is None:
            schema = self.schema() or pa.schema([])
            reader = pa.RecordBatchReader.from_batches(schema, iter([]))
        else:
            schema = first.schema

            def gen() -> Iterator[pa.RecordBatch]:
                for t in [first]:
                    yield from t.cast(schema).to_batches()
                for t in batches:
                    yield from t.cast(schema).to_batches()

            reader = pa.RecordBatchReader.from_batches(schema, gen())
        return reader.__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        from bridge.plan.schema import known_schema

        ops = " -> ".join(op.name for op in self._plan.chain())
        schema = known_schema(self._plan)  # never runs anything
        if schema is None:
            return f"Dataset({ops})"
        fields = ", ".join(f"{f.name}: {f.type}" for f in schema)
        return f"Dataset({ops}, schema={{{fields}}})"

    def __reduce__(self) -> Any:
        return (Dataset, (self._plan, self._stats_parent))

    # Framework exporters live in adapters; these are the named doors.
    def to_any(self, target: str, **options: Any) -> Any:
        """Convert with the adapter registered as ``target`` (``"dask"``, ``"spark"``, ...).

        Example:
            >>> import bridge
            >>> bridge.range(3).to_any("numpy", column="id")
            array([0, 1, 2])
        """
        from bridge.registry import get_adapter

        return get_adapter(target).from_dataset(self, **options)

    def to_dask(self, **options: Any) -> Any:
        """A Dask DataFrame with one partition per block (see ``adapters/dask_adapter.py``).

        Example:
            >>> import bridge
            >>> ddf = bridge.range(10, override_num_blocks=2).to_dask()
            >>> ddf.npartitions, int(ddf["id"].sum().compute())
            (2, 45)
        """
        return self.to_any("dask", **options)

    def to_spark(self, spark: Any = None, **options: Any) -> Any:
        """A Spark DataFrame (see ``adapters/spark_adapter.py``); ``spark=None`` uses the active session.

        Example:
            >>> import bridge
            >>> from pyspark.sql import SparkSession
            >>> spark = SparkSession.builder.master("local[1]").getOrCreate()  # doctest: +SKIP
            >>> bridge.range(10).to_spark(spark).count()  # doctest: +SKIP
            10
        """
        return self.to_any("spark", spark=spark, **options)

    def to_modin(self, **options: Any) -> Any:
        """A Modin DataFrame (see ``adapters/modin_adapter.py``).

        Example:
            >>> import bridge
            >>> bridge.range(3).to_modin()
               id
            0   0
            1   1
            2   2
        """
        return self.to_any("modin", **options)

    def to_mars(self, **options: Any) -> Any:
        """A Mars (Xorbits) DataFrame (see ``adapters/mars_adapter.py``).

        Example:
            >>> import bridge
            >>> import xorbits  # doctest: +SKIP
            >>> xorbits.init()  # doctest: +SKIP
            >>> int(bridge.range(10).to_mars()["id"].sum())  # doctest: +SKIP
            45
        """
        return self.to_any("mars", **options)

    def to_ray_data(self, **options: Any) -> Any:
        """A ``ray.data.Dataset`` over the same blocks (see ``adapters/ray_data_adapter.py``).

        Example:
            >>> import bridge
            >>> bridge.range(5).to_ray_data().count()
            5
        """
        return self.to_any("ray_data", **options)

    def to_numpy(self, *, column: str | None = None) -> Any:
        """All rows as a dict of ndarrays (or one ndarray for ``column``).

        Example:
            >>> import bridge
            >>> bridge.range(3).to_numpy()
            {'id': array([0, 1, 2])}
            >>> bridge.range(3).to_numpy(column="id")
            array([0, 1, 2])
        """
        return self.to_any("numpy", column=column)


class MaterializedDataset(Dataset):
    """A Dataset whose blocks are computed and held in the object store.

    Example:
        >>> import bridge
        >>> ds = bridge.range(6, override_num_blocks=2).materialize()
        >>> ds
        MaterializedDataset(num_blocks=2, num_rows=6, schema=id: int64)
        >>> ds.count()  # read from the held blocks' metadata
        6
    """

    def __init__(self, plan: InputData, stats: DatasetStats | None = None) -> None:
        super().__init__(plan, stats)
        self._last_stats = stats
        from bridge.execution import lineage  # names the source when a block is lost (BlockLostError)

        lineage.remember(plan.bundles, _source_label(plan))

    def __repr__(self) -> str:
        plan = self._plan
        assert isinstance(plan, InputData)
        rows = sum(b.num_rows for b in plan.bundles)
        from bridge.plan.schema import known_schema

        # repr never raises: blocks no one schema holds (a function's output) say so; schema() says which column.
        schema = known_schema(plan) or "<blocks of types no one type holds: see schema()>"
        return f"MaterializedDataset(num_blocks={self.num_blocks()}, num_rows={rows}, schema={schema})"

    def __reduce__(self) -> Any:
        return (MaterializedDataset, (self._plan, self._stats_parent))


def _conformed(plans: list[LogicalOp]) -> list[LogicalOp]:
    """``union``'s inputs, each whose schema the plan knows and that differs from the union's (another column
    order, a narrower type) given a step that makes its blocks the union's (:func:`conform_transform`).
    Where an input's schema is known only by running, its blocks stay as they come (as Ray Data's)."""
    from bridge.plan.schema import known_schema, union_schema

    schemas = [known_schema(p) for p in plans]
    target = union_schema(schemas)
    if target is None:
        return plans
    return [p if s is None or same_layout(s, target) else
            Project([p], "Conform", partial(conform_transform, "union", target), preserves_rows=True, schema=target)
            for p, s in zip(plans, schemas)]


def _source_label(plan: InputData) -> str:
    if plan.lineage is None:
        return plan.source_name
    return f"{plan.source_name}({' -> '.join(op.name for op in plan.lineage.chain())})"


def _first_schema(bundles: list[RefBundle]) -> pa.Schema | None:
    from bridge.execution.bundle import first_schema

    return first_schema(m for b in bundles for m in b.metas)


@ray.remote
def _block_to_pandas(block: Block) -> Any:
    from bridge.pandas_types import block_to_pandas

    return block_to_pandas(block, schema_attr=True)


def check_numpy_column(column: Any, names: list[str], where: str) -> None:
    """``column`` names one column of ``names``: else a clear error now, not a KeyError in a task."""
    if isinstance(column, str) and column in names:
        return
    from bridge.errors import BridgeValueError

    if not isinstance(column, str):
        raise BridgeValueError(f"{where}(column={column!r}) takes one column name", f"pass one of {names}")
    raise BridgeValueError(f"{where}(column={column!r}): the Dataset has no such column (columns: {names})",
                           "name a column as ds.schema() does, or leave column= out for a dict of every column")


@ray.remote
def _block_to_numpy(block: Block, column: str | None) -> Any:
    if column is not None:
        return batch_mod.column_to_numpy(block.column(column))
    return batch_mod.to_numpy_batch(block)


__all__ = ["Dataset", "MapLike", "MaterializedDataset", "Project", "check_numpy_column"]
