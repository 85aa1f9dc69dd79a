"""Policy test suites: ``kind: PolicyTest`` (``upgrade-gate.io/v1alpha1``), in the spirit of Gatekeeper's gator.

A suite names policy files and lists cases; each case is one admission request, run the way the
kube-apiserver runs admission: the MutatingAdmissionPolicies first, their JSON patch applied, then the
ValidatingAdmissionPolicies on the patched object. Shape (paths relative to the suite file)::

    apiVersion: upgrade-gate.io/v1alpha1
    kind: PolicyTest
    metadata: {name: revision-approvers}
    spec:
      policies: [approvers.yaml, params.yaml]     # files or directories (policies, bindings, params)
      now: "2026-06-01T12:00:00Z"                 # the request time clock.now() returns (default: real time)
      settings: {approverGroups: upgrade-approvers, soakPeriod: 24h}   # the settings every case assumes
      objects: [...]                              # cluster objects for params and cluster.get/list
      cases:
      - name: a member of an approver group may approve
        operation: UPDATE                         # CREATE (default), UPDATE, DELETE, CONNECT
        object: {...}                             # or objectFile: path
        oldObject: {...}                          # or oldObjectFile: path
        userInfo: {username: alice, groups: [upgrade-approvers]}
        namespaceObject: {...}                    # the request's Namespace, for namespaced objects
        resource: clusterextensionrevisions       # default: the kind's lower-case plural
        objects: [...]                            # more cluster objects for this case only
        now: ...                                  # overrides the suite's time
        settings: {gitopsAppliers: "..."}         # more settings this case assumes (over the suite's)
        expect:
          allowed: true
          code: 403                               # HTTP status of the denial
          message: "..."                          # exact, or messageMatches: <regex>
          warnings: [...]
          auditAnnotations: {...}                 # every listed key with its exact value
          patched: {...}                          # the object after the mutating policies

``settings`` states the settings a case depends on, in the manner of Kyverno's test values (``globalValues`` for
the suite, per-resource values for a case): the case is evaluated with them laid over the ``data`` of every
ConfigMap param its policies' bindings read (the repository's ``settings.yaml``, or a ConfigMap of ``objects``),
the keys it does not state keeping the repository's values. So a case keeps testing the policy's logic whatever a
team set, and a case whose stated settings contradict its expectation still fails. Where the overlay cannot
apply (no binding reads a param, the param is not found or is not a ConfigMap) the case is skipped, with the
reason (``CaseResult.skipped``), as Gatekeeper's gator skips a case marked ``skip``.

Loading raises ``InputError`` naming the file (and case) for a malformed suite; a policy set that does not
load fails that suite only (``SuiteResult.error``), the other suites still run.
"""

from __future__ import annotations

import datetime
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webhook.errors import InputError, ParamError, UpgradeGateError
from webhook.manifests import iter_yaml_documents, manifest_files, read_text
from webhook.objects import InMemoryObjectStore, plural_of
from webhook.policy.admitting.dispatch import CLUSTER_SCOPED_KINDS, collect_params
from webhook.policy.admitting.engine import Admission, PolicyEngine
from webhook.policy.loading.loader import load_policy_set
from webhook.policy.model import PolicySet
from webhook.settings import DEFAULT_CEL_ENGINE, DEFAULT_KUBERNETES_VERSION

API_VERSION = "upgrade-gate.io/v1alpha1"
KIND = "PolicyTest"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_DEFAULT_USER = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
_EXPECT_KEYS = frozenset({"allowed", "code", "message", "messageMatches", "warnings", "auditAnnotations", "patched"})
_UID_NAMESPACE = uuid.UUID("0f4e9a1c-6c55-4d7a-9d55-7b1f2a0c3e11")


