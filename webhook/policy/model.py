"""The loaded, validated and compiled policy set: frozen dataclasses, one per API type.

Mirrors ``admissionregistration.k8s.io/v1`` (``k8s.io/api/admissionregistration/v1/types.go``) after the
apiserver's defaulting (``pkg/apis/admissionregistration/v1/defaults.go``): ``failurePolicy`` is ``Fail``,
``matchPolicy`` is ``Equivalent``, selectors are ``{}``, rule ``scope`` is ``*``, ``parameterNotFoundAction``
is ``Deny``. Every CEL expression is held twice: as written (``Expression.text``, used in messages) and
compiled (``Expression.program``). Built only by ``webhook.policy.loading.loader``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhook.cel import Program
from webhook.objects import LabelSelector
from webhook.settings import DEFAULT_CEL_ENGINE, DEFAULT_KUBERNETES_VERSION

FAIL = "Fail"
IGNORE = "Ignore"
#: The key under which a MutatingAdmissionPolicy's ``Object...`` initializer map carries its type name (no CEL
#: field can be named so): written by the loader's rewrite, read by the mutation's patchers.
TYPE_KEY = "@type"
EXACT = "Exact"
EQUIVALENT = "Equivalent"
DENY = "Deny"
WARN = "Warn"
AUDIT = "Audit"
ALLOW = "Allow"
JSON_PATCH = "JSONPatch"
APPLY_CONFIGURATION = "ApplyConfiguration"


@dataclass(frozen=True, slots=True)
class Expression:
    """A CEL expression as written in the policy (``text``) and compiled (``program``)."""

    text: str
    program: Program = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Rule:
    """A ``NamedRuleWithOperations``: every combination of its operations, groups, versions and resources.

    Every tuple field is non-empty except ``resource_names`` (empty = every name).
    ``scope`` is ``Cluster``, ``Namespaced`` or ``*``.
    """

    operations: tuple[str, ...]
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str = "*"
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MatchResources:
    """A policy's ``matchConstraints`` or a binding's ``matchResources`` (defaulted)."""

    resource_rules: tuple[Rule, ...] = ()
    exclude_resource_rules: tuple[Rule, ...] = ()
    namespace_selector: LabelSelector = field(default_factory=LabelSelector)
    object_selector: LabelSelector = field(default_factory=LabelSelector)
    match_policy: str = EQUIVALENT


@dataclass(frozen=True, slots=True)
class ParamKind:
    """The kind of a policy's param objects: ``api_version`` is ``group/version`` (``v1`` for core)."""

    api_version: str
    kind: str


@dataclass(frozen=True, slots=True)
class ParamRef:
    """A binding's ``paramRef``: exactly one of ``name`` and ``selector`` is set."""

    name: str | None
    selector: LabelSelector | None
    namespace: str | None
    parameter_not_found_action: str = DENY


@dataclass(frozen=True, slots=True)
class MatchCondition:
    """A named CEL filter; false skips the policy, an error goes to the failurePolicy."""

    name: str
    expression: Expression


@dataclass(frozen=True, slots=True)
class Variable:
    """A named CEL expression exposed lazily as ``variables.<name>``."""

    name: str
    expression: Expression


@dataclass(frozen=True, slots=True)
class Validation:
    """One ``validations[]`` entry; ``reason`` is ``Invalid`` unless set."""

    expression: Expression
    message: str | None = None
    message_expression: Expression | None = None
    reason: str = "Invalid"


@dataclass(frozen=True, slots=True)
class AuditAnnotation:
    """One ``auditAnnotations[]`` entry, published as ``<policy>/<key>``."""

    key: str
    value_expression: Expression


@dataclass(frozen=True, slots=True)
class Mutation:
    """One ``mutations[]`` entry of a MutatingAdmissionPolicy: ``JSONPatch`` or ``ApplyConfiguration``."""

    patch_type: str
    expression: Expression


@dataclass(frozen=True, slots=True)
class ValidatingPolicy:
    """A ``ValidatingAdmissionPolicy``.

    ``all_validations``: one program of every validation's expression, their results as a list in order
    (``specs.all_of``), so that a request pays one evaluation where it would pay one per validation; ``None``
    where there is none (see ``specs.all_of``). ``api_version``: the version of ``admissionregistration.k8s.io``
    its document was written in (``v1``, ``v1beta1``; ``v1alpha1`` too for a MutatingPolicy)."""

    name: str
    match_constraints: MatchResources
    validations: tuple[Validation, ...] = ()
    audit_annotations: tuple[AuditAnnotation, ...] = ()
    match_conditions: tuple[MatchCondition, ...] = ()
    variables: tuple[Variable, ...] = ()
    param_kind: ParamKind | None = None
    failure_policy: str = FAIL
    all_validations: Program | None = field(default=None, compare=False, repr=False)
    api_version: str = "v1"


@dataclass(frozen=True, slots=True)
class ValidatingBinding:
    """A ``ValidatingAdmissionPolicyBinding``; ``match_resources`` ``None`` means all the policy matches."""

    name: str
    policy_name: str
    validation_actions: tuple[str, ...]
    param_ref: ParamRef | None = None
    match_resources: MatchResources | None = None


@dataclass(frozen=True, slots=True)
class MutatingPolicy:
    """A ``MutatingAdmissionPolicy`` (v1alpha1, v1beta1 and v1 have the same fields).

    ``all_mutations``: one program of every mutation's expression, their results as a list in order
    (``specs.all_of``): the mutations up to the first that changes the object see the same object, so one
    evaluation gives all of their results (``mutation``); ``None`` where there is none. ``api_version``: the
    version of ``admissionregistration.k8s.io`` its document was written in."""

    name: str
    match_constraints: MatchResources
    mutations: tuple[Mutation, ...]
    reinvocation_policy: str
    match_conditions: tuple[MatchCondition, ...] = ()
    variables: tuple[Variable, ...] = ()
    param_kind: ParamKind | None = None
    failure_policy: str = FAIL
    all_mutations: Program | None = field(default=None, compare=False, repr=False)
    api_version: str = "v1"


@dataclass(frozen=True, slots=True)
class MutatingBinding:
    """A ``MutatingAdmissionPolicyBinding`` (no validationActions)."""

    name: str
    policy_name: str
    param_ref: ParamRef | None = None
    match_resources: MatchResources | None = None


Policy = ValidatingPolicy | MutatingPolicy
Binding = ValidatingBinding | MutatingBinding


@dataclass(frozen=True, slots=True)
class PolicySet:
    """Everything one load produced, in file and document order.

    ``params`` are the other objects given beside the policies (ConfigMaps, custom resources), as plain
    JSON-shaped mappings; the caller puts them in the object store the engine reads params from. ``engine``
    names the CEL backend the expressions were compiled for (``webhook.settings.CEL_ENGINES``), ``kubernetes_version``
    the Kubernetes version whose apiserver's environment and APIs they were loaded for (``KUBERNETES_VERSIONS``).
    """

    validating_policies: tuple[ValidatingPolicy, ...] = ()
    validating_bindings: tuple[ValidatingBinding, ...] = ()
    mutating_policies: tuple[MutatingPolicy, ...] = ()
    mutating_bindings: tuple[MutatingBinding, ...] = ()
    params: tuple[Mapping[str, Any], ...] = ()
    engine: str = DEFAULT_CEL_ENGINE
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION


def expressions(value: Any) -> Iterator[Expression]:
    """Every expression inside ``value`` (a model dataclass, or a tuple or list of them)."""
    if isinstance(value, Expression):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from expressions(getattr(value, item.name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from expressions(item)
