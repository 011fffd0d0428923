"""TensorFlow <-> Dataset: ``ds.to_tf(...)`` (a ``tf.data.Dataset``) and ``bridge.from_tf(...)``.

dtype rules (Arrow column -> ``output_signature``), applied after the shared rules
of ``adapters/training_columns.py`` (timestamps -> int64 with the unit
stated, nulls -> error naming the column unless ``fill_nulls``, dictionaries
decoded as run-end encoded ones are, decimals -> error with the cast to use):

===============================  ======================================================
Arrow                            ``tf`` spec (batch dimension ``None``)
===============================  ======================================================
int8..int64, uint8..uint64       ``TensorSpec([None], same dtype)``
float16/32/64, bool              ``TensorSpec([None], same dtype)``
timestamp / date / duration      ``TensorSpec([None], tf.int64)``
fixed-shape tensor               ``TensorSpec([None, *shape], value dtype)`` (its rows' shape)
string / binary (any kind)       ``TensorSpec([None], tf.string)``
list<number> (any list kind)     ``RaggedTensorSpec([None, None], value dtype, ragged_rank=1)``
variable-shape tensor, ``ndim``  ``RaggedTensorSpec([None] * (ndim + 1), value dtype, ragged_rank=ndim)``
anything else                    ``UnsupportedTypeError`` naming the column
===============================  ======================================================

``feature_columns`` / ``label_columns``: a name gives one tensor, a list of
names a dict of tensors; ``label_columns=None`` yields features only.

Nulls are checked before ``to_tf`` returns, in one pass over the columns that
``fill_nulls`` does not cover and the list columns, whose elements it never fills
(cheap on a materialized Dataset), and each fill value against its column: an error raised
inside tf.data's generator reaches the caller as ``tf.errors.InvalidArgumentError``,
so the :class:`UnsupportedTypeError` that ``iter_torch_batches`` raises must come
first here to be the same error.

Example:
    >>> import bridge
    >>> tfds = bridge.from_items([{"x": 1.0, "y": 0}]).to_tf("x", "y")  # doctest: +SKIP
    >>> model.fit(tfds, epochs=2)  # doctest: +SKIP
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bridge.arrow_values import is_list_like
from bridge.keywords import checked_keywords


def _tf() -> Any:
    try:
        import tensorflow as tf
    except ImportError as err:
        from bridge.errors import missing_dependency

        raise missing_dependency("tensorflow", "raybridge[tf]", "the tf.data exporter") from err
    return tf


def _names(cols: str | list[str] | None) -> list[str]:
    return [] if cols is None else ([cols] if isinstance(cols, str) else list(cols))


def spec_for(tf: Any, name: str, t: pa.DataType, where: str = "to_tf") -> Any:
    """The ``tf`` spec of one Arrow column (rules in the module docstring); ``where``: the method, for errors."""
    from bridge import tensor
    from bridge.errors import UnsupportedTypeError

    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        t = t.value_type  # (decoded by training_column)
    if tensor.is_fixed_tensor(t):  # (a permuted tensor's rows read in the logical shape, not t.shape)
        return tf.TensorSpec([None, *tensor.logical_shape(t)], tf.as_dtype(t.value_type.to_pandas_dtype()), name=name)
    if tensor.is_variable_tensor(t) and t.ndim and _is_number(t.value_type):  # each dimension ragged (Ray Data's)
        return tf.RaggedTensorSpec([None] * (t.ndim + 1), tf.as_dtype(t.value_type.to_pandas_dtype()),
                                   ragged_rank=t.ndim, row_splits_dtype=tf.int64)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return tf.TensorSpec([None], tf.as_dtype(t.to_pandas_dtype()), name=name)
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t) or pa.types.is_time(t):
        return tf.TensorSpec([None], tf.int64, name=name)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t) \
            or pa.types.is_fixed_size_binary(t):
        return tf.TensorSpec([None], tf.string, name=name)
    if is_list_like(t) and _is_number(t.value_type):
        return tf.RaggedTensorSpec([None, None], tf.as_dtype(t.value_type.to_pandas_dtype()), ragged_rank=1,
                                   row_splits_dtype=tf.int64)
    msg = f"{where}: column {name!r} has type {t}, which has no tf.data equivalent"
    if pa.types.is_decimal(t):
        hint = (f"cast it to float64: ds.map_batches(lambda t: t.set_column(t.schema.get_field_index({name!r}), "
                f"{name!r}, t[{name!r}].cast('float64')), batch_format='pyarrow')")
    elif tensor.is_variable_tensor(t):
        hint = ("its rows differ in shape, which a tf tensor of this exporter cannot hold: pad them to one shape "
                "in map_batches, or read them with iter_torch_batches (a list of tensors)")
    else:
        hint = (f"cast it to a number, string or list of numbers first (ds.map_batches(..., batch_format='pyarrow')), "
                f"or leave it out (ds.drop_columns([{name!r}]))")
    raise UnsupportedTypeError(msg, hint)


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _ragged_tensors(tf: Any, col: pa.ChunkedArray, name: str, spec: Any, where: str) -> Any:
    """A variable-shape tensor column -> one ``tf.RaggedTensor`` whose every dimension is ragged, built from the
    column's values and shapes (no Python object per row)."""
    from bridge.batch import column_to_numpy
    from bridge.errors import UnsupportedTypeError

    if col.null_count:
        msg = f"{where}: tensor column {name!r} has {col.null_count} null row(s); tf tensors cannot hold nulls"
        raise UnsupportedTypeError(msg, f"drop those rows first: ds.filter(expr=pc.field({name!r}).is_valid())")
    t = col.type
    storage = pa.concat_arrays([c.storage for c in col.chunks]) if col.num_chunks else \
        pa.array([], type=t.storage_type)
    values = pc.list_flatten(storage.field("data"))
    if values.null_count:
        msg = f"{where}: tensor column {name!r} holds {values.null_count} null value(s); tf tensors cannot hold nulls"
        raise UnsupportedTypeError(msg, "fill them first (map_batches), or drop those rows")
    shapes = pc.list_flatten(storage.field("shape")).to_numpy().reshape(len(storage), t.ndim)
    lengths, count = [], np.ones(len(storage), dtype=np.int64)
    for level in range(t.ndim):  # level j: each row holds prod(shape[:j]) runs of shape[j] values
        lengths.append(np.repeat(shapes[:, level], count))
        count = count * shapes[:, level]
    flat = _fitted(np.asarray(column_to_numpy(values)), spec.dtype.as_numpy_dtype, name, where)
    return tf.RaggedTensor.from_nested_row_lengths(flat, lengths)


