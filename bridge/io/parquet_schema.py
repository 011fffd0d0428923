"""One schema for many Parquet files: Arrow's unification, kept to promotions that lose nothing.

``read_parquet`` reads every file's footer (it needs them for row counts anyway)
and unifies the files' schemas the way ``pyarrow.unify_schemas(...,
promote_options="permissive")`` does, then keeps only the promotions that cannot
change a value:

==========================================  =========================================
files disagree on                           the column is read as
==========================================  =========================================
a column some files lack                    that column, null in those files
int32 in one file, int64 in another         int64 (any integer that holds both ranges)
float32 / float64                           float64
int8..int32 / float                         the float, if its mantissa holds the integer
string / large_string (binary likewise)     large_string
timestamp[ms] / timestamp[us], same zone    timestamp[us] (the finer unit)
decimal(10, 2) / decimal(12, 3)             decimal(12, 3)
list / struct of the above                  the same rules, element by element
==========================================  =========================================

Anything else is a conflict (int64 vs string, int64 vs float64, int64 vs uint64,
naive vs zoned timestamps, two zones, string vs binary) and raises
:class:`SchemaConflictError` naming both files, the column and both types:
reading on would turn ``"007"`` into ``7`` or re-read a naive time in another zone.
"""

from __future__ import annotations

import pyarrow as pa

from bridge.errors import SchemaMismatchError

_MANTISSA_BITS = {16: 11, 32: 24, 64: 53}
#: str(type) -> the pyarrow constructor, where they differ (for hints).
_CTORS = {"float": "float32", "double": "float64", "halffloat": "float16", "bool": "bool_"}


class SchemaConflictError(SchemaMismatchError):
    """Two Parquet files give one column types that cannot be unified without changing values."""


def unify_file_schemas(paths: list[str], schemas: list[pa.Schema]) -> pa.Schema:
    """The schema every file can be read into without changing a value (see the module docstring).

    Raises:
        SchemaConflictError: two files disagree on a column in a way no lossless type resolves.
    """
    unified = schemas[0]
    origin = {f.name: paths[0] for f in unified}  # the file that set each column's current type
    for path, schema in zip(paths[1:], schemas[1:]):
        try:
            candidate = pa.unify_schemas([unified, schema], promote_options="permissive")
        except (pa.ArrowTypeError, pa.ArrowInvalid) as err:
            name = _first_conflict(unified, schema)
            if name is None:
                raise _conflict_from_arrow(paths[0], path, err) from err
            raise _conflict(name, origin[name], unified.field(name).type, path, schema.field(name).type) from err
        for field in schema:
            before = unified.field(field.name).type if field.name in unified.names else None
            after = candidate.field(field.name).type
            if before is not None and not (_lossless(field.type, after) and _lossless(before, after)):
                raise _conflict(field.name, origin[field.name], before, path, field.type)
        for field in candidate:
            if field.name not in unified.names or unified.field(field.name).type != field.type:
                origin[field.name] = path
        unified = candidate
    return unified


def _first_conflict(a: pa.Schema, b: pa.Schema) -> str | None:
    for field in b:
        if field.name not in a.names:
            continue
        try:
            pa.unify_schemas([pa.schema([a.field(field.name)]), pa.schema([field])], promote_options="permissive")
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            return field.name
    return None


def _conflict(column: str, first_path: str, first_type: pa.DataType, path: str,
              other_type: pa.DataType) -> SchemaConflictError:
    msg = (f"read_parquet: column {column!r} is {first_type} in {first_path!r} but {other_type} in {path!r}; "
           f"no type holds both without changing values")
    ctor = _CTORS.get(str(first_type), str(first_type))
    example = f"(\"{column}\", pyarrow.{ctor}())" if ctor.isidentifier() else f"(\"{column}\", ...)"
    hint = (f"pass schema= (every column you want, e.g. pyarrow.schema([{example}, ...])) to read all files "
            f"with those types (values are cast), or read the files separately; or re-write {path!r} "
            f"with {column!r} as {first_type}")
    return SchemaConflictError(msg, hint)


def _conflict_from_arrow(first_path: str, path: str, err: BaseException) -> SchemaConflictError:
    msg = f"read_parquet: the schema of {path!r} cannot be unified with that of {first_path!r}: {err}"
    return SchemaConflictError(msg, "pass schema= to read every file with one schema, or read them separately")


def _lossless(src: pa.DataType, dst: pa.DataType) -> bool:
    """Whether every value of type ``src`` survives a cast to ``dst`` unchanged."""
    if src == dst or pa.types.is_null(src):
        return True
    if pa.types.is_dictionary(src):
        return pa.types.is_dictionary(dst) and _lossless(src.value_type, dst.value_type)
    if pa.types.is_integer(src) and pa.types.is_integer(dst):
        if pa.types.is_unsigned_integer(dst):
            return pa.types.is_unsigned_integer(src) and dst.bit_width >= src.bit_width
        return dst.bit_width > src.bit_width if pa.types.is_unsigned_integer(src) else dst.bit_width >= src.bit_width
    if pa.types.is_integer(src) and pa.types.is_floating(dst):
        return src.bit_width < _MANTISSA_BITS[dst.bit_width]
    if pa.types.is_floating(src) and pa.types.is_floating(dst):
        return dst.bit_width >= src.bit_width
    if pa.types.is_string(src):
        return pa.types.is_large_string(dst)
    if pa.types.is_binary(src):
        return pa.types.is_large_binary(dst)
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(dst):
        return src.tz == dst.tz and _finer_or_same(src.unit, dst.unit)
    if pa.types.is_duration(src) and pa.types.is_duration(dst):
        return _finer_or_same(src.unit, dst.unit)
    if pa.types.is_decimal(src) and pa.types.is_decimal(dst):
        return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
    if _is_list(src) and _is_list(dst):
        return _lossless(src.value_type, dst.value_type)
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        names = [dst.field(i).name for i in range(dst.num_fields)]
        return all(
            src.field(i).name in names and _lossless(src.field(i).type, dst.field(src.field(i).name).type)
            for i in range(src.num_fields)
        )
    return False


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _finer_or_same(src_unit: str, dst_unit: str) -> bool:
    order = ["s", "ms", "us", "ns"]
    return order.index(dst_unit) >= order.index(src_unit)
