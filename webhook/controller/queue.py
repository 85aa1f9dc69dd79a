"""A work queue of keys with per-key exponential backoff, as client-go's ``workqueue`` rate-limited queue works.

* a key waiting in the queue is not added twice (events for the same ClusterExtension collapse into one
  reconcile);
* a key added while it is being processed is processed again once it is ``done`` (never twice at once);
* ``retry(key)`` adds the key after its backoff: ``base_s`` doubling per consecutive failure up to ``max_s``;
  ``forget(key)`` (after a success) resets it;
* ``get`` blocks until a key is due or ``timeout_s`` passes: no busy loop.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable


class WorkQueue:
    """Keys (strings) to reconcile; thread-safe. ``clock`` is ``time.monotonic`` unless a test passes one."""

    def __init__(
        self, *, base_s: float = 1.0, max_s: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.base_s, self.max_s = base_s, max_s
        self._clock = clock
        self._ready: deque[str] = deque()
        self._queued: set[str] = set()
        self._active: set[str] = set()
        self._dirty: set[str] = set()
        self._later: list[tuple[float, str]] = []
        self._failures: dict[str, int] = {}
        self._lock = threading.Condition()

    def add(self, key: str) -> None:
        """Queue ``key`` now (unless it waits already; after the current run when it is being processed)."""
        with self._lock:
            self._enqueue(key)

    def retry(self, key: str) -> float:
        """Queue ``key`` again after its backoff; returns the delay in seconds."""
        with self._lock:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            delay = float(min(self.base_s * 2.0**failures, self.max_s))
            heapq.heappush(self._later, (self._clock() + delay, key))
            self._lock.notify()
            return delay

    def add_after(self, key: str, delay_s: float) -> None:
        """Queue ``key`` after ``delay_s`` seconds (its backoff untouched)."""
        with self._lock:
            heapq.heappush(self._later, (self._clock() + max(0.0, delay_s), key))
            self._lock.notify()

    def forget(self, key: str) -> None:
        """Reset ``key``'s backoff (it succeeded)."""
        with self._lock:
            self._failures.pop(key, None)

    def get(self, timeout_s: float) -> str | None:
        """The next key due, marked as being processed; ``None`` when none is due within ``timeout_s``."""
        deadline = self._clock() + timeout_s
        with self._lock:
            while True:
                self._promote()
                if self._ready:
                    key = self._ready.popleft()
                    self._queued.discard(key)
                    self._active.add(key)
                    return key
                now = self._clock()
                if now >= deadline:
                    return None
                wake = min([deadline, *(when for when, _ in self._later[:1])])
                self._lock.wait(max(0.0, wake - now))

    def done(self, key: str) -> None:
        """``key``'s run ended; queue it again if it was added meanwhile."""
        with self._lock:
            self._active.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._enqueue(key)

    def depth(self) -> int:
        """Keys waiting: ready now or after a backoff."""
        with self._lock:
            return len(self._ready) + len(self._later)

    def _promote(self) -> None:
        now = self._clock()
        while self._later and self._later[0][0] <= now:
            self._enqueue(heapq.heappop(self._later)[1])

    def _enqueue(self, key: str) -> None:
        """Under the lock: ``key`` ready (once), or marked to run again when it is being processed."""
        if key in self._active:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._lock.notify()
