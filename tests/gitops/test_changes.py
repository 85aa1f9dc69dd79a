"""The governed objects of two file trees and the requests applying one over the other makes (cases in
tests/data/gitops/changes.yaml)."""

from __future__ import annotations

from typing import Any

import pytest

from tests import tables
from webhook.gitops.changes import describe, matching, object_changes, read_manifests

CASES = tables.load("gitops/changes.yaml")


@pytest.mark.parametrize("case", tables.params(CASES["matching"]))
def test_matching(case: dict[str, Any]) -> None:
    assert matching(case["paths"], case["patterns"]) == case["matched"]


@pytest.mark.parametrize("case", tables.params(CASES["changes"]))
def test_object_changes(case: dict[str, Any]) -> None:
    base, head = read_manifests(case["base"]), read_manifests(case["head"])
    changes, duplicates = object_changes(base.objects, head.objects)
    assert [f"{c.operation} {describe(c.subject.key)} {c.subject.file}" for c in changes] == case["changes"]
    problems = [f"{p.file}:{p.line}" for p in head.problems] + [str(p) for p in duplicates]
    assert problems == case.get("problems", [])
