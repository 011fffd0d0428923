"""One object for the arguments every iteration shares.

``iter_batches``, ``iter_torch_batches``, ``iter_tf_batches``, ``to_torch``, ``to_tf`` and
the split iterators all cut rows into batches the same way; their public signatures
take the arguments by keyword (as Ray Data's do) and build one :class:`BatchOptions`,
which is checked once, when the iterator is made, and passed down as it is.  An
adapter that iterates a Dataset or a :class:`~bridge.iteration.data_iterator.DataIterator`
for its framework builds one too (``DataIterator.batches(options, formatter)``).
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

from bridge.errors import BridgeValueError


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

    def __post_init__(self) -> None:
        # Ray Data's argument errors, raised when the iterator is made rather than on its first batch.
        size, buffer = self.batch_size, self.local_shuffle_buffer_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1):
            msg = f"iter_batches: batch_size must be a positive number of rows or None; got {size!r}"
            raise BridgeValueError(msg, "pass batch_size=None to get whole blocks")
        if buffer is not None and buffer < 0:
            msg = f"iter_batches: local_shuffle_buffer_size must be >= 0; got {buffer}"
            raise BridgeValueError(msg, "pass a number of rows, e.g. local_shuffle_buffer_size=10_000")
        if buffer and size is None:
            msg = f"iter_batches: a local shuffle (local_shuffle_buffer_size={buffer}) needs a batch_size; got batch_size=None"
            raise BridgeValueError(msg, "pass a batch_size with local_shuffle_buffer_size, e.g. batch_size=256")

    def replace(self, **changes: Any) -> BatchOptions:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


__all__ = ["BatchOptions"]
