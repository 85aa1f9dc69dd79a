"""One ``upgrade-gate review`` run: the change between two commits of a working tree (or a pull request's), the
policies and the reviewers, read from git and the forge, then evaluated by ``webhook.plan.review``.

Everything is read from git objects (``git ls-tree``, ``git cat-file``), never from a checkout: the change is
``git merge-base BASE HEAD`` to HEAD, as a pull request shows it; ``upgrade-gate.yaml`` and the policies
(``policyCheck.policies``, relative to the repository root, or absolute paths read as they are) are the head's.
When a changed file lies under a relative policy path, the policy test suites beside the head policies run and
every governed manifest of the head is decided by the base policies and the head policies, and the differences
are reported.

A changed file that is not YAML at head is an ``invalid`` row, and its objects are taken as they are at the
base: Argo CD and Flux fail the sync of a manifest that does not parse, they do not prune its objects.

``post_comment`` writes the review's Markdown (``webhook.sync.summary``) as the one comment of the pull request
carrying ``COMMENT_MARKER``, updated in place on every run.

Errors that keep the review from running raise ``InputError`` (unknown ref, no common ancestor, an invalid
``upgrade-gate.yaml``, policies that do not load, a reviewer option with a pull request, a pull request the forge
does not show), ``ForgeUnavailable`` (the forge did not answer, failed with HTTP 5xx or rate limited) or
``GitError`` (git or the forge failed otherwise), each one line.
"""

from __future__ import annotations

import datetime
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from webhook.errors import GitError, InputError, PolicyLoadError
from webhook.io import Credentials, Repo
from webhook.io.forges import Forge, make_forge
from webhook.plan import (
    AUTHENTICATED,
    Manifests,
    PolicyCheckConfig,
    Result,
    Review,
    Reviewer,
    UserInfo,
    matching,
    object_changes,
    policy_differences,
    read_manifests,
    review,
    suite_failures,
)
from webhook.policy import PolicySet, SuiteResult, load_policy_set, load_suites, run_suites
from webhook.settings import DEFAULT_CEL_ENGINE, DEFAULT_KUBERNETES_VERSION
from webhook.sync.config import CONFIG_FILE, SyncConfig, read_config

COMMENT_MARKER = "<!-- upgrade-gate:review -->"
"""The hidden marker of the review comment in a pull request, which finds it again on the next run."""
INVALID_YAML = "invalid YAML: "
"""How ``webhook.manifests.iter_yaml_documents`` begins the reason of a file that does not parse."""


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    """What to review: ``base``/``head`` refs of ``repo``, or pull request ``pull`` (its commits and approving
    reviewers from the forge of ``upgrade-gate.yaml``); ``reviewer`` (``--as``) stands for the approving
    reviewer of refs. ``now`` is the request time ``clock.now()`` returns."""

    repo: Path
    base: str | None = None
    head: str | None = None
    pull: int | None = None
    reviewer: UserInfo | None = None
    forge_token: str = ""
    now: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.UTC))
    engine: str = DEFAULT_CEL_ENGINE
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION


@dataclass(frozen=True, slots=True)
class ReviewReport:
    """The commits reviewed, who applies and who approved, every row, and the policy test results;
    ``blob_url``: where the forge shows a file at a commit (``<blob_url><commit>/<path>``), ``""`` when unknown."""

    base: str
    head: str
    merge_base: str
    pull: int | None
    applier: UserInfo
    reviewers: tuple[Reviewer, ...] | None
    results: tuple[Result, ...]
    suites: tuple[SuiteResult, ...] = ()
    blob_url: str = ""

    @property
    def passed(self) -> bool:
        """No row denied, invalid or failed."""
        return not any(r.failing for r in self.results)


