"""Every exception upgrade-gate raises on purpose, in one tree.

::

    UpgradeGateError                 base of everything below; never raised itself
    ├── InputError                   bad input from a user: CLI exit 2, HTTP 400
    │   ├── InvalidConstraint        a version range that does not parse (also a ValueError)
    │   ├── InvalidVersion           a version that is not strict SemVer 2.0.0 (also a ValueError)
    │   ├── CatalogError             a malformed File-Based Catalog blob (file and line)
    │   ├── ManifestError            a malformed Kubernetes manifest (file and line)
    │   ├── PolicyLoadError          a policy set that does not load (file, document, field, column)
    │   ├── ReleaseError             an operator-controller release object that cannot be read
    │   └── ReviewError              a malformed AdmissionReview request (HTTP 400)
    ├── ResolutionError              OLM v1 found no single bundle: CLI exit 1, upstream's text
    ├── CelError                     a CEL expression failed to compile or evaluate
    │   ├── CelCompileError          parse or check error, found at load time
    │   └── CelEvaluationError       run-time error (no such key, overflow, cost budget, ...)
    │       ├── CostLimitExceeded    the per-evaluation cost budget ran out
    │       └── URLError             a text is not a URL as Go's net/url reads it (also a ValueError)
    ├── AdmissionPolicyError         a policy could not decide a request: its failurePolicy applies
    │   ├── MatchError               matching could not decide (the request's namespace is unknown)
    │   ├── ParamError               a binding's params cannot be collected
    │   └── MutationError            a mutation could not be applied
    ├── FetchError                   a catalogd URL could not be fetched: CLI exit 1
    │   └── CatalogUnavailable       catalogd did not answer, answered 5xx or 429 (also Unavailable)
    ├── GitError                     a git command or a forge call failed
    │   └── ForgeUnavailable         the forge did not answer, answered 5xx or rate limited (also Unavailable)
    ├── Unavailable                  a service the command needs (the forge, the cluster) was unavailable; retry:
    │                                CLI exit 3
    └── ClusterError                 the Kubernetes API could not be reached or refused
        ├── ClusterUnavailable       no answer, HTTP 5xx or 429 (also Unavailable)
        ├── Expired                  a watch's resourceVersion is too old (HTTP 410): relist
        ├── NotServed                the API server does not serve the kind (HTTP 404)
        └── Forbidden                the API server forbids the call (HTTP 403: RBAC)

Outside the tree, on purpose a ``BaseException`` so that no ``except Exception`` (CEL error absorption, a
library's catch-all) can swallow it: ``DeadlineExceeded``, the request deadline passed during an evaluation; the
webhook answers it with its 504 refusal.

Also outside the tree, and never leaving the module that defines them: four private signals of control flow,
each caught a few lines from where it is raised and turned into an answer there: ``serve.app``'s ``_TooLarge``
(HTTP 413) and ``_Gone`` (the client left), and the two
``_BadValue`` of ``cel.values`` and ``cel.celexpr.values`` (a value CEL cannot carry, raised as
a ``CelEvaluationError``).

Front ends map the tree to outcomes: an ``InputError`` is the caller's fault (exit 2, HTTP 400),
a ``ResolutionError`` is a negative answer (exit 1), an ``Unavailable`` is neither (exit 3: the same command may
succeed once the service is back), anything else is an operational failure.
Messages are deterministic (sorted names, no addresses, no timestamps) so tests assert whole strings.
"""

from __future__ import annotations


class UpgradeGateError(Exception):
    """Base class of every error upgrade-gate raises deliberately."""


class InputError(UpgradeGateError):
    """Input from a user (file, flag, request) is invalid; the message says where and why."""


class InvalidConstraint(InputError, ValueError):
    """A version range (Masterminds ``spec.version`` or blang ``olm.skipRange``) does not parse.

    The message names the offending term, e.g. ``improper constraint: "foobar"``.
    """


class InvalidVersion(InputError, ValueError):
    """A version is not strict SemVer 2.0.0 as blang ``Parse`` reads it (no ``v``, three parts, uint64)."""


class CatalogError(InputError):
    """A File-Based Catalog blob is malformed; the message starts with ``<file>:<line>:``."""


class ManifestError(InputError):
    """A Kubernetes manifest is malformed or is not the kind expected; the message names file and line (but for
    ``plan.addonstate.AddOnFieldError``, a field of an add-on manifest, which carries its document and path and
    becomes the add-on's ``invalid`` row with file and line where it is caught)."""


