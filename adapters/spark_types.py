"""Spark SQL types <-> Arrow types: the written table both Spark directions follow.

Spark -> Arrow (``bridge.from_spark``; Spark's own Arrow writer, then the rules marked *):

==========================  ===============================================================
Spark                       Arrow block column
==========================  ===============================================================
BooleanType                 bool
Byte/Short/Integer/LongType int8 / int16 / int32 / int64
Float/DoubleType            float32 / float64
DecimalType(p, s)           decimal128(p, s)
String/Char/VarcharType     string
BinaryType                  binary
DateType                    date32
TimestampType               timestamp[us, tz=<spark.sql.session.timeZone>] (instants kept);
                              * a zone id Arrow and Python cannot read (``GMT+05:30``,
                              ``UTC-8``, ``Z``, Java's short ids ``PST``/``EST``/...) is named
                              as Spark resolves it (``+05:30``, ``-08:00``, ``UTC``,
                              ``America/Los_Angeles``/``-05:00``/...), with a warning
TimestampNTZType            timestamp[us] (wall-clock time kept)
DayTimeIntervalType         duration[us]; * the interval's fields (``interval hour``) are
                              not kept (``to_spark`` gives ``interval day to second``, the
                              same values), with a warning unless they are DAY TO SECOND
NullType                    null
ArrayType / MapType         list / map (nested to any depth, nulls kept)
StructType                  struct (nested to any depth); * two fields of one name raise
                              UnsupportedTypeError (Spark's Arrow writer refuses them)
VectorUDT (MLlib)           * arrow.fixed_shape_tensor<double>[size]; sparse vectors are
                              densified (the zeros are written out, no value is lost); all
                              vectors of a column must have one size, else
                              UnsupportedTypeError; the field keeps metadata
                              ``raybridge.spark_udt=vector`` so ``to_spark`` restores it
other UDTs                  their ``sqlType`` (Spark's rule)
YearMonthInterval,          * UnsupportedTypeError naming the column (Spark's Arrow
CalendarIntervalType          writer cannot carry them)
==========================  ===============================================================

Arrow -> Spark (``Dataset.to_spark``): the inverse of the table, plus these rules:
uint8/16/32 -> the next wider signed type; uint64 -> DecimalType(20, 0); float16 -> FloatType;
large_string/string_view -> StringType; large_binary/binary_view/fixed_size_binary -> BinaryType;
date64 -> DateType; timestamp and duration of any unit -> microseconds (a value that would lose
nanoseconds raises); a zone other than ``spark.sql.session.timeZone`` -> the session zone (the
instant is kept, the zone name is not); large_list/fixed_size_list -> ArrayType; decimal256 ->
DecimalType; a negative scale -> DecimalType(precision - scale, 0) (Spark has none; the values are
kept, more than 38 digits raise); dictionary -> its value type; fixed-shape tensors -> nested
ArrayType of the element type in the logical order of their dimensions (a ``permutation`` is
applied, as NumPy sees the tensor) (``VectorUDT`` if the field carries
``raybridge.spark_udt=vector``, which is exact); variable-shape tensors and other extension types
raise UnsupportedTypeError naming the column; so do structs with two fields of one name, and maps
holding a key twice in one row (Spark's maps have unique keys: ``m['k']`` would read the first
value, ``collect()`` the last).
Each of these rules gives one :class:`~bridge.errors.ConversionWarning` per column (nested fields
named ``struct.field`` / ``list[]``) naming the Arrow type, the Spark type and the rule; a column
that maps exactly (int64 -> LongType, ...) gives none.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge.block import map_child_types
from bridge.errors import ConversionWarning, UnsupportedTypeError

#: Field metadata marking a tensor column that was an MLlib vector in Spark.
UDT_KEY = b"raybridge.spark_udt"
VECTOR = b"vector"
_UNSUPPORTED_SPARK = {"YearMonthIntervalType", "CalendarIntervalType", "ObjectType"}


# ---------------------------------------------------------------- Spark -> Arrow
def is_vector_udt(dt: Any) -> bool:
    """Whether a Spark type is MLlib's ``VectorUDT`` (``pyspark.ml`` or ``pyspark.mllib``)."""
    return type(dt).__name__ == "VectorUDT"


def check_spark_schema(schema: Any) -> list[str]:
    """Raise for Spark types Arrow cannot carry; return the top-level VectorUDT column names."""
    vectors: list[str] = []
    for field in schema.fields:
        if is_vector_udt(field.dataType):
            vectors.append(field.name)
            continue
        _check_spark_type(field.dataType, field.name)
    return vectors


