"""Run-time bounds of CEL evaluation: the per-evaluation cost budget and the request deadline.

The cost budget follows the spirit of the apiserver's ``PerCallLimit`` (``k8s.io/apiserver/pkg/apis/cel/config.go``,
cel-go ``CostLimit``): every evaluation step (a variable read, a field selection, an operator, a function call, one
iteration of a comprehension) costs 1, and library functions cost in proportion to the size of their inputs
(``library_call_cost``). The units are close to, not identical with, cel-go's runtime cost: an expression that
costs N in the apiserver costs roughly N here. When the budget runs out the evaluation stops with
``CostLimitExceeded`` (``operation cancelled: actual cost limit exceeded``), the apiserver's text.

Both CEL engines bound an evaluation the same way: at most ``MAX_ITERATIONS`` comprehension iterations in all
(cel-cpp's fixed ``comprehension_max_iterations``, counted over every comprehension of the evaluation; the
cel-python evaluator counts the same), library calls charged against the cost limit, and the request's
``Deadline``. cel-python also charges its own steps, which cel-cpp does not count.

A ``Deadline`` (``deadline(seconds)``, set by the webhook around one admission request) ends every evaluation of
the request once it passes: budgets check it as they are charged, every evaluation checks it when it starts and
ends, and it is sticky, so an evaluator that catches the ``DeadlineExceeded`` it raised (cel-cpp turns an
exception raised in a library call into an error value) still ends with it.
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Iterator, Sized
from contextlib import contextmanager

from webhook.errors import CostLimitExceeded, DeadlineExceeded, Preempted

#: The apiserver's per-expression limit (``PerCallLimit``).
DEFAULT_COST_LIMIT = 1_000_000

#: Comprehension iterations per evaluation, over all its comprehensions: cel-cpp's fixed cap (the 10,000th
#: iteration fails).
MAX_ITERATIONS = 10_000

COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"

#: Cost units charged between two looks at the clock.
_CHECK_EVERY = 256


class Deadline:
    """The wall-clock end of one admission request's evaluations, ``seconds`` from now or from ``started`` (when the
    request arrived; ``time.monotonic``), and the end
    of the slice of its thread's time they may take where they run, ``slice_s`` of CPU time (``time.thread_time``:
    time spent waiting for the interpreter lock held by other threads does not count) from now (``math.inf``: no
    slice).

    ``check`` raises ``DeadlineExceeded`` (``no decision within <seconds>s``) once the time has passed, else
    ``Preempted`` (``time slice of <slice_s>s used up``) once the slice has, and raises the same on every later call
    (``expired`` stays true). Shared by the evaluations of one request, in one thread.
    """

    __slots__ = ("at", "ended", "seconds", "slice_at", "slice_s", "slice_wall_at")

    def __init__(self, seconds: float, slice_s: float = math.inf, started: float | None = None) -> None:
        now = time.monotonic()
        self.seconds, self.slice_s = seconds, slice_s
        self.at = (now if started is None else started) + seconds
        # The thread's CPU time is read only once as much wall-clock time has passed: it cannot have passed before
        # (a system call, where the monotonic clock is read in user space).
        self.slice_wall_at = now + slice_s
        self.slice_at = time.thread_time() + slice_s if slice_s != math.inf else math.inf
        self.ended: type[DeadlineExceeded] | None = None

    @property
    def expired(self) -> bool:
        """True once ``check`` has raised."""
        return self.ended is not None

    def check(self) -> None:
        """Raise ``DeadlineExceeded`` if the deadline has passed, ``Preempted`` if the slice has (or passed before)."""
        if self.ended is None:
            now = time.monotonic()
            if now >= self.at:
                self.ended = DeadlineExceeded
            elif now >= self.slice_wall_at and time.thread_time() >= self.slice_at:
                self.ended = Preempted
            else:
                return
        if self.ended is Preempted:
            raise Preempted(f"time slice of {self.slice_s:g}s used up")
        raise DeadlineExceeded(f"no decision within {self.seconds:g}s")


_DEADLINE: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("request_deadline", default=None)


@contextmanager
def deadline(seconds: float, slice_s: float = math.inf, started: float | None = None) -> Iterator[Deadline]:
    """Bound every CEL evaluation in the block (this thread or context) by a ``Deadline`` of ``seconds`` (from
    ``started``, a ``time.monotonic`` reading, if given: a request that waited for a thread has waited part of its
    time) and a slice of ``slice_s`` of the thread's CPU time (the webhook's event loop evaluates in place for that
    long at most, then in a thread)."""
    current = Deadline(seconds, slice_s, started)
    token = _DEADLINE.set(current)
    try:
        yield current
    finally:
        _DEADLINE.reset(token)


def check_deadline() -> None:
    """Raise ``DeadlineExceeded`` if the current request's deadline has passed; nothing outside ``deadline()``."""
    current = _DEADLINE.get()
    if current is not None:
        current.check()


