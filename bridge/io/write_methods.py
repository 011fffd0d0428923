"""Dataset methods that write files (``write_parquet``, ``write_csv``, ``write_json``, ``write_numpy``).

:class:`bridge.dataset.Dataset` inherits this mixin.  Every write runs as one
Ray task per block (fused with the transforms before it), writes one file per
block named ``{filename_prefix}-{index:05d}.{ext}`` and returns the paths
written.  ``mode`` (as Ray Data's): ``"overwrite"`` (default: the earlier output is
removed, which is every file of the format under the directory, whoever wrote
it, Parquet summary files (``_metadata``, ``_common_metadata``) included, so a read
gives the new rows alone; files of other kinds are kept),
``"append"`` (add files; each append
names its files ``{filename_prefix}-{write_id}-{index:05d}.{ext}`` so nothing is
ever replaced), ``"error"`` (fail if the directory already holds data) or
``"ignore"`` (write nothing if it already holds data; an empty directory is
written to).
"""

from __future__ import annotations

from typing import Any

from bridge.dataset_mixin import DatasetMixin


def _option_target(fmt: str) -> Any:
    import json

    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.write_table
    if fmt == "csv":
        import pyarrow.csv as pcsv

        return pcsv.write_csv
    return json.dumps if fmt == "json" else None


def _check_options(fmt: str, options: dict[str, Any]) -> None:
    """Options the writer's library does not take fail now, not inside a write task."""
    import inspect

    target = _option_target(fmt)
    if target is None or not options:
        return
    try:
        params = dict(inspect.signature(target).parameters)
        if fmt == "parquet":
            # write_table's **kwargs go to ParquetWriter, whose own **options go to the Cython writer,
            # which takes only memory_pool beyond what the two name.
            import pyarrow.parquet as pq

            params.update(inspect.signature(pq.ParquetWriter.__init__).parameters)
            params = {n: p for n, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD}
            params["memory_pool"] = inspect.Parameter("memory_pool", inspect.Parameter.KEYWORD_ONLY)
    except (TypeError, ValueError):  # a builtin without a signature: let the writer decide
        return
    if fmt == "csv" and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    # json.dumps' **kw go to JSONEncoder, which takes only what dumps names; the writer sets default=.
    taken = {n for n, p in params.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
             or p.kind is inspect.Parameter.KEYWORD_ONLY} - {"obj", "data", "output_file", "default", "self",
                                                              "table", "where", "schema"}
    unknown = sorted(set(options) - taken)
    if unknown:
        from bridge.errors import BridgeTypeError

        name = f"{target.__module__}.{target.__name__}"
        msg = f"write_{fmt}: unexpected option(s) {unknown}: they would go to {name}, which takes {sorted(taken)}"
        ray_data = [_RAY_DATA_WRITE_ARGS[u] for u in unknown if u in _RAY_DATA_WRITE_ARGS]
        hint = "; ".join(ray_data) if ray_data else \
            "check the spelling; see the write method's docstring for its own arguments"
        raise BridgeTypeError(msg, hint)
    compression = options.get("compression")
    if fmt == "parquet" and isinstance(compression, str) and compression.lower() != "none":
        import pyarrow as pa

        try:
            pa.Codec.is_available(compression)
        except ValueError:
            from bridge.errors import BridgeValueError

            msg = f"write_parquet(compression={compression!r}): no such codec"
            raise BridgeValueError(msg, "pass one of 'snappy' (the default), 'zstd', 'gzip', 'brotli', 'lz4', "
                                        "'lz4_raw' or 'none'") from None


#: Ray Data's write arguments that are no option of the writer's library here, and what to do instead.
_RAY_DATA_WRITE_ARGS = {
    "try_create_dir": "drop try_create_dir: the directory is always created",
    "arrow_parquet_args": "pass pyarrow.parquet.write_table's options as keywords of write_parquet itself "
                          "(write_parquet(path, compression='zstd'))",
    "arrow_parquet_args_fn": "pass pyarrow.parquet.write_table's options as keywords of write_parquet itself",
    "arrow_csv_args": "pass pyarrow.csv.write_csv's options as keywords (write_options=pyarrow.csv.WriteOptions(...))",
    "arrow_csv_args_fn": "pass pyarrow.csv.write_csv's options as keywords",
    "num_rows_per_file": "use min_rows_per_file= (Ray Data's own new name for it)",
    "arrow_open_stream_args": "pass filesystem=pyarrow.fs.<FileSystem>(...) configured as you need",
    "ray_remote_args": "Ray task options are not taken by writes here; set them on the map_batches before",
    "pandas_json_args": "pass json.dumps' options as keywords of write_json itself",
    "pandas_json_args_fn": "pass json.dumps' options as keywords of write_json itself",
}

