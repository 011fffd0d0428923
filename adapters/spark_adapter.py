"""Spark DataFrames <-> Datasets, on any SparkSession (local, cluster) and on Spark-on-Ray (RayDP).

Spark -> Dataset (``bridge.from_spark``): Spark's Arrow writer converts each partition in the
JVM (no pandas), the driver receives the Arrow record batches and ``ray.put`` s them as blocks.
The driver owns every block, so the Dataset stays valid after ``spark.stop()`` /
``bridge.stop_spark()``; nothing touches disk.  Two paths, chosen by ``method``:

* ``"arrow_collect"`` (the ``"auto"`` choice when the session offers it): the JVM's Arrow batches
  through ``DataFrame._collect_as_arrow()`` (pyspark 3.x and 4.x, the JVM code path ``toPandas``
  and pyspark 4's public ``toArrow()`` use; ``toArrow()`` itself only where that is missing).
  The fastest way, and the lightest on memory (benchmark ``spark_from``).
* ``"map_in_arrow"``: every executor writes its partitions as Arrow IPC streams through the public
  ``DataFrame.mapInArrow`` (pyspark >= 3.3) and ``collect()`` brings the bytes to the driver.  Slower
  (a Python worker per executor, bytes pickled through the JVM) but public on every pyspark, so
  ``"auto"`` falls back to it when neither collection API exists (e.g. Spark Connect).

Dataset -> Spark (``ds.to_spark(spark)``): each block is first cast, on the driver and one block at
a time, to the Arrow form of the target Spark schema where it differs (so a column Spark cannot hold
raises at the call).  Then, chosen by ``method``:

* ``"object_store"`` (the ``"auto"`` choice where Spark's executors run on the Ray cluster's
  machines: a ``local[...]`` master or Spark on Ray, for a Dataset larger than an eighth of the
  Spark driver's heap): a frame of block indices (``spark.range``, one partition per block) whose
  ``mapInArrow`` reads each block zero-copy from Ray's object store in Spark's Python worker (which
  connects to the Ray cluster once).  Neither the driver nor the JVM holds the data; a holder actor
  keeps the blocks alive until the DataFrame's SparkContext stops, since Spark re-reads them at
  every action -- each of which then starts a Python task per block (in local mode about a second
  per action whatever the size; benchmark notes in integration/bench/RESULTS.md).
* ``"copy"`` (the ``"auto"`` choice elsewhere, and for a Dataset of at most an eighth of the Spark
  driver's heap, which it then holds at little cost, with actions that run in the JVM alone and
  no blocks pinned): each block becomes one Arrow record batch in the exact layout Spark's own Arrow reader
  expects, streamed (the driver holds one block at a time) into the JVM the way pyspark's
  ``createDataFrame`` of pandas / Arrow data sends its batches, one partition per block; the
  executors decode the batches in the JVM, no Python worker involved.  The data then lives in
  Spark: the DataFrame needs neither the Dataset nor Ray.  The batches pass through the Spark
  driver's heap once (as with ``createDataFrame``).  Where pyspark lacks that internal path, the
  public one: ``sparkContext.parallelize`` of one Arrow IPC stream per block, decoded by
  ``mapInArrow`` in Python workers -- 3-4x slower and about 3x the driver heap while counted
  (a 156 MiB Dataset: 605 vs 202 MiB after ``count()``, 6.7 vs 1.6 s); a Python worker's input
  thread that runs out of heap leaves Spark's task waiting for good.

No Ray task runs in either, so a Spark-on-Ray cluster that holds every CPU cannot make it hang.

Types follow the table in :mod:`raybridge_adapters.spark_types`.

Example:
    >>> import bridge
    >>> ds = bridge.from_spark(spark.range(100))           # doctest: +SKIP
    >>> ds.map_batches(lambda b: {"y": b["id"] * 2}).to_spark(spark).count()  # doctest: +SKIP
    100
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from bridge.errors import BridgeError, BridgeValueError
from bridge.plan.schema import blocks_schema

from . import spark_types

if TYPE_CHECKING:
    from bridge.dataset import Dataset, MaterializedDataset

_FROM_METHODS = ("auto", "map_in_arrow", "arrow_collect")
_TO_METHODS = ("auto", "object_store", "copy")

#: Java 17 module openings RayDP's Ray serializer and Spark's Arrow code need (STACK.md, issue 4).
JAVA17_OPTIONS = " ".join(
    [f"--add-opens=java.base/{pkg}=ALL-UNNAMED" for pkg in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.math",
        "java.text", "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch",
        "sun.nio.cs", "sun.security.action", "sun.util.calendar")]
    + ["--add-opens=java.sql/java.sql=ALL-UNNAMED", "-Dio.netty.tryReflectionSetAccessible=true"]
)
_JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions",
                     "spark.ray.raydp_app_master.extraJavaOptions")
_spark_lock = threading.Lock()
_python_exec_lock = threading.RLock()


# ---------------------------------------------------------------- executor-side functions
def _make_ipc_encoder(max_bytes: int) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function: a partition's batches -> rows of Arrow IPC streams of <= max_bytes.

    Built as a closure so cloudpickle ships it by value: executors need pyarrow, not raybridge.
    """

    def encode(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        pending: list[Any] = []
        size = 0

        def flush() -> Any:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, pending[0].schema) as writer:
                for b in pending:
                    writer.write_batch(b)
            payload = sink.getvalue()
            offsets = pa.py_buffer(pa.array([0, payload.size], pa.int32()).buffers()[1])
            column = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, payload])  # no copy of the stream
            return pa.RecordBatch.from_arrays([column], names=["ipc"])

        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            size += batch.nbytes
            if size >= max_bytes:
                yield flush()
                pending, size = [], 0
        if pending:
            yield flush()

    return encode


