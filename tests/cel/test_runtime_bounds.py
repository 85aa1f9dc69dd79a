"""Run-time bounds of an evaluation, the same on both CEL engines: cel-cpp's comprehension iteration cap, and the
request deadline and its time slice, which end an evaluation in progress and every later one
(``webhook.cel.cost``)."""

from __future__ import annotations

import time

import pytest

from webhook.cel import evaluate
from webhook.cel.cost import deadline
from webhook.errors import CostLimitExceeded, DeadlineExceeded, Preempted
from webhook.settings import CEL_ENGINES


def _items(count: int) -> list[int]:
    return list(range(count))


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize(
    ("expression", "size", "capped"),
    [
        pytest.param("xs.all(x, x >= 0)", 9_999, False, id="9,999 iterations run"),
        pytest.param("xs.all(x, x >= 0)", 10_000, True, id="the 10,000th iteration stops the evaluation"),
        pytest.param("xs.all(x, xs.all(y, xs.all(z, x + y + z >= 0)))", 21, False, id="21 cubed nested run"),
        pytest.param("xs.all(x, xs.all(y, xs.all(z, x + y + z >= 0)))", 22, True, id="22 cubed nested stop"),
        pytest.param("xs.all(x, x >= 0) && xs.exists(x, x < 0)", 6_000, True, id="iterations add up"),
    ],
)
def test_comprehension_iterations_are_capped_as_cel_cpp_caps_them(
    engine: str, expression: str, size: int, capped: bool
) -> None:
    if not capped:
        assert evaluate(expression, {"xs": _items(size)}, engine=engine) in (True, False)
        return
    with pytest.raises(CostLimitExceeded, match=r"^operation cancelled: actual cost limit exceeded$"):
        evaluate(expression, {"xs": _items(size)}, engine=engine)


SLOW = "xs.all(x, xs.all(y, xs.all(z, quantity('1Ki').isInteger() && quantity('2Ki').isInteger())))"


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_the_deadline_ends_an_evaluation_in_progress(engine: str) -> None:
    started = time.monotonic()
    with deadline(0.05), pytest.raises(DeadlineExceeded, match=r"^no decision within 0\.05s$"):
        evaluate(SLOW, {"xs": _items(21)}, engine=engine)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_a_passed_deadline_ends_every_later_evaluation_of_the_request(engine: str) -> None:
    with deadline(0.0):
        for _ in range(2):
            with pytest.raises(DeadlineExceeded):
                evaluate("1 + 1", engine=engine)


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_a_time_slice_preempts_an_evaluation_in_progress_and_every_later_one(engine: str) -> None:
    started = time.monotonic()
    with deadline(5.0, 0.02):
        with pytest.raises(Preempted, match=r"^time slice of 0\.02s used up$"):
            evaluate(SLOW, {"xs": _items(21)}, engine=engine)
        assert time.monotonic() - started < 1.0
        with pytest.raises(Preempted):
            evaluate("1 + 1", engine=engine)


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_an_evaluation_within_its_slice_is_not_preempted(engine: str) -> None:
    with deadline(5.0, 1.0):
        assert evaluate("1 + 1", engine=engine) == 2


def test_a_deadline_that_passes_with_the_slice_is_the_deadline() -> None:
    with deadline(0.0, 0.0), pytest.raises(DeadlineExceeded) as raised:
        evaluate("1 + 1")
    assert type(raised.value) is DeadlineExceeded
