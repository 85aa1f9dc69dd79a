"""The review's Markdown (``webhook.sync.summary``), a pure function: read back with a CommonMark parser with
GitHub's table extension (markdown-it-py, of the test extra), so the cells, links and escapes are checked as
GitHub reads them; GitHub's 65,536-character comment limit with 500 rows; the CI links of GitHub Actions and
GitLab CI."""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from webhook.plan import Approvers, Result, UserInfo
from webhook.sync import COMMENT_LIMIT, COMMENT_MARKER, ReviewReport, ci_links, render_markdown

HEAD, BASE = "h" * 40, "b" * 40
BLOB = "https://github.example/acme/clusters/blob/"
APPLIER = UserInfo("system:serviceaccount:argocd:argocd-application-controller")
REVISION = "clusters/prod/revisions/cloudnative-pg-1.30.0.yaml"
DENIAL = Result(
    REVISION,
    14,
    "ClusterExtensionRevision cloudnative-pg-1.30.0",
    "CREATE (approval)",
    "bob (system:authenticated)",
    "denied",
    'user "bob" may not approve cloudnative-pg-1.30.0 | see <login>',
    role="reviewer",
    policy="upgrade-gate-revision-approval",
    binding="upgrade-gate-revision-approval",
    approvers=Approvers(("upgrade-approvers", "platform-admins"), ("acme/platform-admins",)),
)


def report(*results: Result, blob_url: str = BLOB) -> ReviewReport:
    return ReviewReport(BASE, HEAD, BASE, 7, APPLIER, None, results, (), blob_url)


