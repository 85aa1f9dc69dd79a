"""Catalog image templates (automatic catalog switching), for ClusterCatalog manifests in Git.

A ClusterCatalog annotated ``olm.catalogImageTemplate`` gets its ``spec.source.image.ref`` from the template:

* well-known variables ``{kube_major_version}``, ``{kube_minor_version}``, ``{kube_patch_version}``, from the
  cluster's version (``kubeVersion`` in ``upgrade-gate.yaml``, else the API server's ``gitVersion``);
* ``{group:G,version:V,kind:K,name:N,namespace:NS,jsonpath:{.a.b}}``: a value of one cluster object (the
  variables in this order, no spaces; the JSONPath subset is fields and ``[index]``, client-go syntax).

When every variable resolves and the image differs, the manifest's reference is replaced (the one text
occurrence of the old reference, so comments and layout stay) and proposed like an upgrade. When any variable
does not resolve nothing changes, and the report carries the template's status message:
``Cannot construct catalog image reference, variable(s) "{kube_major_version}" couldn't be resolved``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.plan.actions import Action, Kind
from webhook.plan.extensions import Change, FileChange, Outcome, Planned, branch_name
from webhook.plan.manifests import Document

TEMPLATE_ANNOTATION = "olm.catalogImageTemplate"
_GVK = (
    r"\{group:(?P<group>[^,{}]*),version:(?P<version>[^,{}]*),kind:(?P<kind>[^,{}]*),"
    r"name:(?P<name>[^,{}]*),namespace:(?P<namespace>[^,{}]*),jsonpath:\{(?P<path>[^{}]*)\}\}"
)
_VARIABLE = re.compile(rf"{_GVK}|\{{(?P<plain>[^{{}}]*)\}}")
_KUBE_VERSION = re.compile(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_WELL_KNOWN = {"kube_major_version": 1, "kube_minor_version": 2, "kube_patch_version": 3}
_PATH_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")

Lookup = Callable[[str, str, str, str], Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True)
class TemplateResult:
    """A rendered template: the image, or the variables that did not resolve (in order of appearance)."""

    image: str | None
    unresolved: tuple[str, ...]

    @property
    def message(self) -> str:
        """The status message of catalog image templates when something did not resolve."""
        names = ", ".join(f'"{v}"' for v in self.unresolved)
        return f"Cannot construct catalog image reference, variable(s) {names} couldn't be resolved"


def render_template(template: str, kube_version: str | None, lookup: Lookup | None) -> TemplateResult:
    """Replace every ``{...}`` variable of ``template``; an unknown one, or one without a value, is unresolved."""
    unresolved: list[str] = []

    def value(match: re.Match[str]) -> str:
        found = _variable(match, kube_version, lookup)
        if found is None:
            unresolved.append(match.group(0))
            return match.group(0)
        return found

    image = _VARIABLE.sub(value, template)
    return TemplateResult(None if unresolved else image, tuple(unresolved))


def catalog_template(doc: Document) -> str | None:
    """The image template of a ClusterCatalog manifest (its ``olm.catalogImageTemplate`` annotation), if any."""
    metadata = doc.manifest.get("metadata") or {}
    template = (metadata.get("annotations") or {}).get(TEMPLATE_ANNOTATION)
    return template if isinstance(template, str) else None


def plan_catalog_image(doc: Document, text: str, result: TemplateResult, branch_prefix: str) -> Planned:
    """The change a templated ClusterCatalog needs: ``text`` is its file's content, ``result`` its template
    (``catalog_template``) as ``render_template`` rendered it."""
    metadata = doc.manifest.get("metadata") or {}
    subject = f"clustercatalog/{metadata.get('name')}"
    current = ((doc.manifest.get("spec") or {}).get("source") or {}).get("image", {}).get("ref")
    if result.image is None:
        return Outcome(subject, Action.UNRESOLVED, result.message, doc.file)
    if result.image == current:
        return Outcome(subject, Action.UNCHANGED, f"image {current} matches its template")
    if not isinstance(current, str) or text.count(current) != 1:
        reason = f"cannot edit {doc.file}: spec.source.image.ref must appear exactly once in the file"
        return Outcome(subject, Action.INVALID, reason, doc.file)
    return Change(
        subject=subject,
        kind=Kind.CATALOG_IMAGE,
        branch=branch_name(branch_prefix, subject),
        title=f"Switch ClusterCatalog {metadata.get('name')} to {result.image}",
        files=(FileChange(doc.file, text.replace(current, result.image)),),
        from_version=current,
        to_version=result.image,
        reason=f"The {TEMPLATE_ANNOTATION} template {catalog_template(doc)} resolves to {result.image}.",
    )


def _variable(match: re.Match[str], kube_version: str | None, lookup: Lookup | None) -> str | None:
    plain = match.group("plain")
    if plain is not None:
        part = _WELL_KNOWN.get(plain)
        parts = _KUBE_VERSION.match(kube_version or "")
        return parts.group(part) if part is not None and parts else None
    if lookup is None:
        return None
    group, version = match.group("group"), match.group("version")
    api_version = f"{group}/{version}" if group else version
    found = lookup(api_version, match.group("kind"), match.group("name"), match.group("namespace"))
    return None if found is None else _jsonpath(found, match.group("path"))


def _jsonpath(data: Any, path: str) -> str | None:
    position = 0
    for part in _PATH_PART.finditer(path):
        if part.start() != position:
            return None
        position = part.end()
        key, index = part.group(1), part.group(2)
        if key is not None and isinstance(data, Mapping) and key in data:
            data = data[key]
        elif index is not None and isinstance(data, list) and int(index) < len(data):
            data = data[int(index)]
        else:
            return None
    if position != len(path) or isinstance(data, Mapping | list) or data is None:
        return None
    return str(data).lower() if isinstance(data, bool) else str(data)
