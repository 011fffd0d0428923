"""Arrow blocks <-> pandas frames without changing a value: one rule for every pandas-like target.

Used by pandas batches (``map_batches(..., batch_format="pandas")``,
``iter_batches(batch_format="pandas")``), ``Dataset.to_pandas()`` and the Dask,
Modin and Xorbits adapters, so a round trip through any of them is exact.

=================================================  ==========================================================
Arrow column                                       pandas column
=================================================  ==========================================================
int / uint, bool, float without nulls or NaN       NumPy dtype (``int64``, ``uint8``, ``bool``, ``float32``...)
int / uint, bool with nulls                        masked dtype (``Int64``, ``UInt8``, ``boolean``): null is
                                                   ``pd.NA``, a value above 2**53 stays exact
float32 / float64 with nulls or NaN                masked ``Float32`` / ``Float64``: NaN and ``pd.NA`` stay
                                                   two different things
float16 with nulls or NaN                          ``ArrowDtype(halffloat)`` (pandas has no masked float16)
list, large_list, fixed_size_list, struct, map,    ``ArrowDtype`` (the Arrow values themselves: inner nulls,
time32 / time64, list views                        fixed sizes, key order and nanoseconds kept)
fixed- / variable-shape tensor                     object column of one ndarray per row, shape kept
everything else                                    Arrow's ``to_pandas`` (timestamps with unit and zone,
                                                   Categorical, Decimal, date, bytes, str objects)
=================================================  ==========================================================

A block made from a frame (``from_pandas``, ``from_dask``, ``from_modin``, a pandas batch)
carries pandas metadata naming each column's dtype there; where the rules above would give
another dtype, the frame's comes back (:func:`frame_dtype`), as Ray Data and pyarrow give it:

=================================================  ==========================================================
the frame's column                                 pandas column
=================================================  ==========================================================
NumPy ``float16/32/64`` (NaN was its missing       that NumPy dtype, null read as NaN (not masked ``Float64``)
value, stored as null)
``ArrowDtype`` (``int32[pyarrow]``, ...)            that ``ArrowDtype`` (not the masked or object dtype)
``object`` of Python ints / bools / floats with    ``object`` of those Python values and ``None`` (not a
``None``, of lists, dicts or ``datetime.time``     masked or ``ArrowDtype`` column)
=================================================  ==========================================================

An ``ArrowDtype`` pyarrow names otherwise (a decimal is "object", as a column of ``Decimal`` objects) is
marked in the entry (:data:`ARROW_DTYPE_KEY`).  A column an operation replaced by values of another type
(``with_column``, ``add_column``, a function's table) or added under a dropped column's name has no
entry (:func:`fitted_metadata`): the first table's rules give its dtype, as for any new column.

Back (:func:`pandas_to_block`) pandas' own convention holds for NumPy float
columns (NaN is missing, as ``pyarrow.Table.from_pandas`` reads it); a masked
or ``ArrowDtype`` column converts exactly; an object column of ndarrays whose
input column was a tensor becomes that tensor type again; and with the input
schema (``like``) types NumPy cannot carry are restored (see
:func:`bridge.batch.to_block`).

The choice is made per column from the values of the block at hand
(``nullable=None``) or, for targets whose partitions must share one dtype per
column (Dask, Modin), from a set of column names computed over all blocks
(:func:`needs_nullable`).

Example:
    >>> import pyarrow as pa
    >>> df = block_to_pandas(pa.table({"x": pa.array([2**53 + 1, None])}))
    >>> str(df["x"].dtype), df["x"].iloc[0]
    ('Int64', np.int64(9007199254740993))
"""

from __future__ import annotations

import base64
import json
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray

from bridge import tensor
from bridge.arrow_values import object_column, refuse_unions
from bridge.block import Block, check_ordered_dictionaries, unify_dictionaries
from bridge.text_objects import MIN_ROWS, is_text, values_repeat

if TYPE_CHECKING:
    import pandas


def _arrow_backed(t: pa.DataType) -> bool:
    """Types whose NumPy/Python form would lose something: they stay Arrow values inside pandas."""
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_struct(t) or pa.types.is_map(t) or pa.types.is_time(t)
            or getattr(pa.types, "is_list_view", lambda _: False)(t)
            or getattr(pa.types, "is_large_list_view", lambda _: False)(t)) and not tensor.is_tensor(t)


