"""``upgrade-gate doctor`` as a cluster admin runs it, against a loopback fake API server that serves the objects of
tests/controller/test_doctor.py at their REST paths (through the real kubernetes client and ``Cluster``): the
table, the JSON document, the exit codes, and one line on stderr for a kubeconfig that does not load."""

from __future__ import annotations

import contextlib
import json
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import xmlschema
from click.testing import CliRunner

from tests.controller.test_doctor import (
    OLM_NAMESPACE,
    OPENSHIFT_NAMESPACE,
    USER,
    chart_crd,
    olm_deployment,
    olm_namespace,
    release_secret,
    settings_config_map,
    webhook_configurations,
)
from tests.io.kube.fakeapi import JsonHandler, serving
from webhook.cli import main
from webhook.controller.doctor.model import CHECKS

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""
JUNIT_XSD = Path(__file__).resolve().parents[2] / "tests" / "data" / "junit" / "junit-10.xsd"
PROXY = "/api/v1/namespaces/upgrade-gate/services/https:gate-upgrade-gate-webhook:443/proxy/readyz"
LISTS = {
    "/apis/apps/v1/deployments": "Deployment",
    "/api/v1/secrets": "Secret",
    "/apis/olm.operatorframework.io/v1/clusterobjectsets": "ClusterObjectSet",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": "ValidatingWebhookConfiguration",
}


def default_layout() -> list[dict[str, Any]]:
    """Upstream OLM v1 in olmv1-system and the chart at its defaults (its CRD, webhook configurations, settings)."""
    return [
        olm_deployment(),
        olm_namespace(),
        chart_crd(),
        *webhook_configurations(),
        settings_config_map(),
    ]


def openshift_layout() -> list[dict[str, Any]]:
    """The same chart and settings, operator-controller in openshift-operator-controller."""
    return [olm_deployment(OPENSHIFT_NAMESPACE), olm_namespace(OPENSHIFT_NAMESPACE), chart_crd(),
            *webhook_configurations(), settings_config_map()]  # fmt: skip


def _path_of(item: dict[str, Any]) -> str:
    metadata = item["metadata"]
    if item["kind"] == "Namespace":
        return f"/api/v1/namespaces/{metadata['name']}"
    if item["kind"] == "ConfigMap":
        return f"/api/v1/namespaces/{metadata['namespace']}/configmaps/{metadata['name']}"
    if item["kind"] == "CustomResourceDefinition":
        return f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{metadata['name']}"
    return ""


def _selected(item: dict[str, Any], query: dict[str, str]) -> bool:
    labels = item["metadata"].get("labels") or {}
    for requirement in filter(None, query.get("labelSelector", "").split(",")):
        key, equals, value = requirement.partition("=")
        if (labels.get(key) != value) if equals else (key not in labels):
            return False
    field = query.get("fieldSelector", "")
    return not field or field == f"metadata.name={item['metadata']['name']}"