def _layout_before(fs: Any, directory: str, mode: str, fmt: str, partition_cols: list[str],
                   known: Any) -> Any:
    """What a Parquet write does with the layout's ``_common_metadata`` afterwards (``None``: nothing).

    ``write_parquet(partition_cols=...)`` records the full schema there, so ``read_parquet`` gives the
    partition columns back as their types (the directory names say only text).  Returns ``False`` to
    remove a stale one (overwritten without partition columns), a schema (the file as it was, or
    ``True`` for none) to write it.  An append whose partition columns' types differ from the
    recorded ones raises here, before any file is written; an append to data written without the
    file leaves it absent (its directory names stay inferred, the same for the old and new rows).
    """
    if fmt != "parquet":
        return None
    from bridge.io.file_datasink import partition_conflicts, read_sidecar

    earlier = read_sidecar(fs, directory)
    if not partition_cols:
        return False if (mode == "overwrite" and earlier is not None) else None
    if mode != "append":
        return True
    if earlier is None:
        from bridge.io.paths import data_files

        return None if data_files(fs, directory) else True
    conflicts = partition_conflicts(earlier, known, partition_cols) if known is not None else []
    if conflicts:
        from bridge.errors import SchemaMismatchError

        msg = (f"write_parquet(partition_cols={partition_cols}, mode='append'): the data in {directory!r} has "
               f"other types for partition columns ({'; '.join(conflicts)}; recorded in its _common_metadata)")
        raise SchemaMismatchError(msg, "cast the columns to the recorded types first (ds.schema() of "
                                       "read_parquet of the directory), or write to another directory")
    return earlier


def _layout_after(fs: Any, directory: str, mode: str, partition_cols: list[str], describe: Any,
                  result: Any) -> None:
    """Write or remove the layout's ``_common_metadata`` once the files are in (see :func:`_layout_before`)."""
    from bridge.io.file_datasink import partition_conflicts, remove_sidecar, write_sidecar, written_schema

    if describe is False:
        remove_sidecar(fs, directory)
        return
    schema = written_schema(result)
    if schema is None:  # nothing written, or blocks of clashing types: the names read as inferred
        if mode == "overwrite":
            remove_sidecar(fs, directory)
        return
    if describe is not True:
        if partition_conflicts(describe, schema, partition_cols):
            from bridge.errors import SchemaMismatchError

            remove_sidecar(fs, directory)
            conflicts = "; ".join(partition_conflicts(describe, schema, partition_cols))
            msg = (f"write_parquet(partition_cols={partition_cols}, mode='append'): the rows appended to "
                   f"{directory!r} have other partition column types than its _common_metadata records "
                   f"({conflicts}); it was removed, so the directory names read as inferred types")
            raise SchemaMismatchError(msg, "cast the columns to one type and re-write the directory with "
                                           "mode='overwrite' to record them again")
        return  # the recorded schema holds for the appended rows too
    write_sidecar(fs, directory, schema)


