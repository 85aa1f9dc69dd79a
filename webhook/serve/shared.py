"""A value one process publishes to the processes it forks: the policy set the gunicorn master loaded, read by
its workers so that each reloads in place.

The value lives in anonymous shared memory (``mmap`` of ``MAP_SHARED | MAP_ANONYMOUS``) mapped before the fork,
so every worker, whenever forked, sees each later ``publish`` with no file, pipe or signal. Checking for a new
value is one read of a counter (``version``), cheap enough before every admission decision.

Layout: a sequence number (odd while a ``publish`` writes), the length of the pickled value, the pickled value.
``read`` retries until it reads the same even sequence number before and after the value (a sequence lock), so a
reader never sees half a value. One process publishes; any number read. Pages are allocated as they are
written, so the ``capacity`` reserved costs nothing until used.
"""

from __future__ import annotations

import mmap
import pickle
import struct
import time
from typing import Any

_HEADER = struct.Struct("=QQ")  # sequence number, length of the pickled value
#: Room for the pickled value: far above a policy set's files (a ConfigMap holds at most 1 MiB).
DEFAULT_CAPACITY = 64 * 1024 * 1024


class SharedRecord:
    """A value published by one process (``publish``) and read by it and its forked children (``read``).

    ``version`` is 0 before the first ``publish``, then 1, 2, ... The value must pickle in ``capacity`` bytes.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._memory = mmap.mmap(-1, _HEADER.size + capacity)

    def _header(self) -> tuple[int, int]:
        sequence, length = _HEADER.unpack_from(self._memory, 0)
        return sequence, length

    def version(self) -> int:
        """How many values were published so far (a publish under way not yet counted)."""
        return self._header()[0] // 2

    def publish(self, value: Any) -> int:
        """Make ``value`` the record's value; returns the new ``version``. Raises ``ValueError`` if it does not fit
        in ``capacity`` bytes once pickled."""
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if len(data) > self.capacity:
            raise ValueError(f"{len(data)} bytes do not fit in the {self.capacity} bytes shared with the workers")
        sequence = self._header()[0]
        _HEADER.pack_into(self._memory, 0, sequence + 1, 0)
        self._memory[_HEADER.size : _HEADER.size + len(data)] = data
        _HEADER.pack_into(self._memory, 0, sequence + 2, len(data))
        return (sequence + 2) // 2

    def read(self) -> tuple[int, Any]:
        """(version, value): the last published value (``None`` before the first ``publish``)."""
        while True:
            sequence, length = self._header()
            if sequence % 2 == 0:
                data = self._memory[_HEADER.size : _HEADER.size + length]
                if self._header()[0] == sequence:
                    return sequence // 2, pickle.loads(data) if sequence else None
            time.sleep(0.001)  # a publish is under way
