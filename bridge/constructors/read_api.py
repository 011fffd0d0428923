"""``bridge.read_*``: lazy, parallel reads of files on local disk or object storage.

Every function returns a lazy :class:`bridge.Dataset`; planning (listing files,
reading Parquet footers) happens at the call, reading happens in Ray tasks when
the Dataset is consumed.  Paths: a file, a directory (recursive; names starting
with ``.`` or ``_`` skipped), a glob, or a list; local or any ``pyarrow.fs``
URI (``s3://``, ``gs://``, ``hdfs://``); ``filesystem=`` takes a ``pyarrow.fs``
or fsspec filesystem.  ``override_num_blocks`` forces the number of read tasks.

Every reader also takes ``partition_filter`` (skip files by their ``key=value``
directories), ``shuffle`` (``"files"`` or :class:`bridge.FileShuffleConfig`: a
random file order per run) and ``partitioning`` (``"hive"``: ``key=value``
directories become columns, typed by what the read is given (a
``pyarrow.dataset.HivePartitioning(schema)``, Ray Data's
``Partitioning("hive", field_types=...)``, ``schema=``), else for Parquet by the
types ``write_parquet(partition_cols=...)`` recorded, else ``int32`` when every
value is an int32 written as ``str(int)``, else ``string``; the default for
Parquet, CSV and JSON, as in Ray Data; ``None`` for the others).  See
:mod:`bridge.io.partitioning`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bridge.keywords import checked_keywords
from bridge.plan.logical import Read

if TYPE_CHECKING:
    from bridge.dataset import Dataset
    from bridge.io.datasource import Datasource


@checked_keywords("read_datasource")
def read_datasource(datasource: Datasource, *, override_num_blocks: int | None = None) -> Dataset:
    """A Dataset reading from any :class:`bridge.io.datasource.Datasource`.

    Args:
        datasource: Its ``get_read_tasks(parallelism)`` is called when the Dataset runs.
        override_num_blocks: The ``parallelism`` to ask for; default: sized from the
            datasource's estimates (at least 1).

    Example:
        >>> import bridge
        >>> from bridge.io.range_datasource import RangeDatasource
        >>> bridge.read_datasource(RangeDatasource(5)).count()
        5
    """
    from bridge.dataset import Dataset
    from bridge.errors import BridgeError
    from bridge.io.datasource import Datasource

    if not isinstance(datasource, Datasource):
        msg = f"read_datasource() needs a bridge.io.datasource.Datasource; got {type(datasource).__name__}"
        raise BridgeError(msg, "subclass Datasource and implement get_read_tasks()")
    if override_num_blocks is not None:
        from bridge.io.datasource import default_num_blocks

        default_num_blocks(None, None, override_num_blocks)  # raises on < 1, at the call
    return Dataset(Read([], datasource, override_num_blocks))


@checked_keywords("read_parquet")
def read_parquet(
    paths: Any,
    *,
    columns: list[str] | None = None,
    filter: Any = None,  # noqa: A002 - mirrors pyarrow.parquet.read_table
    filesystem: Any = None,
    partitioning: Any = "hive",
    schema: Any = None,
    file_extensions: list[str] | None = None,
    override_num_blocks: int | None = None,
    include_paths: bool = False,
    partition_filter: Any = None,
    shuffle: Any = None,
) -> Dataset:
    """Parquet files, split by file and row group, with column and predicate pushdown.

    Args:
        paths: File(s), directory(ies) or glob(s), local or ``s3://...``.
        columns: Read only these columns (hive partition keys included).
        filter: A ``pyarrow.compute`` expression (``pc.field("x") > 1``) or DNF tuples
            ``[("x", ">", 1)]``: files and row groups that cannot match are skipped
            using partition values and statistics, the rest are filtered row by row.
        filesystem: A ``pyarrow.fs`` or fsspec filesystem (e.g. S3 with an endpoint).
        partitioning: ``"hive"`` (``key=value`` directories become columns), ``None``,
            Ray Data's ``Partitioning("hive", field_types={"year": int})``, or a
            ``pyarrow.dataset.Partitioning`` (given to pyarrow as is).  With ``"hive"`` the
            columns come back as the types ``write_parquet(partition_cols=...)`` recorded in
            the layout's ``_common_metadata`` (booleans, dates, timestamps, ``"007"`` as
            written); without that file, ``int32`` where every value is an int32 written as
            ``str(int)``, else ``string``.
        schema: Schema to read with; values are cast to it.  Default: every file's schema
            unified without changing a value (a column missing from a file is null there,
            int32 + int64 reads as int64); files that disagree otherwise (int64 vs string,
            naive vs zoned timestamps) raise ``SchemaMismatchError`` naming both files.
        file_extensions: Only read files with these extensions in directories.  Default:
            files a directory or glob holds with a Parquet extension (``.parquet``, ``.parq``,
            ``.pq``), none (Hive's ``000000_0``) or a number, and files of another named kind
            only where they are Parquet (a ``README.md`` beside the data is skipped).
        override_num_blocks: Number of read tasks (at most one per row group).
        include_paths: Add a ``path`` column (string) naming each row's file.
        partition_filter: A function of a file's Hive partition values as strings
            (``lambda v: v["year"] >= "2023"``) or a :class:`bridge.PathPartitionFilter`:
            files it rejects are never opened (not even their footers).
        shuffle: ``"files"`` or :class:`bridge.FileShuffleConfig`: read the files in a
            random order, a new one each run (row groups stay in order within a file).

    Example:
        >>> import bridge, pyarrow.compute as pc
        >>> bridge.range(10).write_parquet("/tmp/rb_doc_pq")  # doctest: +SKIP
        >>> bridge.read_parquet("/tmp/rb_doc_pq", filter=pc.field("id") > 7).count()  # doctest: +SKIP
        2
    """
    from bridge.io.parquet_datasource import ParquetDatasource

    exts = tuple(file_extensions) if file_extensions else None
    if include_paths and columns is not None and "path" not in columns:
        columns = [*columns, "path"]  # asked for: the path column comes after the chosen ones (it was dropped)
    return read_datasource(ParquetDatasource(
        paths, columns=columns, filter=filter, filesystem=filesystem, partitioning=partitioning, schema=schema,
        file_extensions=exts, override_num_blocks=override_num_blocks, include_paths=include_paths,
        partition_filter=partition_filter, shuffle=shuffle,
    ))


def _file_kwargs(filesystem: Any, include_paths: bool, override_num_blocks: int | None,
                 file_extensions: list[str] | None, partitioning: Any, partition_filter: Any,
                 shuffle: Any) -> dict[str, Any]:
    return {
        "filesystem": filesystem,
        "include_paths": include_paths,
        "override_num_blocks": override_num_blocks,
        "extensions": tuple(file_extensions) if file_extensions else None,
        "partitioning": partitioning,
        "partition_filter": partition_filter,
        "shuffle": shuffle,
    }


def _schema_arg(schema: Any, what: str) -> Any:
    import pyarrow as pa

    if schema is None or isinstance(schema, pa.Schema):
        return schema
    from bridge.errors import BridgeError

    msg = f"{what}(schema=...) needs a pyarrow.Schema; got {type(schema).__name__}"
    raise BridgeError(msg, "pass ds.schema() of the Dataset you wrote, or pyarrow.schema([(name, type), ...])")


@checked_keywords("read_csv")
def read_csv(
    paths: Any,
    *,
    on_bad_lines: str = "error",
    read_options: Any = None,
    parse_options: Any = None,
    convert_options: Any = None,
    schema: Any = None,
    filesystem: Any = None,
    include_paths: bool = False,
    file_extensions: list[str] | None = None,
    override_num_blocks: int | None = None,
    partitioning: Any = "hive",
    partition_filter: Any = None,
    shuffle: Any = None,
) -> Dataset:
    """CSV files through ``pyarrow.csv`` (types inferred; ``.gz``/``.bz2``/``.zst`` decompressed).

    CSV holds text, not types: read without ``schema``, ``uint8`` comes back as
    ``int64``, ``float32`` as ``double``, an unquoted ``NA``, ``null`` or ``N/A`` as
    null (``nan`` stays NaN; an empty field is null), and an unquoted ``007`` as
    the number 7.  A one-column file's empty lines are null rows (``write_csv``
    writes a null so).  No integer is rounded: a column of integers beyond
    ``int64`` reads as ``uint64``; one a ``double`` column would change raises
    naming the file, column and value (``schema=`` with a decimal reads it).

    Args:
        schema: A ``pyarrow.Schema`` (e.g. ``ds.schema()`` of the Dataset that was
            written): every column it names comes back as its type, exactly what
            ``write_csv`` wrote; only an empty unquoted field is null.  A value that
            does not fit raises naming the file and column.
        on_bad_lines: ``"error"`` (default: raise naming the file and line), or
            ``"skip"`` to drop rows with the wrong number of columns, warning with
            the count per file.
        read_options, parse_options, convert_options: ``pyarrow.csv`` options
            (delimiter, column names, column types, ...).

    Example:
        >>> import bridge
        >>> bridge.read_csv("data/*.csv", on_bad_lines="skip")  # doctest: +SKIP
    """
    from bridge.io.csv_datasource import CSVDatasource

    return read_datasource(CSVDatasource(
        paths, on_bad_lines=on_bad_lines, read_options=read_options, parse_options=parse_options,
        convert_options=convert_options, schema=_schema_arg(schema, "read_csv"),
        **_file_kwargs(filesystem, include_paths, override_num_blocks, file_extensions,
                       partitioning, partition_filter, shuffle),
    ))


@checked_keywords("read_json")
def read_json(
    paths: Any,
    *,
    read_options: Any = None,
    parse_options: Any = None,
    schema: Any = None,
    lines: bool | None = None,
    filesystem: Any = None,
    include_paths: bool = False,
    file_extensions: list[str] | None = None,
    override_num_blocks: int | None = None,
    partitioning: Any = "hive",
    partition_filter: Any = None,
    shuffle: Any = None,
) -> Dataset:
    """JSON-lines files (one object per line) through ``pyarrow.json``.

    ``lines``: ``True`` reads JSON lines only (a file holding an array raises);
    ``False`` reads each file as one JSON document (an array of objects, one row
    each, or one object, one row); ``None`` (default) tells them apart by the
    first character.  Ray Data's default ``lines=False`` reads JSON lines too, so
    unset is the same answer.

    Without ``schema`` the types are inferred from the text (ints as ``int64``,
    timestamps as strings or ``timestamp[s]``, binary as its base64 text), and no
    integer is rounded: a column of integers beyond ``int64`` (a ``uint64`` that
    ``write_json`` wrote) reads as ``uint64``; one that a ``double`` column would
    change (below ``-2**63``, ``2**53 + 1`` beside ``1.5``) raises
    :class:`FileReadError` naming the file, column and value (read it with
    ``parse_options=pyarrow.json.ParseOptions(explicit_schema=...)`` naming a
    decimal).
    ``schema`` (e.g. ``ds.schema()`` of the Dataset ``write_json`` wrote) reads
    every column it names back as its type: dates, times, durations, decimals,
    binary, maps, dictionaries and tensors included.

    Example:
        >>> import bridge
        >>> bridge.read_json("events/")  # doctest: +SKIP
    """
    from bridge.io.json_datasource import JSONDatasource

    return read_datasource(JSONDatasource(
        paths, read_options=read_options, parse_options=parse_options, schema=_schema_arg(schema, "read_json"),
        lines=lines,
        **_file_kwargs(filesystem, include_paths, override_num_blocks, file_extensions,
                       partitioning, partition_filter, shuffle),
    ))


@checked_keywords("read_text")
def read_text(
    paths: Any,
    *,
    encoding: str = "utf-8",
    drop_empty_lines: bool = False,
    filesystem: Any = None,
    include_paths: bool = False,
    file_extensions: list[str] | None = None,
    override_num_blocks: int | None = None,
    partitioning: Any = None,
    partition_filter: Any = None,
    shuffle: Any = None,
) -> Dataset:
    """Text files, one row per line in column ``text``.

    Example:
        >>> import bridge
        >>> bridge.read_text("logs/*.txt").take(2)  # doctest: +SKIP
    """
    from bridge.io.text_datasource import TextDatasource

    return read_datasource(TextDatasource(
        paths, encoding=encoding, drop_empty_lines=drop_empty_lines,
        **_file_kwargs(filesystem, include_paths, override_num_blocks, file_extensions,
                       partitioning, partition_filter, shuffle),
    ))


@checked_keywords("read_binary_files")
def read_binary_files(
    paths: Any,
    *,
    include_paths: bool = True,
    filesystem: Any = None,
    file_extensions: list[str] | None = None,
    override_num_blocks: int | None = None,
    partitioning: Any = None,
    partition_filter: Any = None,
    shuffle: Any = None,
) -> Dataset:
    """Whole files, one row each: column ``bytes`` and (by default) ``path``.

    Example:
        >>> import bridge
        >>> bridge.read_binary_files("blobs/").take(1)[0]["path"]  # doctest: +SKIP
    """
    from bridge.io.binary_datasource import BinaryDatasource

    return read_datasource(BinaryDatasource(
        paths, **_file_kwargs(filesystem, include_paths, override_num_blocks, file_extensions,
                       partitioning, partition_filter, shuffle)
    ))


@checked_keywords("read_numpy")
def read_numpy(
    paths: Any,
    *,
    column: str = "data",
    filesystem: Any = None,
    include_paths: bool = False,
    file_extensions: list[str] | None = None,
    override_num_blocks: int | None = None,
    partitioning: Any = None,
    partition_filter: Any = None,
    shuffle: Any = None,
) -> Dataset:
    """``.npy`` files: axis 0 is rows; n-d arrays become an ``arrow.fixed_shape_tensor`` column.

    Example:
        >>> import bridge
        >>> bridge.read_numpy("arrays/").take_batch(2)["data"].shape  # doctest: +SKIP
        (2, 28, 28)
    """
    from bridge.io.numpy_datasource import NumpyDatasource

    return read_datasource(NumpyDatasource(
        paths, column=column, **_file_kwargs(filesystem, include_paths, override_num_blocks, file_extensions,
                       partitioning, partition_filter, shuffle)
    ))


@checked_keywords("read_images")
def read_images(
    paths: Any,
    *,
    size: tuple[int, int] | None = None,
    mode: str | None = None,
    filesystem: Any = None,
    include_paths: bool = False,
    file_extensions: list[str] | None = None,
    override_num_blocks: int | None = None,
    partitioning: Any = None,
    partition_filter: Any = None,
    shuffle: Any = None,
) -> Dataset:
    """Images decoded with Pillow into column ``image`` (``(H, W[, C])`` arrays).

    Args:
        size: ``(height, width)`` to resize to; then every row has one shape and the
            column is a fixed-shape tensor.
        mode: Pillow mode to convert to, e.g. ``"RGB"`` or ``"L"``.

    Example:
        >>> import bridge
        >>> bridge.read_images("imgs/", size=(32, 32), mode="RGB").take_batch(4)["image"].shape  # doctest: +SKIP
        (4, 32, 32, 3)
    """
    from bridge.io.image_datasource import ImageDatasource

    return read_datasource(ImageDatasource(
        paths, size=size, mode=mode, **_file_kwargs(filesystem, include_paths, override_num_blocks, file_extensions,
                       partitioning, partition_filter, shuffle)
    ))


__all__ = [
    "read_binary_files",
    "read_csv",
    "read_datasource",
    "read_images",
    "read_json",
    "read_numpy",
    "read_parquet",
    "read_text",
]
