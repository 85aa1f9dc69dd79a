"""CEL inputs of one admission request, converted once, and the activations of its policy evaluations.

Follows ``k8s.io/apiserver/pkg/admission/plugin/cel/activation.go`` and ``composition.go``:
``object``/``oldObject`` are the request's objects, ``request`` is the AdmissionRequest without ``uid``,
``object`` and ``oldObject``, ``namespaceObject`` the request's Namespace reduced to the fields
``CreateNamespaceObject`` keeps (``null`` for cluster-scoped objects and for Namespaces themselves),
``params`` the param object (declared only when the policy has a ``paramKind``), and ``variables`` a lazy map
(``LazyVariables``) that evaluates each variable on first use and memoises its value or error.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from webhook.cel import Backend, Kept, Program, Values
from webhook.errors import CelEvaluationError, ReviewError
from webhook.policy.admitting.matching import Attributes
from webhook.policy.model import Expression, MatchCondition, Variable

_REQUEST_FIELDS = (
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "dryRun",
    "options",
)
_NAMESPACE_METADATA = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "finalizers",
)


@dataclass(slots=True)
class RequestInputs:
    """One request's matching attributes and CEL values, shared by every policy evaluation of the request.

    ``namespace`` is the request's Namespace object as given (``None`` if none or unknown); ``params`` converts
    param objects to CEL (``ParamValues``, shared by the requests of one engine). The request is converted to CEL values
    of ``backend`` only when a policy first needs it (``cel``), so a request that no policy matches costs no
    conversion; ``from_json``: the request was decoded from JSON with its integers within int64, so the backend
    may take it without checks (``Backend.from_json``).
    """

    backend: Backend
    attributes: Attributes
    namespace: Mapping[str, Any] | None
    namespace_name: str
    request: Mapping[str, Any]
    extra: Mapping[str, object]
    params: ParamValues
    from_json: bool = False
    _cel: dict[str, object] | None = None

    @classmethod
    def build(
        cls,
        backend: Backend,
        request: Mapping[str, Any],
        namespace: Mapping[str, Any] | None,
        extra: Mapping[str, object],
        *,
        params: ParamValues | None = None,
        from_json: bool = False,
    ) -> RequestInputs:
        """The inputs of ``request`` (an AdmissionReview ``request`` dict) for ``backend``; ``extra`` are further
        activation entries (extension libraries); ``params``: where param objects are converted (default: for this
        request only); ``from_json``: see the class."""
        kind = request.get("kind") or {}
        is_namespace = kind.get("group", "") == "" and kind.get("version") == "v1" and kind.get("kind") == "Namespace"
        namespace_name = "" if is_namespace else str(request.get("namespace") or "")
        attributes = Attributes.from_request(request)
        converted = params if params is not None else ParamValues(backend)
        return cls(backend, attributes, namespace, namespace_name, request, extra, converted, from_json)

    @property
    def cel(self) -> dict[str, object]:
        """The request's CEL variables, converted on first use. Raises ``ReviewError`` if an object is not
        convertible JSON (e.g. an integer outside int64)."""
        if self._cel is None:
            request, namespace, to_cel = self.request, self.namespace, self.backend.to_cel
            convert = self.backend.from_json if self.from_json else to_cel
            try:
                self._cel = {
                    "object": convert(request.get("object")),
                    "oldObject": convert(request.get("oldObject")),
                    "request": convert({k: request[k] for k in _REQUEST_FIELDS if request.get(k) is not None}),
                    "namespaceObject": to_cel(namespace_object(namespace) if self.namespace_name else None),
                    "authorizer": None,
                    **self.extra,
                }
            except CelEvaluationError as err:
                raise ReviewError(f"the request cannot be read as CEL values: {err}") from None
        return self._cel

    def param(self, param: Mapping[str, Any] | None) -> object:
        """``param`` as a CEL value (``None`` stays ``null``), converted once (``params``)."""
        return None if param is None else self.params.get(param)


class ParamValues:
    """Param objects as CEL values of ``backend``, converted once and kept across requests by the identity of the
    stored object (an object store replaces an object it updates and never changes one), at most ``MAX_PARAMS``
    of them (then it starts over). Thread-safe: a conversion may run twice, never wrongly."""

    MAX_PARAMS = 256

    def __init__(self, backend: Backend) -> None:
        self._converted = Kept(backend.to_cel, self.MAX_PARAMS)

    def get(self, param: Mapping[str, Any]) -> object:
        """``param`` as a CEL value; raises ``CelEvaluationError`` as ``Backend.to_cel``."""
        return self._converted(param)


def namespace_object(namespace: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The fields of a Namespace that ``namespaceObject`` exposes (``cel.CreateNamespaceObject``)."""
    if namespace is None:
        return None
    metadata = namespace.get("metadata") or {}
    kept: dict[str, Any] = {"metadata": {k: metadata[k] for k in _NAMESPACE_METADATA if k in metadata}}
    for part in ("spec", "status"):
        if part in namespace:
            kept[part] = namespace[part]
    return kept


