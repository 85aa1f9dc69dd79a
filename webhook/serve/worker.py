"""The gunicorn worker of the webhook: gunicorn's threaded worker (``gthread``) with connections that live, and
bounds on what a client can hold.

Why threads: the kube-apiserver keeps HTTP/1.1 connections to a webhook open between calls (Go's transport,
90 s idle timeout) when the server lets it. gunicorn's sync workers close every connection, so each admission
call paid a TCP connection and a TLS handshake; ``gthread`` keeps them (``keepalive_s``, longer than the
apiserver's idle timeout, so the client closes first and never reuses a connection the server is closing).
An idle kept-alive connection waits in the worker's poller and holds no thread.

Bounds (gunicorn's own, plus some here):

- at most ``max_connections`` connections per worker (gunicorn's ``worker_connections``); past it the worker
  stops accepting until one closes, and the kernel's listen backlog queues the rest;
- a worker whose threads are all taken stops accepting until one is free, so that a new connection goes to a
  worker that can answer it (the apiserver opens one when its kept-alive ones are busy);
- a new connection waits in the poller, holding no thread, until it sends something, and again after its TLS
  handshake until its first request arrives; it is closed after ``keepalive_s`` silent (gunicorn's pending
  connections, which gunicorn itself parks only after 5 s in a thread); a kept-alive one is closed after
  ``keepalive_s`` idle;
- here: every blocking read and write of a connection, the TLS handshake included, times out after
  ``io_timeout_s`` of silence (``timed`` socket classes), so a client that stalls inside a handshake, a header
  or a body frees its thread. gunicorn would wait forever there (it makes the socket blocking without a
  timeout). Such a timeout counts in ``upgrade_gate_connection_timeouts_total`` and closes the connection.

``upgrade_gate_connections{state}`` reports, per worker summed, the open connections and the idle kept-alive
ones, refreshed every second by the worker's loop.
"""

from __future__ import annotations

import errno
import select
import selectors
import socket
import ssl
import time
from functools import partial
from typing import Any, TypeVar

from gunicorn.glogging import Logger
from gunicorn.workers.gthread import _DEFER as DEFER  # finish_request's "wait in the poller"
from gunicorn.workers.gthread import TConn, ThreadWorker

from webhook.serve.metrics import Metrics

S = TypeVar("S", bound=socket.socket)

#: How often a worker tells the master it is alive (gunicorn touches a file on every turn of the worker's loop, two
#: system calls per request; the master only needs it within ``timeout``, tens of seconds), and refreshes its
#: connection gauges.
HEARTBEAT_S = 1.0