def run_review(options: ReviewOptions) -> ReviewReport:
    """Read the change, the policies and the reviewers, and review them (see the module docstring)."""
    repo = Repo(options.repo, str(options.repo), Credentials())
    if not options.repo.is_dir() or not repo.run("rev-parse", "--git-dir", check=False).strip():
        raise InputError(f"--repo {options.repo}: not a git repository")
    forge: Forge | None = None
    blob_url = ""
    if options.pull is not None:
        if options.reviewer is not None:
            raise InputError("--as names the reviewer of --base/--head; with --pull the forge names the reviewers")
        forge = _forge(repo, options)
        pull = forge.pull_request(options.pull)
        base = _commit(repo, pull.base_sha, f"pull request {options.pull}'s base")
        head = _commit(repo, pull.head_sha, f"pull request {options.pull}'s head")
        blob_url = _blob_url(forge.name, pull.url)
    else:
        base = _commit(repo, options.base or "")
        head = _commit(repo, options.head or "")
    try:
        merge_base = repo.merge_base(base, head)
    except GitError:
        raise InputError(f"{options.base or base} and {options.head or head} have no common ancestor") from None
    config = _config(repo, head)
    check = config.policy_check
    if check is None:
        raise InputError(
            f"{CONFIG_FILE}: policyCheck: is required by upgrade-gate review (the policies to check against)"
        )
    changed = repo.changed_files(merge_base, head)
    patterns = _manifest_patterns(config)
    (before, _), (after, texts) = _manifests(repo, merge_base, patterns), _manifests(repo, head, patterns)
    changes, duplicates = object_changes(before.objects, _parsed(before, after, changed).objects)
    problems = [p for p in after.problems if p.file in changed] + duplicates
    with tempfile.TemporaryDirectory(prefix="upgrade-gate-review-") as scratch:
        head_paths = _materialize(repo, head, check.policies, Path(scratch) / "head", required=True)
        policies = _load(head_paths, Path(scratch) / "head", "HEAD", options)
        reviewers = _reviewers(forge, options, check)
        inputs = Review(changes, before.objects, policies, check.applier, reviewers, options.now, tuple(problems))
        results = review(replace(inputs, texts=texts, teams=check.teams))
        suites: tuple[SuiteResult, ...] = ()
        if _policies_changed(check.policies, changed):
            scratch_head = f"{Path(scratch) / 'head'}/"
            suites = tuple(
                replace(s, file=Path(str(s.file).removeprefix(scratch_head)))
                for s in run_suites(load_suites(head_paths), engine=options.engine, version=options.kubernetes_version)
            )
            results += suite_failures(suites)
            base_paths = _materialize(repo, merge_base, check.policies, Path(scratch) / "base", required=False)
            try:
                old = _load(base_paths, Path(scratch) / "base", "base", options) if base_paths else PolicySet()
            except PolicyLoadError as error:
                message = f"no comparison with the base policies, which do not load: {str(error).splitlines()[0]}"
                results.append(Result(CONFIG_FILE, 0, "-", "-", "-", "skipped", message, role="policies"))
            else:
                results += policy_differences(after.objects, old, policies, check.applier, options.now)
    return ReviewReport(
        base, head, merge_base, options.pull, check.applier, reviewers, tuple(results), suites, blob_url
    )


def post_comment(options: ReviewOptions, body: str) -> str:
    """Write ``body`` (holding ``COMMENT_MARKER``) as the review comment of pull request ``options.pull``,
    created or updated in place (``Forge.upsert_comment``); its web URL. Raises ``GitError`` when the forge
    fails, ``InputError`` when there is no pull request or no forge."""
    if options.pull is None:
        raise InputError("--comment needs --pull N")
    repo = Repo(options.repo, str(options.repo), Credentials())
    return _forge(repo, options).upsert_comment(options.pull, COMMENT_MARKER, body)


def _commit(repo: Repo, ref: str, what: str = "") -> str:
    sha = repo.resolve(ref) if ref else None
    if sha is None:
        if what:
            raise InputError(f"{what} {ref or '(none)'} is not in the repository: fetch it (git fetch origin {ref})")
        raise InputError(f"unknown ref {ref!r}")
    return sha


def _config(repo: Repo, commit: str) -> SyncConfig:
    files = repo.tree(commit)
    if CONFIG_FILE not in files:
        raise InputError(f"{CONFIG_FILE}: not found at the repository root of {commit[:12]}")
    return read_config(repo.blobs([files[CONFIG_FILE]])[files[CONFIG_FILE]])


def _forge(repo: Repo, options: ReviewOptions) -> Forge:
    """The forge of the ``upgrade-gate.yaml`` checked out (HEAD)."""
    forge = make_forge(_config(repo, _commit(repo, "HEAD")).forge, options.forge_token)
    if forge is None:
        raise InputError(f"--pull needs a forge: {CONFIG_FILE}: forge.type is none")
    return forge


