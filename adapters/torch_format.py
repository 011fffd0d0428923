"""Arrow blocks -> torch tensors: the format of ``iter_torch_batches``, ``to_torch`` and ``map_batches(batch_format="torch")``.

dtype rules (Arrow column -> torch), applied after the shared rules of
``adapters/training_columns.py`` (timestamps -> int64 with the unit
stated, nulls -> error naming the column unless ``fill_nulls``, dictionaries
decoded, decimals -> error with the cast to use):

============================  =================================================================
Arrow / NumPy                 torch
============================  =================================================================
int8, int16, int32, int64     same width (``torch.int8`` .. ``torch.int64``)
uint8                         ``torch.uint8``
uint16, uint32                ``torch.int64`` (torch has no arithmetic on uint16/32); lossless
uint64                        ``UnsupportedTypeError`` (values may not fit int64), unless
                              ``dtypes`` names a dtype for the column, which casts it
float16, float32, float64     ``torch.float16``, ``torch.float32``, ``torch.float64``
bool                          ``torch.bool``
timestamp / date / duration   ``torch.int64`` (unit since the epoch; a warning says which)
fixed-shape tensor            one stacked tensor ``(rows, *shape)``
string / binary               a Python list (strings stay lists)
list<number>                  a list of 1-d tensors, one per row (a null row: an error naming
                              it, unless ``fill_nulls``; in ``map_batches`` ``None``)
variable-shape tensor         a list of tensors, one per row (``None`` for a null row)
============================  =================================================================

``map_batches(batch_format="torch")`` takes the function's result back by the rules of
``bridge/batch.py``: a tensor of a dtype Arrow lacks (``bfloat16``, ``float8``) is refused naming
the column (convert it, e.g. ``.float()``); a list of tensors (``None`` for a null row) goes back to
the input column's type where its values fit it, so an unchanged list column keeps its type and nulls.

``dtypes`` (one ``torch.dtype`` or ``{column: dtype}``) casts after these rules; a cast that would
change a value is refused, naming it: to an integer dtype (wrap 2**40 in int32, cut 2.5, NaN), to a
float dtype (an integer it does not hold, 2**53 + 1 in float64; a finite value past its range, 1e6 in
float16).  A float rounded to the nearest value of a narrower float (0.1 in float32) is the cast asked for.
Tensors made on the CPU own their memory: where a column's tensor would be a
view of the block's Arrow buffers (in a block read from Ray's object store, the
store's memory), it is copied, so that an in-place change to a batch
(``batch["x"].sub_(mean)``) cannot change the Dataset for a later epoch or
reader.  ``iter_torch_batches(zero_copy=True)`` skips that copy: the tensors are
then views of the store, to be treated as read-only.  A run of up to 16 batches
is converted (and copied to the device) at once and each batch is a view of
it (``bridge/iteration/block_format.py``), so a batch kept alive keeps its run.

Example:
    >>> import bridge
    >>> b = next(iter(bridge.range(8).iter_torch_batches(batch_size=4)))
    >>> b["id"].tolist()
    [0, 1, 2, 3]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

_UINT_TO_INT64 = ("uint16", "uint32")


def _torch() -> Any:
    try:
        import torch
    except ImportError as err:
        from bridge.errors import missing_dependency

        raise missing_dependency("torch", "raybridge[torch]", "the torch exporter") from err
    return torch


def _dtype_for(dtypes: Any, name: str) -> Any:
    if dtypes is None:
        return None
    if isinstance(dtypes, dict):
        return dtypes.get(name)
    return dtypes


def check_dtypes(dtypes: Any, where: str) -> None:
    """``dtypes`` is ``None``, one ``torch.dtype`` or ``{column: torch.dtype}``: else a clear error now
    (``dtypes="float"`` failed in torch's device parser, deep in the iterator's thread)."""
    torch = _torch()
    if dtypes is None or isinstance(dtypes, torch.dtype):
        return
    if isinstance(dtypes, dict):
        bad = {k: v for k, v in dtypes.items() if not isinstance(k, str) or not isinstance(v, torch.dtype)}
        if not bad:
            return
        got = f"{{{', '.join(f'{k!r}: {v!r}' for k, v in list(bad.items())[:3])}}}"
    else:
        got = f"{dtypes!r} ({type(dtypes).__name__})"
    from bridge.errors import BridgeTypeError

    raise BridgeTypeError(f"{where}: dtypes must be a torch.dtype or a dict of column name -> torch.dtype; got {got}",
                          "pass e.g. dtypes=torch.float32 or dtypes={'x': torch.float32, 'y': torch.int64}")


def _dense_to_tensor(torch: Any, name: str, arr: np.ndarray, dtype: Any, own: bool = False) -> Any:
    """One ndarray -> a tensor (warnings silenced by the caller).

    ``own``: the tensor never shares memory with Arrow's buffers (which, for a block read from Ray's
    object store, are the store's memory: an in-place change to the tensor would change the Dataset
    for every later reader).  A read-only array is such a view and is copied; a writable one was made
    for this call (a cast, a concatenation) and is used as it is.  Without ``own`` no copy is made
    where no cast is needed.
    """
    np_dtype = arr.dtype
    if dtype is not None and not (np_dtype.kind == "u" and np_dtype.itemsize == 8):  # (uint64: _uint64_for)
        _check_cast(torch, name, arr, dtype)
    if np_dtype.kind == "u" and np_dtype.itemsize > 1:
        if np_dtype.itemsize == 8:
            arr = _uint64_for(name, arr, dtype, torch)
        else:
            arr = arr.astype(np.int64)
    t = torch.from_numpy(arr) if type(arr) is np.ndarray and np_dtype.kind != "O" else torch.as_tensor(arr)
    if dtype is not None and t.dtype != dtype:
        return t.to(dtype)
    if own and type(arr) is np.ndarray and not arr.flags.writeable:
        from bridge.tensor import pooled_empty

        mine = pooled_empty(arr.shape, arr.dtype)
        np.copyto(mine, arr)
        return torch.from_numpy(mine)
    return t


def _int_range(torch: Any, dtype: Any) -> tuple[int, int] | None:
    """The values an integer ``torch.dtype`` holds; ``None`` for float, complex and bool dtypes."""
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return None
    info = torch.iinfo(dtype)
    return int(info.min), int(info.max)


def _check_cast(torch: Any, name: str, arr: np.ndarray, dtype: Any, error: Any = None) -> None:
    """``dtypes`` casting ``arr`` must keep every value: to an integer dtype (torch wraps: 2**40 -> 0 in int32,
    and cuts 1.5 to 1), to a float or complex dtype (2**53 + 1 -> 2**53 in float64, 1e6 -> inf in float16)
    and to bool (2 -> True); checked only where the dtype does not hold every value of ``arr``'s type."""
    from bridge.errors import BridgeValueError

    from .training_columns import check_bool_cast, check_float_cast, check_integer_cast

    error = error or BridgeValueError
    bounds = _int_range(torch, dtype)
    if bounds is not None:
        check_integer_cast(arr, *bounds, name=name, target=str(dtype), where="torch", module="torch", error=error)
    elif dtype == torch.bool:
        check_bool_cast(arr, name=name, target=str(dtype), where="torch", module="torch", error=error)
    elif dtype.is_floating_point or dtype.is_complex:
        # A complex dtype holds its parts' float type: judged as that.
        real = {torch.complex32: torch.float16, torch.complex64: torch.float32,
                torch.complex128: torch.float64}.get(dtype, dtype)

        def convert(values: np.ndarray) -> np.ndarray:
            # Unsigned ints through float64 (torch takes no uint64 array): that rounds no integer to one the
            # target holds exactly, so a value the target cannot hold is still found.
            wide = values.astype(np.float64) if values.dtype.kind in "uf" else values
            return torch.from_numpy(np.ascontiguousarray(wide)).to(real).to(torch.float64).numpy()

        check_float_cast(arr, convert, float(torch.finfo(real).max), name=name, target=str(dtype), where="torch",
                         module="torch", error=error, as_float=str(real).rsplit(".", 1)[-1])


