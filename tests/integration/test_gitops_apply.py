"""Approvals reviewed in Git, applied by Argo CD and Flux, against a real kube-apiserver and the chart's webhooks.

The sync loop runs on real git repositories with the real catalog (``tests.sync.conftest.World``); its pull
requests are merged, and the revisions directory of the base branch is applied the way each GitOps tool applies
a repository: every manifest first, then the prune of what left the repository. The appliers run real ``kubectl``
under the tools' service accounts (impersonated):

- Argo CD's application controller applies client-side (``kubectl apply``: a three-way merge with the
  ``last-applied-configuration`` annotation), Argo CD's default;
- Flux's kustomize-controller applies server-side with its field manager and forced conflicts.

Nothing runs operator-controller: the tests write a ClusterExtension's status as it does, and probe the gate with
its release index Secret (a server-side dry run).
"""

from __future__ import annotations

import datetime
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from tests.apiserver import ApiServer, wait_for
from tests.integration.conftest import Webhook
from tests.integration.olm import (
    EXTENSIONS,
    REVISIONS,
    as_operator_controller,
    create,
    extension,
    index_secret,
    propose,
)
from tests.sync.conftest import World, gitops_world

pytestmark = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not on PATH (Argo CD and Flux apply as kubectl does)"
)

NAME = "cloudnative-pg"
BRANCH = f"upgrade-gate/{NAME}"
REVISIONS_DIR = "clusters/prod/revisions"
EXTENSION_FILE = f"clusters/prod/extensions/{NAME}.yaml"
REVIEWED_BY = "upgrade-gate.io/reviewed-by"
VALIDATE = 'admission webhook "validate.upgrade-gate.dev" denied the request: '


@dataclass(frozen=True)
class Tool:
    """A GitOps tool: its name, the service account it applies as (user and groups), and how it applies."""

    name: str
    user: str
    groups: tuple[str, ...]
    server_side: bool


ARGO_CD = Tool(
    "Argo CD",
    "system:serviceaccount:argocd:argocd-application-controller",
    ("system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated"),
    server_side=False,
)
FLUX = Tool(
    "Flux",
    "system:serviceaccount:flux-system:kustomize-controller",
    ("system:serviceaccounts", "system:serviceaccounts:flux-system", "system:authenticated"),
    server_side=True,
)
UNTRUSTED = Tool(
    "Argo CD's API server",
    "system:serviceaccount:argocd:argocd-server",
    ("system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated"),
    server_side=False,
)


@dataclass
class Applier:
    """``tool`` applying manifests to ``cluster`` as its service account, and pruning what left its directory
    (``inventory``: the objects its last sync applied)."""

    tool: Tool
    cluster: ApiServer
    inventory: set[str] = field(default_factory=set)

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        identity = ["--as", self.tool.user, *(f"--as-group={g}" for g in self.tool.groups)]
        return subprocess.run(
            ["kubectl", "--kubeconfig", self.cluster.kubeconfig, *identity, *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    def apply(self, manifest: Path) -> str | None:
        """Apply one file; ``None`` when admitted, else kubectl's error."""
        server_side = ["--server-side", "--field-manager=kustomize-controller", "--force-conflicts"]
        done = self.kubectl("apply", *(server_side if self.tool.server_side else []), "-f", str(manifest))
        return None if done.returncode == 0 else done.stderr.strip()

    def sync(self, directory: Path) -> list[str]:
        """Apply every manifest of ``directory``, then delete what an earlier sync applied that is gone (Argo CD
        prunes after it applies; Flux garbage-collects after it applies). Every error, in order."""
        errors, names = [], set()
        for manifest in sorted(directory.glob("*.yaml")):
            names.add(yaml.safe_load(manifest.read_text())["metadata"]["name"])
            error = self.apply(manifest)
            if error is not None:
                errors.append(error)
        for name in sorted(self.inventory - names):
            done = self.kubectl("delete", "clusterextensionrevision", name, "--wait=false")
            if done.returncode != 0:
                errors.append(done.stderr.strip())
        self.inventory = names
        return errors


TRUSTED = f"{ARGO_CD.user}, {FLUX.user}"


@pytest.fixture(scope="module")
def gitops(cluster: ApiServer) -> ApiServer:
    """The appliers may write anything, as both tools usually may (cluster-admin)."""
    cluster.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"gitops-{index}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": tool.user}],
        }
        for index, tool in enumerate((ARGO_CD, FLUX, UNTRUSTED))
    )
    return cluster


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with gitops_world(tmp_path, monkeypatch) as built:
        yield built