def _check_spark_type(dt: Any, path: str) -> None:
    from pyspark.sql import types as T

    name = type(dt).__name__
    if name in _UNSUPPORTED_SPARK:
        msg = f"from_spark: column {path!r} has Spark type {dt.simpleString()}, which Arrow cannot carry"
        hint = (f"cast it in Spark first, e.g. df.withColumn({path.split('.')[0]!r}, col(...).cast('string')) "
                "or extract its fields with SQL functions")
        raise UnsupportedTypeError(msg, hint)
    if isinstance(dt, T.UserDefinedType):
        if is_vector_udt(dt):
            msg = f"from_spark: column {path!r} nests an MLlib vector inside {path.split('.')[0]!r}"
            hint = "only top-level vector columns convert to tensors; use pyspark.ml.functions.vector_to_array"
            raise UnsupportedTypeError(msg, hint)
        _check_spark_type(dt.sqlType(), path)
    elif isinstance(dt, T.ArrayType):
        _check_spark_type(dt.elementType, f"{path}[]")
    elif isinstance(dt, T.MapType):
        _check_spark_type(dt.keyType, f"{path}.key")
        _check_spark_type(dt.valueType, f"{path}.value")
    elif isinstance(dt, T.StructType):
        _check_unique_fields([f.name for f in dt.fields], path, "from_spark", "Spark's Arrow writer cannot carry it",
                             "rename them in Spark first, e.g. col(...).cast('struct<a:int,a_2:int>')")
        for f in dt.fields:
            _check_spark_type(f.dataType, f"{path}.{f.name}")