class Activation(Values):
    """The CEL variables of one (policy, binding, param) evaluation, values of ``backend``."""

    __slots__ = ("backend",)

    def __init__(self, values: Mapping[str, object], backend: Backend) -> None:
        super().__init__(values)
        self.backend = backend


def evaluate(expression: Expression, activation: Activation) -> tuple[object, str | None]:
    """``(value, None)`` or ``(None, error message)`` of ``expression`` on ``activation``."""
    try:
        return expression.program.evaluate(activation), None
    except CelEvaluationError as err:
        return None, str(err)


def evaluate_together(program: Program | None, values: Activation) -> list[object] | None:
    """The results, as plain Python, of ``program``, one program of several expressions (``specs.all_of``), on
    ``values``; ``None`` without one, or where its evaluation ended in an error (which the expressions evaluated one
    by one word and attribute as the apiserver does)."""
    if program is None:
        return None
    try:
        return cast(list[object], values.backend.to_python(program.evaluate(values)))
    except CelEvaluationError:
        return None


class LazyVariables(Mapping[str, object]):
    """``variables``: each variable evaluated on first lookup against ``activation``, value or error kept.

    A failing variable reads as an error value ``composited variable "<name>" fails to evaluate: <error>``
    (``composition.go``), so only expressions that use it fail, and ``true || variables.bad`` is true.
    """

    def __init__(self, variables: tuple[Variable, ...], activation: Activation) -> None:
        self._expressions = {variable.name: variable.expression for variable in variables}
        # weakly: the activation holds this mapping, and a cycle would keep both, and cel-cpp's converted values of
        # the activation (``Values.prepared``), until the next garbage collection
        self._activation = weakref.ref(activation)
        self._values: dict[str, object] = {}
        #: the variables' values as a backend converted them for itself, by name (freed with this mapping)
        self.converted: dict[str, object] = {}

    def __getitem__(self, name: str) -> object:
        if name not in self._values:
            expression = self._expressions[name]  # KeyError for an unknown name: the checker rejects those
            activation = self._activation()
            if activation is None:  # pragma: no cover - read only while an evaluation holds the activation
                raise KeyError(name)
            value, error = evaluate(expression, activation)
            if error is not None:
                value = activation.backend.error_value(f'composited variable "{name}" fails to evaluate: {error}')
            self._values[name] = value
        return self._values[name]

    def __contains__(self, name: object) -> bool:
        return name in self._expressions

    def __iter__(self) -> Iterator[str]:
        return iter(self._expressions)

    def __len__(self) -> int:
        return len(self._expressions)


def activation(inputs: RequestInputs, params: object | None, *, param_kind: bool) -> Activation:
    """The activation of one (policy, binding, param) evaluation, without ``variables`` (matchConditions
    cannot read them; ``bind_variables`` adds them): the request's values and, if the policy has a
    ``param_kind``, ``params``, the CEL param (``None`` for no param: null). Without a paramKind the expressions
    do not declare ``params`` (``specs.policy_variables``), so the activation has none either."""
    values = Activation(inputs.cel, inputs.backend)
    if param_kind:
        values["params"] = params
    return values


def bind_variables(values: Activation, variables: tuple[Variable, ...]) -> None:
    """Set ``values["variables"]`` to a fresh ``LazyVariables`` over ``values``."""
    values["variables"] = LazyVariables(variables, values)


def match_conditions(conditions: tuple[MatchCondition, ...], values: Activation) -> bool | str:
    """``matchconditions.Matcher.Match``: ``False`` if any condition is false, else the errors (one text,
    ``[a, b]`` for several, as ``utilerrors.NewAggregate``), else ``True``."""
    errors = []
    for condition in conditions:
        value, error = evaluate(condition.expression, values)
        if error is not None:
            errors.append(f"expression '{condition.expression.text}' resulted in error: {error}")
        elif values.backend.to_python(value) is False:
            return False
    if errors:
        return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return True
