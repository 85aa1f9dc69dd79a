"""Pull request bodies (Markdown): what a change proposes, how the upgrade is reached (and which versions it
skips), the bundle's image, deprecation notices and its own description and links, whether the policies would
admit approving it (for an add-on: applying it), and a footer saying how to skip the version, stop the
proposals and re-run. A group's body (``grouping: per-cluster``) gives each member's section under its own title,
and hidden lines naming the titles it proposes, so a group a person closed declines exactly those. Pure and
deterministic: the same change and forecast give the same text, so an unchanged proposal never edits its pull
request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.plan.actions import Kind
from webhook.plan.extensions import AddOnFacts, Change, UpgradeFacts

_DESCRIPTION_LIMIT = 600

MARKER = "<!-- upgrade-gate -->"
_PROPOSES = "<!-- upgrade-gate:proposes "


def render_body(change: Change, forecast: str | None) -> str:
    """The body of ``change``'s pull request; ``forecast`` is the policy check's sentence (``None``: no check
    configured, and the line is left out)."""
    lines = [_summary(change), "", *_details(change, forecast)]
    return _close(change, lines)


def render_group_body(group: Change, forecasts: Mapping[str, str | None]) -> str:
    """The body of a group's pull request (``grouping: per-cluster``): one section per member, headed by the
    member's own title, with what its own pull request would say (``forecasts`` by member subject), and under
    each a hidden ``<!-- upgrade-gate:proposes <title> -->`` line that ``proposed_titles`` reads back."""
    count = len(group.members)
    lines = [
        f"upgrade-gate proposes {count} ClusterExtensionRevision change{'s' if count != 1 else ''} for "
        f"`{group.subject.split('/', 1)[1]}` in one pull request (`grouping: per-cluster`):",
        "",
        *(f"- {member.title}" for member in group.members),
        "",
    ]
    for member in group.members:
        lines += [f"### {member.title}", "", _summary(member), "", *_details(member, forecasts.get(member.subject))]
        lines += [f"{_PROPOSES}{member.title} -->", ""]
    return _close(group, lines)


def proposed_titles(body: str) -> tuple[str, ...]:
    """The titles of the members a group's pull request body proposes (its ``<!-- upgrade-gate:proposes ... -->``
    lines), in order; empty for any other body."""
    return tuple(line[len(_PROPOSES) : -len(" -->")] for line in body.splitlines() if _proposes(line))


def _proposes(line: str) -> bool:
    return line.startswith(_PROPOSES) and line.endswith(" -->")


def _close(change: Change, lines: list[str]) -> str:
    """``lines``, then the files the change writes, the footer and the marker, as one text."""
    lines += ["Files:", *(f"- `{f.path}` ({'deleted' if f.content is None else 'written'})" for f in change.files)]
    lines += ["", "---", *_footer(change), "", MARKER]
    return "\n".join(lines) + "\n"


def _details(change: Change, forecast: str | None) -> list[str]:
    """What a change proposes besides its summary: the upgrade's table, deprecations, the bundle's own words and
    how to approve, or the add-on's table."""
    lines: list[str] = []
    facts = change.facts
    if facts is not None:
        edge = facts.edge
        rows = [
            ("Package", facts.package),
            ("From", f"{facts.installed_bundle} ({facts.installed_version})"),
            ("To", f"{facts.bundle} ({facts.version})"),
            ("Skips", ", ".join(facts.skipped) or "no version"),
            ("Upgrade edge", f"{edge.kind}: {edge.describe()}"),
            ("Channel", edge.channel or "-"),
            ("Catalog", facts.catalog),
            ("Bundle image", f"`{facts.image}`" if facts.image else "-"),
            ("Available since", facts.available_since),
        ]
        if forecast is not None:
            rows.append(("Policies", forecast))
        lines += ["| | |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in rows), ""]
        lines += [f"> **Deprecated:** {notice}" for notice in facts.deprecations]
        lines += [""] if facts.deprecations else []
        lines += _about(facts)
        if change.revision is not None and change.approved:
            lines.append(
                f"upgrade-gate approves the ClusterExtensionRevision `{change.revision.name}` (`automerge`): the "
                "policies admit the approval without a reviewer, so it merges once the forge allows. A commit by "
                "anyone but upgrade-gate freezes the branch: it is not rebased, updated or merged any more."
            )
            lines.append("")
        elif change.revision is not None:
            lines.append(
                f"To approve, set `spec.approved: true` in the ClusterExtensionRevision `{change.revision.name}` "
                "on this branch. A commit by anyone but upgrade-gate freezes the branch: it is not rebased or "
                "updated any more."
            )
            lines.append("")
    if change.addon is not None:
        lines += _addon_rows(change.addon, forecast)
    return lines


def _addon_rows(facts: AddOnFacts, forecast: str | None) -> list[str]:
    to = facts.version if facts.template is None else f"{facts.template} ({facts.version})"
    if facts.template is None:
        default = f" (default {facts.default})" if facts.default else ""
        offered = ("Supported versions", f"{', '.join(facts.supported)}{default}, from {facts.status_from}")
    else:
        offered = ("AddOnTemplates", f"{', '.join(facts.supported)}, from {facts.status_from}")
    rows = [
        ("Add-on", facts.addon),
        offered,
        ("To", to),
        *((f"{m.where}{' (canary)' if m.canary else ''}", f"from {m.from_version} to {to}") for m in facts.moves),
        *((f"{m.where} (held)", f"stays at {m.from_version} until the canaries have run {to}") for m in facts.held),
        ("Canary", facts.canary),
    ]
    if facts.ready_at is not None:
        rows.append(("Canary soak ends", facts.ready_at))
    if forecast is not None:
        rows.append(("Policies", forecast))
    table = ["| | |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in rows), ""]
    applies = "installVersions" if facts.template is None else "AddOnTemplate references"
    note = (
        f"Merging applies the new {applies}; the addon manager then rolls them out. A commit by "
        "anyone but upgrade-gate freezes the branch: it is not rebased or updated any more."
    )
    return [*table, *_rollout(facts), note, ""]


def _rollout(facts: AddOnFacts) -> list[str]:
    """The rollout plan: each step's order, placement or cluster, clusters and groups, strategy and status."""
    if not facts.rollout:
        return []
    head = ["### Rollout plan", "", "| Step | Rolls out | Clusters | Strategy | Status |", "|---|---|---|---|---|"]
    rows = [
        f"| {row.order} | {_cell(row.what)} | {_cell(row.clusters)} | {_cell(row.strategy)} | {_cell(row.status)} |"
        for row in facts.rollout
    ]
    steps = "Step 1 runs first; step 2 follows once every canary has applied the target for the soak period."
    return [*head, *rows, "", steps, ""]


def _about(facts: UpgradeFacts) -> list[str]:
    """The bundle's own words from its ClusterServiceVersion metadata: description, provider, maintainers, links."""
    metadata = facts.metadata
    if not metadata:
        return []
    title = metadata.get("displayName") or facts.package
    lines = [f"### About {title} {facts.version}", ""]
    description = str(metadata.get("description") or "").strip()
    if description:
        cut = (
            description if len(description) <= _DESCRIPTION_LIMIT else description[:_DESCRIPTION_LIMIT].rstrip() + " …"
        )
        lines += [f"> {line}" if line else ">" for line in cut.splitlines()] + [""]
    provider = metadata.get("provider")
    if isinstance(provider, Mapping) and provider.get("name"):
        lines.append(f"- Provider: {_link(provider.get('name'), provider.get('url'))}")
    people = [
        _link(m.get("name"), f"mailto:{m['email']}" if m.get("email") else None)
        for m in _items(metadata, "maintainers")
    ]
    if people:
        lines.append(f"- Maintainers: {', '.join(people)}")
    links = [_link(link.get("name"), link.get("url")) for link in _items(metadata, "links") if link.get("url")]
    if links:
        lines.append(f"- Links: {', '.join(links)}")
    return [*lines, ""]


def _items(metadata: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = metadata.get(key)
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _link(name: object, url: object) -> str:
    text = _cell(str(name or url or "-"))
    return f"[{text}]({url})" if isinstance(url, str) and url else text


def _footer(change: Change) -> list[str]:
    """How to skip this version, stop proposals for the subject, and re-run: what Renovate's footer says."""
    skip = (
        "**Skip this version:** close this pull request without merging; upgrade-gate does not propose it again "
        "(a newer version comes as a new pull request)."
    )
    if change.kind == Kind.ADDON_VERSION:
        stop = (
            "**Stop these proposals:** leave the add-on's manifests out of `addons.manifests` in `upgrade-gate.yaml`."
        )
    elif change.kind == Kind.CATALOG_IMAGE:
        stop = "**Stop these proposals:** remove the `olm.catalogImageTemplate` annotation from the ClusterCatalog."
    elif change.kind == Kind.GROUP:
        skip = (
            "**Skip these versions:** close this pull request without merging; upgrade-gate proposes none of the "
            "changes it lists again (a newer version comes in the cluster's next pull request)."
        )
        stop = (
            "**Stop these proposals:** pin `spec.source.catalog.version` of a ClusterExtension to the installed "
            "version; `grouping: per-extension` in `upgrade-gate.yaml` proposes each extension on its own."
        )
    else:
        stop = (
            f"**Stop these proposals:** pin `spec.source.catalog.version` of ClusterExtension {change.subject} to the "
            "installed version, or leave its manifest out of `extensions` in `upgrade-gate.yaml`."
        )
    rerun = (
        "**Re-run:** the sync loop updates this pull request every cycle; `upgrade-gate sync --repo <this repository> "
        "--once --dry-run` shows what the next cycle would do."
    )
    lines = [skip, stop] if change.kind != Kind.REMOVE else []
    return [*(f"- {line}" for line in [*lines, rerun])]


def _summary(change: Change) -> str:
    if change.kind == Kind.REMOVE:
        return f"upgrade-gate removes the ClusterExtensionRevision of **{change.subject}**: {change.reason}"
    if change.kind == Kind.CATALOG_IMAGE:
        moves = f"from `{change.from_version}` to `{change.to_version}`"
        return f"upgrade-gate switches **{change.subject}** {moves}. {change.reason}"
    moves = f"from {change.from_version} to {change.to_version}"
    if change.kind == Kind.ADDON_VERSION:
        return f"upgrade-gate proposes upgrading add-on **{change.subject.split('/', 1)[1]}** {moves}. {change.reason}"
    return f"upgrade-gate proposes upgrading **{change.subject}** {moves}. {change.reason}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
