"""The exceptions raybridge raises.

Every class inherits :class:`BridgeError` and, where one fits, the builtin a
caller would already catch (``ImportError``, ``ValueError``, ``TypeError``), so
``except ValueError`` keeps working around code that starts using raybridge.

Messages read "what failed, where, what we got", a blank line, then
``Hint: <the fix>``.  Build them with :func:`format_message`.
"""

from __future__ import annotations

from typing import Any


def format_message(what: str, hint: str | None = None) -> str:
    """Join a description and a hint the way every raybridge error reads."""
    if hint:
        return f"{what}\n\nHint: {hint}"
    return what


class BridgeError(Exception):
    """Base class of every error raised by raybridge."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.what = message
        self.hint = hint
        super().__init__(format_message(message, hint))

    def __reduce__(self) -> Any:
        # Exceptions cross process boundaries (Ray tasks); keep the parts.
        return (type(self), (self.what, self.hint), self.__dict__.copy())


class MissingDependencyError(BridgeError, ImportError):
    """An optional framework is needed but not installed."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        BridgeError.__init__(self, message, hint)


def missing_dependency(package: str, extra: str, what: str) -> MissingDependencyError:
    """Build the error for ``what`` needing ``package`` from the ``extra`` extra."""
    msg = f"{what} needs the '{package}' package, which is not installed."
    hint = f"pip install '{extra}'"
    return MissingDependencyError(msg, hint)


class SchemaMismatchError(BridgeError, ValueError):
    """Two schemas that had to agree do not."""


class UnsupportedTypeError(BridgeError, TypeError):
    """A column's type cannot be represented by the target framework."""


class UserCodeError(BridgeError):
    """An exception raised inside a user-supplied function.

    ``operator`` names the operator (``MapBatches(normalize)``), ``block_index``
    the input block it was processing; ``original`` is the exception the user's
    code raised (also chained as ``__cause__`` when raised on the driver).
    """

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        operator: str | None = None,
        block_index: int | None = None,
        original: BaseException | None = None,
    ) -> None:
        super().__init__(message, hint)
        self.operator = operator
        self.block_index = block_index
        self.original = original

    def __reduce__(self) -> Any:
        state = {
            "operator": self.operator,
            "block_index": self.block_index,
            "original": _picklable_or_none(self.original),
        }
        return (type(self), (self.what, self.hint), state)


class BlockLostError(BridgeError):
    """A block was lost (its node died) and its source cannot be re-read."""


class StallError(BridgeError, TimeoutError):
    """A consumer or an operator made no progress within the configured timeout."""


class InsufficientMemoryError(BridgeError, MemoryError):
    """A conversion would hold more on the driver than ``DataContext.driver_memory_budget`` allows."""


class DatasetEmptyError(BridgeError, ValueError):
    """An operation needed at least one row and the Dataset has none."""


def _picklable_or_none(obj: Any) -> Any:
    import pickle

    try:
        pickle.dumps(obj)
    except Exception:  # noqa: BLE001 - anything unpicklable is dropped, the message keeps its text
        return None
    return obj


__all__ = [
    "BlockLostError",
    "BridgeError",
    "BridgeTypeError",
    "BridgeValueError",
    "DatasetEmptyError",
    "InsufficientMemoryError",
    "MissingDependencyError",
    "SchemaMismatchError",
    "StallError",
    "UnsupportedTypeError",
    "UserCodeError",
    "format_message",
    "missing_dependency",
]


class BridgeValueError(BridgeError, ValueError):
    """An argument has the right type but a value raybridge cannot use (a negative size, an empty list)."""


class BridgeTypeError(BridgeError, TypeError):
    """An argument of the wrong kind (constructor arguments for a plain function, say)."""


class ConversionWarning(UserWarning):
    """A column was converted by a written rule because the target cannot hold its type; the message names it."""