def _maskable(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_floating(t)


def _has_nan(col: pa.ChunkedArray | pa.Array) -> bool:
    return bool(pa.types.is_floating(col.type) and len(col) and pc.any(pc.is_nan(col)).as_py())


def column_needs_nullable(col: pa.ChunkedArray | pa.Array) -> bool:
    """A numeric or bool column that a NumPy dtype cannot hold exactly: it has nulls (or NaN, for floats)."""
    col = _plain_column(col)
    return _maskable(col.type) and (col.null_count > 0 or _has_nan(col))


def _plain_column(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A run-end encoded column decoded (its nulls are its values': the array itself counts none); an
    ``arrow.bool8`` column as the bools it means (pyarrow gives pandas its int8 storage, floats where a row
    is null); anything else as it is."""
    if pa.types.is_run_end_encoded(col.type):
        return pc.run_end_decode(col)
    if isinstance(col.type, pa.BaseExtensionType) and col.type.extension_name == "arrow.bool8":
        return pc.cast(col, pa.bool_())
    return col


def _plain_columns(block: Block) -> Block:
    """``block`` with its run-end encoded columns decoded and its ``arrow.bool8`` columns as bools (see
    :func:`_plain_column`): pandas has no such types, and pyarrow's own conversion of a run-end encoded
    column holding a null gives floats (``2**53 + 1`` became ``2**53``); plain, the values follow their own
    type's rules (masked where there are nulls).  (``from_pandas`` restores the types from the schema a
    frame carries.)"""
    for i, field in enumerate(block.schema):
        col = block.column(i)
        plain = _plain_column(col)
        if plain is not col:
            block = block.set_column(i, field.with_type(plain.type), plain)
    return block


def needs_nullable(block: Block) -> set[str]:
    """The names of ``block``'s columns that need a masked pandas dtype (see the module docstring)."""
    return {name for name, col in zip(block.column_names, block.columns) if column_needs_nullable(col)}


def _masked_dtype(t: pa.DataType) -> Any:
    import pandas as pd

    if pa.types.is_boolean(t):
        return pd.BooleanDtype()
    if pa.types.is_float16(t):
        return pd.ArrowDtype(t)
    if pa.types.is_floating(t):
        return pd.Float32Dtype() if pa.types.is_float32(t) else pd.Float64Dtype()
    prefix = "UInt" if pa.types.is_unsigned_integer(t) else "Int"
    return pd.api.types.pandas_dtype(f"{prefix}{t.bit_width}")


def _convert_column(col: pa.ChunkedArray, nullable: bool) -> Any:
    import pandas as pd

    t = col.type
    if tensor.is_tensor(t):
        return pd.Series(list(tensor.tensor_to_numpy(col)), dtype=object)
    if _arrow_backed(t):
        return pd.Series(pd.arrays.ArrowExtensionArray(col))
    if nullable and _maskable(t):
        dtype = _masked_dtype(t)
        if isinstance(dtype, pd.ArrowDtype):
            return pd.Series(pd.arrays.ArrowExtensionArray(col))
        return pd.Series(dtype.__from_arrow__(col))
    return None


#: ``DataFrame.attrs`` key holding the Arrow schema a frame was made from: ``from_pandas`` of such
#: a frame restores the types pandas cannot name (dictionary index width, decimal precision,
#: large strings, a fixed-shape tensor with a null row).
SCHEMA_ATTR = "raybridge.arrow_schema"


def block_to_pandas(block: Block, nullable: Collection[str] | None = None, *, schema_attr: bool = False,
                    strings: Any = None, writable: bool = True) -> pandas.DataFrame:
    """One block -> one DataFrame by the rules of the module docstring.

    ``nullable``: the columns to give masked dtypes; ``None`` decides from this block's values.
    ``schema_attr``: keep the block's schema in ``df.attrs`` (see :data:`SCHEMA_ATTR`).
    ``strings``: a pandas dtype for string columns (Dask's ``string[pyarrow]``); ``None``: objects.
    ``writable=False``: numeric columns may share the block's memory, read-only, one pandas block
    per column (no copy), as a frame read back from Ray's object store is; for frames that are only
    read, such as Modin's partitions.
    A block with pandas metadata (from ``from_pandas``) gets its index back.
    """
    refuse_unions(block.schema, "pandas")
    df = _block_to_pandas(block, nullable, strings, writable)
    if schema_attr:
        # As text (base64 of the IPC schema): pandas copies attrs and pyarrow stores them as JSON.
        df.attrs[SCHEMA_ATTR] = base64.b64encode(block.schema.serialize().to_pybytes()).decode("ascii")
    return df


def schema_of(df: Any) -> pa.Schema | None:
    """The Arrow schema a frame was made from (:data:`SCHEMA_ATTR`), if it still carries it."""
    text = getattr(df, "attrs", {}).get(SCHEMA_ATTR)
    if not isinstance(text, str):
        return None
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
    except (ValueError, pa.ArrowInvalid):
        return None


#: The masked pandas dtypes pandas metadata may name (``numpy_type``): an index of one is restored
#: as one (pyarrow restores them for data columns only).
_MASKED_NAMES = frozenset({*(f"{p}{b}" for p in ("Int", "UInt") for b in (8, 16, 32, 64)),
                           "Float32", "Float64", "boolean"})


def _zoned_dictionary(t: pa.DataType) -> bool:
    """A dictionary of zoned timestamps: pyarrow's ``to_pandas`` drops the zone (wall times shift)."""
    return pa.types.is_dictionary(t) and pa.types.is_timestamp(t.value_type) and t.value_type.tz is not None


def _zoned_categorical(col: pa.ChunkedArray) -> Any:
    """A dictionary of zoned timestamps -> a Categorical whose categories keep the zone."""
    import pandas as pd

    col = unify_dictionaries(pa.table({"c": col})).column(0)
    t = col.type
    values = col.chunk(0).dictionary if col.num_chunks else pa.array([], t.value_type)
    categories = pd.DatetimeIndex(values.to_pandas())
    if categories.is_unique and not categories.hasnans:
        codes = pa.chunked_array([c.indices for c in col.chunks], t.index_type).cast(pa.int64()).fill_null(-1)
        return pd.Series(pd.Categorical.from_codes(codes.to_numpy(), categories=categories, ordered=t.ordered))
    return pd.Series(pd.Categorical(col.cast(t.value_type).to_pandas(), ordered=t.ordered))


def _pyarrow_strings(entry: Any, t: pa.DataType) -> bool:
    """A ``string[pyarrow]`` column of the frame the block came from (pyarrow gives ``string[python]``)."""
    return isinstance(entry, dict) and entry.get("numpy_type") == "string" and pa.types.is_large_string(t)


#: Key in a column's pandas metadata entry (its ``metadata``) naming the Arrow type of an ``ArrowDtype`` column
#: whose ``numpy_type`` does not say so: pyarrow names ``ArrowDtype(decimal128(10, 2))`` "object", as it names a
#: column of ``Decimal`` objects (set by :func:`table_from_pandas`, read by :func:`frame_dtype`).
ARROW_DTYPE_KEY = "raybridge_arrow_dtype"

#: What :func:`frame_dtype` says of a column: the frame held it as a NumPy float (NaN for missing), or
#: as Python objects.
FRAME_FLOAT = "float"
FRAME_OBJECT = "object"


def frame_dtype(entry: Any, t: pa.DataType) -> Any:
    """How the frame a block was made from held a column of Arrow type ``t``, where this module's own
    rule would give it another dtype; ``None`` where it would not (or the metadata does not say).

    ``entry``: the column's entry in the block's pandas metadata (``numpy_type`` is the frame's dtype).
    Gives a ``pandas.ArrowDtype`` (the frame's, when it is ``t`` itself), :data:`FRAME_FLOAT` (a NumPy
    float column of ``t``'s width, whose NaNs pyarrow stored as nulls) or :data:`FRAME_OBJECT` (an
    object column of Python values that Arrow holds as ``t``).
    """
    numpy_type = entry.get("numpy_type") if isinstance(entry, dict) else None
    if not isinstance(numpy_type, str):
        return None
    marks = entry.get("metadata")
    if isinstance(marks, dict) and marks.get(ARROW_DTYPE_KEY) == str(t):
        import pandas as pd

        return pd.ArrowDtype(t)  # (a decimal ArrowDtype: pyarrow names it "object", as a column of Decimals)
    if numpy_type.endswith("[pyarrow]"):
        import pandas as pd

        if numpy_type == f"{t}[pyarrow]" and numpy_type != "string[pyarrow]":
            # The name pyarrow gives ``ArrowDtype(t)``: also where pandas cannot parse it back (a dictionary,
            # a map: pyarrow's own ``to_pandas`` fails on those).
            return pd.ArrowDtype(t)
        try:
            # "string[pyarrow]" names ``ArrowDtype(pa.string())`` here (a ``StringDtype`` is "string"), but
            # pandas parses it as ``StringDtype("pyarrow")``.
            dtype = pd.ArrowDtype(pa.string()) if numpy_type == "string[pyarrow]" \
                else pd.api.types.pandas_dtype(numpy_type)
        except (TypeError, ValueError, NotImplementedError):
            return None
        return dtype if isinstance(dtype, pd.ArrowDtype) and dtype.pyarrow_dtype == t else None
    if numpy_type in ("float16", "float32", "float64"):
        width = np.dtype(numpy_type).itemsize * 8
        return FRAME_FLOAT if pa.types.is_floating(t) and t.bit_width == width else None
    if numpy_type == "object" and (
            _maskable(t) or (_arrow_backed(t) and not (pa.types.is_time(t) and t.unit == "ns"))):
        return FRAME_OBJECT  # (datetime.time has no nanoseconds: such a column stays ArrowDtype)
    return None


def _python_objects(col: pa.ChunkedArray) -> Any:
    """A column as an object Series of its Python values, ``None`` for null (ints exact, lists as lists)."""
    import pandas as pd

    values = col.to_pylist()
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):  # (one by one: NumPy would make equal-length lists a 2-d array)
        out[i] = v
    return pd.Series(out, dtype=object)


def _plain_labels(column_indexes: Any) -> bool:
    """Whether pandas metadata describes plain labels (one unnamed level of strings), or none: nothing
    to restore, so no empty conversion to learn them."""
    if not column_indexes:
        return True
    only = column_indexes[0] if len(column_indexes) == 1 and isinstance(column_indexes[0], dict) else {}
    return only.get("name") is None and only.get("pandas_type") in ("unicode", "empty")


def _block_to_pandas(block: Block, nullable: Collection[str] | None, strings: Any,
                     writable: bool = True) -> pandas.DataFrame:
    import pandas as pd

    mapper = None
    if strings is not None:
        def mapper(t: pa.DataType) -> Any:
            return strings if t in (pa.string(), pa.large_string()) else None

    block = _plain_columns(block)
    check_ordered_dictionaries(block)
    meta = block.schema.pandas_metadata
    index_cols = [c for c in (meta or {}).get("index_columns", []) if isinstance(c, str) and c in block.column_names]
    entries = {e.get("field_name"): e for e in (meta or {}).get("columns", []) if isinstance(e, dict)}
    special: dict[str, Any] = {}
    for name, col in zip(block.column_names, block.columns):
        origin = frame_dtype(entries.get(name), col.type)
        if isinstance(origin, pd.ArrowDtype):
            special[name] = pd.Series(pd.arrays.ArrowExtensionArray(col))
            continue
        wants_mask = column_needs_nullable(col) if nullable is None else name in nullable
        if name in index_cols and (entries.get(name) or {}).get("numpy_type") in _MASKED_NAMES:
            wants_mask = True  # an ``Int64`` index without nulls is still an ``Int64`` index
        if origin == FRAME_FLOAT:
            wants_mask = False  # Arrow's own conversion: the frame's NumPy float, null read as NaN
        elif origin == FRAME_OBJECT and (_arrow_backed(col.type) or (wants_mask and _maskable(col.type))):
            special[name] = _python_objects(col)
            continue
        if tensor.is_tensor(col.type) or _arrow_backed(col.type) or (wants_mask and _maskable(col.type)):
            special[name] = _convert_column(col, wants_mask)
        elif _zoned_dictionary(col.type):
            special[name] = _zoned_categorical(col)
        elif strings is None and _pyarrow_strings(entries.get(name), col.type):
            special[name] = pd.Series(pd.arrays.ArrowStringArray(col))
    plain_labels = _plain_labels((meta or {}).get("column_indexes"))
    dedup = True if strings is not None else _share_text_objects(
        block, special, entries, index_cols, plain_labels and len(set(block.column_names)) == block.num_columns)
    labels = None
    try:
        df = _frame_of(block, special, index_cols, meta, mapper, writable, dedup)
    except (ValueError, TypeError):
        if plain_labels:
            raise
        # Labels of two kinds: a column added under a string name to a frame of int labels (``with_column``),
        # which pyarrow fails to make an int.  Built by field name; the labels are restored one by one.
        unlabelled = {**(meta or {}), "column_indexes": []}
        block = block.replace_schema_metadata({**block.schema.metadata, b"pandas": json.dumps(unlabelled).encode()})
        df = _frame_of(block, special, index_cols, unlabelled, mapper, writable, dedup)
        labels = _column_labels(block.schema, index_cols, meta)
    if labels is None and special and not plain_labels:
        # Column labels that are not plain strings (ints, a named or multi-level column index): the
        # frame above is built by field name; pyarrow restores the labels from the metadata.
        labels = _column_labels(block.schema, index_cols, meta)
    if labels is not None and len(labels) == len(df.columns) and not (
            labels.nlevels == 1 and labels.name is None and labels.inferred_type in ("string", "empty")):
        df.columns = labels
    return df


def _labels_only(schema: pa.Schema, meta: dict[str, Any]) -> dict[bytes, bytes]:
    """``schema``'s metadata with pandas metadata ``meta`` naming no column's dtype (each an object column):
    enough for the labels and the index, and no dtype name pyarrow fails to parse
    ("dictionary<...>[pyarrow]", "map<...>[pyarrow]") or cannot apply to the column."""
    columns = [{**e, "numpy_type": "object"} if isinstance(e, dict) else e for e in meta.get("columns", [])]
    return {**(schema.metadata or {}), b"pandas": json.dumps({**meta, "columns": columns}).encode()}


def _column_labels(schema: pa.Schema, index_cols: list[str], meta: Any) -> Any:
    """The frame's column labels, as pyarrow restores them from the pandas metadata ``meta`` (of a block of
    ``schema``); one by one where they are not all of one kind (a label pyarrow cannot restore stays the
    field's name, as ``df["y"] = ...`` on a frame of int labels gives ``[0, 1, "y"]``)."""
    import pandas as pd

    from bridge.block import empty_table

    metadata = _labels_only(schema, meta)
    try:
        return empty_table(schema.with_metadata(metadata)).to_pandas().columns
    except (ValueError, TypeError):
        pass
    labels: list[Any] = []
    for field in schema:
        if field.name in index_cols:
            continue
        try:
            got = empty_table(pa.schema([field], metadata=metadata)).to_pandas().columns.tolist()
        except (ValueError, TypeError):
            got = []
        labels.append(got[0] if len(got) == 1 else field.name)
    levels = meta.get("column_indexes") or []
    name = levels[0].get("name") if len(levels) == 1 and isinstance(levels[0], dict) else None
    return pd.Index(labels, dtype=object, name=name)


def _share_text_objects(block: Block, special: dict[str, Any], entries: dict[Any, Any],
                        index_cols: list[str], by_name: bool) -> bool:
    """Whether pyarrow is to share one Python object per distinct value of the text columns it converts
    (``deduplicate_objects``; :mod:`bridge.text_objects`): not where none of them repeats.  Where some do,
    those that do not are converted here, one object per row, into ``special`` -- only where the frame
    can be put together by field name (``by_name``: unique names that are the frame's labels); else
    all are shared, as pyarrow does.  Short blocks: pyarrow's default (shared)."""
    import pandas as pd

    text = [(name, col) for name, col in zip(block.column_names, block.columns)
            if name not in special and is_text(col.type)]
    if not text or block.num_rows < MIN_ROWS:
        return True
    unique = [(name, col) for name, col in text if not values_repeat(col)]
    if len(unique) == len(text):
        return False
    if not by_name:
        return True
    for name, col in unique:
        entry = entries.get(name)
        if name not in index_cols and (entry is None or (isinstance(entry, dict) and entry.get("numpy_type") == "object")):
            special[name] = pd.Series(col.to_numpy(zero_copy_only=False), copy=False)
    return True


def _frame_of(block: Block, special: dict[str, Any], index_cols: list[str], meta: Any, mapper: Any,
              writable: bool, dedup: bool = True) -> pandas.DataFrame:
    import pandas as pd

    if any(c in special for c in index_cols):
        # An index column needing a masked or Arrow dtype (a null in it): pyarrow would restore the
        # index from the other columns only, so every index column is made a data column first and
        # then the index, named as the metadata says.
        assert meta is not None
        names = {e.get("field_name"): e.get("name") for e in meta.get("columns", [])}
        unindexed = {**(block.schema.metadata or {}), b"pandas": json.dumps({**meta, "index_columns": []}).encode()}
        df = _frame_of(block.replace_schema_metadata(unindexed), special, [], None, mapper, writable, dedup)
        df = df.set_index(index_cols)
        df.index.names = [names.get(c, c) for c in index_cols]
        return df
    # Writable: consolidated (not split_blocks), Arrow copies into pandas' own blocks, so the frame
    # is writable and in-place pandas code (``df["x"] += 1``) works.
    if not special:
        return block.to_pandas(types_mapper=mapper, split_blocks=not writable, deduplicate_objects=dedup)
    if len(set(block.column_names)) != block.num_columns:
        from bridge.errors import BridgeError

        dupes = sorted({c for c in block.column_names if block.column_names.count(c) > 1})
        raise BridgeError(f"cannot make a pandas DataFrame: duplicate column names {dupes}",
                          "rename the columns first (ds.rename_columns({...}))")
    plain = [n for n in block.column_names if n not in special]
    base = None
    if plain:
        # By field name: labels restored from the metadata (ints) would not be found below (and the
        # column dropped); the caller gives the frame its labels.
        # The metadata describes only the columns pyarrow converts here: the entry of a column converted above
        # may name a dtype pyarrow fails to parse ("dictionary<...>[pyarrow]") or applies wrongly.
        picked = block.select(plain)
        own = picked.schema.pandas_metadata
        if own and (own.get("column_indexes") or any(isinstance(e, dict) and e.get("field_name") in special
                                                     for e in own.get("columns", []))):
            own = {**own, "column_indexes": [], "columns": [
                e for e in own.get("columns", []) if not (isinstance(e, dict) and e.get("field_name") in special)]}
            picked = picked.replace_schema_metadata({**picked.schema.metadata, b"pandas": json.dumps(own).encode()})
        base = picked.to_pandas(types_mapper=mapper, split_blocks=not writable, deduplicate_objects=dedup)
    index = base.index if base is not None else pd.RangeIndex(block.num_rows)
    cols: dict[str, Any] = {}
    for name in block.column_names:
        if name in special:
            s = special[name]
            s.index = index
            cols[name] = s
        elif base is not None and name in base.columns:
            cols[name] = base[name]
        # else: an index column (pandas metadata) that became ``base``'s index
    return pd.DataFrame(cols, index=index, copy=False)


def renamed_metadata(metadata: dict[bytes, bytes], rename: dict[str, str]) -> dict[bytes, bytes]:
    """A schema's metadata after ``rename`` of its columns: the pandas metadata (index columns, dtypes)
    names the new names, so a named index stays the index and the columns keep their pandas dtypes."""
    raw = metadata.get(b"pandas")
    if raw is None:
        return metadata
    try:
        meta = json.loads(raw)
        meta["index_columns"] = [rename.get(c, c) if isinstance(c, str) else c for c in meta.get("index_columns", [])]
        for entry in meta.get("columns", []):
            old = entry.get("field_name")
            if old in rename:
                if entry.get("name") == old:
                    entry["name"] = rename[old]
                entry["field_name"] = rename[old]
    except (ValueError, TypeError, AttributeError):
        return metadata
    return {**metadata, b"pandas": json.dumps(meta).encode("utf8")}


def fitted_metadata(block: Block, before: pa.Schema | None = None) -> Block:
    """``block`` with its pandas metadata (kept from the frame it came from by an operation that changed its
    columns) made true of its columns again, so that ``to_pandas`` gives no old column's dtype to new values.

    ``before``: the schema of the block the operation started from.  The entry of a column whose type is not
    the one ``before`` gives it (replaced by ``with_column`` / ``add_column`` or a function's table, or new
    under a name a dropped column had) is dropped: the rules of the module docstring then give its dtype, as
    for any new column (an Int64 entry made 0.5 an error, a ``string`` entry made ints strings).  An index
    column keeps an entry (pyarrow needs its name), describing the new type.  The entry of a column the block
    no longer has is dropped, from the index columns too (else it came back with a later column of its name).
    No metadata to fit: ``block`` itself.
    """
    raw = (block.schema.metadata or {}).get(b"pandas")
    if raw is None:
        return block
    try:
        meta = json.loads(raw)
        entries = meta.get("columns", [])
        index_columns = meta.get("index_columns", [])
    except (ValueError, TypeError, AttributeError):
        return block
    if not isinstance(entries, list) or not isinstance(index_columns, list):
        return block
    types = dict(zip(block.schema.names, block.schema.types))
    old = dict(zip(before.names, before.types)) if before is not None else types
    kept: list[Any] = []
    gone: set[str] = set()
    changed = False
    for entry in entries:
        name = entry.get("field_name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or (name in types and old.get(name) == types[name]):
            kept.append(entry)
        elif name in types and name in index_columns:
            kept.append(_plain_entry(entry, name, types[name]))
            changed = True
        else:
            gone.add(name)
            changed = True
    if not changed:
        return block
    meta["columns"] = kept
    meta["index_columns"] = [c for c in index_columns if not (isinstance(c, str) and c in gone)]
    return block.replace_schema_metadata({**block.schema.metadata, b"pandas": json.dumps(meta).encode("utf8")})


def _plain_entry(entry: dict[str, Any], name: str, t: pa.DataType) -> dict[str, Any]:
    """An index column's pandas metadata entry for a column of type ``t``: its label, and the dtype pyarrow
    would write for the pandas column Arrow makes of ``t`` (no frame's dtype to restore)."""
    try:
        described = pa.Table.from_pandas(pa.table({name: pa.array([], t)}).to_pandas(), preserve_index=False)
        fresh = described.schema.pandas_metadata["columns"][0]
    except (pa.ArrowException, TypeError, ValueError, KeyError, IndexError):
        fresh = {"pandas_type": "object", "numpy_type": "object", "metadata": None}
    return {**fresh, "name": entry.get("name"), "field_name": name}


def keeps_index(df: pandas.DataFrame, like: pa.Schema | None) -> bool:
    """Whether a pandas batch's index becomes column(s) of its block (``map_batches``' pandas results).

    A named index is kept: a column of the batch's input that became its index (a Dataset made by
    ``from_pandas`` of a frame with one), or one the function set with ``set_index``.  An unnamed one
    is kept where the block the batch came from stored an unnamed index (``from_pandas`` of a frame
    indexed by ``[7, 9]``): its labels come back.  Otherwise (a default ``RangeIndex``, the positions a
    filter leaves) it is dropped, as Ray Data drops every index.
    """
    import pandas as pd

    idx = df.index
    if isinstance(idx, pd.RangeIndex) and idx.name is None:
        return False
    if any(n is not None for n in idx.names):
        return True
    meta = (like.pandas_metadata if like is not None else None) or {}
    return any(isinstance(c, str) for c in meta.get("index_columns", []))


def pandas_to_block(df: pandas.DataFrame, like: pa.Schema | None = None, *, preserve_index: bool = False) -> Block:
    """One DataFrame -> one block (the reverse of :func:`block_to_pandas`; see the module docstring).

    ``preserve_index``: the index becomes column(s) too, recorded in the pandas metadata as the index
    where pyarrow converts the frame (else as plain columns named as pyarrow names them).
    """
    names = [str(c) for c in df.columns]
    if len(set(names)) != len(names):
        from bridge.errors import BridgeError

        dupes = sorted({c for c in names if names.count(c) > 1})
        raise BridgeError(f"the DataFrame has duplicate column names {dupes}",
                          "give every column its own name (df.columns = [...]) before converting")
    like_types = {f.name: f.type for f in like} if like is not None else {}
    fixed: dict[str, pa.Array] = {}
    for i, name in enumerate(names):
        if df.dtypes.iloc[i] != np.dtype(object):  # ArrowDtype, masked and NumPy columns convert exactly
            continue
        values = df.iloc[:, i].to_numpy()
        first = next((v for v in values if v is not None), None)
        if isinstance(first, np.ndarray):
            # One ndarray per row: the input's tensor or list type again where the rows fit it.
            fixed[name] = object_column(values, like_types.get(name))
    if not fixed:
        try:
            return table_from_pandas(df, preserve_index=preserve_index)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            pass
    arrays = []
    for i, name in enumerate(names):
        if name in fixed:
            arrays.append(fixed[name])
        else:
            s = df.iloc[:, i]
            arrays.append(pa.Array.from_pandas(s) if s.dtype != np.dtype(object)
                          else object_column(s.to_numpy(), like_types.get(name)))
    if preserve_index:
        for level in range(df.index.nlevels):
            values = df.index.get_level_values(level)
            label = values.name if values.name is not None and str(values.name) not in names \
                else f"__index_level_{level}__"
            names.append(str(label))
            arrays.append(pa.Array.from_pandas(values) if values.dtype != np.dtype(object)
                          else object_column(values.to_numpy(), like_types.get(str(label))))
    return pa.Table.from_arrays(arrays, names=names)


#: Below this many bytes of NumPy float columns pyarrow's own conversion is quicker: the split below costs
#: ~0.3 ms (two small conversions and the metadata), the scan it saves ~0.2 ms per MB.
_SPLIT_FLOAT_BYTES = 4 * 1024**2


def table_from_pandas(df: pandas.DataFrame, preserve_index: bool | None = None) -> pa.Table:
    """``pyarrow.Table.from_pandas(df, preserve_index=...)``, faster for float data (:func:`_from_pandas`).

    Two differences: without the index (``preserve_index=False``) pyarrow leaves out the description
    of the column labels too, so int labels came back as strings and ``df.columns.name`` was lost
    (here it is kept wherever the labels are not plain unnamed strings), and it makes a frame without
    columns a table without rows (here it keeps its row count).
    """
    labels = df.columns
    names = [str(c) for c in labels]
    if len(set(names)) != len(names):
        # (pyarrow raised a ValueError, or for labels 0 and "0" made two fields of one name)
        from bridge.errors import BridgeValueError

        dupes = sorted({c for c in names if names.count(c) > 1})
        raise BridgeValueError(f"cannot convert the DataFrame to Arrow: duplicate column names {dupes}",
                               "give every column its own name (df.columns = [...]) before converting")
    if len(labels) == 0 and preserve_index is False:
        # pyarrow makes a frame without columns a table without rows: its rows would be lost.
        from bridge.block import table_without_columns

        return table_without_columns(len(df), pa.Table.from_pandas(df.iloc[:0], preserve_index=False).schema.metadata)
    try:
        table = _from_pandas(df, preserve_index)
    except OverflowError as err:
        raise _int_overflow(df, err) from err
    if preserve_index is False and not (labels.nlevels == 1 and labels.name is None
                                        and labels.inferred_type in ("string", "empty")):
        meta = table.schema.pandas_metadata
        if meta is not None and not meta.get("column_indexes"):
            described = pa.Table.from_pandas(df.iloc[:0], preserve_index=None).schema.pandas_metadata
            meta["column_indexes"] = described["column_indexes"]
            table = table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(meta).encode()})
    if not (labels.nlevels == 1 and labels.name is None and labels.inferred_type in ("string", "empty")):
        _check_labels_come_back(labels, table.schema)
    return _mark_arrow_dtypes(df, table)