def _make_ipc_decoder() -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function: rows of Arrow IPC streams -> their record batches."""

    def decode(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            for payload in batch.column(0):
                yield from pa.ipc.open_stream(payload.as_buffer())

    return decode


@contextlib.contextmanager
def _workers_run_this_python(spark: Any) -> Iterator[None]:
    """Our ``mapInArrow`` functions run in this interpreter where Spark's workers share the machine.

    A session built without ``PYSPARK_PYTHON`` runs its workers with the ``python3`` on ``PATH``,
    which may lack pyarrow (Spark then fails with a bare ``ModuleNotFoundError`` in the worker).
    Spark records the interpreter in each Python function when it is made, so only the functions
    made inside this block change; the user's own UDFs keep the session's setting.
    """
    try:
        sc = spark.sparkContext
        master = str(sc.master or "")
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: its server runs the workers
        yield
        return
    if not master.startswith("local"):
        yield
        return
    with _python_exec_lock:  # one swap at a time: another thread's function must not record the restored value
        current = getattr(sc, "pythonExec", None)
        if current is None or current == sys.executable:
            yield
            return
        sc.pythonExec = sys.executable
        try:
            yield
        finally:
            sc.pythonExec = current


# ---------------------------------------------------------------- Spark -> Dataset
def _session_time_zone(df: Any) -> str | None:
    try:
        return df.sparkSession.conf.get("spark.sql.session.timeZone")
    except Exception:  # noqa: BLE001 - an unreadable conf only loses the zone name of empty frames
        return None


def _arrow_zone(spark_zone: str | None) -> str | None:
    """The session zone as Arrow names it (``GMT+05:30`` -> ``+05:30``, ``PST`` -> ``America/Los_Angeles``)."""
    return spark_types.arrow_time_zone(spark_zone) if spark_zone else None


def _conf(spark: Any, key: str) -> str | None:
    try:
        return spark.conf.get(key)
    except Exception:  # noqa: BLE001 - an unreadable conf only skips the time-zone rule's warning
        return None


def _exceeds_max_result_size(err: Exception) -> bool:
    return "maxResultSize" in str(err)


def _wrap_spark_failure(err: Exception, what: str, by_partition: bool = False) -> BridgeError:
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    if _exceeds_max_result_size(err):
        cause = next((line.strip() for line in text.splitlines() if "maxResultSize" in line), first)
        msg = f"{what}: the collected result is larger than Spark allows: {cause[:500]}"
        hint = "build the session with .config('spark.driver.maxResultSize', '0') (no limit) or a larger size"
        if by_partition:  # the fallback itself failed: one partition alone is over the limit
            msg += " (read partition by partition: one partition alone is larger)"
            hint += ", or cut the frame into more partitions (df.repartition(n), or from_spark(parallelism=n))"
        else:
            hint += ", or pass method='auto' (the default), which then reads partition by partition"
        return BridgeError(msg, hint)
    # A Py4JJavaError's first line only names the JVM call: its root cause (the last "Caused by:"), else the
    # first line naming an exception, says what failed.
    lines = [line.strip() for line in text.splitlines()[1:]]
    causes = [line.removeprefix("Caused by:").strip() for line in lines if line.startswith("Caused by:")]
    cause = causes[-1] if causes else next((line for line in lines if "Exception:" in line or "Error:" in line), "")
    msg = f"{what}: the Spark job failed with {type(err).__name__}: {first[:500]}"
    if cause and cause not in first:
        msg += f" ({cause[:500]})"
    if "pyarrow" in text or "No module named" in text or "ModuleNotFoundError" in text:
        hint = ("the executors' Python needs pyarrow: set PYSPARK_PYTHON (or spark.pyspark.python) to the "
                f"interpreter running raybridge ({sys.executable}); see the Spark log for the executor error")
    else:
        hint = ("the frame's own job failed: run an action on it in Spark (e.g. df.count()) to see the error "
                "without raybridge, and see the Spark log for the executor error")
    return BridgeError(msg, hint)


def _stopped(session: Any) -> bool:
    """Whether ``session``'s SparkContext was stopped (``False`` for one we cannot inspect: its job says)."""
    try:
        return session.sparkContext._jsc is None
    except Exception:  # noqa: BLE001 - a session we cannot inspect: let the job say what is wrong
        return False


def _check_session_running(df: Any, what: str) -> None:
    """A frame of a stopped session fails in Py4J with a message that points nowhere near the cause."""
    if _stopped(df.sparkSession):
        msg = f"{what}: the SparkSession of this DataFrame was stopped (spark.stop() or bridge.stop_spark())"
        raise BridgeError(msg, "create a new SparkSession (or bridge.init_spark) and build the DataFrame "
                          "again from it; a Dataset made before the stop stays valid")


def _check_target_session(spark: Any) -> None:
    """``to_spark(spark)`` of what is no running SparkSession: a string or a SparkContext failed as "the Spark
    job failed with AttributeError", and a stopped session with Py4J's "Cannot call methods on a stopped
    SparkContext", both with a hint about the frame's own job."""
    from pyspark.sql import SparkSession

    from bridge.errors import BridgeTypeError

    if not isinstance(spark, SparkSession):
        got = type(spark).__name__
        hint = ("pass the SparkSession: ds.to_spark(spark); from a SparkContext sc, "
                "SparkSession.builder.getOrCreate() gives its session")
        raise BridgeTypeError(f"to_spark: spark must be a SparkSession; got {got}", hint)
    if _stopped(spark):
        msg = "to_spark: the SparkSession was stopped (spark.stop() or bridge.stop_spark())"
        raise BridgeError(msg, "create a new SparkSession (SparkSession.builder.getOrCreate() or bridge.init_spark) "
                               "and pass it: ds.to_spark(spark); the Dataset stays valid")


