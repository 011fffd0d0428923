"""Feeding DataLoader worker processes from the process that holds the Ray connection.

A torch ``DataLoader(num_workers=k)`` forks (or spawns) worker processes; a
forked process cannot use the parent's Ray connection (Ray's threads do not
survive ``fork``).  So the process that created the exporter keeps the Ray side:
a :class:`WorkerFeed` listens on a Unix socket; when the ``k`` workers of one
DataLoader iteration connect, it runs one epoch, cuts it into batches and sends
batch ``i`` (Arrow IPC) to worker ``i % k``.  The DataLoader reads its workers
round-robin, so the training loop sees the batches in the same order as with
``num_workers=0``, every row exactly once, and the tensor conversion runs in
the workers, in parallel.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

import pyarrow as pa

#: ``epoch_batches(epoch) -> iterator of pyarrow.Table`` run in the feeding process.
EpochBatches = Callable[[int], Iterator[pa.Table]]


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class WorkerFeed:
    """The feeding side; :meth:`address` and :attr:`authkey` travel to the workers."""

    def __init__(self, epoch_batches: EpochBatches, connect_timeout_s: float = 600.0) -> None:
        self._epoch_batches = epoch_batches
        self._timeout = connect_timeout_s
        self.authkey = secrets.token_bytes(16)
        folder = tempfile.mkdtemp(prefix="raybridge-feed-")
        path = os.path.join(folder, "sock")
        self._listener = Listener(path, family="AF_UNIX", authkey=self.authkey)
        self.address = path
        self.owner_pid = os.getpid()
        self._rounds: dict[Any, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.epoch = 0
        # The socket and its folder go when the feed is closed, dropped, or at exit; the
        # accept thread holds the feed only weakly so that dropping the exporter drops it.
        closed = threading.Event()
        self._finalizer = weakref.finalize(self, _close, closed, self._listener, folder, self.owner_pid)
        threading.Thread(target=_accept_loop, args=(self._listener, weakref.ref(self), closed),
                         name="raybridge-worker-feed", daemon=True).start()

    def _hello(self, conn: Connection) -> None:
        try:
            token, worker_id, num_workers = conn.recv()
        except (OSError, EOFError):
            return
        with self._lock:
            rnd = self._rounds.setdefault(token, {"conns": {}, "k": num_workers})
            rnd["conns"][worker_id] = conn
            ready = len(rnd["conns"]) == rnd["k"]
            if ready:
                del self._rounds[token]
                epoch, self.epoch = self.epoch, self.epoch + 1
        if ready:
            self._serve(epoch, [rnd["conns"][i] for i in range(rnd["k"])])

    def _serve(self, epoch: int, conns: list[Connection]) -> None:
        try:
            for i, table in enumerate(self._epoch_batches(epoch)):
                conns[i % len(conns)].send_bytes(_ipc(table))
            for c in conns:
                c.send_bytes(b"")
        except BaseException as err:  # noqa: BLE001 - every worker gets the error
            for c in conns:
                try:
                    c.send_bytes(b"!" + repr(err).encode()[:4000])
                except OSError:
                    pass
        finally:
            for c in conns:
                try:
                    c.recv_bytes()  # wait for the worker's goodbye (it read everything) before closing
                except (OSError, EOFError):
                    pass
                c.close()

    def close(self) -> None:
        self._finalizer()


def _accept_loop(listener: Listener, feed_ref: weakref.ref[WorkerFeed], closed: threading.Event) -> None:
    from multiprocessing import AuthenticationError

    while not closed.is_set():
        try:
            conn = listener.accept()
        except (OSError, EOFError):  # closed, or the hang-up of :func:`_wake`
            if closed.is_set() or feed_ref() is None:
                return
            time.sleep(0.05)  # (an error that repeats, e.g. out of file descriptors, must not spin a core)
            continue
        except AuthenticationError:  # something else that found the socket: not a worker of ours
            continue
        feed = feed_ref()
        if feed is None or closed.is_set():
            conn.close()
            return
        threading.Thread(target=feed._hello, args=(conn,), daemon=True).start()
        del feed


def _close(closed: threading.Event, listener: Listener, folder: str, owner_pid: int) -> None:
    closed.set()
    _remove(listener, folder, owner_pid)


def _remove(listener: Listener, folder: str, owner_pid: int) -> None:
    if os.getpid() != owner_pid:  # a forked DataLoader worker's copy: the socket is the parent's
        return
    _wake(listener.address)
    try:
        listener.close()
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def _wake(path: str) -> None:
    """Connect to the feed's socket and hang up: closing a listener does not wake a thread blocked in its
    ``accept()`` (Linux), which then stayed forever, one per ``to_torch()``; this connection ends it."""
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(path)
    except OSError:
        pass


def worker_batches(address: str, authkey: bytes, token: Any, worker_id: int, num_workers: int) -> Iterator[pa.Table]:
    """In a DataLoader worker: this worker's batches of the current round."""
    from bridge.errors import BridgeError

    conn = Client(address, family="AF_UNIX", authkey=authkey)
    try:
        conn.send((token, worker_id, num_workers))
        while True:
            data = conn.recv_bytes()
            if data == b"":
                return
            if data[:1] == b"!":
                msg = f"DataLoader worker {worker_id}: the feeding process failed: {data[1:].decode()}"
                raise BridgeError(msg, "see the error above in the main process' log; fix the Dataset's plan")
            yield _from_ipc(data)
    finally:
        try:
            conn.send_bytes(b"bye")
        except OSError:
            pass
        conn.close()
