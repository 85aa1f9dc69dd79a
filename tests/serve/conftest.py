"""Fixtures of the admission tests: the policy set and objects of tests/data/admission, review cases."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).parents[1] / "data" / "admission"
POLICIES = DATA / "policies"
OBJECTS = DATA / "objects"
CASES: list[dict[str, Any]] = yaml.safe_load((DATA / "reviews.yaml").read_text("utf-8"))["cases"]
BAD_REQUESTS: list[dict[str, Any]] = yaml.safe_load((DATA / "bad_requests.yaml").read_text("utf-8"))["cases"]


def summary(answer: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    """An AdmissionReview answer in the terms of a case's ``want`` (only the keys the case names beyond
    ``allowed``; the patch decoded)."""
    response = answer["response"]
    found: dict[str, Any] = {"allowed": response["allowed"]}
    status = response.get("status", {})
    for key in ("code", "reason", "message"):
        if key in want:
            found[key] = status.get(key)
    if "apiVersion" in want:
        found["apiVersion"] = answer["apiVersion"]
    if "warnings" in want or "warnings" in response:
        found["warnings"] = response.get("warnings")
    if "auditAnnotations" in want or "auditAnnotations" in response:
        found["auditAnnotations"] = response.get("auditAnnotations")
    if "patch" in want or "patch" in response:
        assert response.get("patchType") == "JSONPatch"
        found["patch"] = json.loads(base64.b64decode(response["patch"]))
    return found


def expected(case: dict[str, Any]) -> dict[str, Any]:
    """A case's ``want`` without the keys that are not part of the response."""
    return {key: value for key, value in case["want"].items() if key != "fail_closed"}


def bad_body(case: dict[str, Any]) -> bytes:
    """The body of a bad-request case: ``review`` as JSON, ``body_hex`` decoded, ``body_size`` blanks, or
    ``body`` as is."""
    if "review" in case:
        return json.dumps(case["review"]).encode()
    if "body_hex" in case:
        return bytes.fromhex(str(case["body_hex"]))
    if "body_size" in case:
        return b" " * int(case["body_size"])
    return str(case.get("body", "")).encode()
