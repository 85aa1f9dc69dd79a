"""The ClusterExtensionRevision condition contract as Argo CD and kstatus (Flux, ``kubectl wait``) read it.

The Argo CD health check (``examples/argocd/argocd-cm-health.yaml``) runs on Lua 5.1 through ``lupa``, the
dialect of Argo CD's gopher-lua, against a revision in each state; every state's conditions also pass the
metav1.Condition rules (``webhook.conditions``) and give kstatus's documented reading.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lupa.lua51 as lua51
import pytest
import yaml

from tests import tables
from webhook.conditions import validate_condition

ROOT = Path(__file__).resolve().parents[1]
KEY = "resource.customizations.health.olm.operatorframework.io_ClusterExtensionRevision"
CASES = tables.load("argocd/revision-health.yaml")


def _health(obj: dict[str, Any]) -> dict[str, str]:
    """Run the health check as Argo CD does: the script's body with ``obj`` set, its ``hs`` table returned."""
    script = yaml.safe_load((ROOT / "examples" / "argocd" / "argocd-cm-health.yaml").read_text())["data"][KEY]
    runtime = lua51.LuaRuntime(unpack_returned_tuples=True)
    check = runtime.eval(f"function(obj)\n{script}\nend")
    return dict(check(runtime.table_from(obj, recursive=True)))


def _kstatus(obj: dict[str, Any]) -> str:
    """kstatus's generic reading of a custom resource (cli-utils ``kstatus/status``, ``checkGenericProperties``)."""
    status = obj.get("status") or {}
    if status.get("observedGeneration", obj["metadata"]["generation"]) < obj["metadata"]["generation"]:
        return "InProgress"
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    if conditions.get("Reconciling") == "True":
        return "InProgress"
    if conditions.get("Stalled") == "True":
        return "Failed"
    return "Current"


@pytest.mark.parametrize("case", CASES, ids=[c["why"] for c in CASES])
def test_argo_cd_shows_the_revisions_state(case: dict[str, Any]) -> None:
    assert _health(case["object"]) == case["argocd"]


@pytest.mark.parametrize("case", CASES, ids=[c["why"] for c in CASES])
def test_kstatus_and_kubectl_wait_read_the_same_state(case: dict[str, Any]) -> None:
    conditions = (case["object"].get("status") or {}).get("conditions") or []
    for condition in conditions:
        validate_condition(condition)
    assert _kstatus(case["object"]) == case["kstatus"]
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) is case["ready"]