def _uint64_for(name: str, arr: np.ndarray, dtype: Any, torch: Any) -> np.ndarray:
    """A uint64 column as the array ``dtypes`` casts from: float64 for a float dtype, else int64 (its values
    checked against the dtype's range, the rule of every other integer cast)."""
    from bridge.errors import UnsupportedTypeError

    if dtype is None:
        msg = f"torch: column {name!r} is uint64, which torch cannot hold without risking overflow"
        hint = (f"pass dtypes={{{name!r}: torch.int64}} (values must fit), {{{name!r}: torch.float64}} (exact up "
                f"to 2**53) or {{{name!r}: torch.uint64}} (every value; few torch operations take it), or cast the "
                "column to int64 or float64 before exporting")
        raise UnsupportedTypeError(msg, hint)
    if getattr(dtype, "is_floating_point", False):
        _check_cast(torch, name, arr, dtype, UnsupportedTypeError)
        return arr.astype(np.float64)
    _check_cast(torch, name, arr, dtype, UnsupportedTypeError)
    return arr.astype(np.int64)


def _null_list_rows(col: Any) -> tuple[Any, list[int]]:
    """A list-of-numbers column with null rows: ``(the column with those rows empty, their indices)``;
    ``(col, [])`` for any other column.  (``map_batches`` gives such a row as ``None``.)"""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if not col.null_count or not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
        return col, []
    inner = t.value_type
    if not (pa.types.is_integer(inner) or pa.types.is_floating(inner) or pa.types.is_boolean(inner)):
        return col, []
    rows = np.flatnonzero(pc.is_null(col).to_numpy(zero_copy_only=False)).tolist()
    fill = pa.scalar([False if pa.types.is_boolean(inner) else 0] * t.list_size if pa.types.is_fixed_size_list(t)
                     else [], type=t)
    return pc.fill_null(col, fill), rows