def _int_overflow(df: pandas.DataFrame, err: OverflowError) -> Exception:
    """The error for an object column holding a Python int past int64 (``[2**63, 1]``): pyarrow's bare
    "Python int too large to convert to C long" named no column."""
    from bridge.errors import UnsupportedTypeError

    for name, dtype in zip(df.columns, df.dtypes):
        if not (isinstance(dtype, np.dtype) and dtype.kind == "O"):
            continue
        big = next((v for v in df[name] if isinstance(v, int) and not -2**63 <= v < 2**63), None)
        if big is None:
            continue
        fits = all(0 <= v < 2**64 for v in df[name] if isinstance(v, int))
        hint = (f"df[{name!r}] = df[{name!r}].astype('UInt64') first: every value fits uint64" if fits else
                "ints past 64 bits have no Arrow integer type: keep them as text (astype(str)) or as "
                "decimals (decimal.Decimal values, or pd.ArrowDtype(pa.decimal128(38, 0)))")
        return UnsupportedTypeError(f"cannot convert the DataFrame to Arrow: object column {name!r} holds the int "
                                    f"{big}, past int64", hint)
    return err


def _mark_arrow_dtypes(df: pandas.DataFrame, table: pa.Table) -> pa.Table:
    """``table`` (made from ``df``) with :data:`ARROW_DTYPE_KEY` in the pandas metadata of each ``ArrowDtype``
    column pyarrow names otherwise (a decimal is "object", as a column of ``Decimal`` objects): so that
    ``to_pandas`` gives the frame's ``ArrowDtype`` back, not objects.  Other readers see the entry as pyarrow
    wrote it, one key more."""
    import pandas as pd

    arrow = {str(c): dt for c, dt in zip(df.columns, df.dtypes) if isinstance(dt, pd.ArrowDtype)}
    meta = table.schema.pandas_metadata if arrow else None
    if not meta:
        return table
    changed = False
    for entry in meta.get("columns", []):
        name = entry.get("field_name") if isinstance(entry, dict) else None
        dt = arrow.get(name) if isinstance(name, str) else None
        if dt is None or entry.get("numpy_type") == str(dt) or dt.pyarrow_dtype != _field_type(table, entry):
            continue
        marks = entry.get("metadata")
        entry["metadata"] = {**(marks if isinstance(marks, dict) else {}), ARROW_DTYPE_KEY: str(dt.pyarrow_dtype)}
        changed = True
    if not changed:
        return table
    return table.replace_schema_metadata({**table.schema.metadata, b"pandas": json.dumps(meta).encode("utf8")})


