"""Record kube-apiserver 1.32's ValidatingAdmissionPolicy decisions for tests/data/oracle/decision_cases.yaml.

For each case, one after the other: its ``objects`` are created; each request's admission input is taken from
the apiserver before any policy exists (a dry run gives the object as admission sees it: defaulted, with its
uid; UPDATE and DELETE read the stored old object); the case's policies and bindings are created and put in
force (``wait_until_effective``); each request is sent as a dry run and its answer kept (HTTP status, the
message after ``denied request:``'s resource prefix, the warnings, and the admitted object without its
``VOLATILE_METADATA``: for MutatingAdmissionPolicies the mutated object); the policies are removed again
(``wait_until_removed``). The recording holds, per request, the AdmissionReview ``request`` and Namespace the
engine needs to replay it offline (tests/oracle/test_decisions.py); a case whose policies the apiserver refuses
to create is recorded as ``refused`` with the apiserver's messages, and its requests are not sent.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests import tables
from tests.oracle.apiserver import ROOT, Apiserver

CASES = ROOT / "tests" / "data" / "oracle" / "decision_cases.yaml"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
GROUP = "oracle.upgrade-gate.test"
#: kind -> (API group, version, resource, namespaced)
RESOURCES: dict[str, tuple[str, str, str, bool]] = {
    "Namespace": ("", "v1", "namespaces", False),
    "ConfigMap": ("", "v1", "configmaps", True),
    "Secret": ("", "v1", "secrets", True),
    "Deployment": ("apps", "v1", "deployments", True),
    "Pod": ("", "v1", "pods", True),
    "ServiceAccount": ("", "v1", "serviceaccounts", True),
    "Limit": (GROUP, "v1", "limits", False),
    "NamespacedLimit": (GROUP, "v1", "namespacedlimits", True),
    "Widget": (GROUP, "v1", "widgets", True),
}
_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_WARNING = re.compile(r'^299 - "(.*)"$')


def crd(kind: str, plural: str, *, namespaced: bool) -> dict[str, Any]:
    """A CustomResourceDefinition of ``kind`` in the recorder's group with a free-form ``spec``."""
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def install_crds(api: Apiserver) -> None:
    """Create the param and object kinds of the cases and wait until they are served."""
    for kind, (group, _, plural, namespaced) in RESOURCES.items():
        if group == GROUP:
            api.apply(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd(kind, plural, namespaced=namespaced)
            )
    for _ in range(120):
        if all(
            api.call("GET", f"/apis/{GROUP}/v1/{plural}")[0] == 200
            for g, _, plural, _ in RESOURCES.values()
            if g == GROUP
        ):
            return
        time.sleep(0.5)
    raise SystemExit("the recorder's CRDs were not served within 60 s")


def collection(obj: Mapping[str, Any]) -> str:
    """The REST path of the collection ``obj`` belongs to."""
    group, version, plural, namespaced = RESOURCES[obj["kind"]]
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    namespace = obj["metadata"].get("namespace")
    return f"{base}/namespaces/{namespace}/{plural}" if namespaced else f"{base}/{plural}"


def binding(name: str, policy: str, **spec: Any) -> dict[str, Any]:
    """A ValidatingAdmissionPolicyBinding of ``policy`` with ``Deny`` unless ``spec`` says otherwise."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy, "validationActions": ["Deny"], **spec},
    }


def probe(api: Apiserver, label: str) -> tuple[int, dict[str, Any]]:
    """A dry-run ConfigMap CREATE in ``default`` labelled ``fact: <label>``."""
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fact", "labels": {"fact": label}}}
    return api.call("POST", "/api/v1/namespaces/default/configmaps", configmap, dry_run=True)


def sentinel(label: str) -> dict[str, Any]:
    """A policy that denies the ``probe`` of ``label``."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": label},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
                ],
                "objectSelector": {"matchLabels": {"fact": label}},
            },
            "validations": [{"expression": "false"}],
        },
    }


def wait_until_effective(api: Apiserver, label: str) -> None:
    """Create the sentinel ``label`` after the policies to wait for, and wait until it denies: the apiserver's
    policy and binding informers deliver in order, so the policies created before it are in force too."""
    api.apply(f"{ADMISSION}/validatingadmissionpolicies", sentinel(label))
    api.apply(f"{ADMISSION}/validatingadmissionpolicybindings", binding(label, label))
    _wait(api, label, lambda status: status != 201)


def wait_until_removed(api: Apiserver, label: str) -> None:
    """Delete the sentinel ``label`` after the policies to remove, and wait until it no longer denies."""
    api.call("DELETE", f"{ADMISSION}/validatingadmissionpolicybindings/{label}")
    api.call("DELETE", f"{ADMISSION}/validatingadmissionpolicies/{label}")
    _wait(api, label, lambda status: status == 201)


def _wait(api: Apiserver, label: str, done: Any) -> None:
    for _ in range(120):
        if done(probe(api, label)[0]):
            time.sleep(0.5)  # slack for policies compiled behind it
            return
        time.sleep(0.25)
    raise SystemExit(f"the apiserver did not apply the policy change of {label} within 30 s")