class WorkerLogger(Logger):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's logger without its access log: every admission decision has its own log line
    (``webhook.serve.app``), and gunicorn builds an access line per request whenever a logging configuration is
    given, even with ``accesslog`` unset."""

    @property
    def access_log_enabled(self) -> bool:
        return False


def timed(base: type[S], seconds: float, metrics: Metrics) -> type[S]:
    """A subclass of the socket class ``base`` whose blocking mode has a timeout of ``seconds`` (gunicorn calls
    ``setblocking(True)`` before each read); a timeout is counted and raised as a reset connection, which gunicorn
    closes quietly."""

    def expired(error: TimeoutError) -> ConnectionResetError:
        metrics.connection_timeouts.inc()
        return ConnectionResetError(errno.ECONNRESET, f"no progress within {seconds:g}s: {error}")

    class Timed(base):  # type: ignore[valid-type,misc]  # a class built per server, from a class argument
        __slots__ = ()

        def setblocking(self, flag: bool) -> None:
            self.settimeout(seconds if flag else 0.0)

        def recv(self, size: int, flags: int = 0) -> bytes:
            try:
                return super().recv(size, flags)  # type: ignore[no-any-return]
            except TimeoutError as error:
                raise expired(error) from None

        def sendall(self, data: Any, flags: int = 0) -> None:
            try:
                super().sendall(data, flags)
            except TimeoutError as error:
                raise expired(error) from None

        def do_handshake(self, *args: Any) -> None:
            try:
                super().do_handshake(*args)
            except TimeoutError as error:
                raise expired(error) from None

    Timed.__name__ = Timed.__qualname__ = f"Timed{base.__name__}"
    return Timed


def admission_worker(io_timeout_s: float, metrics: Metrics) -> type[ThreadWorker]:
    """gunicorn's ``ThreadWorker`` whose connections wait in the poller, not in a thread, until they have something
    to read, time out after ``io_timeout_s`` without progress, and report their counts to ``metrics`` (see the module
    docstring)."""
    raw_class = timed(socket.socket, io_timeout_s, metrics)
    tls_class = timed(ssl.SSLSocket, io_timeout_s, metrics)

    class AdmissionWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.handed = 0  # connections handed to the thread pool and not finished yet
            self.notified = self.reported = 0.0

        def notify(self) -> None:
            """gunicorn's heartbeat, at most every ``HEARTBEAT_S`` instead of on every turn of the loop."""
            now = time.monotonic()
            if now - self.notified >= HEARTBEAT_S:
                self.notified = now
                super().notify()

        def accept(self, listener: socket.socket) -> None:
            """gunicorn's ``accept``, except that the new connection waits in the poller as a pending one (closed
            after ``keepalive`` silent) instead of holding a thread for its first bytes."""
            try:
                client, address = listener.accept()
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                    raise
                return
            self.nr_conns += 1
            conn = TConn(self.cfg, client, address, listener.getsockname())
            conn.sock.__class__ = raw_class  # same layout: only methods change
            conn.timeout = time.monotonic() + self.cfg.keepalive  # as finish_request parks a deferred connection
            self.pending_conns.append(conn)
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn))

        def enqueue_req(self, conn: Any) -> None:
            """gunicorn's, counting the connections handed to threads; with every thread taken, stop accepting
            (the kernel queues new connections, or another worker with a free thread takes them)."""
            self.handed += 1
            super().enqueue_req(conn)
            if self.handed >= self.cfg.threads:
                self.set_accept_enabled(False)

        def finish_request(self, conn: Any, fs: Any) -> None:
            """gunicorn's; the worker's loop accepts again once a thread is free (``set_accept_enabled``)."""
            self.handed -= 1
            super().finish_request(conn, fs)

        def set_accept_enabled(self, enabled: bool) -> None:
            super().set_accept_enabled(enabled and self.handed < self.cfg.threads)

        def handle(self, conn: Any) -> Any:
            """Complete a new connection's TLS handshake, then, if no request has arrived yet, put it back in the
            poller (a handshaken but silent client holds no thread); else gunicorn's ``handle``."""
            if self.cfg.is_ssl and not conn.initialized:
                try:
                    conn.sock.setblocking(True)
                    conn.init()
                except OSError:  # ssl.SSLError too: a failed, reset or stalled handshake closes the connection
                    return False
                if not _readable(conn.sock):
                    conn.data_ready = False
                    return DEFER
            return super().handle(conn)

        def init_process(self) -> None:
            context = self.cfg.ssl_context

            def bounded(config: Any, default_factory: Any) -> ssl.SSLContext:
                made: ssl.SSLContext = context(config, default_factory)
                made.sslsocket_class = tls_class
                return made

            self.cfg.set("ssl_context", bounded)
            super().init_process()

        def murder_keepalived(self, force: bool = False) -> None:
            super().murder_keepalived(force)
            now = time.monotonic()
            if now - self.reported >= HEARTBEAT_S or force:  # gauges in shared files: not on every turn
                self.reported = now
                metrics.connections.labels("open").set(self.nr_conns)
                metrics.connections.labels("idle").set(len(self.keepalived_conns) + len(self.pending_conns))

    return AdmissionWorker


def _readable(connection: socket.socket) -> bool:
    """True if ``connection`` has bytes to read now (decrypted ones buffered, or more on the socket)."""
    if isinstance(connection, ssl.SSLSocket) and connection.pending():
        return True
    poll = select.poll()  # not select.select: descriptors past 1,023 are normal with many connections
    poll.register(connection, select.POLLIN)
    return bool(poll.poll(0))
