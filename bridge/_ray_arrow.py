"""How a block travels through Ray's object store: one Arrow IPC stream where that reads faster.

Ray registers its own pickling of ``pa.Table`` (``ray._private.arrow_serialization``): it
truncates the buffers of sliced arrays (pyarrow's own pickling still sends a slice's whole
buffers) and, on every ``ray.get``, rebuilds each array in Python, a cost that grows with the
number of columns and is paid in every task and iterator that reads the block.  An Arrow IPC
stream is read back by one C++ call, zero-copy over the object's shared memory, at the price of
one copy when the block is put; for many small columns the put is faster that way too, Ray's
per-column work being larger than the copy (measured in ``integration/bench/RESULTS.md``,
"Blocks through Ray as one Arrow IPC stream").

So :func:`reduce_table` writes a table as IPC when its columns are small (at most
:data:`IPC_BYTES_PER_COLUMN` of buffers each on average); larger ones go Ray's way, which copies
their buffers only into the object.  Values, types, dictionaries, field and schema metadata come back
exactly either way; the chunking of a column may differ (IPC writes record batches).  An extension
type comes back as itself where the reading process has registered it, as through Ray's own path
(which sends the schema as IPC too): the canonical ones always, this library's variable-shape
tensor because the module the reader imports to restore the table registers it.  A table with no
columns is sent as its row count and metadata: Ray's reducer gives it back with no rows.  A table
with a dictionary inside a nested column goes as IPC whatever its size: Ray's reducer fails to
rebuild a dictionary child of a null struct.

Ray re-registers its reducer whenever it makes a serialisation context (``ray.init``, a worker's
start), into one process-wide table, so :func:`install` runs after that: from
:func:`bridge._ray.ensure_ray` on the driver and on a worker's import of ``bridge``.  Setting
Ray's ``RAY_DISABLE_CUSTOM_ARROW_DATA_SERIALIZATION=1`` leaves tables to pyarrow's pickling, as
in Ray; nothing is installed then.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from bridge import tensor as _tensor  # noqa: F401  (a reader restoring a table has the variable-shape tensor registered)
from bridge.block import table_without_columns  # the reader's half for a table with rows and no columns

#: Tables whose buffers average at most this many bytes a column go through IPC.  Above it the
#: copy at put costs more than Ray's per-column work at put and at one read.
IPC_BYTES_PER_COLUMN = 128 * 1024

#: Ray's own switch for its Arrow pickling; when it is set this module leaves tables alone too.
RAY_DISABLE_ENV = "RAY_DISABLE_CUSTOM_ARROW_DATA_SERIALIZATION"

#: The reducer that was registered for ``pa.Table`` before ours (Ray's); large tables go there.
_previous: Callable[[pa.Table], Any] | None = None


def _has_dictionary(typ: pa.DataType) -> bool:
    if isinstance(typ, pa.DictionaryType):
        return True
    if isinstance(typ, pa.BaseExtensionType):
        return _has_dictionary(typ.storage_type)
    return any(_has_dictionary(typ.field(i).type) for i in range(typ.num_fields))


def goes_as_ipc(table: pa.Table) -> bool:
    """Whether :func:`reduce_table` writes ``table`` as one IPC stream (else Ray's reducer takes it)."""
    columns = table.num_columns
    if columns == 0:
        return False
    if table.get_total_buffer_size() <= IPC_BYTES_PER_COLUMN * columns:
        return True
    return any(_has_dictionary(typ) for typ in table.schema.types if typ.num_fields or isinstance(typ, pa.BaseExtensionType))


def write_ipc(table: pa.Table) -> pa.Buffer:
    """``table`` as one Arrow IPC stream in a buffer of its own (a copy: only a slice's own rows are written).

    Sized first, then written once into a buffer of exactly that size: no reallocation on the way.
    A table of no rows is written as one batch of no rows: ``write_table`` writes no batch for it, and
    with no batch the stream carries no dictionaries (a ``Categorical``'s categories were lost).
    """
    batches = table.to_batches() if table.num_rows else [_empty_batch(table)]
    size = pa.MockOutputStream()
    with pa.ipc.new_stream(size, table.schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    buffer = pa.allocate_buffer(size.size())
    with pa.ipc.new_stream(pa.FixedSizeBufferWriter(buffer), table.schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return buffer


def _empty_batch(table: pa.Table) -> pa.RecordBatch:
    """A record batch of no rows keeping each dictionary column's values (:func:`bridge.block.empty_like`)."""
    from bridge.block import empty_like

    return pa.RecordBatch.from_arrays([col.chunk(0) for col in empty_like(table).columns], schema=table.schema)


def table_from_ipc(buffer: pa.Buffer) -> pa.Table:
    """The reader's half: the table over ``buffer`` (the object's own memory under ``ray.get``), no copy."""
    reader = pa.ipc.open_stream(buffer)
    if _unknown_ray_data_types(reader.schema):
        # A column of Ray Data's pickled Python objects (from_ray_data) in a process that has not imported
        # Ray Data: pyarrow read it as its storage, the pickles' bytes, which a map then stored for good.
        try:
            import ray.data._internal.object_extensions.arrow  # noqa: F401 - registers the type on import
        except ImportError:  # pragma: no cover - another Ray layout: read as stored
            pass
        else:
            reader = pa.ipc.open_stream(buffer)
    return reader.read_all()


def _unknown_ray_data_types(schema: pa.Schema) -> bool:
    """Whether a field of ``schema`` is Ray Data's pickled-object extension type read as its storage."""
    return any(f.metadata is not None and f.metadata.get(b"ARROW:extension:name") == b"ray.data.arrow_pickled_object"
               for f in schema)


def reduce_table(table: pa.Table) -> tuple:
    """Ray's pickling of a ``pa.Table`` in this process (see the module's docstring)."""
    if table.num_columns == 0:
        return table_without_columns, (table.num_rows, table.schema.metadata)
    if goes_as_ipc(table):
        try:
            buffer = write_ipc(table)
        except pa.ArrowNotImplementedError:  # a type this pyarrow cannot write as IPC: Ray's path takes it
            pass
        else:
            # A pa.Buffer pickles out of band: Ray copies it into the object and hands the reader a view of it.
            return table_from_ipc, (buffer,)
    if _previous is not None:
        return _previous(table)
    return table.__reduce__()


def install() -> None:
    """Register :func:`reduce_table` for ``pa.Table`` in this process's Ray, after Ray's own; idempotent.

    Does nothing before Ray is connected (the next :func:`bridge._ray.ensure_ray` installs it), or
    when Ray's Arrow pickling is switched off by :data:`RAY_DISABLE_ENV`.
    """
    global _previous
    if os.environ.get(RAY_DISABLE_ENV, "0") == "1":
        return
    from ray import cloudpickle
    from ray._private import worker

    dispatch = cloudpickle.CloudPickler.dispatch
    if dispatch.get(pa.Table) is reduce_table:
        return
    if not worker.global_worker.connected:
        return
    worker.global_worker.get_serialization_context()  # made now if not yet: Ray registers its reducer there
    current = dispatch.get(pa.Table)
    if current is not reduce_table:
        _previous = current
        dispatch[pa.Table] = reduce_table


__all__ = ["IPC_BYTES_PER_COLUMN", "goes_as_ipc", "install", "reduce_table", "table_from_ipc", "table_without_columns",
           "write_ipc"]