def _field_type(table: pa.Table, entry: dict[str, Any]) -> pa.DataType | None:
    i = table.schema.get_field_index(entry.get("field_name"))
    return table.schema.field(i).type if i >= 0 else None


def _check_labels_come_back(labels: Any, schema: pa.Schema) -> None:
    """Column labels that are not plain strings must come back from the pandas metadata as they were.

    Arrow names fields with strings; pyarrow restores int, float, tuple and named labels from the
    metadata, but not all: labels ``[True, False]`` came back ``[True, True]`` (``bool("False")``) and
    ``[0, "a"]`` as ``["0", "a"]``, without a word.  Those are refused, saying how to name them.
    """
    from bridge.block import empty_table

    meta = schema.pandas_metadata
    try:
        back = empty_table(schema.with_metadata(_labels_only(schema, meta)) if meta else schema).to_pandas().columns
        same = len(back) == len(labels) and list(back) == list(labels) and all(
            type(a) is type(b) for a, b in zip(back, labels)) and list(back.names) == list(labels.names)
    except (TypeError, ValueError, pa.ArrowException):
        same = False
    if not same:
        from bridge.errors import BridgeValueError

        shown = list(labels[:5])
        raise BridgeValueError(
            f"cannot convert the DataFrame to Arrow: its column labels {shown}{' ...' if len(labels) > 5 else ''} "
            f"({labels.inferred_type}) would not come back as they are (Arrow names columns with strings)",
            "give the columns string labels (df.columns = df.columns.map(str)) or labels of one kind (all ints)")