def _manifest_patterns(config: SyncConfig) -> list[str]:
    """Where the repository's manifests are: extensions, revisions, ClusterCatalog sources and add-ons."""
    patterns = [*config.extensions, *([config.revisions] if config.revisions else [])]
    patterns += [c.location for c in config.catalogs if c.kind == "clusterCatalogs"]
    return patterns + list(config.addons.manifests if config.addons is not None else ())


def _blob_url(forge: str, pull_url: str) -> str:
    """``<repository web URL>/blob/`` (GitHub) or ``/-/blob/`` (GitLab) from a pull request's web URL
    (``.../pull/N``, ``.../-/merge_requests/N``); ``""`` when it has neither shape."""
    separator, blob = ("/-/merge_requests/", "/-/blob/") if forge == "gitlab" else ("/pull/", "/blob/")
    repository, found, _ = pull_url.rpartition(separator)
    return f"{repository}{blob}" if found and repository else ""


def _manifests(repo: Repo, commit: str, patterns: Sequence[str]) -> tuple[Manifests, dict[str, str]]:
    """The objects of the manifest files at ``commit``, and the files' texts."""
    tree = repo.tree(commit)
    files = matching(tree, patterns)
    blobs = repo.blobs([tree[f] for f in files])
    texts = {f: blobs[tree[f]] for f in files}
    return read_manifests(texts), texts


def _parsed(before: Manifests, after: Manifests, changed: Collection[str]) -> Manifests:
    """The head's objects as applying it leaves them: for a changed file that is not YAML (the sync fails on it,
    nothing of it is applied or pruned) its objects at the base."""
    broken = {p.file for p in after.problems if p.file in changed and p.reason.startswith(INVALID_YAML)}
    kept = (m for m in after.objects if m.file not in broken)
    return replace(after, objects=(*kept, *(m for m in before.objects if m.file in broken)))


def _materialize(repo: Repo, commit: str, paths: Sequence[str], dest: Path, *, required: bool) -> list[Path]:
    """Write the files under each relative policy path at ``commit`` into ``dest`` (absolute paths are used as
    they are); the paths to load. Raises ``InputError`` for a path missing from a ``required`` commit."""
    tree = repo.tree(commit)
    found: list[Path] = []
    wanted: dict[str, str] = {}
    for path in paths:
        if Path(path).is_absolute():
            found.append(Path(path))
            continue
        prefix = path.strip("/")
        files = {f: b for f, b in tree.items() if f == prefix or f.startswith(f"{prefix}/")}
        if not files:
            if required:
                raise InputError(f"{CONFIG_FILE}: policyCheck.policies: {path} is not in {commit[:12]}")
            continue
        wanted.update(files)
        found.append(dest / prefix)
    texts = repo.blobs(sorted(set(wanted.values())))
    for file, blob in wanted.items():
        (dest / file).parent.mkdir(parents=True, exist_ok=True)
        (dest / file).write_text(texts[blob], encoding="utf-8")
    return found


def _load(paths: Sequence[Path], root: Path, name: str, options: ReviewOptions) -> PolicySet:
    """The policy set, its messages naming ``name:<file>`` instead of the scratch directory."""
    try:
        return load_policy_set(paths, engine=options.engine, version=options.kubernetes_version)
    except PolicyLoadError as error:
        raise PolicyLoadError(str(error).replace(f"{root}/", f"{name}:"), error.problems) from None


def _policies_changed(paths: Sequence[str], changed: Sequence[str]) -> bool:
    prefixes = [p.strip("/") for p in paths if not Path(p).is_absolute()]
    return any(f == p or f.startswith(f"{p}/") for f in changed for p in prefixes)


def _reviewers(forge: Forge | None, options: ReviewOptions, check: PolicyCheckConfig) -> tuple[Reviewer, ...] | None:
    """The approving reviewers with the groups their teams map to, or ``--as``; ``None`` with neither."""
    if options.reviewer is not None:
        groups = tuple(dict.fromkeys([*options.reviewer.groups, AUTHENTICATED]))
        return (Reviewer(UserInfo(options.reviewer.username, groups)),)
    if forge is None or options.pull is None:
        return None
    found = []
    for login in forge.approving_reviewers(options.pull):
        mapped = sorted({g for team, g in check.teams.items() if forge.is_team_member(team, login)})
        note = "" if mapped else f"{login} is in none of the teams policyCheck.teams maps"
        found.append(Reviewer(UserInfo(login, (*mapped, AUTHENTICATED)), note))
    return tuple(found)
