"""The seconds a sync cycle spends per phase (``Report.timings``)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator


class Timings:
    """Seconds per phase, summed over every ``timed`` block of the phase (``time.perf_counter``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the block's wall-clock seconds to ``phase`` (also when it raises)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start