def from_spark(df: Any, *, parallelism: int | None = None, method: str = "auto") -> MaterializedDataset:
    """A Spark DataFrame -> a Dataset whose blocks the driver owns (valid after Spark stops).

    Args:
        df: A ``pyspark.sql.DataFrame`` from any session (local, cluster, or ``bridge.init_spark``).
        parallelism: Number of blocks.  ``None``: sized like ``bridge.from_arrow`` (arrow_collect)
            or one block per Spark partition, cut below ``DataContext.target_max_block_size``
            (map_in_arrow, which coalesces/repartitions the frame when ``parallelism`` is set).
        method: ``"auto"`` (fastest the session offers), ``"arrow_collect"`` (Spark's Arrow
            collection, ``toArrow``/``_collect_as_arrow``) or ``"map_in_arrow"`` (public
            ``mapInArrow`` on every pyspark >= 3.3).  See the module docstring for figures.

    Example:
        >>> ds = bridge.from_spark(spark.sql("select id, id * 2 as y from range(10)"))  # doctest: +SKIP
        >>> ds.count()                                                                  # doctest: +SKIP
        10
    """
    from bridge.context import DataContext

    if method not in _FROM_METHODS:
        msg = f"from_spark: unknown method {method!r}"
        raise BridgeError(msg, f"pass one of {', '.join(_FROM_METHODS)}")
    if not ADAPTER.is_native(df):
        msg = f"from_spark() needs a pyspark.sql.DataFrame; got {type(df).__module__}.{type(df).__name__}"
        raise BridgeError(msg, "build one with spark.createDataFrame(...) or spark.sql(...)")
    _check_session_running(df, "from_spark")
    _release_stopped()  # blocks kept for to_spark frames of sessions stopped since
    vectors = spark_types.check_spark_schema(_frame_schema(df))
    spark_zone = _session_time_zone(df)
    zone = _arrow_zone(spark_zone)
    # The caller's frame: from_spark <- SparkAdapter.to_dataset <- _door <- bridge.from_spark.
    spark_types.warn_conversions(spark_types.from_spark_conversions(df.schema, spark_zone, zone), stacklevel=5)
    if parallelism is not None and parallelism < 1:
        raise BridgeError(f"from_spark: parallelism must be >= 1; got {parallelism}", "pass e.g. parallelism=8")
    max_bytes = DataContext.get_current().target_max_block_size
    names = list(df.columns)
    if not names:
        # Rows without columns: Spark's Arrow batches of no columns carry no rows (mapInArrow gave 0).
        from bridge import from_arrow
        from bridge.block import table_without_columns

        return from_arrow(table_without_columns(df.count()))
    # Spark resolves names with dots or backticks as paths inside mapInArrow; positional names are safe.
    safe = df.toDF(*[f"_c{i}" for i in range(len(names))])
    tables: Iterable[pa.Table]
    try:
        if method == "arrow_collect" or (method == "auto" and _has_arrow_collect(safe)):
            try:
                tables = _collect_arrow(safe, parallelism)
            except Exception as err:  # noqa: BLE001 - Py4J / captured Spark errors have no common base
                if method != "auto" or not _exceeds_max_result_size(err):
                    raise
                import warnings

                warnings.warn("from_spark: the frame is larger than spark.driver.maxResultSize allows for "
                              "Arrow collection; reading it partition by partition through mapInArrow "
                              "instead (slower). Raise spark.driver.maxResultSize ('0' = no limit) for the "
                              "fast path.", stacklevel=2)
                tables = _map_in_arrow_tables(safe, parallelism, max_bytes)
        else:
            tables = _map_in_arrow_tables(safe, parallelism, max_bytes)
    except Exception as err:  # noqa: BLE001 - Py4J / captured Spark errors have no common base
        raise _wrap_spark_failure(err, "from_spark") from err
    renamed = (t.rename_columns(names) for t in _spark_errors_named(tables, "from_spark"))
    return _to_dataset(renamed, df.schema, zone, vectors)


def _spark_errors_named(tables: Iterable[pa.Table], what: str) -> Iterator[pa.Table]:
    """``tables`` whose Spark jobs run as they are read (a partition at a time past maxResultSize), their
    errors named as the jobs started above name theirs (a raw Py4JJavaError came out of the read)."""
    it = iter(tables)
    while True:
        try:
            table = next(it)
        except StopIteration:
            return
        except BridgeError:
            raise
        except Exception as err:  # noqa: BLE001 - Py4J / captured Spark errors have no common base
            raise _wrap_spark_failure(err, what, by_partition=True) from err
        yield table


#: A calendar interval in a Spark type's simple string, nested too (``array<interval>``); not the day-time
#: and year-month intervals (``interval day to second``), which pyspark reads.
_CALENDAR_INTERVAL = re.compile(r"\binterval\b(?! (?:day|hour|minute|second|year|month))")


def _frame_schema(df: Any) -> Any:
    """``df.schema``; a type pyspark itself cannot parse (a ``CalendarIntervalType``: "Unable to parse datatype
    interval") raises :class:`UnsupportedTypeError` naming the columns, read from the JVM's schema."""
    try:
        return df.schema
    except Exception as err:  # noqa: BLE001 - pyspark's parse error has no stable class across versions
        if "parse" not in str(err).lower():
            raise
        from bridge.errors import UnsupportedTypeError

        try:
            named = [f"{f.name()!r} ({f.dataType().simpleString()})" for f in df._jdf.schema().fields()
                     if _CALENDAR_INTERVAL.search(f.dataType().simpleString())]
        except Exception:  # noqa: BLE001 - no JVM schema to read: say what pyspark said
            named = []
        msg = (f"from_spark: pyspark cannot read the frame's schema ({str(err).strip().splitlines()[0]}); "
               f"column(s): {', '.join(named) or 'unknown'}")
        raise UnsupportedTypeError(msg, "cast such a column in Spark first: a calendar interval (make_interval) to "
                                        "a string, or its parts with SQL (extract(day FROM c), ...)") from err


def _map_in_arrow_tables(safe: Any, parallelism: int | None, max_bytes: int) -> Iterator[pa.Table]:
    """Executors encode their partitions as Arrow IPC (public ``mapInArrow``); the driver decodes them."""
    if parallelism is not None:
        current = safe.rdd.getNumPartitions()
        safe = safe.coalesce(parallelism) if parallelism < current else safe.repartition(parallelism)
    with _workers_run_this_python(safe.sparkSession):
        encoded = safe.mapInArrow(_make_ipc_encoder(max_bytes), "ipc binary")
    try:
        return _read_ipc_rows(encoded.collect())
    except Exception as err:  # noqa: BLE001 - Py4J / captured Spark errors have no common base
        if not _exceeds_max_result_size(err):
            raise
    # Larger than spark.driver.maxResultSize in one job: fetch one partition per job instead,
    # which also keeps at most a partition or two on the driver at a time.  A new DataFrame: Spark 4
    # keeps the failed job's error in the executed plan and raises it again on the next action.
    with _workers_run_this_python(safe.sparkSession):
        encoded = safe.mapInArrow(_make_ipc_encoder(max_bytes), "ipc binary")
    return (pa.ipc.open_stream(row[0]).read_all() for row in encoded.toLocalIterator(prefetchPartitions=True))


