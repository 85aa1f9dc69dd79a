"""The loader's compiler keeps the programs it compiled, so that loading a set again compiles only what changed."""

from __future__ import annotations

import pytest

from webhook.errors import CelCompileError
from webhook.policy.loading import compiling
from webhook.policy.loading.compiling import CelCompiler
from webhook.settings import CEL_ENGINES

OBJECT = frozenset({"object"})


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_the_same_text_for_the_same_variables_is_compiled_once(engine: str) -> None:
    compiler = CelCompiler(engine)
    first = compiler("object.a == 1", OBJECT)
    assert compiler("object.a == 1", OBJECT) is first
    assert compiler("object.a == 1", frozenset({"object", "oldObject"})) is not first
    assert compiler("object.a == 2", OBJECT) is not first
    assert first.evaluate({"object": {"a": 1}})


def test_an_expression_that_does_not_compile_fails_every_time() -> None:
    compiler = CelCompiler(CEL_ENGINES[0])
    for _ in range(2):
        with pytest.raises(CelCompileError):
            compiler("object.", OBJECT)


def test_the_least_recently_used_programs_are_dropped_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiling, "PROGRAMS_KEPT", 2)
    compiler = CelCompiler(CEL_ENGINES[0])
    one = compiler("1", OBJECT)
    two = compiler("2", OBJECT)
    assert compiler("1", OBJECT) is one  # now the most recently used
    compiler("3", OBJECT)
    assert compiler("1", OBJECT) is one
    assert compiler("2", OBJECT) is not two
