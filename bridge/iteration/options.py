"""One object for the arguments every iteration shares, and the checks of row counts and seeds.

``iter_batches``, ``iter_torch_batches``, ``iter_tf_batches``, ``to_torch``, ``to_tf`` and
the split iterators all cut rows into batches the same way; their public signatures
take the arguments by keyword (as Ray Data's do) and build one :class:`BatchOptions`,
which is checked once, when the iterator is made, and passed down as it is.  An
adapter that iterates a Dataset or a :class:`~bridge.iteration.data_iterator.DataIterator`
for its framework builds one too (``DataIterator.batches(options, formatter)``).

:func:`check_rows` and :func:`check_seed` are the argument checks every public method
taking a row count (``take``, ``limit``, ``take_batch``, ``map_batches(batch_size=)``) or a
seed (``random_shuffle``, ``random_sample``, ``randomize_block_order``, ``train_test_split``,
``iter_batches(local_shuffle_seed=)``, ``to_torch(seed=)``) runs at the call: a string or a
float failed later with Python's bare ``TypeError`` / ``ValueError``, or inside a Ray task.
The torch iterable checks its ``seed`` where it is built (``raybridge_adapters.torch_iterable``),
so ``to_any("torch", seed=...)`` and the class made directly are checked as ``to_torch`` is.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np

from bridge.errors import BridgeTypeError, BridgeValueError


def check_rows(where: str, name: str, value: Any, *, minimum: int = 0, none_ok: bool = False,
               unit: str = "rows", hint: str) -> Any:
    """``value`` as an ``int`` (NumPy integers too) of at least ``minimum``, or ``None`` where ``none_ok``.

    Anything else -- a string, a float (even ``5.0``), a bool -- raises ``BridgeTypeError``;
    an int below ``minimum`` raises ``BridgeValueError``; both name ``where`` and ``name``.

    Example:
        >>> check_rows("take", "n", 5, hint="pass a row count such as take(20)")
        5
        >>> check_rows("take", "n", "5", hint="pass a row count such as take(20)")
        Traceback (most recent call last):
        ...
        bridge.errors.BridgeTypeError: take: n must be a number of rows >= 0 (an int); got '5' (str)
        Hint: pass a row count such as take(20)
    """
    if value is None and none_ok:
        return None
    need = f"a positive number of {unit}" if minimum == 1 else f"a number of {unit} >= {minimum}"
    need += " or None" if none_ok else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise BridgeTypeError(f"{where}: {name} must be {need} (an int); got {value!r} ({type(value).__name__})", hint)
    if value < minimum:
        raise BridgeValueError(f"{where}: {name} must be {need}; got {value}", hint)
    return int(value)


def check_seed(where: str, seed: Any, name: str = "seed") -> int | None:
    """``seed`` as an ``int`` >= 0 (NumPy integers too), or ``None`` (a new draw every run).

    A string, a float or a bool raises ``BridgeTypeError`` (``seed="x"`` failed in ``int()`` or in
    NumPy's ``SeedSequence``, in a Ray task for ``random_sample``); a negative int ``BridgeValueError``
    (NumPy's generators take none).

    Example:
        >>> import numpy as np
        >>> check_seed("random_shuffle", np.int64(7)), check_seed("random_shuffle", None)
        (7, None)
        >>> check_seed("random_shuffle", "x")
        Traceback (most recent call last):
        ...
        bridge.errors.BridgeTypeError: random_shuffle: seed must be an int >= 0 or None; got 'x' (str)
        Hint: pass an integer such as seed=42, or seed=None for a new draw every run
    """
    if seed is None:
        return None
    hint = f"pass an integer such as {name}=42, or {name}=None for a new draw every run"
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise BridgeTypeError(f"{where}: {name} must be an int >= 0 or None; got {seed!r} ({type(seed).__name__})",
                              hint)
    if seed < 0:
        raise BridgeValueError(f"{where}: {name} must be an int >= 0 or None; got {seed}", hint)
    return int(seed)


@dataclasses.dataclass(frozen=True)
class BatchOptions:
    """How one pass cuts, shuffles and hands out batches (the arguments of :meth:`bridge.Dataset.iter_batches`).

    Example:
        >>> BatchOptions(batch_size=4, local_shuffle_buffer_size=100)
        BatchOptions(batch_size=4, batch_format='numpy', prefetch_batches=1, drop_last=False, local_shuffle_buffer_size=100, local_shuffle_seed=None)
        >>> BatchOptions(batch_size=0)
        Traceback (most recent call last):
        ...
        bridge.errors.BridgeValueError: iter_batches: batch_size must be a positive number of rows or None; got 0
        Hint: pass batch_size=None to get whole blocks
    """

    batch_size: int | None = 256
    batch_format: str = "numpy"
    prefetch_batches: int = 1
    drop_last: bool = False
    local_shuffle_buffer_size: int | None = None
    local_shuffle_seed: int | None = None
    #: The call the user made, named in the errors (``to_torch``, ``iter_tf_batches``, ...).
    caller: str = dataclasses.field(default="iter_batches", repr=False, compare=False)

    def __post_init__(self) -> None:
        # Ray Data's argument errors, raised when the iterator is made rather than on its first batch.
        size, buffer, where = self.batch_size, self.local_shuffle_buffer_size, self.caller
        if size is not None and (isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1):
            msg = f"{where}: batch_size must be a positive number of rows or None; got {size!r}"
            raise BridgeValueError(msg, "pass batch_size=None to get whole blocks")
        check_rows(where, "local_shuffle_buffer_size", buffer, none_ok=True,
                   hint="pass a number of rows, e.g. local_shuffle_buffer_size=10_000")
        check_rows(where, "prefetch_batches", self.prefetch_batches, unit="batches",
                   hint="pass e.g. prefetch_batches=1, or 0 to convert each batch when it is asked for")
        check_seed(where, self.local_shuffle_seed, "local_shuffle_seed")
        from bridge.batch import normalize_format

        normalize_format(self.batch_format)  # a typo raised only at the first batch
        if not isinstance(self.drop_last, (bool, np.bool_)):
            msg = f"{where}: drop_last must be True or False; got {self.drop_last!r}"
            raise BridgeValueError(msg, "pass drop_last=True to drop a last batch shorter than batch_size")
        if buffer and size is None:
            msg = f"{where}: a local shuffle (local_shuffle_buffer_size={buffer}) needs a batch_size; got batch_size=None"
            raise BridgeValueError(msg, "pass a batch_size with local_shuffle_buffer_size, e.g. batch_size=256")

    def replace(self, **changes: Any) -> BatchOptions:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


__all__ = ["BatchOptions", "check_rows", "check_seed"]