def _has_arrow_collect(df: Any) -> bool:
    return hasattr(df, "toArrow") or hasattr(df, "_collect_as_arrow")


def _read_ipc_rows(rows: list[Any]) -> Iterator[pa.Table]:
    rows.reverse()
    while rows:  # pop as we go: each payload is freed once its block is in the object store
        yield pa.ipc.open_stream(rows.pop()[0]).read_all()


def _collect_arrow(df: Any, num_blocks: int | None) -> list[pa.Table]:
    # The JVM's own batches first (pyspark 3.x and 4.x): pyspark 4's public toArrow() casts them to a
    # schema of its own, relabelling zones as UTC and failing on a vector column with a null row.
    if hasattr(df, "_collect_as_arrow"):
        batches = df._collect_as_arrow()
        if not batches:
            return []
        table = pa.Table.from_batches(batches)
    elif hasattr(df, "toArrow"):  # e.g. Spark Connect
        table = df.toArrow()
    else:
        msg = f"from_spark: this {type(df).__module__} DataFrame has no Arrow collection (toArrow)"
        raise BridgeError(msg, 'use method="map_in_arrow" (or "auto")')
    if table.num_rows == 0:
        return []
    from bridge.io.datasource import default_num_blocks, split_even

    # Partition boundaries are gone after collection: cut blocks the way from_arrow does.
    pieces = default_num_blocks(table.nbytes, table.num_rows, num_blocks)
    return [table.slice(start, end - start) for start, end in split_even(table.num_rows, pieces)]


def _to_dataset(tables: Iterator[pa.Table], schema: Any, tz: str | None, vectors: list[str]) -> MaterializedDataset:

    from bridge import from_blocks

    def blocks() -> Iterator[pa.Table]:
        empty = True
        for table in tables:
            if table.num_rows == 0:
                continue
            empty = False
            spark_types.check_utf8(table)
            table = spark_types.relabel_zones(spark_types.repair_offsets(table), tz)
            yield spark_types.vectors_to_tensors(table, vectors)
        if empty:  # an empty frame keeps its schema
            yield spark_types.empty_table(schema, tz, vectors)

    return from_blocks(blocks(), name="FromSpark")


# ---------------------------------------------------------------- Dataset -> Spark
def to_spark(ds: Dataset, spark: Any = None, *, method: str = "auto") -> Any:
    """A Dataset -> a Spark DataFrame (one partition per non-empty block) in ``spark``.

    Types follow :mod:`raybridge_adapters.spark_types`; each column converted by one of its written rules
    (uint8 -> smallint, a zone other than the session's, a tensor -> nested arrays, ...) gives one
    :class:`~bridge.errors.ConversionWarning` naming the column, both types and the rule; a column
    Spark cannot hold raises :class:`~bridge.errors.UnsupportedTypeError` here, not in a later job.

    Args:
        ds: The Dataset.
        spark: The target ``SparkSession``; ``None`` uses the active one.
        method: ``"object_store"``: Spark's Python workers read the blocks from Ray's object store
            (zero-copy, nothing held in the driver or the JVM); the DataFrame needs Ray and keeps the
            blocks alive until its SparkContext stops.  ``"copy"``: the blocks are streamed into
            the Spark driver's JVM as Arrow IPC, so the DataFrame owns its data and needs neither the
            Dataset nor Ray (the driver's heap holds the data once: ``spark.driver.memory`` above its size).
            ``"auto"`` (default): ``"copy"`` for a Dataset of at most an eighth of the Spark driver's
            heap (its actions then run in the JVM alone, no Python worker per block, and no blocks stay
            pinned); above that ``"object_store"`` where Spark's executors run on the Ray cluster's
            machines (a ``local[...]`` master, or Spark on Ray via ``bridge.init_spark``), else ``"copy"``.

    Example:
        >>> bridge.range(10).to_spark(spark).count()   # doctest: +SKIP
        10
    """
    import ray
    from pyspark.sql import SparkSession

    if method not in _TO_METHODS:
        msg = f"to_spark: method must be one of {', '.join(map(repr, _TO_METHODS))}, got {method!r}"
        raise BridgeValueError(msg, "use method='auto' unless the DataFrame must outlive Ray ('copy')")
    spark = spark if spark is not None else SparkSession.getActiveSession()
    if spark is None:
        msg = "to_spark: no SparkSession given and none is active"
        hint = "pass one: ds.to_spark(spark), or start one with bridge.init_spark(...) / SparkSession.builder"
        raise BridgeError(msg, hint)
    _check_target_session(spark)
    session_tz = _arrow_zone(_conf(spark, "spark.sql.session.timeZone"))
    pairs = [(ref, meta) for bundle in ds.iter_internal_ref_bundles() for ref, meta in zip(bundle.refs, bundle.metas)]
    # Every block's schema, unified (int32 + int64 -> int64; bool + int64 refused, naming the column), not the
    # first block's alone: the others were cast to it unchecked (an int 5 became True, a naive time a UTC one).
    metas = [m if m.schema is not None or not m.num_rows else dataclasses.replace(m, schema=ray.get(ref).schema)
             for ref, m in pairs]  # (metadata without a schema: the block says; a value it holds would be cast)
    schema = blocks_schema([m for m in metas if m.num_rows or (m.schema is not None and len(m.schema))], "to_spark")
    if schema is None:  # metadata without schemas: the first block with rows says
        schema = next((ray.get(ref).schema for ref, m in pairs if m.num_rows != 0), None)
    if schema is None:
        msg = "to_spark: the Dataset has no schema (no columns and no rows)"
        raise BridgeError(msg, "give it at least one column, e.g. bridge.from_arrow(table_with_schema)")
    conversions: list[spark_types.Conversion] = []
    spark_schema, target, vectors = spark_types.arrow_to_spark_schema(
        schema, session_tz=session_tz, conversions=conversions)
    # The caller's frame: to_spark <- SparkAdapter.from_dataset <- to_any <- Dataset.to_spark.
    spark_types.warn_conversions(conversions, stacklevel=5)
    nonempty = [(ref, m) for ref, m in pairs if m.num_rows != 0]
    if method == "auto":
        method = "object_store" if _executors_share_ray(spark) and not _copy_is_small(spark, nonempty, schema) else "copy"
    key = None
    if method == "object_store" and nonempty and len(schema):  # cast first: a column Spark cannot hold raises
        key = _hold(spark, _spark_ready_refs(nonempty, target))
    try:
        if not nonempty:  # nothing to read: no worker needs Ray or the data
            out = spark.createDataFrame([], spark_schema)
        elif not len(schema):  # rows without columns: Arrow's batches of no columns carry none to Spark
            out = spark.range(sum(m.num_rows for _, m in nonempty)).select()
        elif key is not None:
            out = _frame_from_object_store(spark, key, len(nonempty), spark_schema)
        else:
            out = _frame_from_copies(spark, nonempty, target, spark_schema)
        if vectors:
            from pyspark.ml.functions import array_to_vector
            from pyspark.sql import functions as F

            for name in vectors:
                quoted = "`" + name.replace("`", "``") + "`"
                col = F.col(quoted)  # array_to_vector throws on null arrays: keep them null
                out = out.withColumn(name, F.when(col.isNull(), F.lit(None)).otherwise(array_to_vector(col)))
    except BaseException as err:
        if key is not None:
            _release([key])
        if isinstance(err, Exception) and not isinstance(err, BridgeError):  # Py4J / Spark errors
            raise _wrap_spark_failure(err, "to_spark") from err
        raise
    if key is not None:
        with _held_lock, contextlib.suppress(TypeError):  # a frame class without weak references or hash:
            _frame_keys[out] = key                          # only release_spark_blocks() (all) reaches it
    return out