def _from_pandas(df: pandas.DataFrame, preserve_index: bool | None = None) -> pa.Table:
    """``pyarrow.Table.from_pandas(df, preserve_index=...)``: the very same table, faster for float data.

    pyarrow reads every value of a NumPy float column for NaN (pandas' missing
    value, which becomes null) one by one; a sum tells at memory speed whether
    a column holds any NaN at all (NaN propagates through addition).  Float
    columns without one are handed to Arrow as they are (zero-copy, as pyarrow
    does once it has found no NaN); every other column and the index go through
    pyarrow as before, and the ``pandas`` metadata of the two parts is merged in
    column order.  Same schema, metadata bytes, values and nulls (tested against
    pyarrow); about 4x faster on float frames (integration/bench/RESULTS.md).
    """
    cols = df.columns
    if not cols.is_unique or cols.nlevels != 1:
        return pa.Table.from_pandas(df, preserve_index=preserve_index)
    floats = {name: dt for name, dt in zip(cols, df.dtypes)
              if isinstance(dt, np.dtype) and dt.kind == "f" and dt.itemsize <= 8}
    if df.shape[0] * sum(dt.itemsize for dt in floats.values()) < _SPLIT_FLOAT_BYTES:
        return pa.Table.from_pandas(df, preserve_index=preserve_index)
    fast: dict[Any, np.ndarray] = {}
    with np.errstate(all="ignore"):  # a sum may overflow to inf: harmless, only NaN matters
        for name in floats:
            values = df[name].to_numpy()
            if not np.isnan(np.add.reduce(values)):  # inf - inf also reads as NaN: pyarrow's scan decides
                fast[name] = values
    if not fast:
        return pa.Table.from_pandas(df, preserve_index=preserve_index)

    rest_names = [c for c in cols if c not in fast]
    rest = pa.Table.from_pandas(df, columns=rest_names, preserve_index=preserve_index)
    described = pa.Table.from_pandas(df.iloc[:0], columns=list(fast), preserve_index=False)
    meta = json.loads(rest.schema.metadata[b"pandas"])
    fast_meta = dict(zip(fast, json.loads(described.schema.metadata[b"pandas"])["columns"]))
    rest_meta, index_meta = meta["columns"][:len(rest_names)], meta["columns"][len(rest_names):]
    arrays: list[Any] = []
    fields: list[pa.Field] = []
    entries: list[Any] = []
    j = k = 0  # the next column of ``rest``, of ``described``
    for name in cols:
        if name in fast:
            arrays.append(pa.array(fast[name]))
            fields.append(described.schema.field(k))
            entries.append(fast_meta[name])
            k += 1
        else:
            arrays.append(rest.column(j))
            fields.append(rest.schema.field(j))
            entries.append(rest_meta[j])
            j += 1
    arrays += rest.columns[j:]  # the index columns come last
    fields += [rest.schema.field(k) for k in range(j, rest.num_columns)]
    meta["columns"] = entries + index_meta
    metadata = {**(rest.schema.metadata or {}), b"pandas": json.dumps(meta).encode("utf8")}
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))


