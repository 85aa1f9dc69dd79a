"""The admission semantics of ValidatingAdmissionPolicy / MutatingAdmissionPolicy: loading, matching, evaluating,
mutating, deciding; policy test suites and lint. May import ``webhook.cel`` and the pure core, nothing above it."""

from webhook.cel import evaluate as evaluate
from webhook.policy.admitting.decision import Decision, Denial
from webhook.policy.admitting.engine import Admission, PolicyEngine
from webhook.policy.admitting.lookups import ClusterReads, cluster_reads
from webhook.policy.admitting.matching import rule_dict_matches
from webhook.policy.lint import FileReport, lint
from webhook.policy.loading.documents import Source, policy_files, read_sources
from webhook.policy.loading.loader import load_policy_set, load_policy_sources
from webhook.policy.model import PolicySet
from webhook.policy.suites import SuiteResult, load_suites, run_suites

__all__ = [
    "Admission",
    "ClusterReads",
    "Decision",
    "Denial",
    "FileReport",
    "PolicyEngine",
    "PolicySet",
    "Source",
    "SuiteResult",
    "cluster_reads",
    "evaluate",
    "lint",
    "load_policy_set",
    "load_policy_sources",
    "load_suites",
    "policy_files",
    "read_sources",
    "rule_dict_matches",
    "run_suites",
]