def _spark_ready_refs(pairs: list[tuple[Any, Any]], target: pa.Schema) -> list[Any]:
    """The blocks in the exact Arrow schema Spark reads: as they are, or cast on the driver one at a time
    (so a value that cannot become its Spark type raises here, naming the column)."""
    import ray

    out = []
    # A map's keys, and the nulls of a field declared not null, are checked in every block (no schema says).
    check_keys = spark_types.has_maps(target) or spark_types.has_not_null(target)
    for ref, meta in pairs:
        if meta.schema is not None and meta.schema.equals(target) and not check_keys:
            out.append(ref)
            continue
        block = ray.get(ref)
        ready = spark_types.prepare_block(block, target)
        out.append(ref if ready is block else ray.put(ready))
        del block, ready
    return out


#: ``to_spark(method="auto")`` copies a Dataset of at most this share of the Spark driver's heap into the JVM.
_COPY_HEAP_SHARE = 1 / 8


def _copy_is_small(spark: Any, pairs: list[tuple[Any, Any]], schema: pa.Schema) -> bool:
    """Whether the blocks' bytes are at most :data:`_COPY_HEAP_SHARE` of the Spark driver JVM's heap (the
    copy holds them there about 1.3 times over); ``False`` where a block's size or the heap is unknown,
    and for a dictionary or run-end encoded column, which Spark's types decode to any size."""
    sizes = [m.size_bytes for _, m in pairs]
    if any(size is None for size in sizes) or any(_encoded(f.type) for f in schema):
        return False
    try:
        heap = int(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())
    except Exception:  # noqa: BLE001 - no JVM gateway (Spark Connect): the rule does not apply
        return False
    return sum(sizes) <= heap * _COPY_HEAP_SHARE


def _encoded(t: pa.DataType) -> bool:
    """A dictionary or run-end encoded type, at any depth."""
    if isinstance(t, pa.BaseExtensionType):
        return _encoded(t.storage_type)
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        return True
    return any(_encoded(t.field(i).type) for i in range(t.num_fields))


def _executors_share_ray(spark: Any) -> bool:
    """Whether Spark's Python workers run on this Ray cluster's machines: local mode, or Spark on Ray."""
    try:
        master = str(spark.sparkContext.master or "")
    except Exception:  # noqa: BLE001 - Spark Connect: the workers are the server's
        return False
    from ray.util.client import ray as client

    if client.is_connected():  # Ray Client: this machine runs no raylet for Spark's workers to join
        return False
    return master.startswith("local") or master.startswith("ray")


#: Below this many bytes of Arrow batches, Spark's ``toDataFrame`` decodes them into the driver as one
#: local relation (its partitions then are Spark's choice, not one per block): set to 0 for the call.
_LOCAL_RELATION_KEY = "spark.sql.execution.arrow.localRelationThreshold"


def _frame_from_copies(spark: Any, pairs: list[tuple[Any, Any]], target: pa.Schema, spark_schema: Any) -> Any:
    """A frame that owns a copy of the blocks: Arrow batches decoded in the JVM where pyspark has that path
    (module docstring), else IPC streams decoded by ``mapInArrow``."""
    sc = spark.sparkContext
    if callable(getattr(sc, "_serialize_to_jvm", None)) and _jvm_has(sc, "PythonSQLUtils", "toDataFrame"):
        return _frame_from_arrow_batches(spark, pairs, target, spark_schema)
    return _frame_from_ipc_rows(spark, pairs, target, spark_schema)


def _spark_major(spark: Any) -> int:
    try:
        return int(str(spark.version).split(".")[0])
    except (ValueError, AttributeError):
        return 0


def _jvm_has(sc: Any, cls: str, method: str) -> bool:
    """Whether the driver's JVM has class ``cls`` (imported by pyspark) with member ``method``."""
    from py4j.java_gateway import JavaClass

    try:
        jclass = getattr(sc._jvm, cls)  # (a name that is no class comes back as a JavaPackage, not an error)
        if not isinstance(jclass, JavaClass):
            return False
        getattr(jclass, method)  # a member the class lacks raises
        return True
    except Exception:  # noqa: BLE001 - py4j raises its own error for a missing member
        return False