class Budget:
    """A mutable cost counter for one evaluation: ``charge`` raises ``CostLimitExceeded`` once ``limit`` is passed
    (``None``: no cost limit), ``iterate`` once ``MAX_ITERATIONS`` comprehension iterations are reached; both
    check the current request's ``Deadline`` (captured when the budget is made) every ``_CHECK_EVERY`` units.

    Not thread-safe by design: one ``Budget`` per evaluation, created by the caller that evaluates.
    """

    __slots__ = ("_next_check", "deadline", "iterations", "limit", "spent")

    def __init__(self, limit: int | None = DEFAULT_COST_LIMIT) -> None:
        self.limit = limit
        self.spent = 0
        self.iterations = 0
        self.deadline = _DEADLINE.get()
        self._next_check = _CHECK_EVERY

    @property
    def exceeded(self) -> bool:
        """True once the cost spent is past the limit."""
        return self.limit is not None and self.spent > self.limit

    @property
    def cancelled(self) -> bool:
        """True once the request's deadline has been found passed: the evaluation is abandoned, and only has to
        end (cel-cpp cannot be stopped mid-evaluation, so its library calls return at once from then on)."""
        return self.deadline is not None and self.deadline.expired

    def charge(self, amount: int) -> None:
        """Add ``amount`` (≥ 0) to the cost spent; raises ``CostLimitExceeded`` past the limit and
        ``DeadlineExceeded`` past the request's deadline."""
        self.spent += amount
        if self.limit is not None and self.spent > self.limit:
            raise CostLimitExceeded(COST_LIMIT_MESSAGE)
        if self.spent >= self._next_check and self.deadline is not None:
            self._next_check = self.spent + _CHECK_EVERY
            self.deadline.check()

    def settle(self) -> None:
        """After an evaluation, raise what it ran into even if something inside caught it: ``DeadlineExceeded``
        once the request's deadline has passed, else ``CostLimitExceeded`` if the cost or the iterations ran out."""
        if self.deadline is not None:
            self.deadline.check()
        if self.exceeded or self.iterations >= MAX_ITERATIONS:
            raise CostLimitExceeded(COST_LIMIT_MESSAGE)

    def iterate(self) -> None:
        """Count one comprehension iteration (cost 1); raises ``CostLimitExceeded`` at ``MAX_ITERATIONS``."""
        self.iterations += 1
        if self.iterations >= MAX_ITERATIONS:
            raise CostLimitExceeded(COST_LIMIT_MESSAGE)
        self.charge(1)


_TEXTS = (str, bytes)
_SIZED = (list, dict, Sized)  # the builtins first: they match before the ABC's slower check


def library_call_cost(args: tuple[object, ...]) -> int:
    """The cost of a library call: 1, plus 0.1 per character of string arguments and 1 per list/map entry.

    This is the shape of the Kubernetes cost model (``pkg/cel/library/cost.go``): string functions are
    linear in the string length with factor 0.1, list functions traverse the list once.
    """
    cost = 1
    for arg in args:
        if isinstance(arg, _TEXTS):
            cost += math.ceil(len(arg) * 0.1)
        elif isinstance(arg, _SIZED):
            cost += len(arg)
    return cost
