"""Kubernetes' JSON Patch library (``pkg/cel/library/jsonpatch.go``), for MutatingAdmissionPolicy::

    jsonpatch.escapeKey(string) -> string      RFC 6901 escaping of a key for a JSON Pointer path

``~`` becomes ``~0`` and ``/`` becomes ``~1`` (in that order, so ``~1`` in a key stays distinguishable).
Kubernetes declares it in the MutatingAdmissionPolicy environment only; here it is always available.
"""

from __future__ import annotations

from webhook.cel.libraries.registry import Namespace, Overload, namespaced

NAMESPACE = Namespace("jsonpatch")


def escape_key(_namespace: Namespace, key: str) -> str:
    """``jsonpatch.escapeKey(key)``."""
    return key.replace("~", "~0").replace("/", "~1")


OVERLOADS: tuple[Overload, ...] = (namespaced("jsonpatch", "escapeKey", escape_key, "string"),)
