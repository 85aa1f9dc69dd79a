"""What operator-controller's apply objects say: the release behind an index Secret or a ClusterObjectSet.

At an upgrade, OLM v1's operator-controller writes one object before it touches any bundle resource, and the
upgrade gate admits or denies that write:

- **Helm applier** (the default): the CREATE of a release *index Secret* (``type: operatorframework.io/index.v1``)
  in the OLM system namespace, stored by helm-operator-plugins' chunked Secrets driver. Its metadata labels give
  the extension (``name``), the Helm revision (``version``) and the release status (``status``:
  ``pending-install`` at a first install, ``pending-upgrade`` at an upgrade). ``data.chunk`` is base64 of the
  gzip of the release JSON; ``data.extraChunks`` the JSON list of further chunk Secrets (normally ``[]``).
  The bundle identity (``olm.operatorframework.io/bundle-name``, ``bundle-version``, ``package-name``,
  ``bundle-reference``, optionally ``bundle-release``) is one of the release's labels: helm-operator-plugins
  writes release labels onto the index Secret itself (as labels, or as annotations when a value is not a valid
  label value, such as an image reference), and releases written with the labels inside the payload carry them
  as its top-level ``"labels"`` object. Both are read, the Secret's metadata first, so the payload is only
  decompressed when the metadata does not say.
- **Boxcutter applier** (feature gate ``BoxcutterRuntime``): the CREATE of a ``ClusterObjectSet``
  (``olm.operatorframework.io/v1``) named ``<extension>-<revision>``, labelled
  ``olm.operatorframework.io/owner-name``, with the bundle identity in its annotations and ``spec.revision``.

Decoding is bounded: at most ``MAX_CHUNK_BYTES`` of compressed data, ``MAX_PAYLOAD_BYTES`` once
decompressed (a gzip bomb stops there), inflated in steps within ``DECODE_SECONDS``. Whatever cannot be read
raises ``ReleaseError`` with a message that names the object and what was wrong.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from webhook.errors import ReleaseError

INDEX_SECRET_TYPE = "operatorframework.io/index.v1"
"""``type`` of helm-operator-plugins' release index Secret."""

BUNDLE_LABELS = {
    "name": "olm.operatorframework.io/bundle-name",
    "version": "olm.operatorframework.io/bundle-version",
    "package": "olm.operatorframework.io/package-name",
    "reference": "olm.operatorframework.io/bundle-reference",
    "release": "olm.operatorframework.io/bundle-release",
}
"""The release labels (Helm) or annotations (Boxcutter) operator-controller's ``ApplyBundle`` sets, by field."""

OWNER_NAME_LABEL = "olm.operatorframework.io/owner-name"
MIGRATED_LABEL = "olm.operatorframework.io/migrated-from-helm"

MAX_CHUNK_BYTES = 2 * 1024 * 1024
"""Compressed bytes read from ``data.chunk``: a Secret holds at most 1 MiB, so more is not a release."""
MAX_PAYLOAD_BYTES = 32 * 1024 * 1024
"""Decompressed bytes of a release payload; beyond this it is refused as a gzip bomb."""
DECODE_SECONDS = 1.0
"""Wall-clock bound of one payload's inflation (checked every ``_STEP`` bytes of output)."""
_STEP = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReleaseBundle:
    """The bundle a release installs, from operator-controller's bundle labels (``release`` may be empty)."""

    name: str
    version: str
    package: str
    reference: str
    release: str = ""