class WriteMethods(DatasetMixin):
    """File-writing methods of :class:`bridge.Dataset`."""

    def _write_files(self, fmt: str, ext: str, path: Any, filesystem: Any, mode: str, filename_prefix: str,
                     options: dict[str, Any], column: str | None = None,
                     partition_cols: list[str] | None = None, min_rows_per_file: int | None = None,
                     filename_provider: Any = None) -> list[str]:
        from functools import partial

        from bridge.execution.transform import BlockTransform
        from bridge.io.file_datasink import (
            FileWriter,
            check_partition_cols,
            commit_staged,
            new_write_id,
            prepare_directory,
            remove_staged,
        )

        if min_rows_per_file is not None and (isinstance(min_rows_per_file, bool)
                                              or not isinstance(min_rows_per_file, int) or min_rows_per_file < 1):
            from bridge.errors import BridgeValueError

            msg = f"write_{fmt}(min_rows_per_file={min_rows_per_file!r}): needs a positive row count"
            raise BridgeValueError(msg, "pass e.g. min_rows_per_file=100_000, or leave it unset for one file "
                                        "per block")
        _check_options(fmt, options)
        if fmt == "csv" and "write_options" in options:
            from bridge.io.file_datasink import CsvWriteOptions

            options = {**options, "write_options": CsvWriteOptions.of(options["write_options"])}
        if filename_provider is not None and not (hasattr(filename_provider, "get_filename_for_task")
                                                  or hasattr(filename_provider, "get_filename_for_block")):
            from bridge.errors import BridgeTypeError

            msg = f"write_{fmt}(filename_provider=...) needs a FilenameProvider; got {type(filename_provider).__name__}"
            raise BridgeTypeError(msg, "subclass bridge.FilenameProvider and override get_filename_for_task("
                                       "write_uuid, task_index)")
        known = None
        if partition_cols:
            known = self._ds.schema()
            check_partition_cols(list(partition_cols), known, fmt)
        # Staged (hidden files renamed once every task succeeded): with a provider, whose names are checked
        # first, and for every overwrite, which removes the earlier files only then -- a write that fails
        # (a user function's error, Ctrl-C) leaves the earlier output as it was.
        staged = filename_provider is not None or mode == "overwrite"
        fs, directory, skip = prepare_directory(path, filesystem, mode, filename_prefix, ext, fmt,
                                                remove_earlier=not staged)
        if skip:
            return []
        describe = _layout_before(fs, directory, mode, fmt, list(partition_cols or ()), known)
        write_id = new_write_id() if mode == "append" else None
        writer = FileWriter(fmt, ext, fs, directory, filename_prefix, options, column, write_id,
                            list(partition_cols or ()), filename_provider,
                            new_write_id() if staged else "", staged)
        label = f"Write{fmt.capitalize()}"
        # min_rows_per_file: contiguous blocks are bundled into one write task until they hold that many
        # rows (a block is never split; the last file may hold fewer), as Ray Data does.
        ds = self._ds._map_like(partial(BlockTransform, writer, label), label, None, None, None, None, {},
                            min_rows=min_rows_per_file, bundle_after_read=True)
        if not staged:
            result = ds.to_arrow()
            paths = [p for p in result.column("path").to_pylist()] if result.num_rows else []
        else:
            try:
                result = ds.to_arrow()
            except BaseException:
                remove_staged(fs, directory, writer.provider_uuid)
                raise
            paths = commit_staged(fs, result, mode, fmt, directory, filename_prefix, ext)
        if partition_cols and not paths and known is not None:
            # No rows, so no k=v directory: one file of no rows keeps the schema (see write_schema_file),
            # unless the directory holds data already (an append of nothing adds nothing).
            from bridge.io.paths import data_files

            if not data_files(fs, directory):
                result = writer.write_schema_file(known)
                paths = result.column("path").to_pylist()
        if fmt == "parquet" and mode != "overwrite" and paths:
            # Files were added: a _metadata another tool wrote lists the earlier ones only (an overwrite
            # removed it with the files it described).
            from bridge.io.file_datasink import remove_stale_summaries

            remove_stale_summaries(fs, directory)
        if describe is not None:
            _layout_after(fs, directory, mode, list(partition_cols or ()), describe, result)
        return paths

    def write_parquet(self, path: Any, *, filesystem: Any = None, mode: str = "overwrite",
                      filename_prefix: str = "part", partition_cols: list[str] | None = None,
                      min_rows_per_file: int | None = None, filename_provider: Any = None,
                      **parquet_options: Any) -> list[str]:
        """Write one Parquet file per block into directory ``path`` (local or ``s3://...``).

        Every Arrow type survives, including tensor columns (``arrow.fixed_shape_tensor``)
        and pandas index metadata.  ``parquet_options`` go to ``pyarrow.parquet.write_table``
        (``compression="zstd"``, ``row_group_size=...``).

        ``min_rows_per_file`` bundles contiguous blocks into one file until it holds at least
        that many rows (a block is never split; the last file may hold fewer), for every
        ``write_*`` method.

        ``partition_cols`` writes Hive-style directories, ``path/k=v/part-00003.parquet``
        (one file per block and partition value; values URI-encoded, nulls as
        ``__HIVE_DEFAULT_PARTITION__``, the partition columns not repeated in the files),
        and ``path/_common_metadata``, the full schema (pyarrow's convention; readers of the
        data skip it), so ``read_parquet(path)`` gives the partition columns back as their
        types (booleans, dates, timestamps, ``int64``, ``"007"`` as written).  Appending with
        other types for them raises before writing; overwriting without ``partition_cols``
        removes the file.

        A Dataset without rows writes one file of no rows holding its schema (``part-00000.parquet``;
        with ``partition_cols`` at the top of ``path``, partition columns included), so
        ``read_parquet(path)`` gives the schema back with 0 rows (Ray Data writes nothing).

        ``mode="overwrite"`` replaces the dataset, summary files included: a ``_metadata`` or
        ``_common_metadata`` another tool wrote (``pyarrow.parquet.write_metadata``, Dask, Spark)
        describes the replaced files and is removed.  ``mode="append"`` removes a ``_metadata``
        (it lists the earlier files' row groups only, so readers that trust it, such as Dask,
        would miss the appended rows); a ``_common_metadata`` (the schema) is kept.

        ``filename_provider`` (a :class:`bridge.FilenameProvider` or Ray Data's) names each
        task's file instead of ``filename_prefix``, for every ``write_*`` method; the files
        appear when every task has finished, and a name given twice fails the write
        with nothing replaced.

        Returns:
            The paths written, in block order.

        Example:
            >>> import bridge
            >>> bridge.range(10, override_num_blocks=2).write_parquet("/tmp/rb_doc_out")  # doctest: +SKIP
            ['/tmp/rb_doc_out/part-00000.parquet', '/tmp/rb_doc_out/part-00001.parquet']
        """
        return self._write_files("parquet", "parquet", path, filesystem, mode, filename_prefix, parquet_options,
                                 partition_cols=partition_cols, min_rows_per_file=min_rows_per_file,
                                 filename_provider=filename_provider)

    def write_csv(self, path: Any, *, filesystem: Any = None, mode: str = "overwrite",
                  filename_prefix: str = "part", min_rows_per_file: int | None = None,
                  filename_provider: Any = None, **csv_options: Any) -> list[str]:
        """Write one CSV file (with header) per block.  Nested and tensor columns raise
        :class:`UnsupportedTypeError` naming the column.  ``csv_options`` go to
        ``pyarrow.csv.write_csv`` (e.g. ``write_options=pyarrow.csv.WriteOptions(delimiter=";")``).

        A Dataset without rows writes one file holding the header (the column names; a header
        says no types, so ``read_csv`` reads those columns as ``null`` unless given ``schema=``);
        one without columns writes no file, and rows without columns are refused.

        Example:
            >>> import bridge
            >>> bridge.range(3).write_csv("/tmp/rb_doc_csv")  # doctest: +SKIP
        """
        return self._write_files("csv", "csv", path, filesystem, mode, filename_prefix, csv_options,
                                 min_rows_per_file=min_rows_per_file, filename_provider=filename_provider)

    def write_json(self, path: Any, *, filesystem: Any = None, mode: str = "overwrite",
                   filename_prefix: str = "part", min_rows_per_file: int | None = None,
                   filename_provider: Any = None, **json_options: Any) -> list[str]:
        """Write one JSON-lines file per block (one object per row).

        Timestamps and dates become ISO-8601 strings (``read_json`` parses them back to
        timestamps), decimals strings, binary base64, tensors nested lists; integers are
        written exactly (``uint64`` beyond ``int64`` reads back as ``uint64``).
        ``json_options`` go to ``json.dumps`` (e.g. ``ensure_ascii=False``).  A float NaN or infinity is
        written as Python's ``json`` writes it, ``NaN`` / ``Infinity`` / ``-Infinity``, which ``read_json``,
        pandas and pyarrow read back (Ray Data writes ``null`` for NaN); parsers of strict JSON refuse them:
        ``allow_nan=False`` refuses such a value, naming the column, rather than write it.

        A Dataset without rows writes one empty file: JSON lines say nothing of columns without a
        row, so ``read_json(path)`` gives 0 rows and no columns, ``read_json(path, schema=...)``
        the schema given.

        Example:
            >>> import bridge
            >>> bridge.from_items([{"a": 1}]).write_json("/tmp/rb_doc_json")  # doctest: +SKIP
        """
        return self._write_files("json", "json", path, filesystem, mode, filename_prefix, json_options,
                                 min_rows_per_file=min_rows_per_file, filename_provider=filename_provider)

    def write_numpy(self, path: Any, *, column: str, filesystem: Any = None, mode: str = "overwrite",
                    filename_prefix: str = "part", filename_provider: Any = None) -> list[str]:
        """Write ``column`` as one ``.npy`` file per block (rows on axis 0; tensors keep their shape).

        A Dataset without rows writes one ``.npy`` of 0 rows, which keeps the dtype and the shape
        of a tensor column's rows (``(0, 2, 3)``).

        Example:
            >>> import bridge
            >>> bridge.range_tensor(8, shape=(2, 2)).write_numpy("/tmp/rb_doc_npy", column="data")  # doctest: +SKIP
        """
        from bridge.errors import BridgeError

        if not isinstance(column, str):
            msg = f"write_numpy(column=...) must name one column; got {column!r}"
            raise BridgeError(msg, 'pass column="data"')
        return self._write_files("numpy", "npy", path, filesystem, mode, filename_prefix, {}, column,
                                 filename_provider=filename_provider)
