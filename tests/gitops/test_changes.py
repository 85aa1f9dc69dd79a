"""The governed objects of two file trees and the requests applying one over the other makes (cases in
tests/data/gitops/changes.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.gitops.changes import describe, matching, object_changes, read_manifests

ROOT = Path(__file__).resolve().parents[2]
CASES = yaml.safe_load((ROOT / "tests" / "data" / "gitops" / "changes.yaml").read_text())


@pytest.mark.parametrize("case", CASES["matching"], ids=[c["id"] for c in CASES["matching"]])
def test_matching(case: dict[str, Any]) -> None:
    assert matching(case["paths"], case["patterns"]) == case["matched"]


@pytest.mark.parametrize("case", CASES["changes"], ids=[c["id"] for c in CASES["changes"]])
def test_object_changes(case: dict[str, Any]) -> None:
    base, head = read_manifests(case["base"]), read_manifests(case["head"])
    changes, duplicates = object_changes(base.objects, head.objects)
    assert [f"{c.operation} {describe(c.subject.key)} {c.subject.file}" for c in changes] == case["changes"]
    problems = [f"{p.file}:{p.line}" for p in head.problems] + [str(p) for p in duplicates]
    assert problems == case.get("problems", [])