#: The param kinds of the cases.
PARAM_KINDS = (
    {"apiVersion": "v1", "kind": "ConfigMap"},
    *({"apiVersion": f"{GROUP}/v1", "kind": kind} for kind in ("Limit", "NamespacedLimit")),
)


def keep_param_informer(api: Apiserver, param_kind: Mapping[str, str]) -> None:
    """A policy of ``param_kind`` that matches nothing and stays for the whole recording.

    kube-apiserver 1.32 stops a param kind's informer when the last policy using it goes, and a later policy
    of that kind then finds no params at all (``no params found``), which is not what a cluster whose policies
    stay shows; the recorder removes each case's policies, so it keeps one policy per param kind.
    """
    name = f"keep-{param_kind['kind'].lower()}-params"
    policy = sentinel(name)
    policy["spec"]["paramKind"] = dict(param_kind)
    api.apply(f"{ADMISSION}/validatingadmissionpolicies", policy)
    keep = binding(name, name, paramRef={"selector": {}, "parameterNotFoundAction": "Allow"})
    api.apply(f"{ADMISSION}/validatingadmissionpolicybindings", keep)


def user_info(api: Apiserver) -> dict[str, Any]:
    """The recorder's own userInfo (SelfSubjectReview), as the apiserver puts it in admission requests."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    return dict(api.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review)[1]["status"]["userInfo"])


def admission_input(api: Apiserver, step: Mapping[str, Any], user: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The AdmissionReview ``request`` of ``step`` and the REST call that sends it (method path body)."""
    if "scale" in step:
        return _scale_input(api, step["scale"], user)
    operation = "DELETE" if "delete" in step else "CREATE"
    target = step.get("delete") or step["object"]
    name, namespace = target["metadata"]["name"], target["metadata"].get("namespace", "")
    path = collection(target)
    _, stored = api.call("GET", f"{path}/{name}")
    if operation == "CREATE" and stored.get("kind") == target["kind"]:
        operation = "UPDATE"
    old = stored if operation != "CREATE" else None
    if operation == "CREATE":
        status, new = api.call("POST", path, target, dry_run=True)
    elif operation == "UPDATE":
        assert old is not None
        body = copy.deepcopy(dict(target))
        body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        status, new = api.call("PUT", f"{path}/{name}", body, dry_run=True)
    else:
        status, new = 200, {}
    if status >= 300:
        raise SystemExit(f"the dry run of {step['why']!r} failed without policies: {new.get('message')}")
    group, version, plural, _ = RESOURCES[target["kind"]]
    request = _request(operation, name, namespace, user, group, version, target["kind"], plural, "")
    request.update(object=new if operation != "DELETE" else None, oldObject=old)
    return request, operation