class PolicyLoadError(InputError):
    """A policy set does not load; the message names file, document, field path and column.

    ``problems`` lists each problem on its own (one line each), for reports that show them one by one.
    """

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


class ReleaseError(InputError):
    """An index Secret or ClusterObjectSet does not say which extension, revision or bundle it holds, or its
    payload is not base64, gzip or JSON within the decoding bounds; the message names the object."""


class ReviewError(InputError):
    """An AdmissionReview request is malformed (not JSON, wrong kind, missing uid, ...)."""


class FetchError(UpgradeGateError):
    """A catalog URL could not be fetched (unreachable, HTTP error): an operational failure, not bad input."""


class ResolutionError(UpgradeGateError):
    """OLM v1 resolution found no bundle or more than one; the message is upstream's text verbatim."""


class CelError(UpgradeGateError):
    """A CEL expression could not be compiled or evaluated."""


class CelCompileError(CelError):
    """A CEL expression failed to parse or check (undeclared name, wrong arity, bad literal)."""


class CelEvaluationError(CelError):
    """A CEL expression failed at run time (no such key, no matching overload, overflow, ...)."""


class CostLimitExceeded(CelEvaluationError):
    """An evaluation ran past its cost budget and was stopped."""


class URLError(CelEvaluationError, ValueError):
    """A text is not a URL as Go's ``net/url`` parses it; the message is Go's reason."""


class AdmissionPolicyError(UpgradeGateError):
    """A policy could not decide a request; the binding's ``failurePolicy`` decides the outcome. Messages are the
    kube-apiserver's texts."""


class MatchError(AdmissionPolicyError):
    """Matching could not decide (the request's namespace is unknown); the message is upstream's text."""


class ParamError(AdmissionPolicyError):
    """The params of a binding cannot be collected; the message is upstream's text."""


class MutationError(AdmissionPolicyError):
    """A mutation could not be applied; the message says why."""


class GitError(UpgradeGateError):
    """A git command or a Git forge API call failed."""


class Unavailable(UpgradeGateError):
    """A service the command needs (the forge, the cluster) was unavailable: it did not answer (connection
    refused, timed out), failed (HTTP 5xx) or refused for a rate limit. Neither a negative result nor bad input:
    retry later (CLI exit 3). The message names the service and the call."""


def outage(status: int | None) -> bool:
    """Whether an HTTP answer ``status`` is an outage to retry (``Unavailable``) rather than a refusal: 5xx, or 429
    Too Many Requests (the API server's Priority and Fairness, a server's rate limit)."""
    return status is not None and (status >= 500 or status == 429)


class CatalogUnavailable(FetchError, Unavailable):
    """catalogd (a catalog URL) did not answer, answered HTTP 5xx or 429: ``<url>: cannot fetch catalog: <problem>``.
    Also a ``FetchError``, as every failed fetch."""


class ForgeUnavailable(GitError, Unavailable):
    """A forge call got no answer, an HTTP 5xx, or a rate-limit refusal (GitHub 403/429 with its rate-limit
    headers, GitLab 429): ``<forge>: <METHOD> <path>: <problem>``. Also a ``GitError``, as every forge failure."""


class ClusterError(UpgradeGateError):
    """The Kubernetes API server could not be reached or refused a call."""


class ClusterUnavailable(ClusterError, Unavailable):
    """The API server did not answer (connection refused, timed out), failed (HTTP 5xx) or throttled the call
    (HTTP 429): ``<call>: <problem>``. Also a ``ClusterError``, as every failed call; a refusal (403, 422) is not
    one."""


class Expired(ClusterError):
    """A watch's resourceVersion is too old (HTTP 410 Gone): relist."""


class NotServed(ClusterError):
    """The API server does not serve the kind (HTTP 404: its CRD is not installed)."""


class Forbidden(ClusterError):
    """The API server forbids the call (HTTP 403): the caller's RBAC does not allow it."""


class DeadlineExceeded(BaseException):
    """The admission request's deadline passed while its policies were evaluated (``webhook.cel.cost``).

    The message is ``no decision within <seconds>s``."""


class Preempted(DeadlineExceeded):
    """An evaluation on the server's event loop used up its time slice (``webhook.cel.cost.deadline``): it is
    abandoned, and the request is decided again in an evaluation thread. Evaluators end it as a ``DeadlineExceeded``.

    The message is ``time slice of <seconds>s used up``."""