def _to_tf_value(tf: Any, block: pa.Table, name: str, spec: Any, fill_nulls: Any, where: str = "to_tf") -> Any:
    from bridge import tensor

    from .training_columns import training_column

    t = block.schema.field(name).type
    if tensor.is_variable_tensor(t):
        return _ragged_tensors(tf, block.column(name), name, spec, where)
    if isinstance(spec, tf.RaggedTensorSpec) and tensor.is_fixed_tensor(t):
        # A block of a variable-shape column whose rows happen to share one shape: ragged as the signature says.
        dense = training_column(block, name, fill_nulls=fill_nulls, framework="tf").value
        values = _fitted(np.asarray(dense), spec.dtype.as_numpy_dtype, name, where)
        return tf.RaggedTensor.from_tensor(values, ragged_rank=spec.ragged_rank, row_splits_dtype=tf.int64)

    col = training_column(block, name, fill_nulls=fill_nulls, framework="tf")
    if col.kind == "ragged":
        values = _fitted(np.asarray(col.value), spec.dtype.as_numpy_dtype, name, where)
        return tf.RaggedTensor.from_row_lengths(values, col.row_lengths)
    if col.kind == "strings":
        return np.asarray(col.value, dtype=object)
    value = col.value
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return _fitted(value, spec.dtype.as_numpy_dtype, name, where)
    return value


