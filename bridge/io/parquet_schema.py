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
tensors of shapes (1, 2) / (1, 3)           a variable-shape tensor of 2 dimensions
tensors of float32 / float64 (same shapes)  the tensor of float64 (the rules above)
==========================================  =========================================

Tensor columns are this library's types (:mod:`bridge.tensor`): ``arrow.fixed_shape_tensor`` and
``raybridge.variable_shape_tensor``; :mod:`bridge.io.ray_tensor_files` reads Ray Data's as those
before the files' schemas are unified here.  Ray Data writes ragged tensors one block per file,
each block with its own fixed shape: those files unify into one variable-shape column.  Tensors of
different numbers of dimensions, a permuted or named-dimension tensor of another shape, or a
tensor and a non-tensor are conflicts.

Anything else is a conflict (int64 vs string, int64 vs float64, int64 vs uint64,
naive vs zoned timestamps, two zones, string vs binary) and raises
:class:`SchemaConflictError` naming both files, the column and both types:
reading on would turn ``"007"`` into ``7`` or re-read a naive time in another zone.
"""

from __future__ import annotations

import pyarrow as pa

from bridge.errors import SchemaMismatchError
from bridge.tensor import VariableShapeTensorType, is_fixed_tensor, is_tensor

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
        unified, widened = _tensors_unified(unified, origin, path, schema)
        try:
            candidate = pa.unify_schemas([unified, widened], promote_options="permissive")
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


def _tensors_unified(unified: pa.Schema, origin: dict[str, str], path: str,
                     schema: pa.Schema) -> tuple[pa.Schema, pa.Schema]:
    """``unified`` and ``schema`` with each tensor column both give two types typed as their unification.

    (``pa.unify_schemas`` unifies no two extension types; the caller checks what it gives against
    the files' own types with :func:`_lossless`.)"""
    for field in schema:
        if field.name not in unified.names:
            continue
        before = unified.field(field.name).type
        if before == field.type or not (is_tensor(before) and is_tensor(field.type)):
            continue
        common = unify_tensor_types(before, field.type)
        if common is None:
            raise _conflict(field.name, origin[field.name], before, path, field.type)
        i = unified.get_field_index(field.name)
        unified = unified.set(i, unified.field(i).with_type(common))
        j = schema.get_field_index(field.name)
        schema = schema.set(j, schema.field(j).with_type(common))
    return unified, schema


def unify_tensor_types(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The tensor type that holds the tensors of both ``a`` and ``b`` unchanged, or ``None``.

    The same shape: a fixed-shape tensor of the value type both widen to.  Shapes of the same
    number of dimensions: a variable-shape tensor of that many.  Anything else (another number of
    dimensions, values no type holds both of, a permuted or named-dimension tensor that would have
    to become a variable-shape one, which has neither) has none.
    """
    value = _common_value_type(a.value_type, b.value_type)
    if value is None:
        return None
    if is_fixed_tensor(a) and is_fixed_tensor(b) and list(a.shape) == list(b.shape):
        if _order(a) != _order(b) or a.dim_names != b.dim_names:
            return None
        return pa.fixed_shape_tensor(value, list(a.shape), dim_names=a.dim_names, permutation=_order(a))
    if _ndim(a) != _ndim(b) or not (_plain(a) and _plain(b)):
        return None
    return VariableShapeTensorType(value, _ndim(a))


def _order(t: pa.DataType) -> list[int]:
    return list(t.permutation) if t.permutation is not None else list(range(len(t.shape)))


def _ndim(t: pa.DataType) -> int:
    return len(t.shape) if is_fixed_tensor(t) else int(t.ndim)


def _plain(t: pa.DataType) -> bool:
    """Whether ``t``'s tensors read the same as a variable-shape tensor's: no permutation, no dimension names."""
    return not is_fixed_tensor(t) or (_order(t) == sorted(_order(t)) and not t.dim_names)


def _common_value_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The value type both ``a`` and ``b`` convert to without a change (bools only with bools)."""
    if a == b:
        return a
    if pa.types.is_boolean(a) or pa.types.is_boolean(b):
        return None
    try:
        common = pa.unify_schemas([pa.schema([("v", a)]), pa.schema([("v", b)])],
                                  promote_options="permissive").field("v").type
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return None
    return common if _lossless(a, common) and _lossless(b, common) else None


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
    if is_tensor(src) or is_tensor(dst):
        return is_tensor(src) and is_tensor(dst) and unify_tensor_types(src, dst) == dst
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
