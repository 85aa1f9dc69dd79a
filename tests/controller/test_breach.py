"""An installed version that changed with no approved revision (``webhook.controller.breach``)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.controller.breach import unapproved_change


def extension(installed: str | None) -> dict[str, Any]:
    status = {"install": {"bundle": {"name": f"cnpg.v{installed}", "version": installed}}} if installed else {}
    return {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "metadata": {"name": "cnpg"},
            "status": status}  # fmt: skip


def revision(version: str, *, approved: bool, owner: str = "cnpg") -> dict[str, Any]:
    return {"metadata": {"name": f"{owner}-{version}"},
            "spec": {"clusterExtensionRef": {"name": owner}, "version": version, "approved": approved}}  # fmt: skip


@pytest.mark.parametrize(
    ("before", "installed", "revisions", "breach"),
    [
        pytest.param("1.27.1", "1.28.0", [], True, id="an upgrade no revision proposes"),
        pytest.param("1.27.1", "1.28.0", [revision("1.28.0", approved=False)], True,
                     id="an upgrade whose revision is not approved"),
        pytest.param("1.27.1", "1.28.0", [revision("1.28.1", approved=True)], True,
                     id="an upgrade to another version than the approved one"),
        pytest.param("1.27.1", "1.28.0", [revision("1.28.0", approved=True, owner="other")], True,
                     id="an approval of another extension does not count"),
        pytest.param("1.28.0", "1.27.1", [], True, id="a rollback without approval"),
        pytest.param("1.27.1", "1.28.0", [revision("1.28.0", approved=True)], False, id="an approved upgrade"),
        pytest.param(None, "1.27.1", [], False, id="a first install, or a version not seen before"),
        pytest.param("1.27.1", "1.27.1", [], False, id="no change"),
        pytest.param("1.27.1", None, [], False, id="nothing installed any more"),
    ],
)  # fmt: skip
def test_an_unapproved_change_of_the_installed_version(
    before: str | None, installed: str | None, revisions: list[dict[str, Any]], breach: bool
) -> None:
    note = unapproved_change(before, extension(installed), revisions)
    if not breach:
        assert note is None
        return
    assert note == (
        f"ClusterExtension cnpg changed from {before} to {installed} without an approved ClusterExtensionRevision: "
        "the gate was down, bypassed or not installed when operator-controller applied it"
    )
