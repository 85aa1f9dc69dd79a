"""Pull request bodies (Markdown): what a change proposes, how the upgrade is reached, whether the policies
would admit approving it (for an add-on: applying it). Pure and deterministic: the same change and verdict give
the same text, so an unchanged proposal never edits its pull request."""

from __future__ import annotations

from webhook.gitops.proposals import ADDON_VERSION, CATALOG_IMAGE, REMOVE, AddOnFacts, Change

MARKER = "<!-- upgrade-gate -->"


def render_body(change: Change, verdict: str | None) -> str:
    """The body of ``change``'s pull request; ``verdict`` is the policy check's sentence (``None``: no check
    configured, and the line is left out)."""
    lines = [_summary(change), ""]
    facts = change.facts
    if facts is not None:
        edge = facts.edge
        rows = [
            ("Package", facts.package),
            ("From", f"{facts.installed_bundle} ({facts.installed_version})"),
            ("To", f"{facts.bundle} ({facts.version})"),
            ("Upgrade edge", f"{edge.kind}: {edge.describe()}"),
            ("Channel", edge.channel or "-"),
            ("Catalog", facts.catalog),
            ("Available since", facts.available_since),
        ]
        if verdict is not None:
            rows.append(("Policies", verdict))
        lines += ["| | |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in rows), ""]
        if change.revision is not None:
            lines.append(
                f"To approve, set `spec.approved: true` in the ClusterExtensionRevision `{change.revision.name}` "
                "on this branch. A commit by anyone but upgrade-gate freezes the branch: it is not rebased or "
                "updated any more."
            )
            lines.append("")
    if change.addon is not None:
        lines += _addon_rows(change.addon, verdict)
    lines += ["Files:", *(f"- `{f.path}` ({'deleted' if f.content is None else 'written'})" for f in change.files)]
    lines += ["", MARKER]
    return "\n".join(lines) + "\n"


def _addon_rows(facts: AddOnFacts, verdict: str | None) -> list[str]:
    default = f" (default {facts.default})" if facts.default else ""
    rows = [
        ("Add-on", facts.addon),
        ("Supported versions", f"{', '.join(facts.supported)}{default}, from {facts.status_from}"),
        ("To", facts.version),
        *(
            (f"{m.where}{' (canary)' if m.canary else ''}", f"from {m.from_version} to {facts.version}")
            for m in facts.moves
        ),
        *(
            (f"{m.where} (held)", f"stays at {m.from_version} until the canaries have run {facts.version}")
            for m in facts.held
        ),
        ("Canary", facts.canary),
    ]
    if facts.ready_at is not None:
        rows.append(("Canary soak ends", facts.ready_at))
    if verdict is not None:
        rows.append(("Policies", verdict))
    table = ["| | |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in rows), ""]
    note = (
        "Merging applies the new installVersions; the addon manager then installs them. A commit by "
        "anyone but upgrade-gate freezes the branch: it is not rebased or updated any more."
    )
    return [*table, note, ""]


def _summary(change: Change) -> str:
    if change.kind == REMOVE:
        return f"upgrade-gate removes the ClusterExtensionRevision of **{change.subject}**: {change.reason}"
    if change.kind == CATALOG_IMAGE:
        moves = f"from `{change.from_version}` to `{change.to_version}`"
        return f"upgrade-gate switches **{change.subject}** {moves}. {change.reason}"
    moves = f"from {change.from_version} to {change.to_version}"
    if change.kind == ADDON_VERSION:
        return f"upgrade-gate proposes upgrading add-on **{change.subject.split('/', 1)[1]}** {moves}. {change.reason}"
    return f"upgrade-gate proposes upgrading **{change.subject}** {moves}. {change.reason}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