@dataclass(frozen=True, slots=True)
class Case:
    """One request and what is expected of it."""

    name: str
    request: Mapping[str, Any]
    namespace: Mapping[str, Any] | None
    objects: tuple[Mapping[str, Any], ...]
    now: datetime.datetime | None
    expect: Mapping[str, Any]
    settings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Suite:
    """A ``PolicyTest`` document: its file, policy paths, shared objects, time and cases."""

    name: str
    file: Path
    policies: tuple[Path, ...]
    objects: tuple[Mapping[str, Any], ...]
    now: datetime.datetime | None
    cases: tuple[Case, ...]


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one case: ``failures`` lists each unmet expectation as a sentence, in full (empty =
    passed); ``brief``: the same sentences with long values cut to the part that differs (``summary``);
    ``admission``: what the request pipeline produced (``None`` if the request could not be admitted or the
    case was skipped); ``skipped``: why the case did not run (its settings cannot apply), else ``None``."""

    suite: str
    case: str
    failures: tuple[str, ...]
    seconds: float
    admission: Admission | None = None
    skipped: str | None = None
    brief: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when every expectation held (a skipped case fails nothing)."""
        return not self.failures

    @property
    def outcome(self) -> str:
        """``PASS``, ``FAIL`` or ``SKIP``."""
        return "FAIL" if self.failures else "SKIP" if self.skipped else "PASS"

    @property
    def summary(self) -> str:
        """One line of at most about ``SUMMARY_WIDTH`` characters: the first unmet expectation, brief, and how
        many more there are; or why the case was skipped; empty for a pass."""
        if self.skipped:
            return shorten(self.skipped, SUMMARY_WIDTH)
        if not self.failures:
            return ""
        first = (self.brief or self.failures)[0]
        more = f" (+{len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        return shorten(first, SUMMARY_WIDTH - len(more)) + more


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """A suite's case results, or the error that kept it from running (``error``)."""

    name: str
    file: Path
    cases: tuple[CaseResult, ...] = ()
    error: str | None = None

    @property
    def passed(self) -> bool:
        """True when the suite ran and every case passed."""
        return self.error is None and all(case.passed for case in self.cases)