class FakeApiserver(JsonHandler):
    """Lists (label and field selectors) and gets of ``objects``; the service proxy answers ``readyz``; the Accept
    header of each request is kept in ``accepts``."""

    objects: ClassVar[list[dict[str, Any]]] = []
    accepts: ClassVar[dict[str, str]] = {}
    readyz: ClassVar[tuple[int, dict[str, Any]]] = (200, {"ready": True})
    serves_object_sets: ClassVar[bool] = True

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        path, query = urllib.parse.unquote(url.path), dict(urllib.parse.parse_qsl(url.query))
        self.accepts[self.path] = self.headers.get("Accept", "")
        if path == PROXY:
            return self.answer(*self.readyz)
        if path in LISTS and (self.serves_object_sets or LISTS[path] != "ClusterObjectSet"):
            kind = LISTS[path]
            items = [o for o in self.objects if o["kind"] == kind and _selected(o, query)]
            metadata_only = "as=PartialObjectMetadataList" in self.headers.get("Accept", "")
            if metadata_only:
                items = [{"metadata": o["metadata"]} for o in items]
            return self.answer(200, {"kind": f"{kind}List", "metadata": {}, "items": items})
        for item in self.objects:
            if path == _path_of(item):
                return self.answer(200, item)
        return self.answer(404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": f"{path} not found"})


@contextlib.contextmanager
def cluster(tmp_path: Path, objects: list[dict[str, Any]], **options: Any) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fake API server of ``objects`` and a kubeconfig for it; yields the kubeconfig and the requests made
    (path and query -> Accept header)."""
    accepts: dict[str, str] = {}
    handler = type("Served", (FakeApiserver,), {"objects": objects, "accepts": accepts, **options})
    with serving(handler) as (api_client, _):
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(KUBECONFIG.format(server=api_client.configuration.host))
        yield kubeconfig, accepts


def doctor(*args: str, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["doctor", *args], env={"KUBERNETES_SERVICE_HOST": "", **env})
    return result.exit_code, result.stdout, result.stderr


def test_the_default_layout_prints_every_check_ok_and_exits_0(tmp_path):
    with cluster(tmp_path, default_layout()) as (kubeconfig, requests):
        code, out, err = doctor("--kubeconfig", str(kubeconfig))
    assert (code, err) == (0, "")
    assert out == (
        "CHECK                    RESULT  MESSAGE\n"
        f"operator-controller      ok      operator-controller runs in olmv1-system as {USER} (Deployment "
        "olmv1-system/operator-controller-controller-manager)\n"
        "applier                  ok      Helm: an upgrade starts with the CREATE of a release index Secret in "
        "olmv1-system (BoxcutterRuntime not set, off by default)\n"
        "gate-webhooks            ok      upgrades-helm.upgrade-gate.dev (gate-upgrade-gate) is sent every upgrade "
        f"(release index Secret CREATE in olmv1-system by {USER}); failurePolicy Fail\n"
        "settings                 ok      ConfigMap upgrade-gate-system/upgrade-gate-settings names "
        f"{USER} in operatorControllerUsers\n"
        "revision-crd             ok      CRD clusterextensionrevisions.olm.operatorframework.io is upgrade-gate's "
        "(upgrade-gate-0.1.0)\n"
        "webhook-ready            ok      the gate's webhook answers: GET /readyz of Service "
        "upgrade-gate/gate-upgrade-gate-webhook through the API server's proxy: 200\n"
        "one-operator-controller  ok      one operator-controller\n"
        "upgrades are held: 7 of 7 checks ok\n"
    )
    assert not any(path.startswith("/api/v1/secrets") for path in requests), "no Secret is read when not needed"


def test_the_openshift_layout_fails_naming_the_namespace_and_exits_1(tmp_path):
    with cluster(tmp_path, openshift_layout()) as (kubeconfig, _):
        code, out, err = doctor("--kubeconfig", str(kubeconfig))
    assert (code, err) == (1, "upgrade-gate: 2 of 7 checks fail\n")
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:-1] if not line.startswith(" ")}
    assert rows == {**dict.fromkeys(CHECKS, "ok"), "gate-webhooks": "fail", "settings": "fail"}
    assert "fix: set webhook.gate.olmNamespace=openshift-operator-controller" in out
    assert out.endswith("upgrades may go through unchecked: 2 fail, 5 ok of 7 checks\n")


def test_json_gives_every_check_and_the_facts(tmp_path):
    with cluster(tmp_path, openshift_layout()) as (kubeconfig, _):
        code, out, _ = doctor("--kubeconfig", str(kubeconfig), "-o", "json")
    document = json.loads(out)
    assert code == 1
    assert sorted(document) == ["checks", "facts", "result"] and document["result"] == "fail"
    assert [c["id"] for c in document["checks"]] == list(CHECKS)
    assert all(sorted(c) == ["action", "id", "message", "result"] for c in document["checks"])
    facts = document["facts"]
    assert (facts["namespace"], facts["user"], facts["applier"]) == (
        OPENSHIFT_NAMESPACE,
        f"system:serviceaccount:{OPENSHIFT_NAMESPACE}:operator-controller-controller-manager",
        "helm",
    )
    assert facts["webhooks"] == [
        "gate-upgrade-gate/upgrades-boxcutter.upgrade-gate.dev",
        "gate-upgrade-gate/upgrades-helm.upgrade-gate.dev",
    ]
    assert facts["operatorControllerUsers"] == [USER]


def test_warnings_exit_0_unless_strict(tmp_path):
    objects = [*default_layout(), olm_deployment(name="operator-controller-v2")]
    with cluster(tmp_path, objects) as (kubeconfig, _):
        assert doctor("--kubeconfig", str(kubeconfig))[0] == 0
        code, _, err = doctor("--kubeconfig", str(kubeconfig), "--strict")
    assert (code, err) == (1, "upgrade-gate: 1 of 7 checks warn (--strict)\n")


def test_an_unanswering_webhook_warns_and_the_settings_namespace_is_an_option(tmp_path):
    objects = [*default_layout()[:-1], settings_config_map(namespace="gate-settings")]
    busy = (
        503,
        {"kind": "Status", "code": 503, "message": 'no endpoints available for service "gate-upgrade-gate-webhook"'},
    )
    with cluster(tmp_path, objects, readyz=busy) as (kubeconfig, _):
        code, out, _ = doctor("--kubeconfig", str(kubeconfig), "--settings-namespace", "gate-settings", "-o", "json")
    checks = {c["id"]: c for c in json.loads(out)["checks"]}
    assert code == 0
    assert checks["settings"]["result"] == "ok"
    assert checks["webhook-ready"]["result"] == "warn"
    assert checks["webhook-ready"]["message"] == (
        "the gate's webhook does not answer: GET /readyz of Service upgrade-gate/gate-upgrade-gate-webhook through "
        'the API server\'s proxy: 503 no endpoints available for service "gate-upgrade-gate-webhook"'
    )


def test_without_a_deployment_the_secrets_are_read_as_metadata_only(tmp_path):
    objects = [o for o in default_layout() if o["kind"] != "Deployment"] + [release_secret()]
    with cluster(tmp_path, objects) as (kubeconfig, requests):
        code, out, _ = doctor("--kubeconfig", str(kubeconfig), "-o", "json")
    document = json.loads(out)
    assert code == 0 and document["facts"]["namespace"] == OLM_NAMESPACE
    assert document["checks"][0]["result"] == "warn"
    assert requests["/api/v1/secrets?labelSelector=owner%3Doperator-controller"] == (
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    )


def test_a_cluster_without_olm_warns(tmp_path):
    objects = [chart_crd(), *webhook_configurations(), settings_config_map()]
    with cluster(tmp_path, objects, serves_object_sets=False) as (kubeconfig, _):
        code, out, _ = doctor("--kubeconfig", str(kubeconfig))
    assert code == 0
    assert out.splitlines()[1].startswith("operator-controller      warn    no OLM v1 operator-controller found")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(None, "no cluster configuration: {path}: Invalid kube-config file. No configuration found.",
                     id="a missing file"),
        pytest.param("foo: [", "no cluster configuration: {path} is not a kubeconfig: while parsing a flow node "
                     "expected the node content, but found '<stream end>' in \"{path}\", line 1, column 7",
                     id="not YAML"),
        pytest.param("just a string", "no cluster configuration: {path} is not a kubeconfig: 'str' object does not "
                     "support item assignment", id="not a mapping"),
        pytest.param("apiVersion: v1\nkind: Config\ncurrent-context: x\n", "no cluster configuration: Invalid "
                     "kube-config file. Expected object with name x in {path}/contexts list", id="an unknown context"),
    ],
)  # fmt: skip
def test_a_kubeconfig_that_does_not_load_is_one_line_and_exit_2(tmp_path, content, message):
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    assert doctor("--kubeconfig", str(path)) == (2, "", f"upgrade-gate: {message.format(path=path)}\n")


def test_without_any_cluster_configuration_it_exits_2(tmp_path):
    code, out, err = doctor(KUBECONFIG=str(tmp_path / "missing"))
    assert (code, out) == (2, "")
    assert err.startswith("upgrade-gate: no cluster configuration: ") and err.count("\n") == 1


def test_an_api_server_it_cannot_reach_is_one_line_and_exit_3(tmp_path):
    """An outage, not a failing check (1) nor bad input (2): retry (docs/cli.md, exit codes)."""
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server="http://127.0.0.1:9"))  # nothing listens on port 9
    code, out, err = doctor("--kubeconfig", str(path))
    assert (code, out) == (3, "")
    assert err.startswith("upgrade-gate: list deployments: ") and err.count("\n") == 1


def test_help_says_what_it_checks_the_exit_codes_and_an_example():
    code, out, _ = doctor("--help")
    assert code == 0
    for text in (*CHECKS, "Exit codes: 0", "upgrade-gate doctor --kubeconfig", "--settings-namespace", "--strict"):
        assert text in out
    assert "upgrade-gate doctor" in CliRunner().invoke(main, ["--help"]).stdout


def test_junit_has_a_case_per_check_failing_as_the_exit_code_does(tmp_path):
    """fail is a failure; warn only with --strict (as it then exits 1); the file validates against the JUnit schema."""
    objects = [o for o in openshift_layout() if o["kind"] != "CustomResourceDefinition"]  # revision-crd warns
    report = tmp_path / "doctor.xml"
    with cluster(tmp_path, objects) as (kubeconfig, _):
        for strict in ((), ("--strict",)):
            code, out, _ = doctor("--kubeconfig", str(kubeconfig), "-o", "junit", "--output-file", str(report), *strict)
            assert code == 1 and out.startswith("CHECK ")
            xmlschema.XMLSchema(JUNIT_XSD).validate(report)
            (suite,) = ET.parse(report).getroot().findall("testsuite")
            failing = {c.get("name"): f.get("type") for c in suite if (f := c.find("failure")) is not None}
            expected = {"gate-webhooks": "fail", "settings": "fail"} | ({"revision-crd": "warn"} if strict else {})
            assert (suite.get("tests"), failing) == (str(len(CHECKS)), expected)


def test_a_missing_kubeconfig_is_named(tmp_path):
    missing = tmp_path / "nowhere" / "config"
    message = f"upgrade-gate: no cluster configuration: {missing}: Invalid kube-config file. No configuration found.\n"
    assert doctor("--kubeconfig", str(missing))[::2] == (2, message)
    assert doctor(KUBECONFIG=str(missing))[::2] == (2, message)