def _frame_from_arrow_batches(spark: Any, pairs: list[tuple[Any, Any]], target: pa.Schema,
                              spark_schema: Any) -> Any:
    """One record batch per block, written in Spark's Arrow layout to the file (or, with I/O encryption,
    the socket) the JVM reads, as pyspark's ``createDataFrame`` sends pandas / Arrow data; the JVM
    parallelizes the batches, one partition each, and its executors decode them without Python."""
    from pyspark.sql import DataFrame

    sc = spark.sparkContext
    # (Spark 3.5 has the setting too, for its UDFs only: its toDataFrame reads plain strings and binaries.)
    large = _spark_major(spark) >= 4 and \
        (_conf(spark, "spark.sql.execution.arrow.useLargeVarTypes") or "").strip().lower() == "true"
    jvm = sc._jvm
    batches = sc._serialize_to_jvm(_SparkBatches(pairs, target, _jvm_layout(target, large)), _ArrowStreamWriter(),
                                   jvm.PythonSQLUtils.readArrowStreamFromFile, jvm.ArrowIteratorServer)
    # The session's setting changes for this call only, under a lock: two calls at once saved each other's
    # 0 and left it for good (every later createDataFrame of the session then skipped its local relation).
    with _local_relation_lock:
        user_set = _conf_is_set(spark, _LOCAL_RELATION_KEY)
        previous = _conf(spark, _LOCAL_RELATION_KEY) if user_set else None
        spark.conf.set(_LOCAL_RELATION_KEY, "0")
        try:
            jdf = jvm.PythonSQLUtils.toDataFrame(batches, spark_schema.json(), spark._jsparkSession)
        finally:
            if previous is None:
                spark.conf.unset(_LOCAL_RELATION_KEY)
            else:
                spark.conf.set(_LOCAL_RELATION_KEY, previous)
    return DataFrame(jdf, spark)


_local_relation_lock = threading.Lock()


def _conf_is_set(spark: Any, key: str) -> bool:
    """Whether the session sets ``key`` itself (else it reads as the default: unset it again, not pin it)."""
    try:
        return bool(spark._jsparkSession.conf().contains(key))
    except Exception:  # noqa: BLE001 - no such call: treat it as set, restored as read
        return True


def _jvm_layout(target: pa.Schema, large: bool) -> pa.Schema:
    """``target`` as the JVM's reader builds its vectors (``ArrowUtils.toArrowSchema``): strings and binaries
    large where ``spark.sql.execution.arrow.useLargeVarTypes`` is on (Spark 4).  The batches carry no
    schema to the JVM, only buffers: a layout that differed would be read as other values."""
    if not large:
        return target

    def widen(t: pa.DataType) -> pa.DataType:
        if pa.types.is_string(t):
            return pa.large_string()
        if pa.types.is_binary(t):
            return pa.large_binary()
        if pa.types.is_map(t):
            return pa.map_(t.key_field.with_type(widen(t.key_type)), t.item_field.with_type(widen(t.item_type)))
        if pa.types.is_list(t):
            return pa.list_(t.value_field.with_type(widen(t.value_type)))
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(widen(f.type)) for f in t])
        return t

    return pa.schema([f.with_type(widen(f.type)) for f in target])


class _SparkBatches:
    """The blocks of ``pairs`` as record batches of ``layout`` (one per block unless its strings pass 2 GiB),
    fetched one at a time."""

    def __init__(self, pairs: list[tuple[Any, Any]], target: pa.Schema, layout: pa.Schema) -> None:
        self._pairs = pairs
        self._target = target
        self._layout = layout

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        import ray

        for ref, _meta in self._pairs:  # a cast that fails raises naming the column, before Spark runs a job
            block = spark_types.prepare_block(ray.get(ref), self._target)
            if not block.schema.equals(self._layout):
                block = block.cast(self._layout)
            # One batch per block, but where the block's strings or binaries pass 2 GiB: Arrow then keeps
            # several chunks (32-bit offsets), and each batch is a partition of its own.
            yield from block.combine_chunks().to_batches()


class _ArrowStreamWriter:
    """The ``dump_stream`` pyspark's ``_serialize_to_jvm`` calls: the batches as one Arrow IPC stream."""

    def dump_stream(self, batches: Iterable[pa.RecordBatch], stream: Any) -> None:
        writer = None
        try:
            for batch in batches:
                if writer is None:
                    writer = pa.ipc.new_stream(stream, batch.schema)
                writer.write_batch(batch)
        finally:
            if writer is not None:
                writer.close()


def _frame_from_ipc_rows(spark: Any, pairs: list[tuple[Any, Any]], target: pa.Schema, spark_schema: Any) -> Any:
    """Each block cast and written as one Arrow IPC stream, streamed into the JVM by ``parallelize`` (the
    driver holds one block at a time), decoded by ``mapInArrow`` on the executors; Spark owns the data."""
    from pyspark.sql import types as T

    rdd = spark.sparkContext.parallelize(_IpcPayloads(pairs, target), len(pairs))
    ipc_schema = T.StructType([T.StructField("ipc", T.BinaryType(), False)])
    with _workers_run_this_python(spark):
        return spark.createDataFrame(rdd, ipc_schema).mapInArrow(_make_ipc_decoder(), spark_schema)


class _IpcPayloads:
    """A sized, lazy sequence of ``(ipc_bytes,)`` rows: ``parallelize`` takes its length, then writes one
    block's stream at a time to the file the JVM reads (a list would hold every block in the driver)."""

    def __init__(self, pairs: list[tuple[Any, Any]], target: pa.Schema) -> None:
        self._pairs = pairs
        self._target = target

    def __len__(self) -> int:
        return len(self._pairs)

    def __iter__(self) -> Iterator[tuple[bytes]]:
        import ray

        for ref, _meta in self._pairs:  # a cast that fails raises naming the column, before Spark runs a job
            yield (_encode_block(spark_types.prepare_block(ray.get(ref), self._target)),)


