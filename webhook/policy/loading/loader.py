"""Load a policy set: admission policies, their bindings and param objects, validated and compiled.

Input: multi-document YAML/JSON files or directories (``load_policy_set``) or text (``load_policy_text``).
Documents of the kinds ``ValidatingAdmissionPolicy``/``...Binding`` (``admissionregistration.k8s.io/v1``,
``v1beta1``) and ``MutatingAdmissionPolicy``/``...Binding`` (``v1``, ``v1beta1``, ``v1alpha1``, whose fields are the
same; only v1alpha1 defaults a binding's ``paramRef.parameterNotFoundAction``) become the model of
``webhook.policy.model``; any other object (ConfigMap, custom resource) is a param object.

A set is loaded for one Kubernetes version (``webhook.settings.KUBERNETES_VERSIONS``, default the newest): a document
of an API version that version does not serve (``SERVED``) is refused, and every expression is compiled in the CEL
environment the apiserver of that version gives a new policy (``webhook.cel.versions``).

Validation is the apiserver's on create (kubernetes ``pkg/apis/admissionregistration/validation/
validation.go``) after its defaulting (``pkg/apis/admissionregistration/v1/defaults.go``), with the same
``field.Error`` wording, plus strict decoding (unknown or repeated fields) and every CEL expression compiled
in the environment its field gets at run time. Deliberate differences, all stricter:
``reason: Unauthorized`` is refused as upstream's validation does (the API docs list it);
``auditAnnotations`` may not use ``authorizer`` (the apiserver accepts it, then fails at run time).

All problems of the whole set are collected, then one ``PolicyLoadError`` lists them, one per line:
``<file>:<line>:<column>: document <n> (<Kind>/<name>): <field path>: <detail>``. A set loads whole or not.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from webhook import apivalidation as api
from webhook.cel import version_key
from webhook.errors import InputError, PolicyLoadError
from webhook.policy import model
from webhook.policy.loading.documents import (
    Document,
    MarkedList,
    MarkedMap,
    Position,
    Source,
    parse_documents,
    plain,
    read_documents,
    read_paths,
)
from webhook.policy.loading.fields import At, Compiler, FieldReader
from webhook.policy.loading.mutating import mutating_binding, mutating_policy
from webhook.policy.loading.validating import validating_binding, validating_policy
from webhook.settings import DEFAULT_CEL_ENGINE, DEFAULT_KUBERNETES_VERSION, kubernetes_version

GROUP = "admissionregistration.k8s.io"
VAP, VAPB = "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"
MAP, MAPB = "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"
_VERSIONS = {
    VAP: ("v1", "v1beta1"),
    VAPB: ("v1", "v1beta1"),
    MAP: ("v1", "v1beta1", "v1alpha1"),
    MAPB: ("v1", "v1beta1", "v1alpha1"),
}
_TOP = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
#: The API versions whose defaulting gives a binding's ``paramRef.parameterNotFoundAction`` (``Deny``):
#: ``SetDefaults_ParamRef`` of kubernetes ``pkg/apis/admissionregistration/v1alpha1/defaults.go``; v1beta1 and v1
#: have none, so there the apiserver refuses a paramRef without it (``Required value``).
_DEFAULTS_NOT_FOUND_ACTION = frozenset({"v1alpha1"})
#: The Kubernetes versions that serve each (kind, API version), ``(first, removed)`` (``None``: not removed): the
#: ``+k8s:prerelease-lifecycle-gen`` tags of k8s.io/api ``admissionregistration/<version>/types.go`` (introduced,
#: removed), and GA ``v1`` from its release. Alpha and beta versions are served where the apiserver enables them
#: (``--runtime-config``, and for MutatingAdmissionPolicy before 1.36 its feature gate).
SERVED: dict[tuple[str, str], tuple[str, str | None]] = {
    **dict.fromkeys(((VAP, "v1beta1"), (VAPB, "v1beta1")), ("1.28", "1.34")),
    **dict.fromkeys(((VAP, "v1"), (VAPB, "v1")), ("1.30", None)),
    **dict.fromkeys(((MAP, "v1alpha1"), (MAPB, "v1alpha1")), ("1.32", "1.38")),
    **dict.fromkeys(((MAP, "v1beta1"), (MAPB, "v1beta1")), ("1.34", "1.40")),
    **dict.fromkeys(((MAP, "v1"), (MAPB, "v1")), ("1.36", None)),
}


@functools.cache
def _compiler(engine: str, version: str) -> Compiler:
    """The CEL compiler of ``webhook.cel`` on the backend ``engine`` for Kubernetes ``version``, one per
    process (environments built on demand, programs kept for the next load)."""
    from webhook.policy.loading.compiling import CelCompiler  # noqa: PLC0415 - keeps the CEL engines out of import time

    try:
        return CelCompiler(engine, version)
    except ValueError as err:
        raise InputError(str(err)) from None


def load_policy_set(
    paths: Iterable[str | Path], *, engine: str = DEFAULT_CEL_ENGINE, version: str = DEFAULT_KUBERNETES_VERSION
) -> model.PolicySet:
    """Load every document of the files and directories ``paths`` as one set, compiled for the CEL backend
    ``engine`` (``webhook.settings.CEL_ENGINES``) as the apiserver of Kubernetes ``version`` (``KUBERNETES_VERSIONS``)
    takes a new policy. Raises ``PolicyLoadError``; ``InputError`` for an unknown engine or version."""
    return _build(read_paths(paths), engine, version)


def load_policy_text(
    text: str, *, file: str = "<string>", engine: str = DEFAULT_CEL_ENGINE, version: str = DEFAULT_KUBERNETES_VERSION
) -> model.PolicySet:
    """Load the documents of ``text`` (named ``file`` in messages) as one set, as ``load_policy_set``."""
    return _build(parse_documents(text, file), engine, version)


def load_policy_sources(
    sources: Iterable[Source], *, engine: str = DEFAULT_CEL_ENGINE, version: str = DEFAULT_KUBERNETES_VERSION
) -> model.PolicySet:
    """Load the documents of ``sources`` (file name, text) as one set, as ``load_policy_set`` loads the files."""
    return _build(read_documents(sources), engine, version)


def _build(documents: list[Document], engine: str, version: str) -> model.PolicySet:
    version = kubernetes_version(version, "Kubernetes version")
    compiler = _compiler(engine, version)
    problems: list[str] = []
    found: dict[str, list[Any]] = {VAP: [], VAPB: [], MAP: [], MAPB: [], "": []}
    seen: dict[tuple[str, ...], Document] = {}
    for document in documents:
        reader = FieldReader(document, compiler)
        read = _read_document(reader, version)
        if read is not None:
            kind, identity, value = read
            if identity in seen:
                place = At("metadata.name", document.content["metadata"].at("name"))
                reader.fail(place, api.duplicate(identity[-1]) + f" (also in {_where(seen[identity])})")
            seen[identity] = document
            found[kind].append(value)
        problems.extend(reader.report())
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise PolicyLoadError(f"the policy set does not load ({count}):\n" + "\n".join(problems), tuple(problems))
    return model.PolicySet(
        validating_policies=tuple(found[VAP]),
        validating_bindings=tuple(found[VAPB]),
        mutating_policies=tuple(found[MAP]),
        mutating_bindings=tuple(found[MAPB]),
        params=tuple(found[""]),
        engine=engine,
        kubernetes_version=version,
    )


def _where(document: Document) -> str:
    return f"{document.file} document {document.index}"


_Read = tuple[str, tuple[str, ...], Any]


def _read_document(reader: FieldReader, kubernetes: str) -> _Read | None:
    """``(kind, identity, value)``; ``kind`` is ``""`` for a param object, whose value is the plain object.
    ``None`` after a problem, among them an API version Kubernetes ``kubernetes`` does not serve (``SERVED``). Two
    documents with one identity are the same object, given twice."""
    content = reader.document.content
    if not isinstance(content, MarkedMap):
        where = content.start if isinstance(content, MarkedList) else Position(1, 1)
        reader.fail(At("(document)", where), "must be a Kubernetes object (a mapping)")
        return None
    top = At("", content.start)
    kind = reader.string(content, top, "kind") or ""
    api_version = reader.string(content, top, "apiVersion") or ""
    metadata = reader.mapping(content.get("metadata"), reader.child(content, top, "metadata"), None)
    reader.name_object(kind or "<no kind>", metadata.get("name") if metadata else None)
    for key, given in (("apiVersion", api_version), ("kind", kind)):
        if not given:
            reader.fail(reader.child(content, top, key), api.required())
    if not kind or not api_version:
        return None
    group, _, version = api_version.rpartition("/")
    if kind not in _VERSIONS or group != GROUP:
        return _read_param(reader, content, top, api_version, kind)
    if version not in _VERSIONS[kind]:
        place = reader.child(content, top, "apiVersion")
        reader.fail(place, api.not_supported(api_version, [f"{GROUP}/{v}" for v in _VERSIONS[kind]]))
        return None
    unserved = _unserved(kind, version, kubernetes)
    if unserved is not None:
        reader.fail(reader.child(content, top, "apiVersion"), unserved)
        return None
    if kind in (VAPB, MAPB) and version not in _DEFAULTS_NOT_FOUND_ACTION:
        _require_not_found_action(reader, content)
    reader.mapping(content, top, _TOP)
    before = len(reader.problems)
    name = _object_name(reader, content, top)
    spec_at = reader.child(content, top, "spec")
    spec = reader.mapping(content.get("spec"), spec_at, None) or _empty(spec_at)
    value = _READERS[kind](reader, name, spec, spec_at)
    if kind in (VAP, MAP):
        value = dataclasses.replace(value, api_version=version)  # type: ignore[type-var]
    return None if len(reader.problems) > before else (kind, (kind, name), value)


def serves(kubernetes: str, kind: str, version: str) -> bool:
    """Whether Kubernetes ``kubernetes`` serves ``kind`` in ``admissionregistration.k8s.io/<version>`` (``SERVED``)."""
    first, removed = SERVED[kind, version]
    return version_key(first) <= version_key(kubernetes) and (
        removed is None or version_key(kubernetes) < version_key(removed)
    )


def _unserved(kind: str, version: str, kubernetes: str) -> str | None:
    """Why Kubernetes ``kubernetes`` does not serve ``kind`` in ``admissionregistration.k8s.io/<version>`` (naming
    the versions it serves and those that serve this one), or None."""
    if serves(kubernetes, kind, version):
        return None
    first, removed = SERVED[kind, version]
    window = f"served from Kubernetes {first}" + (f" until {removed}" if removed else "")
    served = [f"{GROUP}/{other}" for other in _VERSIONS[kind] if serves(kubernetes, kind, other)]
    instead = f"; it serves {', '.join(served)}" if served else ""
    return f"{GROUP}/{version} is not served by Kubernetes {kubernetes} ({window}){instead}"


def _require_not_found_action(reader: FieldReader, content: MarkedMap) -> None:
    """``spec.paramRef.parameterNotFoundAction: Required value`` where a binding's paramRef lacks it: only
    ``v1alpha1`` defaults it (``_DEFAULTS_NOT_FOUND_ACTION``), and ``validateParamRef`` requires it."""
    spec = content.get("spec")
    param_ref = spec.get("paramRef") if isinstance(spec, MarkedMap) else None
    if isinstance(param_ref, MarkedMap) and not param_ref.get("parameterNotFoundAction"):
        reader.fail(At("spec.paramRef.parameterNotFoundAction", param_ref.start), api.required())


def _empty(at: At) -> MarkedMap:
    empty = MarkedMap()
    empty.start, empty.positions, empty.styles, empty.duplicates = at.position, {}, {}, []
    return empty


def _read_param(reader: FieldReader, content: MarkedMap, top: At, api_version: str, kind: str) -> _Read | None:
    metadata = content.get("metadata")
    name = metadata.get("name") if isinstance(metadata, MarkedMap) else None
    if not isinstance(name, str) or not name:
        where = metadata.at("name") if isinstance(metadata, MarkedMap) else content.at("metadata")
        reader.fail(At("metadata.name", where), api.required())
        return None
    namespace = metadata.get("namespace") if isinstance(metadata, MarkedMap) else None
    return "", (api_version, kind, str(namespace or ""), name), plain(content)


def _object_name(reader: FieldReader, content: MarkedMap, top: At) -> str:
    metadata = content.get("metadata")
    if not isinstance(metadata, MarkedMap):
        reader.fail(At("metadata.name", top.position), api.required("name or generateName is required"))
        return ""
    return reader.name(metadata, At("metadata", metadata.start), "name", api.is_dns1123_subdomain)


_READERS: dict[str, Callable[[FieldReader, str, MarkedMap, At], object]] = {
    VAP: validating_policy,
    VAPB: validating_binding,
    MAP: mutating_policy,
    MAPB: mutating_binding,
}
