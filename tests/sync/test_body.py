"""Pull request bodies: what a reviewer reads, as Renovate's pull requests show it (from, to, what is skipped,
the bundle's own description and links, deprecations, and how to skip, stop or re-run)."""

from __future__ import annotations

from dataclasses import replace

from markdown_it import MarkdownIt

from webhook.olm.resolve.successors import Edge
from webhook.plan.actions import Kind
from webhook.plan.body import proposed_titles, render_body, render_group_body
from webhook.plan.extensions import Change, FileChange, UpgradeFacts
from webhook.sync.groups import group_change

FACTS = UpgradeFacts(
    package="gpu-operator-certified",
    installed_bundle="gpu-operator-certified.v25.3.0",
    installed_version="25.3.0",
    bundle="gpu-operator-certified.v25.10.1",
    version="25.10.1",
    catalog="certified-operators-v4.22",
    edge=Edge("skipRange", "stable", "gpu-operator-certified.v25.10.1", ">=1.9.0 <25.10.1"),
    available_since="2026-03-01T12:00:00Z",
    skipped=("25.3.1", "25.3.2", "25.10.0"),
    image="nvcr.io/nvidia/gpu-operator-bundle@sha256:0123",
    metadata={
        "displayName": "NVIDIA GPU Operator",
        "description": "Automates the management of NVIDIA GPUs.\n\nSee the release notes.",
        "provider": {"name": "NVIDIA", "url": "https://www.nvidia.com"},
        "maintainers": [{"name": "NVIDIA", "email": "operator_feedback@nvidia.com"}],
        "links": [{"name": "Release notes", "url": "https://docs.nvidia.com/gpu-operator/release-notes.html"}],
    },
    deprecations=("channel stable is deprecated: use v25.10",),
)
CHANGE = Change(
    subject="gpu-operator",
    kind=Kind.PROPOSE,
    branch="upgrade-gate/gpu-operator",
    title="Upgrade gpu-operator to 25.10.1",
    files=(FileChange("clusters/prod/revisions/gpu-operator-25.10.1.yaml", "x"),),
    from_version="25.3.0",
    to_version="25.10.1",
    reason="Upgrade available.",
    facts=FACTS,
)


def test_the_body_lists_the_skipped_versions_the_image_and_the_bundles_own_metadata() -> None:
    body = render_body(CHANGE, None)
    for line in (
        "| Skips | 25.3.1, 25.3.2, 25.10.0 |",
        "| Bundle image | `nvcr.io/nvidia/gpu-operator-bundle@sha256:0123` |",
        "> **Deprecated:** channel stable is deprecated: use v25.10",
        "### About NVIDIA GPU Operator 25.10.1",
        "> Automates the management of NVIDIA GPUs.",
        "- Provider: [NVIDIA](https://www.nvidia.com)",
        "- Maintainers: [NVIDIA](mailto:operator_feedback@nvidia.com)",
        "- Links: [Release notes](https://docs.nvidia.com/gpu-operator/release-notes.html)",
    ):
        assert line in body.splitlines()


def test_the_footer_says_how_to_skip_the_version_stop_the_proposals_and_re_run() -> None:
    footer = render_body(CHANGE, None).split("\n---\n", 1)[1]
    assert "close this pull request without merging; upgrade-gate does not propose it again" in footer
    assert "pin `spec.source.catalog.version` of ClusterExtension gpu-operator to the installed version" in footer
    assert "`upgrade-gate sync --repo <this repository> --once --dry-run`" in footer


def test_a_bundle_without_metadata_gets_no_about_section() -> None:
    body = render_body(replace(CHANGE, facts=replace(FACTS, metadata={}, skipped=())), None)
    assert "### About" not in body
    assert "| Skips | no version |" in body.splitlines()


REMOVAL = Change(
    subject="cert-manager",
    kind=Kind.REMOVE,
    branch="upgrade-gate/cert-manager",
    title="Remove ClusterExtensionRevision cert-manager-1.17.0",
    files=(FileChange("clusters/prod/revisions/cert-manager-1.17.0.yaml", None),),
    from_version="1.17.0",
    to_version=None,
    reason="the upgrade to 1.17.0 has completed",
)
GROUP = group_change(
    "cluster/clusters/prod/revisions", "upgrade-gate/cluster/clusters/prod/revisions", [CHANGE, REMOVAL]
)


def test_a_group_body_gives_each_member_what_its_own_pull_request_would_say() -> None:
    body = render_group_body(GROUP, {"gpu-operator": "would admit approving it today"})
    own = render_body(CHANGE, "would admit approving it today").split("\nFiles:\n", 1)[0]
    section = body.split("### Upgrade gpu-operator to 25.10.1\n\n", 1)[1].split("<!-- upgrade-gate:proposes", 1)[0]
    assert section.rstrip("\n") == own.rstrip("\n")
    assert "| Policies | would admit approving it today |" in body.splitlines()
    assert "upgrade-gate removes the ClusterExtensionRevision of **cert-manager**" in body
    files = body.split("\nFiles:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert files == [
        "- `clusters/prod/revisions/cert-manager-1.17.0.yaml` (deleted)",
        "- `clusters/prod/revisions/gpu-operator-25.10.1.yaml` (written)",
    ]
    assert "`grouping: per-extension` in `upgrade-gate.yaml` proposes each extension on its own" in body


def test_a_group_body_names_the_titles_it_proposes_in_lines_markdown_does_not_show() -> None:
    body = render_group_body(GROUP, {})
    assert proposed_titles(body) == (CHANGE.title, REMOVAL.title)
    tokens = MarkdownIt("commonmark").parse(body)
    hidden = [t.content.strip() for t in tokens if t.type == "html_block" and "upgrade-gate:proposes" in t.content]
    assert hidden == [f"<!-- upgrade-gate:proposes {t} -->" for t in (CHANGE.title, REMOVAL.title)]
    assert not [t for t in tokens if t.type == "inline" and "upgrade-gate:proposes" in t.content], "never shown"
    assert proposed_titles(render_body(CHANGE, None)) == ()
