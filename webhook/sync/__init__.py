"""The GitOps sync loop: configuration, sources, views of the repository, one cycle as a pipeline (read, plan,
act, report: ``webhook.sync.cycle``), the daemon loop, and ``upgrade-gate review``'s run."""

from webhook.plan import PROBLEMS
from webhook.sync.config import parse_duration
from webhook.sync.cycle import SyncOptions, run_cycle
from webhook.sync.loop import run_loop
from webhook.sync.pullrequest import COMMENT_MARKER, ReviewOptions, ReviewReport, post_comment, run_review
from webhook.sync.report import ACTIONS, Report
from webhook.sync.sources import ClusterView
from webhook.sync.summary import COMMENT_LIMIT, SUMMARY_LIMIT, CiLinks, ci_links, render_markdown

__all__ = [
    "ACTIONS",
    "COMMENT_LIMIT",
    "COMMENT_MARKER",
    "PROBLEMS",
    "SUMMARY_LIMIT",
    "CiLinks",
    "ClusterView",
    "Report",
    "ReviewOptions",
    "ReviewReport",
    "SyncOptions",
    "ci_links",
    "parse_duration",
    "post_comment",
    "render_markdown",
    "run_cycle",
    "run_loop",
    "run_review",
]
