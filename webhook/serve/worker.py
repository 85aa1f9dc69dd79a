"""The gunicorn worker of the webhook: gunicorn's asyncio worker (``asgi``) on uvloop, with bounds on what a
client can hold.

Why an event loop: an admission call is small and the kube-apiserver keeps its HTTP/1.1 connections to a webhook
open between calls (Go's transport, 90 s idle timeout), so what the HTTP layer costs per request is most of what a
webhook adds beyond its policies. gunicorn's threaded worker (``gthread``) hands every request from its poller to a
thread and back and parses HTTP in Python: a no-op answer cost 240-260 µs of worker CPU, against 65-80 µs on the
asyncio worker with uvloop (docs/performance.md). The loop reads, decides, writes and accepts; a review whose
evaluation outlives a short time slice is decided again in the application's evaluation threads
(``webhook.serve.app``), so that an expensive evaluation never holds the loop.
``keepalive_s`` is longer than the apiserver's idle timeout, so the client closes first and never reuses a
connection the server is closing.

Bounds:

- a TLS handshake not done within ``io_timeout_s`` is closed (the loop's ``ssl_handshake_timeout``) and counted in
  ``upgrade_gate_connection_timeouts_total``;
- a new connection sends its first request, and a kept-alive one its next, within ``keepalive_s`` (gunicorn's
  keep-alive timer, armed here at connect as well); a body that stalls for ``io_timeout_s`` is answered 408 and
  its connection closed (``webhook.serve.app``), and counted;
- at most ``max_connections`` connections per worker, handshaking ones included. At the cap the worker stops
  accepting (``Listening``): the kernel's listen backlog holds new connections, or a worker with room takes them.
  Busy evaluation threads do not stop it: cheap reviews are decided on the loop, beside them;
- an idle connection holds its socket and buffers, nothing else: the loop waits on all of them.

``upgrade_gate_connections{state}`` reports, per worker summed, the open connections and the idle ones (in their
TLS handshake, or waiting for a request), refreshed every second by the worker's loop.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import socket
import ssl
import weakref
from collections.abc import Callable, Sequence
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

from gunicorn.asgi.protocol import ASGIProtocol
from gunicorn.glogging import Logger
from gunicorn.workers.gasgi import ASGIWorker

from webhook.serve.metrics import Metrics

#: How often a worker tells the master it is alive, refreshes its connection gauges and checks its memory.
HEARTBEAT_S = 1.0
MIB = 1024 * 1024
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
STATM = Path("/proc/self/statm")


class WorkerLogger(Logger):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's logger without its access log: every admission decision has its own log line
    (``webhook.serve.app``), and gunicorn builds an access line per request whenever a logging configuration is
    given, even with ``accesslog`` unset."""

    @property
    def access_log_enabled(self) -> bool:
        return False


class Listening:
    """A worker's servers on duplicates of its ``sockets`` (gunicorn's listening sockets, shared by every worker),
    open while ``full()`` is false: ``update()`` closes them when it turns true and opens new ones when it turns
    false again, until ``stop()``. Closing a duplicate leaves the listening socket, and the connections queued on
    it, to the other workers and to this one's next servers. ``factory``, ``context``, ``handshake_timeout_s`` and
    ``backlog`` go to ``loop.create_server``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sockets: Sequence[socket.socket],
        factory: Callable[[], asyncio.Protocol],
        context: ssl.SSLContext | None,
        *,
        handshake_timeout_s: float,
        backlog: int,
        full: Callable[[], bool],
    ) -> None:
        self.loop, self.sockets, self.factory, self.context = loop, sockets, factory, context
        self.handshake_timeout_s, self.backlog, self.full = handshake_timeout_s, backlog, full
        self.servers: list[asyncio.AbstractServer] = []
        self.opening: asyncio.Task[None] | None = None
        self.stopped = False

    def update(self) -> None:
        """Close the servers if the worker is full, open them (in a task) if it has room again, until ``stop``."""
        if self.full() or self.stopped:
            self._close()
        elif not self.servers and self.opening is None:
            self.opening = self.loop.create_task(self._open())

    async def _open(self) -> None:
        try:
            for listener in self.sockets:
                server = await self.loop.create_server(
                    self.factory,
                    sock=listener.dup(),
                    ssl=self.context,
                    ssl_handshake_timeout=self.handshake_timeout_s if self.context is not None else None,
                    backlog=self.backlog,  # listen() is called again: keep gunicorn's backlog
                )
                self.servers.append(server)
        finally:
            self.opening = None
        self.update()  # it may have filled up, or stopped, while the servers opened

    def stop(self) -> None:
        """Stop accepting for good (the listening sockets stay open, for the other workers)."""
        self.stopped = True
        self._close()

    def _close(self) -> None:
        for server in self.servers:
            server.close()
        self.servers = []


class AdmissionProtocol(ASGIProtocol):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's HTTP/1.1 protocol, made at accept (before the TLS handshake): counted in its worker's
    ``protocols``, with a first request due within the keep-alive timeout, and a handshake not done within the I/O
    timeout counted (the loop closes it)."""

    def __init__(self, worker: Any, metrics: Metrics, io_timeout_s: float) -> None:
        super().__init__(worker)
        worker.protocols.add(self)
        worker.loop.call_soon(worker.listening.update)  # not inside the accept: closing its server would drop it
        if worker.cfg.is_ssl:  # the loop closes a handshake this late; only a weak reference: a failed one is freed
            worker.loop.call_later(io_timeout_s, _count_stalled_handshake, weakref.ref(self), metrics)

    @property
    def idle(self) -> bool:
        """True while in the TLS handshake or waiting for a request."""
        return self.transport is None or bool(self._awaiting_request)

    @property
    def kept_alive(self) -> bool:
        """True while waiting for a request after an answer (what a stopping worker closes at once)."""
        return self.transport is not None and bool(self._awaiting_request) and self.req_count > 1

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm_keepalive_timer()  # gunicorn arms it only between requests; a silent new connection waits too

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.worker.protocols.discard(self)
        self.worker.listening.update()


