"""The GitOps sync loop: configuration, sources, views of the repository, one cycle."""

from webhook.sync.config import parse_duration
from webhook.sync.cycle import SyncOptions, run_cycle
from webhook.sync.loop import run_loop
from webhook.sync.report import ACTIONS, PROBLEMS, Report
from webhook.sync.review import ReviewOptions, ReviewReport, run_review
from webhook.sync.sources import ClusterView

__all__ = [
    "ACTIONS",
    "PROBLEMS",
    "ClusterView",
    "Report",
    "ReviewOptions",
    "ReviewReport",
    "SyncOptions",
    "parse_duration",
    "run_cycle",
    "run_loop",
    "run_review",
]
