"""Which source a block came from, so a lost block is reported by name.

Blocks produced by read tasks and map tasks are re-created by Ray's lineage
reconstruction when the node holding them dies (the tasks run with
``max_retries``).  Blocks that were ``ray.put`` (``from_arrow``,
``from_pandas``, ``from_arrow_refs`` and most adapters) or produced by a task
with ``max_retries=0`` cannot be: Ray then raises an ``ObjectLostError``
naming only an object id.  This module remembers, for each block of a
materialised Dataset, the source and block index it belongs to, and turns
Ray's error into :class:`~bridge.errors.BlockLostError` naming that source.

Example:
    >>> from bridge.execution import lineage
    >>> lineage.describe_ref(b"not-registered") is None
    True
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import ray

from bridge.errors import BlockLostError

if TYPE_CHECKING:
    from bridge.block import Block
    from bridge.execution.bundle import RefBundle

#: Refs remembered at most (oldest forgotten first); ~150 bytes each.
MAX_REMEMBERED = 1 << 16

_sources: collections.OrderedDict[bytes, tuple[str, int, int]] = collections.OrderedDict()
_lock = threading.Lock()


def remember(bundles: Iterable[RefBundle], source: str) -> None:
    """Record that the blocks of ``bundles`` are, in order, the blocks of ``source``."""
    refs = [r for b in bundles for r in b.refs]
    with _lock:
        for i, ref in enumerate(refs):
            key = ref.binary()
            if key in _sources:  # the first (innermost) source is the one that produced it
                continue
            _sources[key] = (source, i, len(refs))
        while len(_sources) > MAX_REMEMBERED:
            _sources.popitem(last=False)


def describe_ref(key: bytes) -> tuple[str, int, int] | None:
    """``(source, block index, number of blocks)`` for a remembered ref's binary id."""
    with _lock:
        return _sources.get(key)


def _lost_ref_key(err: BaseException) -> bytes | None:
    hex_id = getattr(err, "object_ref_hex", None)
    if not hex_id:
        cause = getattr(err, "cause", None)
        hex_id = getattr(cause, "object_ref_hex", None)
    try:
        return bytes.fromhex(hex_id) if hex_id else None
    except ValueError:
        return None


def _why(err: BaseException) -> str:
    if isinstance(err, ray.exceptions.OwnerDiedError):
        return ("the process that owned it died with its node; blocks created with ray.put (from_arrow, "
                "from_pandas, from_arrow_refs, adapters) have no lineage to re-create them from")
    if isinstance(err, ray.exceptions.ObjectReconstructionFailedError):
        text = str(err)
        if "max_retries=0" in text or "RETRIES_DISABLED" in text:
            return "the task that produced it ran with max_retries=0, so Ray may not run it again"
        return "re-running the task that produced it failed (its input is gone too, or it ran out of retries)"
    return "every copy was lost with the node that held it and Ray could not re-create it"


def block_lost_error(err: BaseException, where: str | None = None) -> BlockLostError:
    """Turn Ray's ``ObjectLostError`` (or a task error caused by one) into a :class:`BlockLostError`."""
    cause = err if isinstance(err, ray.exceptions.ObjectLostError) else getattr(err, "cause", err)
    key = _lost_ref_key(err)
    known = describe_ref(key) if key is not None else None
    obj = key.hex() if key is not None else "unknown"
    if known is not None:
        source, index, total = known
        what = f"block {index} of {total} from source {source} (object {obj}) was lost"
    else:
        what = f"a block (object {obj}) was lost"
        source = "the source"
    if where:
        what += f" while running {where}"
    what += f": {_why(cause)}. Ray said {type(cause).__name__}."
    hint = (f"{source} cannot be re-read, so the Dataset must be built again from the original data; to survive "
            "node loss, build it from a re-readable source (bridge.read_parquet(...), bridge.range(...), or "
            "from_dask/from_spark before the engine stops) and keep max_retries > 0 on map_batches")
    out = BlockLostError(what, hint)
    out.__cause__ = err
    return out


def get_blocks(refs: Sequence[ray.ObjectRef], where: str | None = None) -> list[Block]:
    """``ray.get`` of block refs; a lost block raises :class:`BlockLostError` naming its source."""
    from bridge.arrow_values import register_pandas_extension_types

    register_pandas_extension_types()
    if not ray.is_initialized():  # (ray.get would start a Ray of its own, then fail: the blocks' owner is gone)
        from bridge._ray import session_ended_error

        raise session_ended_error(where or "reading the Dataset's blocks")
    try:
        return ray.get(list(refs)) if len(refs) != 1 else [ray.get(refs[0])]
    except ray.exceptions.ObjectLostError as err:
        raise block_lost_error(err, where) from err
    except ValueError as err:  # Ray's "owner is unknown": blocks of a session that ended before this one
        if "owner" not in str(err):
            raise
        from bridge._ray import session_ended_error

        raise session_ended_error(where or "reading the Dataset's blocks") from err


def is_block_lost(err: BaseException) -> bool:
    """Whether ``err`` means a block is gone for good (Ray already tried to re-create it)."""
    return isinstance(err, ray.exceptions.ObjectLostError) and not isinstance(
        err, ray.exceptions.ObjectFetchTimedOutError)