def _count_stalled_handshake(protocol: weakref.ref[AdmissionProtocol], metrics: Metrics) -> None:
    """Count a connection still in its TLS handshake at the I/O timeout (scheduled before the loop's own timer of
    the same length, so it runs first)."""
    found = protocol()
    if found is not None and found.transport is None:
        metrics.connection_timeouts.inc()


def resident_mib() -> float | None:
    """This process's resident memory in MiB (Linux ``/proc/self/statm``); ``None`` where it cannot be read."""
    try:
        pages = int(STATM.read_bytes().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * PAGE_BYTES / MIB


def replacement_turn(lock: Path) -> int | None:
    """A file descriptor holding ``lock`` (``flock``, exclusive) until it is closed or this process exits, or
    ``None`` if another process holds it: the workers of a server are replaced for their memory one at a time.
    Raises ``OSError`` if the lock cannot be taken for another reason (its directory is gone, no locks there)."""
    descriptor = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(descriptor)
        if error.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
            return None
        raise
    return descriptor


def admission_worker(
    io_timeout_s: float,
    max_connections: int,
    metrics: Metrics,
    max_memory_mib: int = 0,
    replacement_lock: Path | None = None,
) -> type[ASGIWorker]:
    """gunicorn's ``ASGIWorker`` serving the ASGI application with at most
    ``max_connections`` connections, TLS handshakes and stalled bodies bounded by ``io_timeout_s``, and the
    connection counts reported to ``metrics`` (see the module docstring); replaced, gracefully, once its resident
    memory passes ``max_memory_mib`` (0: never; checked every ``HEARTBEAT_S``), one worker at a time when the
    server's workers share a ``replacement_lock`` file (``replacement_turn``): the others keep accepting while a
    replaced one answers what it has in flight."""

    class AdmissionWorker(ASGIWorker):  # type: ignore[misc]  # gunicorn ships no type hints
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.stopping: asyncio.Event | None = None  # set when ``alive`` turns false, once serving
            super().__init__(*args, **kwargs)
            self.protocols: weakref.WeakSet[AdmissionProtocol] = weakref.WeakSet()

        @property
        def alive(self) -> bool:
            """gunicorn's flag; turning it false (a signal, ``max_requests`` reached) wakes the serving loop."""
            return self._alive

        @alive.setter
        def alive(self, value: bool) -> None:
            self._alive = value
            if not value and self.stopping is not None:
                self.stopping.set()

        def full(self) -> bool:
            """True at the connection cap."""
            return len(self.protocols) >= max_connections

        def check_memory(self) -> None:
            """Stop serving, to be replaced, once the resident memory is past ``max_memory_mib`` and no other worker
            is being replaced (else at a later heartbeat)."""
            resident = resident_mib() if max_memory_mib else None
            if resident is None or resident <= max_memory_mib:
                return
            try:
                if replacement_lock is not None and replacement_turn(replacement_lock) is None:
                    return  # another worker is being replaced: at a later heartbeat
            except OSError as error:  # replaced without waiting its turn, rather than never
                self.log.warning("worker %s cannot take its turn to be replaced (%s)", self.pid, error)
            self.log.info(
                "worker %s uses %.0f MiB, above the %d MiB limit: replacing it", self.pid, resident, max_memory_mib
            )
            self.alive = False

        async def _serve(self) -> None:
            """gunicorn's serving loop, with ``Listening`` servers (the application's lifespan is not used)."""
            self.listening = Listening(
                self.loop,
                [listener.sock for listener in self.sockets],
                partial(AdmissionProtocol, self, metrics, io_timeout_s),
                self._get_ssl_context(),
                handshake_timeout_s=io_timeout_s,
                backlog=self.cfg.backlog,
                full=self.full,
            )
            self.listening.update()
            self.stopping = asyncio.Event()
            while self.alive and self.ppid == os.getppid():
                self.notify()
                self.check_memory()
                protocols = list(self.protocols)
                metrics.connections.labels("open").set(len(protocols))
                metrics.connections.labels("idle").set(sum(protocol.idle for protocol in protocols))
                with suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), HEARTBEAT_S)
            self.listening.stop()
            for protocol in list(self.protocols):
                if protocol.kept_alive:
                    protocol._keepalive_timeout()
            # The others end after their answer, a new connection's first request included; gunicorn's shutdown
            # waits for those past their handshake only.
            ends = self.loop.time() + self.cfg.graceful_timeout
            while any(protocol.transport is None for protocol in self.protocols) and self.loop.time() < ends:
                await asyncio.sleep(0.05)
            await self._shutdown()

    return AdmissionWorker