def _hold(spark: Any, refs: list[Any]) -> str:
    """Pin ``refs`` in this driver's holder actor until ``spark``'s SparkContext stops; their key.

    Checked at every ``to_spark``/``from_spark`` and by ``bridge.stop_spark``: a DataFrame may be
    re-evaluated at any action, so its blocks live as long as the context that can run it.
    """
    import ray

    _release_stopped()
    key = uuid.uuid4().hex
    for attempt in range(2):
        holder, _name = _block_holder()
        try:
            ray.get(holder.hold.remote(key, refs))
            break
        except ray.exceptions.RayActorError:  # it died (memory monitor, lost node): a new one
            with _held_lock:
                _holders.clear()
            if attempt:
                raise
    with _held_lock:
        _held.append((spark.sparkContext, key))
    return key


def _frame_from_object_store(spark: Any, key: str, count: int, spark_schema: Any) -> Any:
    """A frame of block indices whose ``mapInArrow`` reads each block from the object store."""
    import ray

    context = ray.get_runtime_context()
    reader = _make_block_reader(context.gcs_address, context.get_session_name(), context.namespace,
                                _holder_name(), key)
    # Partition i of range(0, count, 1, count) holds the index i, made in the JVM: a parallelized Python
    # list took a Python task of its own per partition at every action (a quarter of a small frame's count).
    with _workers_run_this_python(spark):
        return spark.range(0, count, 1, count).mapInArrow(reader, spark_schema)