def _check_unique_fields(names: list[str], path: str, where: str, why: str, hint: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            msg = f"{where}: column {path!r} is a struct with two fields named {name!r}; {why}"
            raise UnsupportedTypeError(msg, hint)
        seen.add(name)


def spark_to_arrow_type(dt: Any, tz: str | None) -> pa.DataType:
    """The Arrow type Spark's Arrow writer produces for ``dt`` (``tz``: the session time zone)."""
    from pyspark.sql import types as T

    simple = {T.BooleanType: pa.bool_(), T.ByteType: pa.int8(), T.ShortType: pa.int16(),
              T.IntegerType: pa.int32(), T.LongType: pa.int64(), T.FloatType: pa.float32(),
              T.DoubleType: pa.float64(), T.StringType: pa.string(), T.BinaryType: pa.binary(),
              T.DateType: pa.date32(), T.TimestampNTZType: pa.timestamp("us"), T.NullType: pa.null(),
              T.DayTimeIntervalType: pa.duration("us")}
    for cls, arrow_type in simple.items():
        if type(dt) is cls:
            return arrow_type
    if isinstance(dt, (T.CharType, T.VarcharType)):
        return pa.string()
    if isinstance(dt, T.TimestampType):
        return pa.timestamp("us", tz=tz or "UTC")
    if isinstance(dt, T.DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, T.ArrayType):
        return pa.list_(pa.field("element", spark_to_arrow_type(dt.elementType, tz), dt.containsNull))
    if isinstance(dt, T.MapType):
        return pa.map_(pa.field("key", spark_to_arrow_type(dt.keyType, tz), False),
                       pa.field("value", spark_to_arrow_type(dt.valueType, tz), dt.valueContainsNull))
    if isinstance(dt, T.StructType):
        return pa.struct([pa.field(f.name, spark_to_arrow_type(f.dataType, tz), f.nullable) for f in dt.fields])
    if isinstance(dt, T.UserDefinedType):
        return spark_to_arrow_type(dt.sqlType(), tz)
    msg = f"no Arrow type for Spark type {dt.simpleString()}"
    raise UnsupportedTypeError(msg, "cast the column to a supported type in Spark first")


#: Java's ``ZoneId.SHORT_IDS``: the short zone ids Spark resolves (``DateTimeUtils.getZoneId``) to these.
_JAVA_SHORT_IDS = {
    "ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00",
}
_OFFSET_ZONE = re.compile(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")


@functools.lru_cache(maxsize=64)
def _arrow_reads_zone(zone: str) -> bool:
    """Whether Arrow's compute functions and Python (``to_pylist``, pandas) both resolve ``zone``."""
    try:
        arr = pa.array([0], pa.timestamp("us", tz=zone))
        pc.hour(arr)
        arr.to_pylist()
    except Exception:  # noqa: BLE001 - pyarrow, zoneinfo and pytz each raise their own error
        return False
    return True


@functools.lru_cache(maxsize=64)
def arrow_time_zone(spark_zone: str) -> str:
    """The Arrow zone label for a Spark session time zone: the zone Spark resolves, named as Arrow reads it.

    Spark takes any id Java's ``ZoneId.of(id, SHORT_IDS)`` takes; Arrow and Python only IANA names
    and ``+HH:MM`` offsets.  ``GMT+5:30`` / ``UTC+05:30`` / ``+0530`` -> ``+05:30``, ``Z`` / ``UT``
    -> ``UTC``, a short id -> Java's zone for it (``PST`` -> ``America/Los_Angeles``, ``EST`` ->
    ``-05:00``: Java's fixed offset, where Python's ``EST`` may follow a city's history).  Other ids
    come back as they are (an offset with seconds has no Arrow name either).

    Example:
        >>> arrow_time_zone("GMT+5:30"), arrow_time_zone("PST"), arrow_time_zone("Asia/Kolkata")
        ('+05:30', 'America/Los_Angeles', 'Asia/Kolkata')
    """
    zone = spark_zone.strip()
    # Spark's own rewrites before Java parses the id: (+|-)h:mm -> (+|-)0h:mm, (+|-)hh:m -> (+|-)hh:0m.
    zone = re.sub(r"([+-])(\d):", r"\g<1>0\2:", zone, count=1)
    zone = re.sub(r"([+-])(\d\d):(\d)$", r"\1\2:0\3", zone, count=1)
    zone = _JAVA_SHORT_IDS.get(zone, zone)
    if zone in ("Z", "UT"):
        return "UTC"
    match = _OFFSET_ZONE.fullmatch(zone)
    if match is not None:
        sign, hours, minutes, seconds = match.groups()
        if int(seconds or 0) == 0 and int(hours) <= 18:
            zone = f"{sign}{int(hours):02d}:{minutes or '00'}"
    return zone if zone != spark_zone and _arrow_reads_zone(zone) else spark_zone


def _has_timestamp(dt: Any) -> bool:
    from pyspark.sql import types as T

    if isinstance(dt, T.TimestampType):
        return True
    if isinstance(dt, T.ArrayType):
        return _has_timestamp(dt.elementType)
    if isinstance(dt, T.MapType):
        return _has_timestamp(dt.keyType) or _has_timestamp(dt.valueType)
    if isinstance(dt, T.StructType):
        return any(_has_timestamp(f.dataType) for f in dt.fields)
    if isinstance(dt, T.UserDefinedType):
        return _has_timestamp(dt.sqlType())
    return False


def _narrow_intervals(dt: Any, path: str) -> list[tuple[str, Any]]:
    """(path, type) of each day-time interval in ``dt`` whose fields are not DAY TO SECOND."""
    from pyspark.sql import types as T

    if isinstance(dt, T.DayTimeIntervalType):
        wide = dt.startField == T.DayTimeIntervalType.DAY and dt.endField == T.DayTimeIntervalType.SECOND
        return [] if wide else [(path, dt)]
    if isinstance(dt, T.ArrayType):
        return _narrow_intervals(dt.elementType, f"{path}[]")
    if isinstance(dt, T.MapType):
        return _narrow_intervals(dt.keyType, f"{path}.key") + _narrow_intervals(dt.valueType, f"{path}.value")
    if isinstance(dt, T.StructType):
        return [hit for f in dt.fields for hit in _narrow_intervals(f.dataType, f"{path}.{f.name}")]
    if isinstance(dt, T.UserDefinedType):
        return _narrow_intervals(dt.sqlType(), path)
    return []


def from_spark_conversions(schema: Any, spark_zone: str | None, zone: str | None) -> list[Conversion]:
    """The starred rules of the Spark -> Arrow table that change a representation, one per column and rule.

    ``spark_zone``: ``spark.sql.session.timeZone``; ``zone``: its :func:`arrow_time_zone`.
    """
    out: list[Conversion] = []
    for field in schema.fields:
        if is_vector_udt(field.dataType):
            continue
        if spark_zone and zone and zone != spark_zone and _has_timestamp(field.dataType):
            rule = (f"the session time zone {spark_zone!r}, which Arrow and Python cannot read, is named {zone!r} "
                    "(the zone Spark resolves it to; instants and local times kept)")
            arrow = str(spark_to_arrow_type(field.dataType, zone))
            out.append(Conversion(field.name, arrow, field.dataType.simpleString(), rule, "from_spark"))
        for path, dt in _narrow_intervals(field.dataType, field.name):
            rule = ("day-time intervals -> durations (values kept; the interval's fields are not, so to_spark "
                    "gives interval day to second)")
            out.append(Conversion(path, "duration[us]", dt.simpleString(), rule, "from_spark"))
    return out


def empty_table(schema: Any, tz: str | None, vectors: list[str]) -> pa.Table:
    """A zero-row block with the Arrow schema matching a Spark schema."""
    fields = []
    for f in schema.fields:
        if f.name in vectors:
            fields.append(_vector_field(f.name, 0))
        else:
            fields.append(pa.field(f.name, spark_to_arrow_type(f.dataType, tz), f.nullable))
    from bridge.block import empty_table as _empty_arrow_table

    return _empty_arrow_table(pa.schema(fields))


def _vector_field(name: str, size: int) -> pa.Field:
    return pa.field(name, pa.fixed_shape_tensor(pa.float64(), [size]), True, metadata={UDT_KEY: VECTOR})


def vectors_to_tensors(table: pa.Table, vectors: list[str]) -> pa.Table:
    """Replace the struct encoding of MLlib vectors by fixed-shape tensor columns (rule in module doc)."""
    for name in vectors:
        i = table.schema.get_field_index(name)
        col = table.column(i)
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        field, tensor = _densify(arr, name)
        table = table.set_column(i, field, tensor)
    return table


def _densify(arr: pa.StructArray, name: str) -> tuple[pa.Field, pa.Array]:
    n = len(arr)
    valid = arr.is_valid()
    is_dense = pc.and_(valid, pc.equal(arr.field("type"), 1))
    is_sparse = pc.and_(valid, pc.equal(arr.field("type"), 0))
    values, indices = arr.field("values"), arr.field("indices")
    lengths = pc.if_else(is_dense, pc.list_value_length(values), arr.field("size")).fill_null(-1)
    sizes = np.unique(lengths.filter(valid).to_numpy(zero_copy_only=False))
    if len(sizes) > 1:
        msg = f"from_spark: vector column {name!r} holds vectors of sizes {sizes.tolist()[:5]}; a tensor needs one"
        hint = (f"convert it to a variable-length array in Spark with "
                f"pyspark.ml.functions.vector_to_array(col({name!r}))")
        raise UnsupportedTypeError(msg, hint)
    size = int(sizes[0]) if len(sizes) else 0
    out = np.zeros((n, size), dtype=np.float64)
    dense_rows = np.flatnonzero(is_dense.to_numpy(zero_copy_only=False))
    if len(dense_rows):
        flat = values.filter(is_dense).flatten().to_numpy(zero_copy_only=False)
        out[dense_rows] = flat.reshape(len(dense_rows), size)
    sparse_rows = np.flatnonzero(is_sparse.to_numpy(zero_copy_only=False))
    if len(sparse_rows):
        sparse_idx = indices.filter(is_sparse)
        counts = pc.list_value_length(sparse_idx).fill_null(0).to_numpy(zero_copy_only=False)
        rows = np.repeat(sparse_rows, counts)
        out[rows, sparse_idx.flatten().to_numpy(zero_copy_only=False)] = \
            values.filter(is_sparse).flatten().to_numpy(zero_copy_only=False)
    field = _vector_field(name, size)
    mask = None if arr.null_count == 0 else pc.invert(valid)
    storage = pa.FixedSizeListArray.from_arrays(pa.array(out.reshape(-1)), size, mask=mask)
    return field, pa.ExtensionArray.from_storage(field.type, storage)


# ---------------------------------------------------------------- Arrow -> Spark
@dataclasses.dataclass(frozen=True)
class Conversion:
    """One written-rule conversion ``to_spark`` makes (see the module docstring)."""

    column: str
    arrow_type: str
    spark_type: str
    rule: str
    #: ``"to_spark"`` (Arrow -> Spark) or ``"from_spark"`` (Spark -> Arrow).
    where: str = "to_spark"

    def message(self) -> str:
        """The warning's text: the call, the column, both types and the rule."""
        if self.where == "from_spark":
            return (f"from_spark: column {self.column!r} (Spark {self.spark_type}) becomes {self.arrow_type} "
                    f"(rule: {self.rule})")
        return (f"to_spark: column {self.column!r} ({self.arrow_type}) becomes Spark {self.spark_type} "
                f"(rule: {self.rule})")


_UNSIGNED = "unsigned integers -> the next wider signed type (uint64 -> decimal(20,0)); values kept"
_LARGE = "large and view types -> the plain type (Spark has one string, binary and array type); values kept"
_UNIT = "timestamps and durations -> microseconds (a value that would lose nanoseconds raises)"
_UTC_NAMES = {"utc", "etc/utc", "uct", "etc/uct", "z", "zulu", "etc/zulu", "gmt", "etc/gmt", "gmt0", "etc/gmt0",
              "universal", "etc/universal", "greenwich", "etc/greenwich", "+00:00", "-00:00"}


def _same_zone(a: str, b: str) -> bool:
    """Whether two zone ids name one zone (UTC's many names; a Spark id and its Arrow name, e.g. PST)."""
    for x, y in ((a.lower(), b.lower()), (arrow_time_zone(a).lower(), arrow_time_zone(b).lower())):
        if x == y or (x in _UTC_NAMES and y in _UTC_NAMES):
            return True
    return False


def _rules(t: pa.DataType, session_tz: str | None) -> list[str]:
    """The written rules (none for an exact mapping) that take Arrow type ``t`` itself to Spark."""
    pt = pa.types
    if pt.is_unsigned_integer(t):
        return [_UNSIGNED]
    if pt.is_float16(t):
        return ["float16 -> float (Spark has no half float); values kept"]
    if pt.is_large_string(t) or pt.is_large_binary(t) or pt.is_large_list(t) or str(t) in ("string_view", "binary_view"):
        return [_LARGE]
    if pt.is_fixed_size_binary(t):
        return ["fixed-size binary -> binary (the width is not kept)"]
    if pt.is_fixed_size_list(t):
        return ["fixed-size lists -> arrays (the size is not kept)"]
    if pt.is_date64(t):
        return ["date64 -> date (days)"]
    if pt.is_duration(t) and t.unit != "us":
        return [_UNIT]
    if pt.is_decimal(t) and t.scale < 0:
        return [f"a negative scale -> decimal({t.precision - t.scale},0) (Spark has no negative scale); values kept"]
    if pt.is_decimal(t) and not pt.is_decimal128(t):
        return [f"{t} -> decimal (the precision fits Spark's 38 digits)"]
    if pt.is_timestamp(t):
        out = [] if t.unit == "us" else [_UNIT]
        if t.tz is not None and session_tz is not None and not _same_zone(t.tz, session_tz):
            out.append(f"a time zone other than the session's -> the session time zone {session_tz} "
                       "(the instant is kept, the zone name is not)")
        return out
    return []


def warn_conversions(conversions: list[Conversion], stacklevel: int = 1) -> None:
    """One :class:`ConversionWarning` per column and rule (``stacklevel`` as for ``warnings.warn``'s caller)."""
    seen: set[tuple[str, str]] = set()
    for c in conversions:
        if (c.column, c.rule) not in seen:
            seen.add((c.column, c.rule))
            warnings.warn(c.message(), ConversionWarning, stacklevel=stacklevel + 1)


def arrow_to_spark_schema(schema: pa.Schema, *, session_tz: str | None = None,
                          conversions: list[Conversion] | None = None) -> tuple[Any, pa.Schema, list[str]]:
    """Spark ``StructType``, the Arrow schema to cast blocks to, and the columns to make VectorUDTs.

    ``conversions``: a list to append the written-rule conversions to (one per column and rule);
    ``session_tz``: ``spark.sql.session.timeZone``, for the zone rule (``None``: no zone rule).
    """
    from pyspark.sql import types as T

    spark_fields, arrow_fields, vectors = [], [], []
    for field in schema:
        t = field.type
        tensor_type = None
        if isinstance(t, pa.FixedShapeTensorType):
            t = _nested_list_type(t.value_type, list(t.shape))
            if (field.metadata or {}).get(UDT_KEY) == VECTOR:
                vectors.append(field.name)
            else:
                tensor_type = field.type
        spark_type = arrow_to_spark_type(t, field.name, conversions=conversions, session_tz=session_tz)
        if tensor_type is not None and conversions is not None:
            rule = "fixed-shape tensors -> nested arrays of the element type (the shape is not kept in the type)"
            conversions.append(Conversion(field.name, str(tensor_type), spark_type.simpleString(), rule))
        # Nullability as the Arrow fields declare it (from_spark's fields carry Spark's): a not-null column is
        # checked for nulls in every block (prepare_block): Spark fails on one at the first action, unnamed.
        spark_fields.append(T.StructField(field.name, spark_type, field.nullable))
        arrow_fields.append(pa.field(field.name, spark_to_arrow_type(spark_type, "UTC"), field.nullable))
    return T.StructType(spark_fields), pa.schema(arrow_fields), vectors


def _nested_list_type(value_type: pa.DataType, shape: list[int]) -> pa.DataType:
    t = value_type
    for _ in shape:
        t = pa.list_(t)
    return t


def arrow_to_spark_type(t: pa.DataType, column: str, *, conversions: list[Conversion] | None = None,
                        session_tz: str | None = None) -> Any:
    """The Spark type a column of Arrow type ``t`` becomes (rules in the module docstring).

    Appends to ``conversions`` (if given) each written rule applied, ``column`` naming the field.
    """
    if isinstance(t, pa.DictionaryType):
        spark_type = arrow_to_spark_type(t.value_type, column, conversions=conversions, session_tz=session_tz)
        rules = ["dictionary -> its value type (the values are decoded)"]
    else:
        spark_type = _spark_type(t, column, conversions, session_tz)
        rules = _rules(t, session_tz)
    if conversions is not None:
        conversions.extend(Conversion(column, str(t), spark_type.simpleString(), rule) for rule in rules)
    return spark_type


def _spark_type(t: pa.DataType, column: str, conversions: list[Conversion] | None, session_tz: str | None) -> Any:
    from pyspark.sql import types as T

    def inner(child: pa.DataType, path: str) -> Any:
        return arrow_to_spark_type(child, path, conversions=conversions, session_tz=session_tz)

    pt = pa.types
    if isinstance(t, pa.ExtensionType):
        msg = f"to_spark: column {column!r} has extension type {t}, which Spark cannot hold"
        hint = "turn it into a plain column first (map_batches), e.g. a list of values and a shape column"
        raise UnsupportedTypeError(msg, hint)
    table = [(pt.is_boolean, T.BooleanType), (pt.is_int8, T.ByteType), (pt.is_int16, T.ShortType),
             (pt.is_uint8, T.ShortType), (pt.is_int32, T.IntegerType), (pt.is_uint16, T.IntegerType),
             (pt.is_int64, T.LongType), (pt.is_uint32, T.LongType), (pt.is_float16, T.FloatType),
             (pt.is_float32, T.FloatType), (pt.is_float64, T.DoubleType), (pt.is_date, T.DateType),
             (pt.is_null, T.NullType), (pt.is_duration, T.DayTimeIntervalType)]
    for test, cls in table:
        if test(t):
            return cls()
    if pt.is_uint64(t):
        return T.DecimalType(20, 0)
    if pt.is_string(t) or pt.is_large_string(t) or str(t) == "string_view":
        return T.StringType()
    if pt.is_binary(t) or pt.is_large_binary(t) or pt.is_fixed_size_binary(t) or str(t) == "binary_view":
        return T.BinaryType()
    if pt.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pt.is_decimal(t) and t.precision - min(t.scale, 0) <= 38:
        # Spark refuses a negative scale (parsing the type fails in the JVM): the same values at scale 0.
        return T.DecimalType(t.precision - min(t.scale, 0), max(t.scale, 0))
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t):
        return T.ArrayType(inner(t.value_type, f"{column}[]"), t.value_field.nullable)
    if pt.is_map(t):
        return T.MapType(inner(t.key_type, f"{column}.key"), inner(t.item_type, f"{column}.value"),
                         t.item_field.nullable)
    if pt.is_struct(t):
        _check_unique_fields([t.field(i).name for i in range(t.num_fields)], column, "to_spark",
                             "Spark's Arrow reader cannot take it (its first action would fail)",
                             "rename the fields first, e.g. in map_batches: pa.StructArray.from_arrays(arr.flatten(), "
                             "names=[...])")
        return T.StructType([T.StructField(t.field(i).name, inner(t.field(i).type, f"{column}.{t.field(i).name}"),
                                           t.field(i).nullable) for i in range(t.num_fields)])
    msg = f"to_spark: column {column!r} has Arrow type {t}, which has no Spark type"
    hint = "cast it to a supported type first, e.g. ds.map_batches(..., batch_format='pyarrow') with table.cast"
    raise UnsupportedTypeError(msg, hint)


def prepare_block(block: pa.Table, target: pa.Schema) -> pa.Table:
    """Cast a block to the exact Arrow schema Spark reads (tensors unfolded to nested lists).

    A block already in that schema is returned as it is (the same object).  A map holding a key twice
    in one row raises :class:`UnsupportedTypeError` naming the column (:func:`has_maps` says whether
    a schema needs the block read for that check).
    """
    if block.schema.equals(target):
        check_unique_map_keys(block)
        check_not_null(block)
        return block
    if block.column_names != target.names:
        if sorted(block.column_names) != sorted(target.names):
            from bridge.errors import SchemaMismatchError

            missing = [n for n in target.names if n not in block.column_names]
            extra = [n for n in block.column_names if n not in target.names]
            msg = (f"to_spark: the Dataset's blocks hold different columns (a block lacks {missing}, has {extra} "
                   f"more); a Spark frame has one set")
            raise SchemaMismatchError(msg, "give every block the same columns before to_spark (select_columns, "
                                           "or a map_batches that adds the missing ones as nulls)")
        block = block.select(target.names)  # a block of the Dataset with its columns in another order
    columns = []
    for field, col in zip(block.schema, block.columns):
        if isinstance(field.type, pa.FixedShapeTensorType):
            chunks = [_tensor_to_lists(c) for c in col.chunks]
            col = pa.chunked_array(chunks) if chunks else pa.chunked_array(
                [], _nested_list_type(field.type.value_type, list(field.type.shape)))
        elif isinstance(field.type, pa.DictionaryType):
            col = col.cast(field.type.value_type)
        columns.append(col)
    try:
        ready = pa.Table.from_arrays(columns, names=block.column_names).cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        for field, col in zip(target, columns):
            try:
                col.cast(field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                msg = f"to_spark: column {field.name!r} of type {col.type} cannot become {field.type}: {err}"
                raise UnsupportedTypeError(msg, "cast the column to a Spark-compatible type first") from err
        raise
    check_unique_map_keys(ready)
    check_not_null(ready)
    return ready


def _has_text(t: pa.DataType) -> bool:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return True
    if isinstance(t, pa.ExtensionType):
        return _has_text(t.storage_type)
    return any(_has_text(t.field(i).type) for i in range(t.num_fields))


def check_utf8(table: pa.Table) -> None:
    """Raise for a string column holding bytes that are not UTF-8: Spark's strings may (``cast(x'ff41' as
    string)``), Arrow's may not, and such a column failed far away (``take_all`` with a bare
    ``UnicodeDecodeError``, ``to_pandas`` with "Wrapping ... failed") naming no column."""
    for name, column in zip(table.column_names, table.columns):
        if not _has_text(column.type):
            continue
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as err:
            msg = f"from_spark: column {name!r} holds bytes that are not UTF-8 text ({err})"
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                hint = (f"keep the bytes: cast it to binary in Spark (df.withColumn({name!r}, col({name!r}).cast("
                        "'binary'))); or repair the text in Spark before the handoff")
            else:
                hint = ("keep the bytes: turn its strings into binary in Spark, e.g. transform(a, x -> cast(x as "
                        "binary)) for an array, transform_values / transform_keys for a map, named_struct(...) for "
                        "a struct; or repair the text in Spark before the handoff")
            raise UnsupportedTypeError(msg, hint) from err


def has_not_null(t: pa.Schema | pa.DataType) -> bool:
    """Whether a schema or type declares a field not null anywhere (a map's keys aside: Arrow's always are)."""
    if isinstance(t, pa.Schema):
        return any(_declares_not_null(f) for f in t)
    if isinstance(t, pa.ExtensionType):
        return has_not_null(t.storage_type)
    if pa.types.is_map(t):
        return _declares_not_null(t.item_field)
    return any(_declares_not_null(t.field(i)) for i in range(t.num_fields))


def _declares_not_null(field: pa.Field) -> bool:
    return not field.nullable or has_not_null(field.type)


def check_not_null(table: pa.Table) -> None:
    """Raise :class:`UnsupportedTypeError` where a field declared not null (at any depth) holds a null.

    Arrow does not enforce the flag (a table may be built with it and nulls); Spark takes it and fails at
    the frame's first action with a bare ``IllegalStateException``, so ``to_spark`` refuses the block.
    """
    if not has_not_null(table.schema):
        return
    for field, col in zip(table.schema, table.columns):
        if _declares_not_null(field):
            for chunk in col.chunks:
                _check_nulls(chunk, field, field.name)


def _check_nulls(arr: pa.Array, field: pa.Field, path: str) -> None:
    if not field.nullable and arr.null_count:
        msg = (f"to_spark: column {path!r} is declared not null (its Arrow field) but holds {arr.null_count} "
               f"null(s); Spark takes the flag and fails at the first action (\"Value at index is null\")")
        hint = ("declare the field nullable, e.g. ds.map_batches(lambda t: t.cast(schema_with_it_nullable), "
                "batch_format='pyarrow'), or fill the nulls first")
        raise UnsupportedTypeError(msg, hint)
    t = field.type
    if isinstance(t, pa.ExtensionType):
        return
    if pa.types.is_map(t):
        if _declares_not_null(t.item_field):
            # The map as a list of its entries (a view that declared the values not null would refuse nulls).
            entries = arr.view(pa.list_(pa.struct([t.key_field, t.item_field.with_nullable(True)])))
            _check_nulls(entries.flatten().field(1), t.item_field, f"{path}.value")
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if _declares_not_null(t.value_field):
            _check_nulls(arr.flatten(), t.value_field, f"{path}[]")
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            child_field = t.field(i)
            if _declares_not_null(child_field):  # a null struct's children are no values: not checked
                child = arr.field(i) if not arr.null_count else arr.field(i).filter(arr.is_valid())
                _check_nulls(child, child_field, f"{path}.{child_field.name}")


def has_maps(t: pa.Schema | pa.DataType) -> bool:
    """Whether a schema or type holds a map anywhere (nested too)."""
    if isinstance(t, pa.Schema):
        return any(has_maps(f.type) for f in t)
    if isinstance(t, pa.ExtensionType):
        return has_maps(t.storage_type)
    if pa.types.is_map(t):
        return True
    return any(has_maps(t.field(i).type) for i in range(t.num_fields))


def check_unique_map_keys(table: pa.Table) -> None:
    """Raise :class:`UnsupportedTypeError` where a map (at any depth) holds one key twice in a row.

    Arrow allows it; Spark's maps do not, and a frame that held one would answer ``m['k']`` with the
    first value and ``collect()`` with the last.
    """
    for name, col in zip(table.column_names, table.columns):
        if has_maps(col.type):
            for chunk in col.chunks:
                _check_map_keys(chunk, name)


def _check_map_keys(arr: pa.Array, path: str) -> None:
    t = arr.type
    if isinstance(t, pa.ExtensionType):
        _check_map_keys(arr.storage, path)
    elif pa.types.is_map(t):
        rows, keys = _map_entries(arr)
        twice = _repeated_key(rows, keys)
        if twice is not None:
            msg = (f"to_spark: column {path!r} holds a map with the key {twice!r} twice; Spark's maps have "
                   "unique keys (m[key] would read the first value, collect() the last)")
            raise UnsupportedTypeError(msg, "keep one value per key first, e.g. in map_batches")
        if has_maps(t.key_type):
            _check_map_keys(arr.keys, f"{path}.key")
        if has_maps(t.item_type):
            _check_map_keys(arr.items, f"{path}.value")
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            if has_maps(t.field(i).type):
                _check_map_keys(arr.field(i), f"{path}.{t.field(i).name}")
    elif t.num_fields == 1 and has_maps(t.field(0).type):  # list kinds: the elements of these rows
        _check_map_keys(arr.flatten(), f"{path}[]")


def _map_entries(arr: pa.MapArray) -> tuple[np.ndarray, pa.Array]:
    """(row index, key) of every entry of the non-null maps of ``arr`` (slices honoured)."""
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    lengths = np.diff(offsets)
    if arr.null_count:
        lengths = np.where(arr.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
    rows = np.repeat(np.arange(len(arr)), lengths)
    starts = np.repeat(offsets[:-1] - (np.cumsum(lengths) - lengths), lengths)
    return rows, arr.keys.take(pa.array(starts + np.arange(len(rows)), pa.int64()))


def _repeated_key(rows: np.ndarray, keys: pa.Array) -> Any:
    """A key that appears twice in one row (``rows``: each key's row), else ``None``."""
    if len(rows) < 2:
        return None
    try:
        counts = pa.table({"row": rows, "key": keys}).group_by(["row", "key"]).aggregate([([], "count_all")])
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # keys Arrow cannot group (lists, structs)
        seen: set[tuple[int, str]] = set()
        for row, key in zip(rows.tolist(), keys.to_pylist()):
            if (row, repr(key)) in seen:
                return key
            seen.add((row, repr(key)))
        return None
    if counts.num_rows == len(rows):
        return None
    return counts.filter(pc.greater(counts.column("count_all"), 1)).column("key")[0].as_py()


def _tensor_to_lists(chunk: pa.ExtensionArray) -> pa.Array:
    """A fixed-shape tensor array -> nested fixed-size lists, in the logical order of its dimensions.

    Arrow stores ``shape`` in memory order; with a ``permutation`` logical dimension i is memory
    dimension ``argsort(permutation)[i]`` (as ``bridge.tensor`` and pyarrow's ``to_numpy_ndarray`` read it).
    """
    storage = chunk.storage
    memory_shape = list(chunk.type.shape)
    width = int(np.prod(memory_shape))
    # .values ignores nulls and slicing: take the slots of exactly these rows.
    nested: pa.Array = storage.values.slice(storage.offset * width, len(storage) * width)
    order = [int(a) for a in np.argsort(chunk.type.permutation)] if chunk.type.permutation is not None else []
    shape = [memory_shape[a] for a in order] if order else memory_shape
    if order and order != sorted(order) and len(nested):
        # One row's logical slots, as positions in memory; every row the same (element nulls kept by take).
        one = np.arange(width, dtype=np.int64).reshape(memory_shape).transpose(order).reshape(-1)
        slots = (np.arange(len(storage), dtype=np.int64)[:, None] * width + one).reshape(-1)
        nested = nested.take(pa.array(slots))
    for dim in reversed(shape[1:]):
        nested = pa.FixedSizeListArray.from_arrays(nested, dim)
    mask = pc.invert(storage.is_valid()) if storage.null_count else None
    return pa.FixedSizeListArray.from_arrays(nested, shape[0], mask=mask)


# ---------------------------------------------------------------- Java-written Arrow
def _in_zone(t: pa.DataType, tz: str) -> pa.DataType:
    """``t`` with every zoned timestamp in it (nested too) labelled ``tz``."""
    if pa.types.is_timestamp(t) and t.tz is not None:
        return t if t.tz == tz else pa.timestamp(t.unit, tz=tz)
    return map_child_types(t, lambda child: _in_zone(child, tz))


def relabel_zones(table: pa.Table, tz: str | None) -> pa.Table:
    """Zoned timestamps labelled with the session zone, as ``spark_to_arrow_type`` promises.

    pyspark 3.x's Arrow collection labels them with the session zone already; pyspark 4's
    ``toArrow`` labels them ``UTC``.  The instants are the same: only the label changes.
    """
    if tz is None:
        return table
    for i, field in enumerate(table.schema):
        want = _in_zone(field.type, tz)
        if want != field.type:
            table = table.set_column(i, field.with_type(want), table.column(i).cast(want))
    return table


def repair_offsets(table: pa.Table) -> pa.Table:
    """Rewrite columns where Java's Arrow writer left an empty offsets buffer on a zero-length array.

    The Arrow format allows it, but Ray's Arrow serializer reads ``length + 1`` offsets and fails;
    rebuilding such a column (rare: nested values that are all null or empty in one block) fixes it.
    """
    for i, col in enumerate(table.columns):
        if any(_short_offsets(chunk) for chunk in col.chunks):
            rebuilt = pa.chunked_array([pa.concat_arrays([chunk, pa.array([], chunk.type)]) for chunk in col.chunks],
                                       col.type)
            table = table.set_column(i, table.schema.field(i), rebuilt)
    return table


def _short_offsets(arr: pa.Array) -> bool:
    t = arr.type
    pt = pa.types
    if isinstance(t, pa.ExtensionType):
        return _short_offsets(arr.storage)
    if pt.is_dictionary(t):
        return _short_offsets(arr.dictionary)
    large = pt.is_large_string(t) or pt.is_large_binary(t) or pt.is_large_list(t)
    if large or pt.is_string(t) or pt.is_binary(t) or pt.is_list(t) or pt.is_map(t):
        buf = arr.buffers()[1]
        if buf is None or buf.size < (arr.offset + len(arr) + 1) * (8 if large else 4):
            return True
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t) or pt.is_map(t):
        return _short_offsets(arr.values)
    if pt.is_struct(t):
        return any(_short_offsets(arr.field(j)) for j in range(t.num_fields))
    return False