def block_to_torch(block: Any, *, dtypes: Any = None, fill_nulls: Any = None, own: bool = False,
                   null_rows: bool = False) -> dict[str, Any]:
    """One Arrow table -> ``{column: tensor | list}`` by the rules of the module docstring.

    Run once per run of batches (see ``bridge/iteration/block_format.py``); the
    batches are then slices of these tensors.  ``own``: no tensor shares memory
    with the block's buffers (see :func:`_dense_to_tensor`).  ``null_rows``
    (``map_batches``): a null row of a list column is ``None`` in its list of
    tensors, as a variable-shape tensor's is, instead of an error.
    """
    from .training_columns import check_dtype_columns, refuse_text_cast, training_column

    torch = _torch()
    check_dtype_columns(dtypes, block.column_names, "torch")
    check_dtype_columns(fill_nulls, block.column_names, "torch", "fill_nulls")  # (a block holds every column)
    nulls: dict[str, list[int]] = {}
    columns = list(block.columns)
    if null_rows:
        for i, name in enumerate(block.column_names):
            columns[i], rows = _null_list_rows(columns[i])
            if rows:
                nulls[name] = rows
    # Column rules first: their warnings (timestamps) must reach the user.
    cols = [training_column(block, name, fill_nulls=fill_nulls, framework="torch", column=col)
            for name, col in zip(block.column_names, columns)]
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # read-only Arrow buffers: torch warns that tensors share them
        for col in cols:
            name = col.name
            dtype = _dtype_for(dtypes, name)
            if col.kind == "dense":
                out[name] = _dense_to_tensor(torch, name, col.value, dtype, own)
            elif col.kind == "strings":
                if isinstance(dtypes, dict) and dtypes.get(name) is not None:
                    refuse_text_cast(name, dtypes[name], "torch", every_column=False)
                out[name] = col.value
            elif col.kind == "ragged":
                assert col.row_lengths is not None
                flat = _dense_to_tensor(torch, name, col.value, dtype, own)
                out[name] = list(torch.split(flat, col.row_lengths.tolist()))
            else:
                out[name] = [None if a is None else _dense_to_tensor(torch, name, a, dtype, own) for a in col.value]
            for row in nulls.get(name, ()):
                out[name][row] = None
    return out


def _split_rows(value: Any, rows: int) -> Any:
    """One column of a converted run cut into batches of ``rows``: one ``split`` call for a tensor."""
    if isinstance(value, list):
        return [value[s:s + rows] for s in range(0, len(value), rows)]
    return value.split(rows)