def _make_block_reader(address: str, session: str, namespace: str, holder_name: str,
                       key: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function: block indices -> the blocks' record batches, read from the object store.

    A closure, so cloudpickle ships it by value; the Spark Python worker connects to the Ray cluster
    once (and again if it was connected to another one) and then reads blocks zero-copy.
    """

    def read(batches: Iterator[Any]) -> Iterator[Any]:
        import logging

        import ray

        try:
            if ray.is_initialized() and ray.get_runtime_context().get_session_name() != session:
                ray.shutdown()  # a reused worker still connected to an earlier cluster
            if not ray.is_initialized():
                ray.init(address=address, namespace=namespace, log_to_driver=False, logging_level=logging.WARNING)
            holder = ray.get_actor(holder_name, namespace=namespace)
        except Exception as err:  # noqa: BLE001 - whatever stops the connection, say what to do
            raise RuntimeError(
                f"raybridge to_spark: this Spark Python worker cannot read the blocks from the Ray cluster at "
                f"{address} ({type(err).__name__}: {err}); the driver that made the DataFrame must still run, or "
                "use ds.to_spark(spark, method='copy'), which gives Spark its own copy of the data") from err
        for batch in batches:
            indices = batch.column(0).to_pylist()
            if not indices:
                continue
            refs: list[Any] = ray.get(holder.refs.remote(key, indices))
            for ref in refs:
                yield from ray.get(ref).to_batches()

    return read


class _BlockHolder:
    """Keeps the blocks of object-store DataFrames alive for Spark's workers, and hands out their refs."""

    def __init__(self) -> None:
        self._held: dict[str, list[Any]] = {}

    def hold(self, key: str, refs: list[Any]) -> None:
        self._held[key] = refs

    def refs(self, key: str, indices: list[int]) -> list[Any]:
        if key not in self._held:
            raise KeyError("raybridge to_spark: the blocks of this DataFrame were released (by "
                           "bridge.release_spark_blocks, or its SparkContext stopped); call ds.to_spark(spark) "
                           "again, or cache the frame in Spark (df.localCheckpoint()) before releasing")
        held = self._held[key]
        return [held[i] for i in indices]

    def release(self, keys: list[str]) -> int:
        for key in keys:
            self._held.pop(key, None)
        return len(self._held)


_held_lock = threading.Lock()
#: The key of each object-store DataFrame ``to_spark`` returned (for :func:`release_spark_blocks`).
_frame_keys: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
#: (SparkContext, key) of every object-store DataFrame whose blocks the holder keeps.
_held: list[tuple[Any, str]] = []
#: This driver's holder actor handle, by name (one Ray job at a time).
_holders: dict[str, Any] = {}


def _holder_name() -> str:
    import ray

    context = ray.get_runtime_context()  # a restarted local cluster numbers its jobs from 1 again
    return f"raybridge-spark-blocks-{context.get_session_name()}-{context.get_job_id()}"


def _block_holder() -> tuple[Any, str]:
    """This driver's holder actor (zero CPUs, so a Spark-on-Ray cluster holding every CPU cannot block it)."""
    import ray

    name = _holder_name()
    with _held_lock:
        if name not in _holders:  # a named actor dies with its last handle: keep one for the driver's life
            _holders.clear()
            _holders[name] = ray.remote(num_cpus=0)(_BlockHolder).options(name=name, get_if_exists=True).remote()
        return _holders[name], name


def _release(keys: list[str]) -> None:
    """Let the holder of this Ray session go of ``keys`` (none there: they went with an earlier session)."""
    import ray

    with _held_lock:
        _held[:] = [(sc, key) for sc, key in _held if key not in keys]
        holder = _holders.get(_holder_name()) if ray.is_initialized() else None
    if holder is not None and keys:
        try:
            ray.get(holder.release.remote(keys))
        except ray.exceptions.RayActorError:  # the holder is gone, and the blocks with it
            pass


def release_spark_blocks(df: Any = None) -> int:
    """Let go of the object-store blocks that ``to_spark`` keeps for ``df`` (default: for every frame).

    ``to_spark`` on executors that share the Ray cluster hands Spark the blocks in place and keeps
    them alive as long as the frame's SparkContext runs, since Spark may read them again at any
    action.  In a long session that converts many Datasets, release the ones you are done with;
    a frame derived from a released one then fails at its next action, saying so.  To keep
    using a frame without its blocks, make Spark hold the rows first (``df = df.localCheckpoint()``).
    Frames made with ``method="copy"`` hold nothing.  Returns how many frames' blocks were let go.

    Example:
        >>> import bridge
        >>> df = bridge.range(10).to_spark(spark)  # doctest: +SKIP
        >>> df = df.localCheckpoint()  # doctest: +SKIP
        >>> bridge.release_spark_blocks(df)  # doctest: +SKIP
        1
        >>> df.count()  # doctest: +SKIP
        10
    """
    with _held_lock:
        if df is None:
            keys = [key for _, key in _held]
        else:
            key = _frame_keys.get(df)
            if key is None and not ADAPTER.is_native(df):
                msg = f"release_spark_blocks() takes a DataFrame that to_spark returned; got {type(df).__name__}"
                raise BridgeValueError(msg, "pass the frame ds.to_spark(spark) gave you, or nothing to release all")
            keys = [] if key is None or all(k != key for _, k in _held) else [key]
    _release(keys)
    return len(keys)


def _release_stopped() -> None:
    """Let go of the blocks of DataFrames whose SparkContext has stopped."""
    with _held_lock:
        gone = [key for sc, key in _held if getattr(sc, "_jsc", None) is None]
    if gone:
        _release(gone)


def _encode_block(block: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, block.schema) as writer:
        writer.write_table(block)
    return sink.getvalue().to_pybytes()


# ---------------------------------------------------------------- Spark on Ray (RayDP)
def init_spark(app_name: str, num_executors: int, executor_cores: int, executor_memory: str | int,
               configs: dict[str, str] | None = None, **raydp_options: Any) -> Any:
    """Start Spark on Ray through RayDP, with the Java 17 options and Python settings it needs.

    Executors are Ray actors; ``bridge.from_spark`` / ``ds.to_spark`` work with the returned
    session like with any other, and Datasets made from it outlive :func:`stop_spark`.

    Example:
        >>> spark = bridge.init_spark("etl", num_executors=1, executor_cores=1, executor_memory="1g")  # doctest: +SKIP
        >>> ds = bridge.from_spark(spark.range(1000)); bridge.stop_spark(); ds.count()               # doctest: +SKIP
        1000
    """
    try:
        import raydp
    except ImportError as err:
        from bridge.errors import missing_dependency

        raise missing_dependency("raydp", "raybridge[raydp]", "bridge.init_spark (Spark on Ray)") from err
    from bridge._ray import ensure_ray

    ensure_ray()
    _check_cpus_for_executors(num_executors, executor_cores)
    merged = dict(configs or {})
    for key in _JAVA_OPTION_KEYS:
        merged[key] = f"{merged[key]} {JAVA17_OPTIONS}" if merged.get(key) else JAVA17_OPTIONS
    python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ.setdefault("PYSPARK_PYTHON", python)
    merged.setdefault("spark.pyspark.python", python)
    merged.setdefault("spark.executorEnv.PYSPARK_PYTHON", python)
    merged.setdefault("spark.sql.execution.arrow.pyspark.enabled", "true")
    with _spark_lock:
        _release_plain_gateway()
        try:
            return raydp.init_spark(app_name, num_executors, executor_cores, executor_memory,
                                    configs=merged, **raydp_options)
        except Exception as err:  # noqa: BLE001 - RayDP raises bare Exception
            msg = f"init_spark: RayDP could not start Spark on Ray: {type(err).__name__}: {str(err)[:500]}"
            hint = ("Ray must have num_executors * executor_cores free CPUs (check ray.available_resources()); "
                    "a second init_spark needs bridge.stop_spark() first")
            raise BridgeError(msg, hint) from err


def _check_cpus_for_executors(num_executors: int, executor_cores: int) -> None:
    """Fail now, not after RayDP's minute of waiting for executor actors Ray cannot place."""
    import ray

    want = num_executors * executor_cores
    free = ray.available_resources().get("CPU", 0.0)
    biggest = max((n.get("Resources", {}).get("CPU", 0.0) for n in ray.nodes() if n.get("Alive")), default=0.0)
    if want <= free and executor_cores <= biggest:
        return
    total = ray.cluster_resources().get("CPU", 0.0)
    msg = (f"init_spark: RayDP could not start Spark on Ray: num_executors * executor_cores = "
           f"{num_executors} * {executor_cores} = {want} CPUs are needed; Ray has {free:g} free of {total:g}"
           f" (largest node: {biggest:g})")
    hint = ("lower num_executors or executor_cores, stop what holds the CPUs (bridge.stop_spark() for an "
            "earlier session), or start Ray with more CPUs")
    raise BridgeError(msg, hint)


def _release_plain_gateway() -> None:
    """Shut down a Py4J JVM left by an earlier, stopped local session: RayDP needs its own classpath."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        msg = "init_spark: a SparkSession is already running in this process"
        hint = "stop it first (spark.stop()); Spark on Ray needs a JVM started with RayDP's classpath"
        raise BridgeError(msg, hint)
    gateway = SparkContext._gateway
    if gateway is None:
        return
    gateway.shutdown()
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=30)
    SparkContext._gateway = None
    SparkContext._jvm = None


def stop_spark(cleanup_data: bool = True) -> None:
    """Stop the Spark-on-Ray cluster started by :func:`init_spark` (Datasets made from it stay valid).

    Also lets go of the blocks that ``to_spark`` DataFrames of stopped sessions kept in the object store.

    Example:
        >>> spark = bridge.init_spark("etl", num_executors=1, executor_cores=1, executor_memory="1g")  # doctest: +SKIP
        >>> ds = bridge.from_spark(spark.range(10)); bridge.stop_spark(); ds.count()               # doctest: +SKIP
        10
    """
    import raydp

    with _spark_lock:
        raydp.stop_spark(cleanup_data=cleanup_data)
        _release_stopped()


# ---------------------------------------------------------------- adapter
class SparkAdapter:
    name = "spark"
    package = "pyspark"
    extra = "raybridge[spark]"

    def is_native(self, obj: Any) -> bool:
        if "pyspark" not in sys.modules:
            return False
        classic = sys.modules.get("pyspark.sql.dataframe")
        connect = sys.modules.get("pyspark.sql.connect.dataframe")
        return any(m is not None and isinstance(obj, m.DataFrame) for m in (classic, connect))

    def to_dataset(self, obj: Any, **options: Any) -> Any:
        return from_spark(obj, **options)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        return to_spark(ds, **options)


ADAPTER = SparkAdapter()

__all__ = ["ADAPTER", "JAVA17_OPTIONS", "SparkAdapter", "from_spark", "init_spark", "stop_spark", "to_spark"]