def revision(cluster: ApiServer, name: str) -> dict[str, object]:
    found = client.CustomObjectsApi(cluster.client()).get_cluster_custom_object(*REVISIONS, name)
    assert isinstance(found, dict)
    return found


def revisions_of(cluster: ApiServer, extension_name: str) -> list[str]:
    listed = client.CustomObjectsApi(cluster.client()).list_cluster_custom_object(
        *REVISIONS, label_selector=f"clusterextension={extension_name}"
    )
    assert isinstance(listed, dict)
    return sorted(item["metadata"]["name"] for item in listed["items"])


def set_installed(cluster: ApiServer, world: World, version: str) -> None:
    """The installed version, in the repository (the sync loop reads it offline) and in the cluster's status."""
    path = world.human / EXTENSION_FILE
    text = re.sub(r"(name: cloudnative-pg\.v)[\d.]+", rf"\g<1>{version}", path.read_text())
    path.write_text(re.sub(r"(\n +version: )[\d.]+", rf"\g<1>{version}", text))
    status = {"install": {"bundle": {"name": f"{NAME}.v{version}", "version": version}}}
    client.CustomObjectsApi(cluster.client()).patch_cluster_custom_object_status(*EXTENSIONS, NAME, {"status": status})


def merged(world: World) -> Path:
    """Merge the proposal's pull request; the revisions directory of the base branch, as the tools see it."""
    world.merge(BRANCH)
    world.pull()
    return world.human / REVISIONS_DIR


@pytest.mark.parametrize("tool", [ARGO_CD, FLUX], ids=lambda tool: tool.name)
def test_the_sync_loops_proposals_and_a_reviewed_approval_are_admitted_as_each_tool_applies_them(
    gitops: ApiServer, webhook: Webhook, world: World, tool: Tool
) -> None:
    applier = Applier(tool, gitops)
    extension(gitops.client(), NAME, "1.29.1")
    try:
        with webhook.settings(gitopsAppliers=TRUSTED):
            # SelfCertified: any version in range; 1.29.1 installed, the catalog stops at 1.29.2.
            path = world.human / EXTENSION_FILE
            path.write_text(
                path.read_text().replace(
                    "channels: [stable-v1]", "channels: [stable-v1]\n      upgradeConstraintPolicy: SelfCertified"
                )
            )
            set_installed(gitops, world, "1.29.1")
            world.copy_catalog({NAME: "1.29.2"})
            world.push("cloudnative-pg 1.29.1 installed; the catalog stops at 1.29.2")
            world.now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=3)  # past the soak period

            # 1. The proposal: a CREATE.
            world.sync()
            assert applier.sync(merged(world)) == []
            assert revisions_of(gitops, NAME) == [f"{NAME}-1.29.2"]
            assert revision(gitops, f"{NAME}-1.29.2")["spec"]["approved"] is False  # type: ignore[index]

            # 2. A newer upgrade: the same revision updated in place, an UPDATE the one-revision rule admits.
            world.copy_catalog()
            world.push("the catalog now has 1.30.0")
            world.sync()
            assert applier.sync(merged(world)) == []
            assert revisions_of(gitops, NAME) == [f"{NAME}-1.29.2"]
            assert revision(gitops, f"{NAME}-1.29.2")["spec"]["version"] == "1.30.0"  # type: ignore[index]

            # 3. The approval, reviewed in the pull request and applied by the trusted tool: the reviewer is recorded.
            file = world.human / REVISIONS_DIR / f"{NAME}-1.29.2.yaml"
            approval = yaml.safe_load(file.read_text())
            approval["metadata"]["annotations"] = {REVIEWED_BY: "carol"}
            approval["spec"]["approved"] = True
            file.write_text(yaml.safe_dump(approval, sort_keys=False))
            world.push("approve cloudnative-pg 1.30.0 (reviewed by carol)")
            assert applier.sync(world.human / REVISIONS_DIR) == []
            approved = revision(gitops, f"{NAME}-1.29.2")["spec"]
            assert approved["approved"] is True and approved["approvedBy"] == "carol"  # type: ignore[index]
            assert applier.sync(world.human / REVISIONS_DIR) == []  # the next sync re-applies the same manifest
            assert revision(gitops, f"{NAME}-1.29.2")["spec"] == approved  # stamps kept, whoever owns the fields

            # The gate admits operator-controller's upgrade to the approved version.
            upgrade = index_secret(NAME, 2, "1.30.0", "pending-upgrade")
            operator_controller = as_operator_controller(gitops)
            wait_for(lambda: create(operator_controller, upgrade, dry_run=True) is None, "the gate to admit 1.30.0")

            # 4. The upgrade completed: the sync loop removes the revision, the tool prunes it (a DELETE).
            set_installed(gitops, world, "1.30.0")
            world.push("cloudnative-pg upgraded to 1.30.0")
            world.sync()
            assert applier.sync(merged(world)) == []
            wait_for(lambda: revisions_of(gitops, NAME) == [], "the revision to be pruned")
    finally:
        client.CustomObjectsApi(gitops.client()).delete_cluster_custom_object(*EXTENSIONS, NAME)
        wait_for(lambda: NAME not in _extensions(gitops), "the ClusterExtension to be deleted")


