"""Ctrl-C while the consumer waits for a batch stops that execution at once.

The batches are prepared on a background thread that waits on the executor;
a ``KeyboardInterrupt`` in the consumer cannot reach it, so without this hook
the interrupted ``next()`` waits for the pipeline's next output before it can
clean up (while the executor, its tasks and its actors run on).  While a
:class:`~bridge.iteration.resumable.BatchIterator` waits in ``next()`` on the
main thread, SIGINT first asks its execution to stop (setting two events; no
lock, no waiting), then raises ``KeyboardInterrupt`` as Python's default
handler does.  The hook goes in only in front of Python's default handler:
a handler of the user's (or of a notebook) is left alone.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

#: Stops the execution the main thread is waiting on, or None.
waiting: Callable[[], None] | None = None
_installed = False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    stop = waiting
    if stop is not None:
        stop()
    signal.default_int_handler(signum, frame)


def install() -> bool:
    """Put the hook in front of Python's default SIGINT handler; True if it is (or already was) there."""
    global _installed
    if _installed:
        return signal.getsignal(signal.SIGINT) is _on_sigint
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, _on_sigint)
    _installed = True
    return True
