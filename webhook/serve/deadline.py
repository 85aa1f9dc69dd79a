"""A wall-clock bound on one evaluation, for gunicorn's sync workers (one request at a time, main thread).

The CEL engine bounds each expression by its cost budget; this bounds the request as a whole, below the
webhook configuration's ``timeoutSeconds``, so the apiserver gets an answer instead of a timeout and the
worker stays alive (gunicorn's own worker timeout would kill it).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class DeadlineExceeded(BaseException):
    """The deadline of ``deadline()`` passed. A ``BaseException`` on purpose, outside ``webhook.errors``:
    code under evaluation that catches ``Exception`` (CEL error absorption) must not swallow it. It never
    leaves ``webhook.serve``."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``DeadlineExceeded`` in the block if it runs longer than ``seconds`` (SIGALRM, ``ITIMER_REAL``).

    A no-op when ``seconds <= 0`` or outside the main thread (signals reach the main thread only), e.g.
    under a threaded development server. Restores the previous SIGALRM handler on exit.
    """
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise DeadlineExceeded(f"no decision within {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