def _extensions(cluster: ApiServer) -> list[str]:
    listed = client.CustomObjectsApi(cluster.client()).list_cluster_custom_object(*EXTENSIONS)
    assert isinstance(listed, dict)
    return [item["metadata"]["name"] for item in listed["items"]]


def _approval(tmp_path: Path, name: str, version: str, reviewer: str | None) -> Path:
    since = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=3)
    metadata: dict[str, object] = {"name": f"{name}-{version}"}
    if reviewer is not None:
        metadata["annotations"] = {REVIEWED_BY: reviewer}
    manifest = {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtensionRevision",
        "metadata": metadata,
        "spec": {
            "clusterExtensionRef": {"name": name},
            "version": version,
            "bundleMetadata": {"name": f"{name}.v{version}", "version": version},
            "availableSince": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "approved": True,
        },
    }
    path = tmp_path / f"{name}-{version}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


def test_only_a_trusted_applier_may_apply_an_approval_and_without_a_reviewer_it_is_recorded_itself(
    gitops: ApiServer, webhook: Webhook, tmp_path: Path
) -> None:
    extension(gitops.client(), "strimzi", "0.40.0")
    propose(gitops, "strimzi", "0.41.0")
    manifest = _approval(tmp_path, "strimzi", "0.41.0", reviewer="carol")
    with webhook.settings(gitopsAppliers=TRUSTED):
        error = Applier(UNTRUSTED, gitops).apply(manifest)
        assert error is not None
        assert (
            VALIDATE + "ValidatingAdmissionPolicy 'upgrade-gate-revision-approval' with binding "
            f"'upgrade-gate-revision-approval' denied request: user \"{UNTRUSTED.user}\" may not approve "
            "strimzi-0.41.0: approvers are members of [upgrade-approvers, platform-admins], or the GitOps appliers "
            f"[{ARGO_CD.user}, {FLUX.user}] applying an approval reviewed in Git"
        ) in error
        assert revision(gitops, "strimzi-0.41.0")["spec"]["approved"] is False  # type: ignore[index]

        assert Applier(ARGO_CD, gitops).apply(_approval(tmp_path, "strimzi", "0.41.0", reviewer=None)) is None
        assert revision(gitops, "strimzi-0.41.0")["spec"]["approvedBy"] == ARGO_CD.user  # type: ignore[index]


def test_by_default_no_applier_is_trusted(gitops: ApiServer, webhook: Webhook, tmp_path: Path) -> None:
    extension(gitops.client(), "vault-secrets", "1.0.0")
    propose(gitops, "vault-secrets", "1.1.0")
    error = Applier(FLUX, gitops).apply(_approval(tmp_path, "vault-secrets", "1.1.0", reviewer="carol"))
    assert error is not None and f'user "{FLUX.user}" may not approve vault-secrets-1.1.0' in error


def test_a_new_revision_beside_the_applied_one_is_refused_before_the_prune(
    gitops: ApiServer, webhook: Webhook, tmp_path: Path
) -> None:
    """Why the sync loop updates a proposal in place: a replacement object is applied before the old one is
    pruned, and the one-revision-per-extension rule refuses it."""
    extension(gitops.client(), "kafka-streams", "2.0.0")
    propose(gitops, "kafka-streams", "2.1.0")
    replacement = _approval(tmp_path, "kafka-streams", "2.2.0", reviewer=None)
    replacement.write_text(replacement.read_text().replace("approved: true", "approved: false"))
    error = Applier(FLUX, gitops).apply(replacement)
    assert error is not None
    assert (
        "ClusterExtension kafka-streams already has the revision kafka-streams-2.1.0; update it instead of creating "
        "another"
    ) in error
