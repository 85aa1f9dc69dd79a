"""The CEL environment per Kubernetes version (``webhook.cel.versions``).

The refusals are compared with what kube-apiserver 1.32 answered (tests/data/oracle/cel.yaml): every recorded fact
it refused as an undeclared reference to a function a later library brings is refused here with the same position
and message. The library table is k8s.io/apiserver's ``pkg/cel/environment/base.go``: two-variable comprehensions
introduced in 1.32, the semver library in 1.33, ext.Lists v3 in 1.34, each usable by a new expression one minor
release later.
"""

from __future__ import annotations

import pytest

from tests.oracle.replay import facts
from webhook.cel import Environment, evaluate
from webhook.cel.versions import LIBRARIES, refusal, since
from webhook.errors import CelCompileError
from webhook.settings import KUBERNETES_VERSIONS

LATER = tuple(
    name.split(".")[0]
    for library in LIBRARIES
    for name in (*library.functions, *library.members, *(library.macros or {}))
)
REFUSED_1_32 = {
    fact_id: fact
    for fact_id, fact in facts("1.32").items()
    if fact["outcome"] == "compile" and any(f"undeclared reference to '{name}'" in fact["text"] for name in LATER)
}


def test_the_recording_has_refusals_of_each_later_library() -> None:
    refused = " ".join(fact["text"] for fact in REFUSED_1_32.values())
    for name in ("transformMap", "all", "semver", "isSemver", "flatten", "distinct", "lists"):
        assert f"'{name}'" in refused


@pytest.mark.parametrize("fact_id", REFUSED_1_32)
def test_a_refusal_is_the_1_32_apiservers_message(fact_id: str) -> None:
    fact = REFUSED_1_32[fact_id]
    refused = refusal(fact["expression"], "1.32")
    assert refused is not None
    assert str(refused).startswith(fact["text"] + ": ")


@pytest.mark.parametrize(
    ("expression", "first"),
    [
        ("object.spec.replicas > 1", "1.32"),
        ("[1, 2].all(x, x > 0) && [1].exists_one(x, x == 1)", "1.32"),  # the one-variable macros are older
        ("[1, 2].all(i, x, x > i)", "1.33"),
        ("[1].transformList(i, x, x)", "1.33"),
        ("semver('1.2.3').major() == 1", "1.34"),
        ("quantity('1').isGreaterThan(quantity('0'))", "1.32"),  # a method semver shares, on an older library
        ("[2, 1].sort() == [1, 2] && [1].all(i, x, true)", "1.35"),
        ("'abc'.reverse()", "1.35"),  # cel-go declares reverse on lists only here (ext.Strings v2 has none)
        ("syntax error (", "1.32"),
    ],
)
def test_since_is_the_first_version_giving_new_expressions_every_library(expression: str, first: str) -> None:
    assert since(expression) == first
    for version in KUBERNETES_VERSIONS:
        refused = refusal(expression, version)
        assert (refused is None) == (tuple(map(int, version.split("."))) >= tuple(map(int, first.split("."))))


def test_the_environment_of_a_version_refuses_at_compile_time() -> None:
    with pytest.raises(CelCompileError, match=r"^1:22: undeclared reference to 'transformMap' \(in container ''\)"):
        Environment((), kubernetes_version="1.32").compile("{'a': 1}.transformMap(k, v, v)")
    assert evaluate("{'a': 1}.transformMap(k, v, v + 1)", kubernetes_version="1.33") == {"a": 2}