def nullable_columns(refs: list[Any]) -> set[str]:
    """The columns needing a masked dtype in any of the blocks behind ``refs``.

    For targets whose partitions must agree on one dtype per column (Dask, Modin).
    A few tasks, each looking at a group of blocks (null counts are metadata;
    only float columns are scanned for NaN): a task per block would cost more in
    scheduling than the look itself.
    """
    if not refs:
        return set()
    per = -(-len(refs) // _SCAN_TASKS)
    found: set[str] = set()
    for names in ray.get([_needs_nullable_task.remote(*refs[i:i + per]) for i in range(0, len(refs), per)]):
        found |= names
    return found


#: Tasks :func:`nullable_columns` spreads the blocks over.
_SCAN_TASKS = 4


def shared_categories(refs: list[Any], schema: pa.Schema) -> dict[str, Any]:
    """One ``CategoricalDtype`` per dictionary column of ``schema``, of every category of the blocks behind
    ``refs``: for targets converting each block alone whose partitions must agree (Dask, Modin).

    Each block's own dictionary made each partition's categories, so the same code meant another value in
    another partition (``x`` and ``z`` both code 0) and Dask's metadata said no category at all.  The
    categories are every block's dictionary values in first-seen order, as ``to_pandas`` unifies them; an
    *ordered* column whose blocks order them differently is refused (:func:`check_ordered_dictionaries`).
    Columns whose blocks' dictionaries hold different value types are left out.
    """
    names = [f.name for f in schema if isinstance(f.type, pa.DictionaryType)]
    if not names or not refs:
        return {}
    per = -(-len(refs) // _SCAN_TASKS)
    found: dict[str, list[pa.Array]] = {n: [] for n in names}
    for part in ray.get([_dictionaries_task.remote(names, *refs[i:i + per]) for i in range(0, len(refs), per)]):
        for name, dicts in part.items():
            found[name].extend(dicts)
    out: dict[str, Any] = {}
    for name, dicts in found.items():
        typ = schema.field(name).type
        if not dicts or any(not d.type.equals(typ.value_type) for d in dicts):
            continue
        pieces = [pa.DictionaryArray.from_arrays(pa.array([], typ.index_type), d, ordered=typ.ordered) for d in dicts]
        check_ordered_dictionaries(pa.table({name: pa.chunked_array(pieces, type=typ)}))
        values = pc.unique(pa.concat_arrays(dicts))
        sample = pa.DictionaryArray.from_arrays(pa.array([], pa.int64()), values, ordered=typ.ordered)
        out[name] = block_to_pandas(pa.table({name: sample}))[name].dtype
    return out


@ray.remote
def _dictionaries_task(names: list[str], *blocks: Block) -> dict[str, list[pa.Array]]:
    out: dict[str, list[pa.Array]] = {n: [] for n in names}
    for block in blocks:
        for name in names:
            if name not in block.column_names:
                continue
            for chunk in block.column(name).chunks:
                # (against the last few kept only: blocks of one source share a dictionary; repeats the
                # driver's unique() drops)
                if isinstance(chunk, pa.DictionaryArray) and not any(chunk.dictionary.equals(d) for d in out[name][-4:]):
                    out[name].append(chunk.dictionary)
    return out


def with_categories(df: pandas.DataFrame, categories: dict[str, Any]) -> pandas.DataFrame:
    """``df`` with each column named in ``categories`` (see :func:`shared_categories`) on that dtype: the
    codes remapped by value, no value changed."""
    import pandas as pd

    for name, dtype in categories.items():
        col = df[name] if name in df.columns and df.columns.is_unique else None
        if col is None or not isinstance(col.dtype, pd.CategoricalDtype):
            continue
        if not (col.cat.categories.equals(dtype.categories) and col.cat.ordered == dtype.ordered):
            # (set_categories, not astype: an unordered dtype of the same categories in another order
            # compares equal, and astype keeps the codes of that other order)
            df[name] = col.cat.set_categories(dtype.categories, ordered=dtype.ordered)
    return df


@ray.remote
def _needs_nullable_task(*blocks: Block) -> set[str]:
    found: set[str] = set()
    for block in blocks:
        found |= needs_nullable(block)
    return found
