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
    """Base class of every error raised by raybridge: the message, a blank line, ``Hint: <the fix>``.

    Example:
        >>> import bridge
        >>> err = bridge.BridgeError("take_batch(5): the Dataset has no rows", "check the filters")
        >>> print(err)
        take_batch(5): the Dataset has no rows
        <BLANKLINE>
        Hint: check the filters
        >>> err.what, err.hint
        ('take_batch(5): the Dataset has no rows', 'check the filters')
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.what = message
        self.hint = hint
        super().__init__(format_message(message, hint))

    def __reduce__(self) -> Any:
        # Exceptions cross process boundaries (Ray tasks); keep the parts.
        return (type(self), (self.what, self.hint), self.__dict__.copy())


class MissingDependencyError(BridgeError, ImportError):
    """An optional framework is needed but not installed (an ``ImportError`` too).

    Example:
        >>> import bridge
        >>> err = missing_dependency("pyspark", "raybridge[spark]", "from_spark")
        >>> isinstance(err, ImportError), str(err).splitlines()[-1]
        (True, "Hint: pip install 'raybridge[spark]'")
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        BridgeError.__init__(self, message, hint)


def missing_dependency(package: str, extra: str, what: str) -> MissingDependencyError:
    """Build the error for ``what`` needing ``package`` from the ``extra`` extra."""
    msg = f"{what} needs the '{package}' package, which is not installed."
    hint = f"pip install '{extra}'"
    return MissingDependencyError(msg, hint)


def missing_columns_hint(missing: list[Any], names: list[str], default: str) -> str:
    """The hint for columns not found among ``names``: the string a non-string name means (pandas' labels
    ``0, 1`` are the columns ``'0', '1'`` here), else the nearest name, else ``default``.

    Example:
        >>> missing_columns_hint([0], ["0", "1"], "see ds.schema()")
        "column names are strings: pass '0' for 0 (a pandas frame's labels 0, 1, ... become '0', '1', ...)"
        >>> missing_columns_hint(["agee"], ["age", "name"], "see ds.schema()")
        "did you mean 'age'? see ds.schema()"
    """
    import difflib

    as_text = [m for m in missing if not isinstance(m, str) and str(m) in names]
    if as_text:
        pairs = ", ".join(f"{str(m)!r} for {m!r}" for m in as_text)
        return f"column names are strings: pass {pairs} (a pandas frame's labels 0, 1, ... become '0', '1', ...)"
    close = [c for m in missing for c in difflib.get_close_matches(str(m), names, n=1, cutoff=0.7)]
    return f"did you mean {close[0]!r}? {default}" if close else default


class SchemaMismatchError(BridgeError, ValueError):
    """Two schemas that had to agree do not (a ``ValueError`` too).

    Example:
        >>> import bridge
        >>> try:
        ...     bridge.from_items([{"a": 1, "b": 2}]).rename_columns({"a": "c", "b": "c"})
        ... except ValueError as err:
        ...     print(type(err).__name__)
        SchemaMismatchError
    """


class UnsupportedTypeError(BridgeError, TypeError):
    """A value or column type the target cannot represent (a ``TypeError`` too).

    Example:
        >>> import bridge
        >>> try:
        ...     bridge.from_any(object())
        ... except TypeError as err:
        ...     print(type(err).__name__, "|", err.what)
        UnsupportedTypeError | raybridge does not know how to convert a builtins.object
    """


class UserCodeError(BridgeError):
    """An exception raised inside a user-supplied function.

    ``operator`` names the operator (``MapBatches(normalize)``), ``block_index``
    the input block it was processing; ``original`` is the exception the user's
    code raised (also chained as ``__cause__`` when raised on the driver).

    Example:
        >>> import bridge
        >>> try:
        ...     bridge.range(2).map(lambda row: {"x": 1 / 0}).take_all()
        ... except bridge.UserCodeError as err:
        ...     print(err.operator, type(err.original).__name__)
        Map(<lambda>) ZeroDivisionError
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
    """A block was lost (its node died) and its source cannot be re-read.

    Example:
        >>> import bridge
        >>> issubclass(bridge.BlockLostError, bridge.BridgeError)
        True
    """


class StallError(BridgeError, TimeoutError):
    """A consumer or an operator made no progress within the configured timeout (a ``TimeoutError`` too).

    Example:
        >>> import bridge
        >>> issubclass(bridge.StallError, TimeoutError)  # raise DataContext.stall_timeout_s for slow calls
        True
    """


class InsufficientMemoryError(BridgeError, MemoryError):
    """A conversion would hold more on the driver than ``DataContext.driver_memory_budget`` allows.

    Example:
        >>> import bridge
        >>> issubclass(bridge.InsufficientMemoryError, MemoryError)
        True
    """


class DatasetEmptyError(BridgeError, ValueError):
    """An operation needed at least one row and the Dataset has none (a ``ValueError`` too).

    Example:
        >>> import bridge
        >>> try:
        ...     bridge.range(3).filter(expr="id > 5").take_batch(2)
        ... except ValueError as err:
        ...     print(type(err).__name__, "|", err.what)
        DatasetEmptyError | take_batch(2): the Dataset has no rows
    """


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
    "UnknownSettingError",
    "UnsupportedTypeError",
    "UserCodeError",
    "format_message",
    "missing_dependency",
]


class BridgeValueError(BridgeError, ValueError):
    """An argument has the right type but a value raybridge cannot use (a negative size, an empty list).

    Example:
        >>> import bridge
        >>> try:
        ...     bridge.range(3).take_batch(0)
        ... except ValueError as err:
        ...     print(type(err).__name__, "|", err.what)
        BridgeValueError | take_batch: batch_size must be a positive number of rows; got 0
    """


class BridgeTypeError(BridgeError, TypeError):
    """An argument of the wrong kind (a list where blocks are expected, say).

    Example:
        >>> import bridge
        >>> try:
        ...     bridge.from_blocks([[1, 2]])
        ... except TypeError as err:
        ...     print(type(err).__name__, "|", err.what)
        BridgeTypeError | from_blocks: block 0 is a list; blocks are pyarrow.Tables or pandas DataFrames
    """


class UnknownSettingError(BridgeError, AttributeError):
    """A :class:`~bridge.context.DataContext` setting that does not exist (misspelt, or Ray Data's), set or read.

    Example:
        >>> import bridge
        >>> try:
        ...     bridge.DataContext.get_current().target_max_blocksize = 1 << 20
        ... except AttributeError as err:
        ...     print(type(err).__name__, "|", err.what)
        UnknownSettingError | DataContext has no setting 'target_max_blocksize'; setting it would change nothing
    """


class ConversionWarning(UserWarning):
    """A column was converted by a written rule because the target cannot hold its type; the message names it."""