@dataclass(frozen=True, slots=True)
class Release:
    """One release of a ClusterExtension as operator-controller writes it.

    ``applier`` is ``helm`` or ``boxcutter``; ``revision`` the Helm release version or the ClusterObjectSet's
    ``spec.revision`` (1 at a first install); ``status`` the Helm status (``pending-install``,
    ``pending-upgrade``, ``deployed``, ...) or the ClusterObjectSet's ``spec.lifecycleState``; ``migrated``
    marks a ClusterObjectSet created by the migration from Helm (not an upgrade).
    """

    applier: Literal["helm", "boxcutter"]
    extension: str
    revision: int
    status: str
    bundle: ReleaseBundle
    migrated: bool = False

    def as_map(self) -> dict[str, Any]:
        """The CEL value of ``olm.release``: ``{applier, extension, revision, status, migrated, bundle: {name,
        version, package, reference[, release]}}`` (``release`` only when the bundle has one)."""
        bundle = {
            "name": self.bundle.name,
            "version": self.bundle.version,
            "package": self.bundle.package,
            "reference": self.bundle.reference,
        }
        if self.bundle.release:
            bundle["release"] = self.bundle.release
        return {
            "applier": self.applier,
            "extension": self.extension,
            "revision": self.revision,
            "status": self.status,
            "migrated": self.migrated,
            "bundle": bundle,
        }


def read_release(obj: Mapping[str, Any]) -> Release:
    """The release behind an index Secret or a ClusterObjectSet, as a Kubernetes object (JSON map).

    Raises ``ReleaseError`` for any other object, or one that does not say which extension, revision or bundle
    it holds, or whose payload cannot be decoded within the bounds of this module.
    """
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    if kind == "Secret" and obj.get("type") == INDEX_SECRET_TYPE:
        return _helm_release(obj)
    if kind == "ClusterObjectSet":
        return _boxcutter_release(obj)
    raise ReleaseError(
        f"{_describe(obj)} is not an operator-controller release: expected a Secret of type {INDEX_SECRET_TYPE} "
        "or a ClusterObjectSet"
    )