def _resolve_device(device: Any, caller: str = "iter_torch_batches") -> Any:
    torch = _torch()
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as err:
        from bridge.errors import BridgeValueError

        msg = f"{caller}(device={device!r}): torch knows no such device"
        raise BridgeValueError(msg, "pass 'cuda', 'cuda:0', 'cpu' (or 'auto'), or a torch.device") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        from bridge.errors import BridgeError

        msg = f"{caller}(device={device!r}): this process sees no CUDA device"
        raise BridgeError(msg, "pass device='cpu' (or 'auto'), or run on a GPU worker (e.g. num_gpus=1)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        from bridge.errors import BridgeError

        count = torch.cuda.device_count()
        msg = (f"{caller}(device={device!r}): this process sees {count} CUDA device(s), "
               f"cuda:0..cuda:{count - 1}")
        raise BridgeError(msg, "pass device='cuda' (the current device) or an index below the count; "
                               "check CUDA_VISIBLE_DEVICES")
    return dev


def _move(obj: Any, device: Any, pin: bool) -> Any:
    torch = _torch()
    if isinstance(obj, torch.Tensor):
        if pin and device.type == "cuda" and not obj.is_pinned():
            obj = obj.pin_memory()
        return obj.to(device, non_blocking=device.type == "cuda")
    if isinstance(obj, dict):
        return {k: _move(v, device, pin) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and isinstance(next((v for v in obj if v is not None), None), torch.Tensor):
        # (a list column's rows; a null row is None, the first one too: the first row that is not)
        return type(obj)(_move(v, device, pin) if isinstance(v, torch.Tensor) else v for v in obj)
    return obj


def _device_tensors(obj: Any, torch: Any) -> Iterator[Any]:
    """Every CUDA tensor in a batch (a tensor, or dicts / lists / tuples of them)."""
    if isinstance(obj, torch.Tensor):
        if obj.is_cuda:
            yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _device_tensors(v, torch)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _device_tensors(v, torch)


def cuda_handoff(device: Any, copy_stream: Any = None) -> Callable[[Any], Any]:
    """Hand a batch copied on a side stream to the consumer's stream (called on the consumer's thread).

    The background thread copies each run to the device on its own stream and
    waits for the copy, so the data is there; but the caching allocator
    tracks a block by the stream that allocated it.  Without
    ``record_stream`` it would hand the memory of a batch the consumer has
    dropped to the next copy at once, while kernels the consumer queued on its
    own stream may not have read it yet: wrong values that look right.
    Recording the consumer's current stream keeps the memory until the
    kernels queued on it when the batch was dropped have run.  With
    ``copy_stream`` (copies not waited for on the host), the consumer's stream
    first waits, on the GPU, for what was queued on the copy stream.
    """
    torch = _torch()

    def handoff(batch: Any) -> Any:
        consumer = torch.cuda.current_stream(device)
        if copy_stream is not None:
            consumer.wait_stream(copy_stream)
        for t in _device_tensors(batch, torch):
            t.record_stream(consumer)
        return batch

    return handoff


def make_formatter(*, dtypes: Any = None, device: Any = "cpu", collate_fn: Callable[..., Any] | None = None,
                   pin_memory: bool | None = None, fill_nulls: Any = None,
                   zero_copy: bool = False, caller: str = "iter_torch_batches") -> Callable[[Any], Any]:
    """The conversion run on the iterator's background thread (callable on one Arrow table too).

    On the CPU each run's tensors own their memory (one copy of what would otherwise be a view of
    the object store, see :func:`_dense_to_tensor`), unless ``zero_copy``: then they are views of it,
    and an in-place change to a batch changes the Dataset for every later reader.

    Without ``collate_fn`` it is a :class:`~bridge.iteration.block_format.BlockFormat`:
    each run of batches becomes tensors once (and goes to the device once, on
    a side stream of the background thread, so the copy overlaps with the
    training step), and every batch is a slice of those tensors.  A user
    ``collate_fn`` gets each batch as NumPy on the background thread instead.
    Either way the formatter's ``handoff`` runs on the consumer's thread for
    each batch and orders the device copy against the consumer's current
    CUDA stream (:func:`cuda_handoff`).  ``pin_memory=None`` pins host memory
    when the device is CUDA.
    """
    from bridge.iteration.block_format import BlockFormat

    torch = _torch()
    dev = _resolve_device(device, caller)
    check_dtypes(dtypes, caller)
    if collate_fn is not None and dtypes is not None:
        from bridge.errors import BridgeError

        raise BridgeError(f"{caller}: pass either collate_fn or dtypes, not both",
                          "cast inside your collate_fn")
    pin = dev.type == "cuda" if pin_memory is None else bool(pin_memory)
    stream = torch.cuda.Stream(device=dev) if dev.type == "cuda" else None
    # From pinned memory the copy is not waited for here: the next run is converted and pinned
    # while this one crosses, and the consumer's stream waits for it on the GPU (handoff). The
    # pinned source stays reserved until the copy ran (torch's caching host allocator records it).
    handoff = cuda_handoff(dev, stream if pin else None) if dev.type == "cuda" else None

    def to_device(out: Any) -> Any:
        if dev.type == "cpu":
            return out if not pin else _move(out, dev, False)
        with torch.cuda.stream(stream):
            moved = _move(out, dev, pin)
        if not pin:
            stream.synchronize()  # type: ignore[union-attr]
        return moved

    if collate_fn is None:
        own = dev.type == "cpu" and not zero_copy  # (a device copy is the batch's own memory anyway)
        return BlockFormat(
            lambda block: to_device(block_to_torch(block, dtypes=dtypes, fill_nulls=fill_nulls, own=own)),
            split=_split_rows, handoff=handoff)

    def collate(block: Any) -> Any:
        from bridge.batch import to_numpy_batch

        return to_device(collate_fn(to_numpy_batch(block)))

    collate.handoff = handoff  # type: ignore[attr-defined]
    return collate


def torch_batch_converter(device: Any = None) -> tuple[Callable[[Any], Any], Callable[[Any], Any] | None]:
    """``map_batches(..., batch_format="torch", device=...)``: ``(block -> batch, handoff)``.

    ``block -> batch`` gives ``{column: tensor}`` by this module's rules; on a CUDA
    device the tensors are copied through pinned host memory (torch's caching host
    allocator reuses the pinned buffers) on a side stream, waiting for the copy,
    so a pool actor's second thread prepares batch k+1 while batch k runs.
    ``handoff`` (``None`` on the CPU) runs on the thread of the user's code right
    before it and records that thread's current stream on every tensor.
    """
    torch = _torch()
    dev = _resolve_device(device or "cpu")
    # On the CPU the user's function gets tensors of its own: an in-place change must not reach the
    # input block in the object store (another reader's data). A GPU batch is a copy anyway.
    own = dev.type == "cpu"

    def host(pieces: Any) -> Any:
        """A block, or a list of blocks (one batch's pieces): ``{column: tensor}`` on the host."""
        if not isinstance(pieces, list):
            return block_to_torch(pieces, own=own, null_rows=True)
        if len(pieces) == 1:
            return block_to_torch(pieces[0], own=own, null_rows=True)
        parts = [block_to_torch(p, null_rows=True) for p in pieces]
        out: dict[str, Any] = {}
        for name in parts[0]:
            values = [p[name] for p in parts]
            if all(isinstance(v, torch.Tensor) for v in values):
                shape = (sum(len(v) for v in values), *values[0].shape[1:])
                # One copy, straight into (cached, reused) pinned memory when the batch goes to a GPU.
                buf = torch.empty(shape, dtype=values[0].dtype, pin_memory=dev.type == "cuda")
                out[name] = torch.cat(values, out=buf)
            else:
                out[name] = [x.clone() if own and isinstance(x, torch.Tensor) else x for v in values for x in v]
        return out

    if dev.type != "cuda":
        return host, None
    stream = torch.cuda.Stream(device=dev)

    def convert(pieces: Any) -> Any:
        cpu = host(pieces)
        with torch.cuda.stream(stream):
            moved = _move(cpu, dev, True)
        stream.synchronize()
        return moved

    return convert, cuda_handoff(dev)


_FORMAT_KEYS = ("dtypes", "device", "collate_fn", "pin_memory", "fill_nulls", "zero_copy")


def torch_batch_stream(run: Callable[[Callable[[Any], Any], dict[str, Any]], Iterator[Any]],
                       options: dict[str, Any]) -> Iterator[Any]:
    """Split ``options`` into formatting and iteration arguments and run ``run(formatter, iteration_kw)``."""
    import dataclasses

    from bridge.iteration.options import BatchOptions
    from bridge.keywords import refuse_unknown

    iteration = [f.name for f in dataclasses.fields(BatchOptions) if f.name not in ("batch_format", "caller")]
    refuse_unknown("iter_torch_batches", options, [*_FORMAT_KEYS, *iteration])
    fmt_kw = {k: options.pop(k) for k in _FORMAT_KEYS if k in options}
    return run(make_formatter(**fmt_kw), {**options, "caller": "iter_torch_batches"})