def _fitted(values: np.ndarray, want: Any, name: str, where: str = "to_tf") -> np.ndarray:
    """``values`` as the signature's dtype, which came from the first block's schema; a later block (or a
    function's output) may hold another type: cast where every value stays what it is, else raise
    (tf.data would cast it unchecked: 2**40 into int32 gives 0, 1e300 into float32 inf)."""
    want = np.dtype(want)
    if values.dtype == want:
        return values
    with np.errstate(invalid="ignore", over="ignore"):
        cast = values.astype(want)
        back = cast.astype(values.dtype)
    same = back == values
    if values.dtype.kind == "f":
        same |= np.isnan(values) & np.isnan(back)
    if not same.all():
        from bridge.errors import SchemaMismatchError

        at = int(np.flatnonzero(~same.reshape(-1))[0])
        bad, got = values.reshape(-1)[at].item(), cast.reshape(-1)[at].item()
        msg = (f"{where}: column {name!r} holds {values.dtype} values in this batch, but its tf signature (from the "
               f"Dataset's schema, its first block) is {want}: {bad!r} would become {got!r}")
        raise SchemaMismatchError(msg, f"cast the column to one type first, e.g. ds.map_batches(lambda t: "
                                       f"t.set_column(t.schema.get_field_index({name!r}), {name!r}, "
                                       f"t[{name!r}].cast('{np.dtype(values.dtype).name}')), batch_format='pyarrow')")
    return cast


def _null_counts(table: pa.Table) -> dict[str, Any]:
    """One row per block: each column's nulls (a dictionary's null values too) and, for a list column, its
    elements' nulls (runs in the read tasks, only these columns; ``n<i>`` / ``e<i>`` for the i-th column)."""
    out = {}
    for i, col in enumerate(table.columns):
        t = col.type
        if pa.types.is_dictionary(t) and any(c.dictionary.null_count for c in col.chunks):
            col = col.cast(t.value_type)
        inner = 0
        if is_list_like(t):
            inner = sum(c.flatten().null_count for c in col.chunks)
        out[f"n{i}"] = np.array([col.null_count], dtype=np.int64)
        out[f"e{i}"] = np.array([inner], dtype=np.int64)
    return out


def _fill_error(name: str, t: pa.DataType, fill_nulls: Any) -> Exception | None:
    """The error filling a null of column ``name`` (type ``t``) with its ``fill_nulls`` value raises, if any."""
    from bridge.errors import UnsupportedTypeError

    from .training_columns import fill_column

    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        t = t.value_type  # (decoded before the fill)
    try:
        fill_column(pa.chunked_array([pa.nulls(1, t)]), name, fill_nulls, "tf")
    except UnsupportedTypeError as err:
        return err
    return None


def check_no_nulls(ds: Any, names: list[str], schema: pa.Schema, fill_nulls: Any) -> None:
    """Raise the ``UnsupportedTypeError`` that ``iter_torch_batches`` raises, before tf.data would rewrap it:
    nulls that ``fill_nulls`` does not fill (tensor rows and a list's elements never are), and a fill value the
    column cannot hold (at once where ``fill_nulls`` names the column, else where the column holds a null)."""
    from bridge import tensor
    from bridge.errors import UnsupportedTypeError

    from .training_columns import check_dtype_columns, list_nulls_hint, null_hint

    check_dtype_columns(fill_nulls, schema.names, "to_tf", "fill_nulls")  # (any column of the Dataset's)
    read: dict[str, Exception | None] = {}  # column -> what its nulls raise (None: the nulls error)
    for name in names:
        t = schema.field(name).type
        fills = fill_nulls.get(name) if isinstance(fill_nulls, dict) else fill_nulls
        # A fill value the column cannot hold raises where the column holds a null (as iter_tf_batches does).
        error = _fill_error(name, t, fill_nulls) if fills is not None and not tensor.is_tensor(t) else None
        if fills is None or error is not None or tensor.is_tensor(t) or is_list_like(t):
            read[name] = error
    if not read:
        return
    columns = list(read)
    counts = ds.select_columns(columns).map_batches(_null_counts, batch_format="pyarrow", batch_size=None).to_arrow()
    if counts.num_rows == 0:
        return
    for i, name in enumerate(columns):
        t = schema.field(name).type
        nulls = sum(counts.column(f"n{i}").to_pylist())
        error = read[name]
        if nulls and error is not None:
            raise error
        fills = fill_nulls.get(name) if isinstance(fill_nulls, dict) else fill_nulls
        if nulls and (fills is None or tensor.is_tensor(t)):
            msg = f"tf: column {name!r} ({t}) has {nulls} null(s); tf tensors cannot hold nulls"
            raise UnsupportedTypeError(msg, null_hint(name, t, "tf"))
        inner = sum(counts.column(f"e{i}").to_pylist())
        if inner:
            msg = f"tf: list column {name!r} ({t}) holds {inner} null element(s); tf tensors cannot hold nulls"
            raise UnsupportedTypeError(msg, list_nulls_hint(name))