def suite_files(paths: Iterable[str | Path]) -> list[Path]:
    """The YAML files under ``paths`` (files as given, directories searched), sorted, without duplicates."""
    found: set[Path] = set()
    for path in map(Path, paths):
        if path.is_dir():
            found.update(manifest_files(path))
        elif path.exists():
            found.add(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    return sorted(found)


def load_suites(paths: Iterable[str | Path]) -> list[Suite]:
    """Every ``PolicyTest`` document in ``paths``; other documents are skipped. Raises ``InputError``."""
    suites: list[Suite] = []
    for file in suite_files(paths):
        for document, line in iter_yaml_documents(read_text(file), str(file)):
            if isinstance(document, Mapping) and document.get("kind") == KIND:
                suites.append(_suite(document, file, line))
    return suites


def run_suites(
    suites: Iterable[Suite], *, engine: str = DEFAULT_CEL_ENGINE, version: str = DEFAULT_KUBERNETES_VERSION
) -> Iterator[SuiteResult]:
    """Run each suite in turn (a generator, so callers can show progress)."""
    for suite in suites:
        yield run_suite(suite, engine=engine, version=version)


def run_suite(
    suite: Suite, *, engine: str = DEFAULT_CEL_ENGINE, version: str = DEFAULT_KUBERNETES_VERSION
) -> SuiteResult:
    """Load the suite's policies once, compiled for the CEL backend ``engine`` as Kubernetes ``version`` takes them,
    and run its cases; a policy load error fails the whole suite."""
    try:
        policies = load_policy_set(suite.policies, engine=engine, version=version)
    except UpgradeGateError as error:
        return SuiteResult(suite.name, suite.file, error=str(error))
    results = [_run_case(suite, case, policies) for case in suite.cases]
    return SuiteResult(suite.name, suite.file, tuple(results))


def _run_case(suite: Suite, case: Case, policies: PolicySet) -> CaseResult:
    start = time.perf_counter()
    store = InMemoryObjectStore([*policies.params, *suite.objects, *case.objects])
    skipped = (
        apply_settings(case.settings, policies, store, case.request.get("namespace", "")) if case.settings else None
    )
    if skipped is not None:
        return CaseResult(suite.name, case.name, (), time.perf_counter() - start, skipped=skipped)
    now = case.now or suite.now or datetime.datetime.now(datetime.UTC)
    try:
        admission = PolicyEngine(policies, store).admit(case.request, case.namespace, now=now)
    except UpgradeGateError as error:
        failures: tuple[str, ...] = (f"the request could not be admitted: {error}",)
        return CaseResult(suite.name, case.name, failures, time.perf_counter() - start)
    found = list(_check(case.expect, admission))
    elapsed = time.perf_counter() - start
    full, brief = tuple(f for f, _ in found), tuple(b for _, b in found)
    return CaseResult(suite.name, case.name, full, elapsed, admission, brief=brief)


def apply_settings(
    settings: Mapping[str, str], policies: PolicySet, store: InMemoryObjectStore, namespace: str
) -> str | None:
    """Lay ``settings`` over the ``data`` of every param object the bindings of ``policies`` read for a request in
    ``namespace`` (``dispatch.collect_params``, as the engine finds them), replacing those objects in ``store``.
    Returns why the settings cannot apply (no binding reads a param, one finds none, or one is not a ConfigMap),
    else ``None``."""
    pairs = [
        (policy, binding)
        for policy_list, bindings in (
            (policies.validating_policies, policies.validating_bindings),
            (policies.mutating_policies, policies.mutating_bindings),
        )
        for policy in policy_list
        for binding in bindings
        if binding.policy_name == policy.name and policy.param_kind is not None and binding.param_ref is not None
    ]
    if not pairs:
        return "the case states settings, but no binding of its policies reads a param"
    targets: dict[tuple[str, str], Mapping[str, Any]] = {}
    for policy, binding in pairs:
        try:
            found = collect_params(policy.param_kind, binding.param_ref, namespace, store, CLUSTER_SCOPED_KINDS)
        except ParamError as error:
            return f"the case states settings, but binding {binding.name} cannot read its param: {error}"
        if not found:
            return f"the case states settings, but binding {binding.name} finds no param"
        for param in found:
            if param is None or (param.get("apiVersion"), param.get("kind")) != ("v1", "ConfigMap"):
                kind = param.get("kind") if param is not None else None
                return f"settings apply to a ConfigMap param; binding {binding.name} reads a {kind}"
            metadata = param.get("metadata") or {}
            targets[(metadata.get("namespace") or "", metadata.get("name") or "")] = param
    for param in targets.values():
        store.add({**param, "data": {**(param.get("data") or {}), **settings}})
    return None


#: The characters a failure summary (``CaseResult.summary``) takes at most, about.
SUMMARY_WIDTH = 160
#: The characters of a value a brief failure shows on either side of the first difference.
_CONTEXT = 30


def shorten(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis where longer."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _differing(expected: str, got: str) -> tuple[str, str]:
    """``expected`` and ``got`` (as ``repr``) cut to ``_CONTEXT`` characters before their first difference and as
    many after it, an ellipsis marking each cut."""
    start = next(
        (i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b), min(len(expected), len(got))
    )
    begin = max(0, start - _CONTEXT)

    def cut(text: str) -> str:
        end = start + _CONTEXT
        return ("…" if begin else "") + repr(text[begin:end]) + ("…" if end < len(text) else "")

    return cut(expected), cut(got)


def _first_difference(expected: object, got: object, path: str = "") -> tuple[str, object, object]:
    """The JSON pointer of the first place ``got`` differs from ``expected``, and the two values there."""
    if isinstance(expected, Mapping) and isinstance(got, Mapping):
        for key in sorted({*expected, *got}, key=str):
            if expected.get(key, _MISSING) != got.get(key, _MISSING):
                return _first_difference(expected.get(key, _MISSING), got.get(key, _MISSING), f"{path}/{key}")
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for index, (left, right) in enumerate(zip(expected, got, strict=True)):
            if left != right:
                return _first_difference(left, right, f"{path}/{index}")
    return path or "/", expected, got


#: The words the apiserver puts before the reason of a denial (``validating``, ``mutating``).
_DENIAL = re.compile(r"^(?:Validating|Mutating)AdmissionPolicy '([^']*)' with binding '[^']*' denied request: ")


def _reason(message: str) -> str:
    """A denial's message as ``<policy>: <reason>``, without the apiserver's words around them."""
    return _DENIAL.sub(lambda found: f"{found.group(1)}: ", message, count=1)


class _Missing:
    def __repr__(self) -> str:
        return "nothing"


_MISSING = _Missing()


def _check(expect: Mapping[str, Any], admission: Admission) -> Iterator[tuple[str, str]]:
    """Each unmet expectation: the sentence in full, and briefly."""
    decision = admission.validated
    if "allowed" in expect and decision.allowed is not expect["allowed"]:
        head = f"expected allowed={expect['allowed']}, got allowed={decision.allowed}"
        detail = f": {decision.message}" if decision.message else ""
        yield head + detail, head + (f": {_reason(decision.message)}" if decision.message else "")
    if "code" in expect and decision.code != expect["code"]:
        yield (text := f"expected code {expect['code']}, got {decision.code}"), text
    if "message" in expect and decision.message != expect["message"]:
        wanted, found = _differing(expect["message"], decision.message)
        full = f"expected message {expect['message']!r}, got {decision.message!r}"
        yield full, f"expected message {wanted}, got {found}"
    if "messageMatches" in expect and not re.search(expect["messageMatches"], decision.message):
        full = f"expected a message matching {expect['messageMatches']!r}, got {decision.message!r}"
        yield full, f"expected a message matching {expect['messageMatches']!r}, got {_reason(decision.message)!r}"
    if "warnings" in expect:
        warnings = list(admission.mutated.warnings) + list(decision.warnings)
        if warnings != list(expect["warnings"]):
            yield (text := f"expected warnings {list(expect['warnings'])!r}, got {warnings!r}"), text
    for key, value in (expect.get("auditAnnotations") or {}).items():
        got = decision.audit_annotations.get(key)
        if got != value:
            yield (text := f"expected audit annotation {key}={value!r}, got {got!r}"), text
    if "patched" in expect and admission.patched != expect["patched"]:
        where, before, after = _first_difference(expect["patched"], admission.patched)
        full = f"expected the patched object {expect['patched']!r}, got {admission.patched!r}"
        yield full, f"the patched object differs at {where}: expected {before!r}, got {after!r}"


# -- reading suites ----------------------------------------------------------------------------------------


def _suite(document: Mapping[str, Any], file: Path, line: int) -> Suite:
    where = f"{file}:{line}"
    if document.get("apiVersion") != API_VERSION:
        raise InputError(f"{where}: a PolicyTest needs apiVersion {API_VERSION}")
    name = _mapping(document.get("metadata"), f"{where}: metadata").get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: a PolicyTest needs metadata.name")
    spec = _mapping(document.get("spec"), f"{where}: spec")
    policies = spec.get("policies")
    if not isinstance(policies, list) or not policies or not all(isinstance(p, str) for p in policies):
        raise InputError(f"{where}: spec.policies must list the policy files, relative to the suite")
    cases = spec.get("cases")
    if not isinstance(cases, list) or not cases:
        raise InputError(f"{where}: spec.cases must list at least one case")
    return Suite(
        name=name,
        file=file,
        policies=tuple(file.parent / p for p in policies),
        objects=_objects(spec.get("objects"), f"{where}: spec.objects"),
        now=_time(spec.get("now"), f"{where}: spec.now"),
        cases=tuple(
            _case(raw, index, name, file, where, settings=_settings(spec.get("settings"), f"{where}: spec.settings"))
            for index, raw in enumerate(cases)
        ),
    )


def _settings(raw: object, at: str) -> dict[str, str]:
    """A ``settings`` mapping of setting name to value, a string each as in a ConfigMap's ``data``."""
    if raw is None:
        return {}
    settings = _mapping(raw, at)
    for key, value in settings.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InputError(f'{at}.{key} must be a string, as a ConfigMap\'s data holds (quote it: {key}: "{value}")')
    return dict(settings)


def _case(raw: object, index: int, suite: str, file: Path, where: str, *, settings: Mapping[str, str]) -> Case:
    at = f"{where}: spec.cases[{index}]"
    case = _mapping(raw, at)
    name = case.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{at} needs a name")
    at = f"{where}: case {name!r}"
    operation = case.get("operation", "CREATE")
    if operation not in OPERATIONS:
        raise InputError(f"{at}: operation must be one of {', '.join(OPERATIONS)}, not {operation!r}")
    obj = _object(case, "object", file, at)
    old = _object(case, "oldObject", file, at)
    subject = obj if obj is not None else old
    if subject is None:
        raise InputError(f"{at}: needs an object or an oldObject")
    expect = _mapping(case.get("expect"), f"{at}: expect")
    unknown = sorted(set(expect) - _EXPECT_KEYS)
    if unknown:
        raise InputError(f"{at}: unknown expectation(s) {', '.join(unknown)}; known: {', '.join(sorted(_EXPECT_KEYS))}")
    user = _mapping(case.get("userInfo", _DEFAULT_USER), f"{at}: userInfo")
    request = _request(subject, at, resource=case.get("resource"))
    request.update(operation=operation, userInfo=dict(user), object=obj, oldObject=old)
    if operation in _OPTIONS:
        request["options"] = {"apiVersion": "meta.k8s.io/v1", "kind": _OPTIONS[operation]}
    request["uid"] = str(uuid.uuid5(_UID_NAMESPACE, f"{suite}/{index}"))
    request["dryRun"] = bool(case.get("dryRun", False))
    namespace = case.get("namespaceObject")
    return Case(
        name=name,
        request=request,
        namespace=_mapping(namespace, f"{at}: namespaceObject") if namespace is not None else None,
        objects=_objects(case.get("objects"), f"{at}: objects"),
        now=_time(case.get("now"), f"{at}: now"),
        expect=expect,
        settings={**settings, **_settings(case.get("settings"), f"{at}: settings")},
    )


def _request(subject: Mapping[str, Any], at: str, *, resource: object) -> dict[str, Any]:
    """The kind, resource, name and namespace of the AdmissionRequest the kube-apiserver sends for ``subject``."""
    api_version, kind = subject.get("apiVersion"), subject.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise InputError(f"{at}: the object needs apiVersion and kind")
    group, _, version = api_version.rpartition("/")
    plural = resource if isinstance(resource, str) else plural_of(kind)
    metadata = subject.get("metadata") or {}
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": plural}
    request: dict[str, Any] = {
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": metadata.get("name", ""),
    }
    if metadata.get("namespace"):
        request["namespace"] = metadata["namespace"]
    return request


def _object(case: Mapping[str, Any], key: str, file: Path, at: str) -> Mapping[str, Any] | None:
    inline, reference = case.get(key), case.get(f"{key}File")
    if inline is not None and reference is not None:
        raise InputError(f"{at}: give {key} or {key}File, not both")
    if reference is None:
        return _mapping(inline, f"{at}: {key}") if inline is not None else None
    path = file.parent / str(reference)
    documents = [doc for doc, _ in iter_yaml_documents(read_text(path), str(path))]
    if len(documents) != 1:
        raise InputError(f"{path}: {key}File must hold exactly one object")
    return _mapping(documents[0], f"{path}")


def _objects(raw: object, at: str) -> tuple[Mapping[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError(f"{at} must be a list of objects")
    return tuple(_mapping(item, f"{at}[{index}]") for index, item in enumerate(raw))


def _mapping(raw: object, at: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InputError(f"{at} must be a mapping")
    return raw


def _time(raw: object, at: str) -> datetime.datetime | None:
    if raw is None:
        return None
    if isinstance(raw, datetime.datetime):  # YAML reads unquoted timestamps itself
        return raw if raw.tzinfo else raw.replace(tzinfo=datetime.UTC)
    try:
        parsed = datetime.datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{at} must be an RFC 3339 time, e.g. 2026-06-01T12:00:00Z") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)
