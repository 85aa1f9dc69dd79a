"""The non-portable extension functions, bound per evaluation with ``extension_bindings``."""

from __future__ import annotations

import datetime

import pytest

from webhook.cel import EXTENSION_FUNCTIONS, Environment, extension_bindings, to_python
from webhook.cel.environment import backend_named
from webhook.errors import CelEvaluationError
from webhook.objects import InMemoryObjectStore
from webhook.settings import CEL_ENGINES

STORE = InMemoryObjectStore(
    [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "1"}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "ns"}},
    ]
)
NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param("clock.now()", "2024-05-06T07:08:09Z", id="clock.now is the bound request time"),
        pytest.param("clock.now() - timestamp('2024-05-06T00:00:00Z') > duration('7h')", True, id="soak periods"),
        pytest.param('cluster.get("v1", "ConfigMap", "a", "ns").metadata.name', "a", id="cluster.get finds"),
        pytest.param('cluster.get("v1", "ConfigMap", "zz", "ns") == null', True, id="cluster.get misses as null"),
        pytest.param('cluster.list("v1", "ConfigMap", "ns").map(o, o.metadata.name)', ["a", "b"], id="cluster.list"),
        pytest.param('size(cluster.list("v1", "ConfigMap", "", {"x": "1"}))', 1, id="cluster.list by labels"),
        pytest.param('olm.inRange("1.2.3", ">=1.0.0, <2.0.0")', True, id="olm.inRange admits"),
        pytest.param('olm.inRange("2.0.0", "~1.2")', False, id="olm.inRange refuses"),
        pytest.param('olm.changeType("1.2.3", "1.3.0")', "upgrade", id="olm.changeType upgrade"),
        pytest.param('olm.changeType("1.3.0", "1.2.3")', "rollback", id="olm.changeType rollback"),
        pytest.param('olm.changeType(null, "1.0.0")', "install", id="olm.changeType install"),
        pytest.param('olm.changeType("1.0.0", "1.0.0")', "unchanged", id="olm.changeType unchanged"),
        pytest.param('olm.changeLevel("1.2.3", "2.0.0")', "major", id="olm.changeLevel major"),
        pytest.param('olm.changeLevel("1.2.3", "1.2.4")', "patch", id="olm.changeLevel patch"),
    ],
)
def test_extension(expression: str, expected: object) -> None:
    program = Environment([]).compile(expression)
    assert program.extensions <= EXTENSION_FUNCTIONS and program.extensions
    assert to_python(program.evaluate(extension_bindings(STORE, NOW))) == expected


def test_unbound_extensions_are_evaluation_errors() -> None:
    with pytest.raises(CelEvaluationError, match="no object store is bound"):
        Environment([]).compile('cluster.get("v1", "ConfigMap", "a")').evaluate({})


def test_invalid_version_is_an_evaluation_error() -> None:
    with pytest.raises(CelEvaluationError, match=r"No Major\.Minor\.Patch"):
        Environment([]).compile('olm.changeType("1.2", "1.3.0")').evaluate({})


def test_portable_expressions_use_no_extension() -> None:
    assert Environment(["object"]).compile("semver(object.v).major() > 1").extensions == frozenset()


def config_map(value: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"v": value}}


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_cluster_lookups_see_a_replaced_object(engine: str) -> None:
    store = InMemoryObjectStore([config_map("1")])
    environment = Environment([], backend=backend_named(engine))
    get = environment.compile('cluster.get("v1", "ConfigMap", "c", "ns").data.v')
    listed = environment.compile('cluster.list("v1", "ConfigMap", "ns").map(o, o.data.v)')
    for value in ("1", "2"):
        store.add(config_map(value))
        assert to_python(get.evaluate(extension_bindings(store, NOW))) == value
        assert to_python(get.evaluate(extension_bindings(store, NOW))) == value  # again, as kept
        assert to_python(listed.evaluate(extension_bindings(store, NOW))) == [value]


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_a_request_sees_each_object_as_it_first_looked_it_up(engine: str) -> None:
    store = InMemoryObjectStore([config_map("1")])
    environment = Environment([], backend=backend_named(engine))
    found = environment.compile(
        '[cluster.get("v1", "ConfigMap", "c", "ns").data.v, cluster.list("v1", "ConfigMap")[0].data.v]'
    )
    request = extension_bindings(store, NOW)
    assert to_python(found.evaluate(request)) == ["1", "1"]
    store.add(config_map("2"))  # a watch event, while the request's other expressions are evaluated
    assert to_python(found.evaluate(request)) == ["1", "1"]
    assert to_python(found.evaluate(extension_bindings(store, NOW))) == ["2", "2"]  # the next request


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_a_stored_object_cel_cannot_hold_is_an_evaluation_error_each_time(engine: str) -> None:
    store = InMemoryObjectStore(
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"n": 2**64}}]
    )
    program = Environment([], backend=backend_named(engine)).compile('cluster.get("v1", "ConfigMap", "c", "ns")')
    for _ in range(2):
        with pytest.raises(CelEvaluationError, match="integer overflow"):
            program.evaluate(extension_bindings(store, NOW))