def tables(text: str) -> list[list[list[Token]]]:
    """Each table of ``text`` as rows of cells, a cell being its inline token (GitHub's table extension)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    found: list[list[list[Token]]] = []
    for token in tokens:
        if token.type == "table_open":
            found.append([])
        elif token.type == "tr_open":
            found[-1].append([])
        elif token.type == "inline" and found and found[-1] and token.level >= 4:
            found[-1][-1].append(token)
    return found


def text_of(cell: Token) -> str:
    return "".join(child.content for child in cell.children or [] if child.type in ("text", "code_inline"))


def links_of(cell: Token) -> list[str]:
    return [str(child.attrs["href"]) for child in cell.children or [] if child.type == "link_open"]


def test_a_row_reads_back_as_four_cells_with_the_policy_its_message_and_who_may_approve() -> None:
    [table] = tables(render_markdown(report(DENIAL), limit=COMMENT_LIMIT))
    header, row = table
    assert [text_of(c) for c in header] == ["Verdict", "Object", "Who may approve", "Reason"]
    verdict, subject, approvers, reason = row
    assert text_of(verdict).endswith("denied")
    assert links_of(subject) == [f"{BLOB}{HEAD}/{REVISION}#L14"]
    assert "CREATE (approval) as bob (system:authenticated)" in text_of(subject)
    assert text_of(approvers) == (
        "members of upgrade-approvers, platform-admins, or of the forge team acme/platform-admins"
    )
    assert text_of(reason) == (
        'upgrade-gate-revision-approval: user "bob" may not approve cloudnative-pg-1.30.0 | see <login>'
    )


def test_a_prune_links_the_file_at_the_merge_base_and_without_a_forge_url_nothing_is_linked() -> None:
    pruned = Result(
        REVISION, 1, "ClusterExtensionRevision cloudnative-pg-1.30.0", "DELETE", APPLIER.username, "admitted"
    )
    [[_, row]] = tables(render_markdown(report(pruned), limit=COMMENT_LIMIT))
    assert links_of(row[1]) == [f"{BLOB}{BASE}/{REVISION}#L1"]
    assert "DELETE as the applier" in text_of(row[1])
    [[_, row]] = tables(render_markdown(report(pruned, blob_url=""), limit=COMMENT_LIMIT))
    assert links_of(row[1]) == []


def test_the_marker_comes_first_and_a_passing_review_says_so() -> None:
    admitted = Result(REVISION, 14, "ClusterExtensionRevision x", "CREATE", APPLIER.username, "admitted")
    text = render_markdown(report(admitted), limit=COMMENT_LIMIT, marker=COMMENT_MARKER)
    assert text.startswith(f"{COMMENT_MARKER}\n")
    assert "passed" in text.splitlines()[1]
    empty = render_markdown(report(), limit=COMMENT_LIMIT)
    assert tables(empty) == [] and "no governed object changes" in empty


def admitted_rows(count: int) -> list[Result]:
    message = "spec.approvedBy will record the applier; the annotation upgrade-gate.io/reviewed-by names the reviewer "
    return [
        Result(f"clusters/prod/extensions/operator-{n:03}.yaml", 9, f"ClusterExtension operator-{n:03}", "UPDATE",
               APPLIER.username, "admitted", message * 2)
        for n in range(count)
    ]  # fmt: skip


def test_500_changed_files_stay_under_githubs_comment_limit_with_every_failing_row() -> None:
    failing = [
        Result(f"clusters/prod/revisions/r-{n}.yaml", 12, f"ClusterExtensionRevision r-{n}", "CREATE (approval)",
               "bob (system:authenticated)", "denied", f"denial {n}", policy="upgrade-gate-revision-approval")
        for n in range(20)
    ]  # fmt: skip
    rows = admitted_rows(480) + failing
    full = render_markdown(report(*rows), limit=10**9)
    assert len(full) > COMMENT_LIMIT  # the case: the whole table does not fit a comment
    details = "https://github.example/acme/clusters/actions/runs/42"
    text = render_markdown(report(*rows), limit=COMMENT_LIMIT, marker=COMMENT_MARKER, details_url=details)
    assert len(text) <= COMMENT_LIMIT
    [table] = tables(text)
    assert [text_of(row[1]).split("CREATE")[0] for row in table[1:]] == [
        f"ClusterExtensionRevision r-{n}" for n in range(20)
    ]
    assert "480 admitted, 20 denied" in text  # the counts
    last = MarkdownIt("commonmark").parseInline(text.rstrip().splitlines()[-1])[0]
    assert "and 480 more rows (480 admitted)" in "".join(c.content for c in last.children or [])
    assert [c.attrs["href"] for c in last.children or [] if c.type == "link_open"] == [details]


def test_when_even_the_failing_rows_do_not_fit_as_many_as_fit_are_shown_and_the_rest_counted() -> None:
    rows = [
        Result(f"f-{n}.yaml", 3, f"ClusterExtension e-{n}", "UPDATE", APPLIER.username, "denied", "x" * 400)
        for n in range(500)
    ]
    text = render_markdown(report(*rows), limit=COMMENT_LIMIT)
    assert len(text) <= COMMENT_LIMIT
    [table] = tables(text)
    shown = len(table) - 1
    assert 100 < shown < 500
    assert f"and {500 - shown} more rows ({500 - shown} denied): see the full report in the CI job." in text


@pytest.mark.parametrize(
    ("env", "blob", "details"),
    [
        pytest.param(
            {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/clusters", "GITHUB_RUN_ID": "42"},
            "https://github.com/acme/clusters/blob/",
            "https://github.com/acme/clusters/actions/runs/42",
            id="GitHub Actions",
        ),
        pytest.param(
            {"CI_PROJECT_URL": "https://gitlab.com/acme/clusters", "CI_JOB_URL": "https://gitlab.com/acme/-/jobs/9"},
            "https://gitlab.com/acme/clusters/-/blob/",
            "https://gitlab.com/acme/-/jobs/9",
            id="GitLab CI",
        ),
        pytest.param({}, "", "", id="elsewhere"),
    ],
)
def test_ci_links_follow_each_ci_s_documented_variables(env: dict[str, Any], blob: str, details: str) -> None:
    links = ci_links(env)
    assert (links.blob_url, links.details_url) == (blob, details)