def _scale_input(api: Apiserver, scale: Mapping[str, Any], user: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    name, namespace = scale["metadata"]["name"], scale["metadata"]["namespace"]
    path = f"{collection(scale)}/{name}/scale"
    _, old = api.call("GET", path)
    body = {**old, "spec": {"replicas": scale["replicas"]}}
    _, new = api.call("PUT", path, body, dry_run=True)
    group, version, plural, _ = RESOURCES[scale["kind"]]
    request = _request("UPDATE", name, namespace, user, group, version, "Scale", plural, "scale")
    request["kind"] = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    request["requestKind"] = dict(request["kind"])
    request.update(object=new, oldObject=old)
    return request, "UPDATE"


def _request(
    operation: str,
    name: str,
    namespace: str,
    user: Mapping[str, Any],
    group: str,
    version: str,
    kind: str,
    plural: str,
    subresource: str,
) -> dict[str, Any]:
    kind_ = {"group": group, "version": version, "kind": kind}
    resource = {"group": group, "version": version, "resource": plural}
    request: dict[str, Any] = {
        "uid": "00000000-0000-0000-0000-000000000000",
        "kind": kind_,
        "resource": resource,
        "requestKind": dict(kind_),
        "requestResource": dict(resource),
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": dict(user),
        "dryRun": True,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": _OPTIONS[operation], "dryRun": ["All"]},
    }
    if subresource:
        request.update(subResource=subresource, requestSubResource=subresource)
    return request


def send(api: Apiserver, step: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """Send ``step`` as a dry run; the apiserver's answer: status, allowed, message, warnings."""
    if "scale" in step:
        scale = step["scale"]
        path = f"{collection(scale)}/{scale['metadata']['name']}/scale"
        body = {**request["oldObject"], "spec": {"replicas": scale["replicas"]}}
        status, answer, warnings = api.call_with_warnings("PUT", path, body)
    elif request["operation"] == "DELETE":
        target = step["delete"]
        status, answer, warnings = api.call_with_warnings(
            "DELETE", f"{collection(target)}/{target['metadata']['name']}"
        )
    elif request["operation"] == "UPDATE":
        target = copy.deepcopy(dict(step["object"]))
        target["metadata"]["resourceVersion"] = request["oldObject"]["metadata"]["resourceVersion"]
        status, answer, warnings = api.call_with_warnings(
            "PUT", f"{collection(target)}/{target['metadata']['name']}", target
        )
    else:
        status, answer, warnings = api.call_with_warnings("POST", collection(step["object"]), step["object"])
    found: dict[str, Any] = {"status": status, "allowed": status < 300}
    if status < 300 and request["operation"] != "DELETE":
        found["object"] = stable(answer)
    if status >= 300:
        found["message"] = re.sub(r'^\S+ "[^"]*" is forbidden: ', "", str(answer.get("message", "")))
    parsed = [_WARNING.sub(r"\1", warning).replace('\\"', '"') for warning in warnings]
    if parsed:
        found["warnings"] = parsed
    return found


def record(api: Apiserver, cases: Path = CASES) -> list[dict[str, Any]]:
    """Every request of every case of ``cases`` with its admission input and the apiserver's answer."""
    install_crds(api)
    for param_kind in PARAM_KINDS:
        keep_param_informer(api, param_kind)
    user = user_info(api)
    recorded: list[dict[str, Any]] = []
    for number, case in enumerate(tables.load(cases)["cases"]):
        for obj in case.get("objects", ()):
            status, answer = api.apply(collection(obj), obj)
            if status >= 300:
                raise SystemExit(f"{case['why']}: cannot create {obj['metadata']['name']}: {answer.get('message')}")
        inputs = [admission_input(api, step, user) for step in case.get("requests", ())]
        refusals = []
        for document in case["policies"]:
            status, answer = api.apply(_policies_path(document), document)
            if status >= 300:
                refusals.append(str(answer.get("message", "")))
        label = f"case-{number}"
        if mutating(case):
            for document in map_sentinel(label):
                api.apply(_policies_path(document), document)
            wait_for_mutation(api, label, present=True)
        else:
            wait_until_effective(api, label)
        if refusals:
            recorded.append({"case": case["why"], "why": "the policy is refused", "refused": refusals})
        for step, (request, _) in zip(case.get("requests", ()) if not refusals else (), inputs, strict=False):
            namespace = request["namespace"]
            namespace_object = api.call("GET", f"/api/v1/namespaces/{namespace}")[1] if namespace else None
            recorded.append(
                {
                    "case": case["why"],
                    "why": step["why"],
                    "request": request,
                    "namespaceObject": namespace_object,
                    "apiserver": send(api, step, request),
                }
            )
        for document in reversed(case["policies"]):
            api.call("DELETE", f"{_policies_path(document)}/{document['metadata']['name']}")
        if mutating(case):
            for document in reversed(map_sentinel(label)):
                api.call("DELETE", f"{_policies_path(document)}/{label}")
            wait_for_mutation(api, label, present=False)
        else:
            wait_until_removed(api, label)
    return recorded


_PLURALS = {
    "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
}
#: Metadata that differs between two dry runs of one request.
VOLATILE_METADATA = ("uid", "creationTimestamp", "managedFields", "resourceVersion", "generation")


def _policies_path(document: Mapping[str, Any]) -> str:
    """The collection of a policy or binding document (MutatingAdmissionPolicy is v1alpha1 in 1.32)."""
    return f"/apis/{document['apiVersion']}/{_PLURALS[document['kind']]}"


def stable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without ``VOLATILE_METADATA``."""
    metadata = {key: value for key, value in obj.get("metadata", {}).items() if key not in VOLATILE_METADATA}
    return {**obj, "metadata": metadata}


def mutating(case: Mapping[str, Any]) -> bool:
    """True for a case of MutatingAdmissionPolicies."""
    return any(document["kind"].startswith("Mutating") for document in case["policies"])


def map_sentinel(label: str) -> list[dict[str, Any]]:
    """A MutatingAdmissionPolicy and binding that label the ``probe`` of ``label`` ``mutated: <label>``."""
    version = "admissionregistration.k8s.io/v1alpha1"
    patch = f'[JSONPatch{{op: "add", path: "/metadata/labels/mutated", value: "{label}"}}]'
    policy = {
        "apiVersion": version,
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": label},
        "spec": {
            "reinvocationPolicy": "Never",
            "matchConstraints": sentinel(label)["spec"]["matchConstraints"],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
        },
    }
    bound = {"apiVersion": version, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": label}}
    return [policy, {**bound, "spec": {"policyName": label}}]


def wait_for_mutation(api: Apiserver, label: str, *, present: bool) -> None:
    """Wait until the MutatingAdmissionPolicy sentinel ``label`` labels the probe (``present``) or no longer does."""
    answer: dict[str, Any] = {}
    for _ in range(120):
        answer = probe(api, label)[1]
        if ("mutated" in answer.get("metadata", {}).get("labels", {})) == present:
            time.sleep(0.5)
            return
        time.sleep(0.25)
    raise SystemExit(f"the apiserver did not apply the mutating policy change of {label} within 30 s: {answer}")
