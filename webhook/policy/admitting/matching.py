"""Does a request fall under a policy's ``matchConstraints`` or a binding's ``matchResources``?

Follows ``k8s.io/apiserver/pkg/admission/plugin/policy/matching/matching.go`` (``Matches``,
``matchesResourceRules``), ``.../webhook/predicates/rules/rules.go`` (scope, operation, group, version,
resource/subresource wildcards), ``.../predicates/namespace/matcher.go`` and ``.../predicates/object/
matcher.go``, in upstream's order: namespaceSelector, objectSelector, excludeResourceRules (exclusion wins),
resourceRules (+ resourceNames); a selector error is reported only when the rules match.

``matchPolicy: Equivalent`` without discovery: the apiserver also tries every resource its
``EquivalentResourceMapper`` knows to be the same objects under another group/version and converts the object.
A webhook only knows two of them: the request's ``resource`` (what the webhook configuration matched) and its
``requestResource`` (what the client called). Equivalent here therefore also matches a rule against
``requestResource``; it cannot list further equivalents or convert the object, which stays in the version the
apiserver sent (``request.kind``/``resource`` are left as received). ``Exact`` matches ``resource`` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.errors import MatchError
from webhook.objects import LabelSelector
from webhook.policy.model import EQUIVALENT, MatchResources, Rule


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    """``{group, version, resource}`` of an AdmissionRequest (``group`` is ``""`` for the core API)."""

    group: str
    version: str
    resource: str

    @classmethod
    def from_dict(cls, value: Any) -> GroupVersionResource | None:
        """Read ``{group, version, resource}``; ``None`` if ``value`` is not a mapping."""
        if not isinstance(value, Mapping):
            return None
        return cls(str(value.get("group") or ""), str(value.get("version") or ""), str(value.get("resource") or ""))


_NAMESPACES = GroupVersionResource("", "v1", "namespaces")


@dataclass(frozen=True, slots=True)
class Attributes:
    """What matching reads from an AdmissionRequest (``admission.k8s.io/v1``), parsed once per request."""

    operation: str
    resource: GroupVersionResource
    subresource: str
    request_resource: GroupVersionResource | None
    name: str
    namespace: str
    object: Any
    old_object: Any

    @classmethod
    def from_request(cls, request: Mapping[str, Any]) -> Attributes:
        """Read a request dict (``operation``, ``resource``, ``subResource``, ``requestResource``, ``name``,
        ``namespace``, ``object``, ``oldObject``); missing fields read as empty."""
        return cls(
            operation=str(request.get("operation") or ""),
            resource=GroupVersionResource.from_dict(request.get("resource")) or GroupVersionResource("", "", ""),
            subresource=str(request.get("subResource") or ""),
            request_resource=GroupVersionResource.from_dict(request.get("requestResource")),
            name=str(request.get("name") or ""),
            namespace=str(request.get("namespace") or ""),
            object=request.get("object"),
            old_object=request.get("oldObject"),
        )


def rule_matches(rule: Rule, attributes: Attributes, resource: GroupVersionResource) -> bool:
    """``rules.Matcher.Matches`` for ``resource``: scope, operation, group, version, resource/subresource."""
    return (
        _scope(rule.scope, attributes, resource)
        and ("*" in rule.operations or attributes.operation in rule.operations)
        and ("*" in rule.api_groups or resource.group in rule.api_groups)
        and ("*" in rule.api_versions or resource.version in rule.api_versions)
        and any(_resource(entry, resource.resource, attributes.subresource) for entry in rule.resources)
    )


def rule_dict_matches(rule: Mapping[str, Any], request: Mapping[str, Any]) -> bool:
    """``rule_matches`` for a ``RuleWithOperations`` as a JSON dict (a webhook configuration's ``rules`` entry:
    ``operations``, ``apiGroups``, ``apiVersions``, ``resources``, ``scope``) and an AdmissionRequest dict."""
    parsed = Rule(
        operations=tuple(rule.get("operations") or ()),
        api_groups=tuple(rule.get("apiGroups") or ()),
        api_versions=tuple(rule.get("apiVersions") or ()),
        resources=tuple(rule.get("resources") or ()),
        scope=str(rule.get("scope") or "*"),
    )
    attributes = Attributes.from_request(request)
    return rule_matches(parsed, attributes, attributes.resource)


def _scope(scope: str, attributes: Attributes, resource: GroupVersionResource) -> bool:
    # attributes.namespace is the namespace's own name for requests on Namespace objects.
    if scope == "Namespaced":
        return resource != _NAMESPACES and attributes.namespace != ""
    if scope == "Cluster":
        return resource == _NAMESPACES or attributes.namespace == ""
    return True


def _resource(entry: str, resource: str, subresource: str) -> bool:
    """``pods`` (no subresource), ``pods/log``, ``*`` (every resource, no subresource), ``pods/*``,
    ``*/scale``, ``*/*``."""
    want_resource, _, want_sub = entry.partition("/")
    return want_resource in ("*", resource) and want_sub in ("*", subresource)


def rules_match(rules: tuple[Rule, ...], match_policy: str, attributes: Attributes, *, by_name: bool = True) -> bool:
    """``matchesResourceRules``: some rule matches the resource and (if it lists any, and ``by_name``) the name;
    with ``Equivalent`` also via ``requestResource`` (see the module docstring)."""
    resources = [attributes.resource]
    if match_policy == EQUIVALENT and attributes.request_resource is not None:
        resources.append(attributes.request_resource)
    return any(
        rule_matches(rule, attributes, resource)
        and (not by_name or not rule.resource_names or attributes.name in rule.resource_names)
        for resource in resources
        for rule in rules
    )


def resource_key(attributes: Attributes) -> tuple[object, ...]:
    """What ``rules_match(..., by_name=False)`` reads of a request: equal keys, equal answers."""
    return (
        attributes.operation,
        attributes.resource,
        attributes.subresource,
        attributes.request_resource,
        attributes.namespace == "",
    )


def may_match(constraints: MatchResources, attributes: Attributes) -> bool:
    """False when ``matches`` is False whatever the request's name, namespace and labels: no resource rule
    matches its operation and resource (a function of ``resource_key``)."""
    return not constraints.resource_rules or rules_match(
        constraints.resource_rules, constraints.match_policy, attributes, by_name=False
    )


def _labels(obj: Any) -> Mapping[str, str] | None:
    """The labels of a JSON object, ``None`` for no object (null, or not an object)."""
    if not isinstance(obj, Mapping):
        return None
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def namespace_selector_matches(
    selector: LabelSelector, attributes: Attributes, namespace: Mapping[str, Any] | None
) -> bool:
    """``MatchNamespaceSelector``: cluster-scoped objects other than Namespaces always match; a Namespace
    being created or updated is matched by its own labels; others by their namespace's labels.

    ``namespace`` is the request's Namespace object (``None`` if unknown); raises ``MatchError``
    (``namespaces "<name>" not found``) when it is needed and unknown.
    """
    if not attributes.namespace and attributes.resource.resource != "namespaces":
        return True
    if selector.is_empty:
        return True
    if (
        attributes.resource.resource == "namespaces"
        and not attributes.subresource
        and attributes.operation in ("CREATE", "UPDATE")
    ):
        labels = _labels(attributes.object)
    else:
        labels = _labels(namespace)
        if labels is None:
            raise MatchError(f'namespaces "{attributes.namespace}" not found')
    return selector.matches(labels or {})


def object_selector_matches(selector: LabelSelector, attributes: Attributes) -> bool:
    """``MatchObjectSelector``: the object's or the old object's labels match; a null object never does."""
    if selector.is_empty:
        return True
    return any(
        labels is not None and selector.matches(labels)
        for labels in (_labels(attributes.object), _labels(attributes.old_object))
    )


def matches(constraints: MatchResources, attributes: Attributes, namespace: Mapping[str, Any] | None) -> bool:
    """Whether the request falls under ``constraints`` (``Matcher.Matches``); raises ``MatchError`` only when
    the rules match and the namespaceSelector needed the unknown namespace."""
    try:
        namespace_match: bool | MatchError = namespace_selector_matches(
            constraints.namespace_selector, attributes, namespace
        )
    except MatchError as err:
        namespace_match = err
    if namespace_match is False or not object_selector_matches(constraints.object_selector, attributes):
        return False
    if rules_match(constraints.exclude_resource_rules, constraints.match_policy, attributes):
        return False
    if constraints.resource_rules and not rules_match(constraints.resource_rules, constraints.match_policy, attributes):
        return False
    if isinstance(namespace_match, MatchError):
        raise namespace_match
    return True