def _field(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    found = obj.get(key)
    return found if isinstance(found, Mapping) else {}


def _describe(obj: Any) -> str:
    if not isinstance(obj, Mapping):
        return f"a {type(obj).__name__}"
    metadata = _field(obj, "metadata")
    name = metadata.get("name") or metadata.get("generateName") or "<unnamed>"
    namespace = metadata.get("namespace")
    return f"{obj.get('kind') or 'object'} {namespace + '/' if namespace else ''}{name}"


def _string_map(obj: Mapping[str, Any], field: str) -> dict[str, str]:
    found = _field(_field(obj, "metadata"), field)
    return {str(key): value for key, value in found.items() if isinstance(value, str)}


def _bundle(where: str, values: Mapping[str, str]) -> ReleaseBundle:
    missing = [BUNDLE_LABELS[field] for field in ("name", "version") if not values.get(BUNDLE_LABELS[field])]
    if missing:
        raise ReleaseError(f"{where} does not name its bundle: no {' or '.join(missing)}")
    return ReleaseBundle(**{field: values.get(key, "") for field, key in BUNDLE_LABELS.items()})


def _revision(where: str, text: Any) -> int:
    try:
        number = int(str(text), 10)
    except ValueError:
        number = 0
    if number < 1:
        raise ReleaseError(f"{where} has no valid revision: {text!r} is not a positive integer")
    return number


def _helm_release(secret: Mapping[str, Any]) -> Release:
    where = _describe(secret)
    labels = _string_map(secret, "labels")
    metadata_labels = {**labels, **_string_map(secret, "annotations")}
    if not metadata_labels.get(BUNDLE_LABELS["version"]):
        payload = decode_payload(where, secret.get("data"))
        payload_labels = payload.get("labels")
        if isinstance(payload_labels, Mapping):
            metadata_labels = {**{k: v for k, v in payload_labels.items() if isinstance(v, str)}, **metadata_labels}
    for key in ("name", "version", "status"):
        if not labels.get(key):
            raise ReleaseError(f"{where} is not a release index: it has no label {key!r}")
    return Release(
        applier="helm",
        extension=labels["name"],
        revision=_revision(where, labels["version"]),
        status=labels["status"],
        bundle=_bundle(where, metadata_labels),
    )


def decode_payload(where: str, data: Any) -> dict[str, Any]:
    """The release JSON of an index Secret's ``data`` (``chunk``: base64 of gzip; ``extraChunks``: base64 of a
    JSON list of names), as a dict.

    Bounded by ``MAX_CHUNK_BYTES``, ``MAX_PAYLOAD_BYTES`` and ``DECODE_SECONDS``. Raises ``ReleaseError`` when a
    field is missing or is not base64, gzip or JSON, when a bound is passed, and when the release continues in
    extra chunk Secrets (which are created after the index, so an admission of the index cannot read them).
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("chunk"), str):
        raise ReleaseError(f"{where} has no data.chunk")
    chunk = data["chunk"]
    if len(chunk) > (MAX_CHUNK_BYTES * 4) // 3 + 4:
        raise ReleaseError(f"{where}: data.chunk is over {MAX_CHUNK_BYTES // 1024} KiB, larger than a release chunk")
    try:
        compressed = base64.b64decode(chunk, validate=True)
    except (binascii.Error, ValueError):
        raise ReleaseError(f"{where}: data.chunk is not base64") from None
    payload, complete = _inflate(where, compressed)
    if not complete:
        extra = _extra_chunks(where, data.get("extraChunks"))
        if extra:
            raise ReleaseError(
                f"{where}: the release continues in {len(extra)} extra chunk Secret(s), written after the index, "
                "and the index does not name its bundle"
            )
        raise ReleaseError(f"{where}: data.chunk ends before its gzip stream does")
    try:
        document = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        detail = f": {error.msg} at byte {error.pos}" if isinstance(error, json.JSONDecodeError) else ""
        raise ReleaseError(f"{where}: the release in data.chunk is not JSON{detail}") from None
    if not isinstance(document, dict):
        raise ReleaseError(f"{where}: the release in data.chunk is not a JSON object")
    return document


def _inflate(where: str, compressed: bytes) -> tuple[bytes, bool]:
    """The gzip stream inflated, and whether it ended (a release split over chunks does not end here)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    deadline = time.monotonic() + DECODE_SECONDS
    parts: list[bytes] = []
    size = 0
    pending = compressed
    try:
        while pending and not inflater.eof:
            part = inflater.decompress(pending, _STEP)
            pending = inflater.unconsumed_tail
            size += len(part)
            if size > MAX_PAYLOAD_BYTES:
                raise ReleaseError(
                    f"{where}: the release in data.chunk inflates past {MAX_PAYLOAD_BYTES // (1024 * 1024)} MiB; "
                    "refused as a gzip bomb"
                )
            if time.monotonic() > deadline:
                raise ReleaseError(f"{where}: inflating the release in data.chunk took over {DECODE_SECONDS:g} s")
            parts.append(part)
    except zlib.error as error:
        raise ReleaseError(f"{where}: data.chunk is not gzip data ({error})") from None
    return b"".join(parts), inflater.eof


def _extra_chunks(where: str, text: Any) -> list[str]:
    if text is None:
        return []
    try:
        names = json.loads(base64.b64decode(str(text), validate=True))
    except (binascii.Error, ValueError):
        raise ReleaseError(f"{where}: data.extraChunks is not base64 of a JSON list") from None
    if not isinstance(names, list):
        raise ReleaseError(f"{where}: data.extraChunks is not a JSON list")
    return [str(name) for name in names]


def _boxcutter_release(object_set: Mapping[str, Any]) -> Release:
    where = _describe(object_set)
    labels = _string_map(object_set, "labels")
    extension = labels.get(OWNER_NAME_LABEL, "")
    if not extension:
        raise ReleaseError(f"{where} does not name its ClusterExtension: no label {OWNER_NAME_LABEL}")
    spec = _field(object_set, "spec")
    return Release(
        applier="boxcutter",
        extension=extension,
        revision=_revision(where, spec.get("revision")),
        status=str(spec.get("lifecycleState") or "Active"),
        bundle=_bundle(where, _string_map(object_set, "annotations")),
        migrated=labels.get(MIGRATED_LABEL) == "true",
    )