def _pack(values: dict[str, Any], names: list[str], single: bool) -> Any:
    return values[names[0]] if single else {n: values[n] for n in names}


#: Rows per element that crosses from the Python generator into tf.data when the
#: batches are re-cut inside tf.data (``Dataset.rebatch``): tf.data's per-element
#: cost (a Python call on a tf thread, numpy -> tensor) is then paid once per
#: that many rows rather than once per batch.
ROWS_PER_ELEMENT = 16384


def _concat_batches(batches: list[dict[str, Any]]) -> dict[str, Any]:
    if len(batches) == 1:
        return batches[0]
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


@checked_keywords("to_tf")
def to_tf(ds: Any, feature_columns: str | list[str], label_columns: str | list[str] | None = None, *,
          batch_size: int = 1, drop_last: bool = False, local_shuffle_buffer_size: int | None = None,
          local_shuffle_seed: int | None = None, prefetch_batches: int = 1, fill_nulls: Any = None) -> Any:
    """The ``tf.data.Dataset`` behind :meth:`bridge.Dataset.to_tf`.

    Without ragged columns, the generator hands tf.data elements of about
    ``ROWS_PER_ELEMENT`` rows (consecutive batches, in order) and
    ``Dataset.rebatch(batch_size)`` cuts them back into exactly the batches
    ``iter_batches`` makes; the element spec keeps its ``None`` batch dimension.
    """
    from bridge.iteration.block_format import BlockFormat
    from bridge.iteration.options import BatchOptions
    from bridge.iteration.resumable import BatchIterator

    options = BatchOptions(batch_size=batch_size, drop_last=drop_last, prefetch_batches=prefetch_batches,
                           local_shuffle_buffer_size=local_shuffle_buffer_size, local_shuffle_seed=local_shuffle_seed,
                           caller="to_tf")
    tf = _tf()
    schema = ds.schema()
    features, labels, specs, signature = _columns_and_specs(tf, schema, feature_columns, label_columns, "Dataset")
    check_no_nulls(ds, list(dict.fromkeys(features + labels)), schema, fill_nulls)
    f_single, l_single = isinstance(feature_columns, str), isinstance(label_columns, str)
    wanted = features + [c for c in labels if c not in features]
    rebatched = batch_size is not None and not any(isinstance(sp, tf.RaggedTensorSpec) for sp in specs.values())

    def columns(block: pa.Table) -> dict[str, Any]:
        return {n: _to_tf_value(tf, block, n, specs[n], fill_nulls) for n in wanted}

    def pack(values: dict[str, Any]) -> Any:
        f = _pack(values, features, f_single)
        return (f, _pack(values, labels, l_single)) if labels else f

    def batches() -> BatchIterator:
        # Dense columns slice per batch (BlockFormat); a RaggedTensor is built per batch.
        fmt = BlockFormat(columns) if rebatched else (lambda block: pack(columns(block)))
        return BatchIterator(ds.select_columns(wanted), options, formatter=fmt)

    if not rebatched:
        return tf.data.Dataset.from_generator(lambda: iter(batches()), output_signature=signature)

    group = max(1, ROWS_PER_ELEMENT // batch_size)

    def elements() -> Iterator[Any]:
        pending: list[dict[str, Any]] = []
        for batch in batches():
            pending.append(batch)
            if len(pending) >= group:
                yield pack(_concat_batches(pending))
                pending = []
        if pending:
            yield pack(_concat_batches(pending))

    return tf.data.Dataset.from_generator(elements, output_signature=signature).rebatch(batch_size)


def make_tf_formatter(*, dtypes: Any = None, fill_nulls: Any = None) -> Any:
    """Block -> ``{column: tf.Tensor}`` (a ``tf.RaggedTensor`` for list columns): ``iter_tf_batches``' format.

    ``dtypes``: one ``tf.DType`` for every column or ``{column: tf.DType}``; the
    columns are cast after the rules of the module docstring.  A key naming no column, or a
    cast that would change a value (300 in int8, 2.5 or NaN to an integer dtype; 2**53 + 1 in
    float64, 1e6 in float16), is refused.
    """
    from .training_columns import check_dtype_columns, refuse_text_cast

    tf = _tf()
    where = "iter_tf_batches"
    dtypes = _tf_dtypes(tf, dtypes, where)

    def fmt(block: pa.Table) -> dict[str, Any]:
        check_dtype_columns(dtypes, block.column_names, where)
        check_dtype_columns(fill_nulls, block.column_names, where, "fill_nulls")
        out = {}
        for name in block.column_names:
            spec = spec_for(tf, name, block.schema.field(name).type, where)
            value = _to_tf_value(tf, block, name, spec, fill_nulls, where)
            tensor = value if isinstance(value, tf.RaggedTensor) else tf.convert_to_tensor(value, dtype=spec.dtype)
            want = dtypes.get(name) if isinstance(dtypes, dict) else dtypes
            if want is not None and tensor.dtype == tf.string and want != tf.string:
                refuse_text_cast(name, f"tf.{want.name}", where, every_column=not isinstance(dtypes, dict))
            if want == tf.string and tensor.dtype != tf.string:
                _refuse_number_to_text(name, tensor.dtype, where)
            if want is not None:
                flat = value.flat_values.numpy() if isinstance(value, tf.RaggedTensor) else value
                if isinstance(flat, np.ndarray):
                    _check_tf_cast(tf, flat, want, name, where)
            out[name] = tf.cast(tensor, want) if want is not None else tensor
        return out

    return fmt


#: The integer type whose values each quantized tf dtype holds (``tf.qint8.min`` raises).
_QUANTIZED: dict[str, type[np.integer]] = {"qint8": np.int8, "quint8": np.uint8, "qint16": np.int16,
                                            "quint16": np.uint16, "qint32": np.int32}


def _check_tf_cast(tf: Any, values: np.ndarray, want: Any, name: str, where: str) -> None:
    """tf.cast wraps (300 -> 44 in int8), cuts 1.5 to 1, rounds 2**53 + 1 to 2**53 in float64, makes 1e6 inf
    in float16 (and in complex64's parts 1e300) and 2 ``True``: refused, naming the value."""
    from .training_columns import check_bool_cast, check_float_cast, check_integer_cast

    target = f"tf.{want.name}"
    if want.is_quantized or want.is_integer:
        info = np.iinfo(_QUANTIZED[want.name]) if want.is_quantized else want
        check_integer_cast(values, int(info.min), int(info.max), name=name, target=target, where=where, module="tf")
    elif want.is_bool:
        check_bool_cast(values, name=name, target=target, where=where, module="tf")
    elif want.is_floating or want.is_complex:
        real = want.real_dtype  # (a complex dtype holds its parts' float type: judged as that)
        check_float_cast(values, _tf_cast_to(tf, real), float(real.max), name=name, target=target, where=where,
                         module="tf", as_float=real.name)


def _refuse_number_to_text(name: str, got: Any, where: str) -> None:
    """``dtypes=tf.string`` on a column of numbers: tf's Cast kernel fails naming no column."""
    from bridge.errors import BridgeValueError

    msg = f"{where}: dtypes asks for column {name!r} as tf.string, but it holds {got.name} numbers, which tf does not cast"
    raise BridgeValueError(msg, f"format them as text first, e.g. ds.map_batches(lambda t: t.set_column(t.schema."
                                f"get_field_index({name!r}), {name!r}, t[{name!r}].cast('string')), "
                                f"batch_format='pyarrow'), or leave {name!r} out of dtypes")


def _tf_cast_to(tf: Any, want: Any) -> Any:
    """``tf.cast`` of an ndarray to the float dtype ``want``, given back as float64 values."""
    def convert(values: np.ndarray) -> np.ndarray:
        return np.asarray(tf.cast(tf.cast(tf.convert_to_tensor(values), want), tf.float64).numpy())

    return convert


def _tf_dtypes(tf: Any, dtypes: Any, where: str) -> Any:
    """``dtypes`` as ``None``, one ``tf.DType`` or ``{column: tf.DType}`` (anything ``tf.as_dtype`` takes:
    ``tf.float32``, ``"float32"``, ``np.float32``); else a clear error now rather than TF's in the iterator."""
    from bridge.errors import BridgeTypeError

    if dtypes is None:
        return None
    try:
        if not isinstance(dtypes, dict):
            return _castable(tf, tf.as_dtype(dtypes), where)
        if all(isinstance(k, str) for k in dtypes):
            return {k: _castable(tf, tf.as_dtype(v), where) for k, v in dtypes.items()}
    except BridgeTypeError:
        raise
    except TypeError:
        pass
    if isinstance(dtypes, dict):
        bad = {k: v for k, v in dtypes.items() if not isinstance(k, str) or not _is_tf_dtype(tf, v)}
        got = f"{{{', '.join(f'{k!r}: {v!r}' for k, v in list(bad.items())[:3])}}}"
    else:
        got = f"{dtypes!r} ({type(dtypes).__name__})"
    raise BridgeTypeError(f"{where}: dtypes must be a tf.DType or a dict of column name -> tf.DType; got {got}",
                          "pass e.g. dtypes=tf.float32 or dtypes={'x': tf.float32, 'y': tf.int64}")


def _castable(tf: Any, dtype: Any, where: str) -> Any:
    """``dtype`` where a column may be cast to it (numbers, bool, complex, quantized, string), else a clear
    error now (``tf.resource``, ``tf.variant``: tf's Cast kernel fails in the iterator)."""
    from bridge.errors import BridgeTypeError

    if dtype.is_integer or dtype.is_floating or dtype.is_bool or dtype.is_complex or dtype.is_quantized \
            or dtype == tf.string:
        return dtype
    raise BridgeTypeError(f"{where}: dtypes asks for tf.{dtype.name}, which no column is cast to",
                          "pass a number, bool or string dtype, e.g. dtypes=tf.float32")


def _is_tf_dtype(tf: Any, value: Any) -> bool:
    try:
        tf.as_dtype(value)
    except TypeError:
        return False
    return True


def _columns_and_specs(tf: Any, schema: pa.Schema | None, feature_columns: Any, label_columns: Any,
                       what: str) -> tuple[list[str], list[str], dict[str, Any], Any]:
    """``to_tf``'s column names, their tf specs and the element signature (checked against ``schema``)."""
    from bridge.errors import DatasetEmptyError, SchemaMismatchError

    features, labels = _names(feature_columns), _names(label_columns)
    for kind, names in (("feature_columns", features), ("label_columns", labels)):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            from bridge.errors import BridgeValueError

            msg = f"to_tf: {kind} names {twice} more than once (a dict of tensors holds each column once)"
            raise BridgeValueError(msg, f"name each column once, e.g. {kind}={list(dict.fromkeys(names))}")
    if schema is None:
        raise DatasetEmptyError(f"to_tf: the {what} has no rows and no schema", "check the source; it is empty")
    missing = [c for c in features + labels if c not in schema.names]
    if missing:
        msg = f"to_tf: column(s) {missing} not found; the {what} has {schema.names}"
        raise SchemaMismatchError(msg, "check the spelling in feature_columns / label_columns")
    specs = {n: spec_for(tf, n, schema.field(n).type) for n in features + labels}
    f_sig = _pack(specs, features, isinstance(feature_columns, str))
    signature = (f_sig, _pack(specs, labels, isinstance(label_columns, str))) if labels else f_sig
    return features, labels, specs, signature


@checked_keywords("to_tf")
def iterator_to_tf(it: Any, feature_columns: str | list[str], label_columns: str | list[str] | None = None, *,
                   batch_size: int = 1, drop_last: bool = False, local_shuffle_buffer_size: int | None = None,
                   local_shuffle_seed: int | None = None, prefetch_batches: int = 1, fill_nulls: Any = None) -> Any:
    """``DataIterator.to_tf``: a ``tf.data.Dataset`` whose every pass is one epoch of ``it`` (e.g. a split).

    Unlike ``Dataset.to_tf`` there is no null check up front (it would take an epoch of a
    split): a null in a column without ``fill_nulls`` fails inside tf.data.
    """
    from bridge.iteration.options import BatchOptions

    options = BatchOptions(batch_size=batch_size, drop_last=drop_last, prefetch_batches=prefetch_batches,
                           local_shuffle_buffer_size=local_shuffle_buffer_size, local_shuffle_seed=local_shuffle_seed,
                           caller="to_tf")
    from .training_columns import check_dtype_columns

    tf = _tf()
    schema = it.schema()
    features, labels, specs, signature = _columns_and_specs(tf, schema, feature_columns, label_columns, "iterator")
    if schema is not None:
        check_dtype_columns(fill_nulls, schema.names, "to_tf", "fill_nulls")
    f_single, l_single = isinstance(feature_columns, str), isinstance(label_columns, str)
    wanted = list(dict.fromkeys(features + labels))

    def fmt(block: pa.Table) -> Any:
        values = {n: _to_tf_value(tf, block, n, specs[n], fill_nulls) for n in wanted}
        f = _pack(values, features, f_single)
        return (f, _pack(values, labels, l_single)) if labels else f

    def elements() -> Iterator[Any]:
        yield from it.batches(options, fmt)

    return tf.data.Dataset.from_generator(elements, output_signature=signature)


def from_tf(dataset: Any, *, rows_per_block: int = 1024) -> Any:
    """A ``tf.data.Dataset`` -> Dataset (read on the driver, in order).

    Dict elements give their keys as columns; a tuple ``(x, y, ...)`` gives
    ``item_0, item_1, ...`` (a dict inside a tuple is flattened into its keys);
    anything else a column ``item``.  Ragged elements become list columns.
    """
    from bridge import from_blocks
    from bridge.batch import to_block

    tf = _tf()

    def numpy_of(v: Any) -> Any:
        if isinstance(v, tf.RaggedTensor):
            flat = v.flat_values.numpy()
            if flat.ndim != 1:  # (uniform inner dimensions: the rows' nested lists, as pyarrow infers them)
                return pa.array(v.to_list())
            # Built from the values and the row splits: the values keep their dtype (to_list() made int32
            # and uint8 rows int64, float32 ones float64).
            values = _tf_strings(flat) if flat.dtype == object else pa.array(flat)
            for splits in reversed(v.nested_row_splits):
                values = pa.ListArray.from_arrays(pa.array(splits.numpy().astype(np.int32)), values)
            return values
        arr = v.numpy() if hasattr(v, "numpy") else np.asarray(v)
        if arr.dtype == object:  # tf.string: text where every value is UTF-8, else the bytes
            values = _tf_strings(arr.reshape(-1))
            for width in reversed(arr.shape[1:]):  # (n-d: nested lists of them, as before)
                count = len(values) // width if width else 0
                values = pa.ListArray.from_arrays(pa.array(np.arange(count + 1, dtype=np.int32) * width), values)
            return values
        return arr

    def columns(elem: Any) -> dict[str, Any]:
        if isinstance(elem, dict):
            return {str(k): numpy_of(v) for k, v in elem.items()}
        if isinstance(elem, tuple):
            out: dict[str, Any] = {}
            for i, part in enumerate(elem):
                out.update(columns(part) if isinstance(part, dict) else {f"item_{i}": numpy_of(part)})
            return out
        return {"item": numpy_of(elem)}

    def blocks() -> Iterator[pa.Table]:
        for batch in dataset.ragged_batch(rows_per_block):
            yield to_block(columns(batch))

    return from_blocks(blocks(), name="FromTF")


def _tf_strings(values: np.ndarray) -> pa.Array:
    """``tf.string`` values (bytes) as Arrow text where each one is UTF-8, else as binary: image bytes read
    from TFRecords failed with a bare ``UnicodeDecodeError``."""
    items = values.tolist()
    try:
        return pa.array([x.decode() if isinstance(x, bytes) else x for x in items], pa.string())
    except UnicodeDecodeError:
        return pa.array(items, pa.binary())


class TFAdapter:
    name = "tf"
    package = "tensorflow"
    extra = "raybridge[tf]"

    def is_native(self, obj: Any) -> bool:
        tf = sys.modules.get("tensorflow")
        return tf is not None and isinstance(obj, tf.data.Dataset)

    def to_dataset(self, obj: Any, **options: Any) -> Any:
        return from_tf(obj, **options)

    def from_dataset(self, ds: Any, **options: Any) -> Any:
        return to_tf(ds, **options)

    # What the core's iterators call through the registry (``bridge.registry.get_adapter("tf")``).
    def batch_formatter(self, *, dtypes: Any = None, fill_nulls: Any = None) -> Any:
        """``iter_tf_batches``' format: :func:`make_tf_formatter`."""
        return make_tf_formatter(dtypes=dtypes, fill_nulls=fill_nulls)

    def from_iterator(self, it: Any, feature_columns: Any, label_columns: Any = None, **options: Any) -> Any:
        """``DataIterator.to_tf``: :func:`iterator_to_tf`."""
        return iterator_to_tf(it, feature_columns, label_columns, **options)


ADAPTER = TFAdapter()
