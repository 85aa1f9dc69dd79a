"""The read step of a sync cycle: everything it needs from git, the catalogs, the cluster, the forge and
``upgrade-gate.yaml``, read into immutable values before anything is planned.

``read_inputs`` reads what holds for the whole cycle (``CycleInputs``: the configuration, read once from the
base branch, the catalogs, the installed bundles, the open pull requests, the policies); ``read_snapshot``
what a push attempt works from (``Snapshot``: the base branch's manifests and the bot's branches, read again
when a rejected push is retried from a freshly fetched base); ``webhook.sync.history`` reads what the forge
and git say about the branches a plan touches. Errors: ``GitError`` (remote or forge unreachable),
``FetchError``, ``CatalogError``, ``InputError`` (``upgrade-gate.yaml``, a ``baseBranch`` the remote lacks, a
cluster setting without a cluster), ``PolicyLoadError``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from webhook.errors import InputError
from webhook.io import Author, Credentials, Repo
from webhook.io.forges import Forge, PullRequest, make_forge
from webhook.manifests import read_text
from webhook.plan import (
    AddOnDocuments,
    AddOnState,
    ApprovalCheck,
    BranchState,
    Document,
    ExtensionEntry,
    Problem,
    RevisionFile,
    TemplateResult,
    addon_subject,
    catalog_template,
    matching_files,
    read_addons,
    read_extensions,
    read_manifests,
    read_revisions,
    render_template,
    rfc3339,
)
from webhook.sync.automerge import Automerge
from webhook.sync.config import SyncConfig, load_config
from webhook.sync.sources import CatalogCache, Catalogs, ClusterView, load_catalogs, with_installed
from webhook.sync.timings import Timings
from webhook.sync.views import ObjectsView, observe
from webhook.windows import Window

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class SyncOptions:
    """Everything a cycle needs besides the repository's own ``upgrade-gate.yaml``.

    ``repo`` is a Git URL or local path; ``workdir`` the sync loop's working clone (created on first use);
    ``cluster`` is required for ``installed: cluster``, ``addons.installed: cluster`` and GVK image templates;
    ``catalog_cache`` carries loaded catalogs from one cycle to the next (reuse the options across cycles);
    ``clock`` returns the current UTC time. ``dry_run`` plans and reports (with each change's diff) but
    commits, pushes and writes to the forge nothing (it still reads the remote and the forge).
    """

    repo: str
    workdir: Path
    credentials: Credentials = field(default_factory=Credentials)
    forge_token: str = ""
    cluster: ClusterView | None = None
    max_push_attempts: int = 3
    catalog_cache: CatalogCache = field(default_factory=CatalogCache)
    progress: Progress | None = None
    clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class CycleInputs:
    """What holds for a whole cycle: the configuration (of the base branch), the working tree's ``root``, the
    cycle's time, the ``forge`` (``None``: ``forge.type: none``) and its ``open_pulls`` by head branch, the
    catalogs, the bundles the cluster reports installed (``None``: the manifests' status), the Kubernetes
    version for image templates, the policy ``approval`` check and ``automerge`` decision (with
    ``policyCheck`` and a forge), ``waiting`` (``None`` inside a ``schedule`` window, else when the next opens,
    RFC 3339, ``""`` never), the ``cluster`` view, and whether this is a dry run."""

    config: SyncConfig
    root: Path
    now: datetime.datetime
    forge: Forge | None
    open_pulls: Mapping[str, PullRequest]
    catalogs: Catalogs
    installed: Mapping[str, tuple[str, str]] | None
    kube_version: str | None
    approval: ApprovalCheck | None
    automerge: Automerge | None
    waiting: str | None
    cluster: ClusterView | None
    dry_run: bool

    @property
    def bot(self) -> Author:
        """The git author of the bot's commits."""
        return Author(self.config.author_name, self.config.author_email)

    @property
    def writes_pulls(self) -> bool:
        """Whether the cycle writes to the forge (a forge is configured and this is no dry run)."""
        return self.forge is not None and not self.dry_run


@dataclass(frozen=True, slots=True)
class Templated:
    """A ClusterCatalog manifest with an image template: its document, its file's text, the rendered template."""

    doc: Document
    text: str
    result: TemplateResult


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one push attempt works from: the base commit, the bot's branches on the remote (``states``), the
    ClusterExtensions (installed bundles applied) and revisions of the base branch with their manifests'
    problems (apart: ClusterExtension manifests with errors keep orphaned revisions), the
    add-ons (``None`` without ``addons``) with their files' texts and, for those in scope, what the cluster or
    the manifests say about them (``observed``, by subject), and the templated ClusterCatalogs."""

    base_sha: str
    states: Mapping[str, BranchState]
    extensions: tuple[ExtensionEntry, ...]
    revisions: tuple[RevisionFile, ...]
    problems: tuple[Problem, ...]
    revision_problems: tuple[Problem, ...]
    addons: AddOnDocuments | None
    texts: Mapping[str, str]
    observed: Mapping[str, AddOnState]
    templated: tuple[Templated, ...]


def read_inputs(options: SyncOptions, timings: Timings) -> tuple[Repo, str, CycleInputs]:
    """Fetch the remote, check out the base branch (``baseBranch``, read from the remote's default branch) and
    read the cycle's inputs; the working clone and the base commit with them."""
    now = options.clock()
    with timings.timed("fetch"):
        repo = Repo.open(options.repo, options.workdir, options.credentials)
        base_sha, config = _checkout_base(repo)
    forge = make_forge(config.forge, options.forge_token)
    waiting = _next_window(config.schedule, now)
    with timings.timed("forge"):
        open_pulls = forge.open_pull_requests(config.base_branch) if forge else {}
    cluster, root = options.cluster, repo.path
    from_cluster = config.installed == "cluster" and bool(config.extensions)
    for key, wanted in (("installed", from_cluster), ("addons.installed", _addons_from_cluster(config))):
        if wanted and cluster is None:
            raise InputError(f"upgrade-gate.yaml: {key}: cluster needs a cluster (in-cluster or a kubeconfig)")
    with timings.timed("catalogs"):
        catalogs = load_catalogs(root, config.catalogs, options.catalog_cache)
        installed = cluster.installed_bundles() if cluster is not None and from_cluster else None
        templated = bool(config.catalogs)
        kube_version = config.kube_version or (cluster.server_version() if cluster is not None and templated else None)
    check = config.policy_check
    approval = ApprovalCheck(check, root, now) if check is not None and forge else None
    automerge = _automerge(root, config, approval, now) if approval is not None else None
    inputs = CycleInputs(
        config,
        root,
        now,
        forge,
        open_pulls,
        catalogs,
        installed,
        kube_version,
        approval,
        automerge,
        waiting,
        cluster,
        options.dry_run,
    )
    return repo, base_sha, inputs


def read_snapshot(
    repo: Repo, inputs: CycleInputs, base_sha: str, scope: Collection[str] | None, timings: Timings
) -> Snapshot:
    """The bot's branches and the base branch's manifests at ``base_sha`` (checked out); add-ons are observed
    only when in ``scope`` (``None``: all)."""
    config = inputs.config
    with timings.timed("git"):
        heads = repo.remote_branches(config.branch_prefix)
        states = repo.branch_states(base_sha, heads, inputs.bot)
    extensions: list[ExtensionEntry] = []
    revisions: list[RevisionFile] = []
    problems: list[Problem] = []
    revision_problems: list[Problem] = []
    if config.extensions:
        with timings.timed("read"):
            extensions, problems = read_extensions(inputs.root, config.extensions)
            revisions, revision_problems = read_revisions(inputs.root, config.revisions)
        if inputs.installed is not None:
            extensions = with_installed(extensions, inputs.installed)
    found, texts, observed = _addons(inputs, scope, timings)
    return Snapshot(
        base_sha,
        states,
        tuple(extensions),
        tuple(revisions),
        tuple(problems),
        tuple(revision_problems),
        found,
        texts,
        observed,
        _templated(inputs),
    )


def _checkout_base(repo: Repo) -> tuple[str, SyncConfig]:
    """Fetch, check out the base branch and read its ``upgrade-gate.yaml``: the one of the remote's default
    branch names it (``baseBranch``), and is read again only when that is another branch, whose own file holds."""
    repo.fetch()
    default = repo.default_branch()
    base_sha = repo.checkout(default)
    config = load_config(repo.path)
    if repo.resolve(f"refs/remotes/origin/{config.base_branch}") is None:
        raise InputError(f"upgrade-gate.yaml: baseBranch: the remote has no branch {config.base_branch}")
    if config.base_branch == default:
        return base_sha, config
    return repo.checkout(config.base_branch), load_config(repo.path)


def _addons(
    inputs: CycleInputs, scope: Collection[str] | None, timings: Timings
) -> tuple[AddOnDocuments | None, dict[str, str], dict[str, AddOnState]]:
    """The add-ons' manifests, their files' texts and, for those in ``scope``, what the cluster (``installed:
    cluster``) or the manifests say about them; nothing without ``addons``."""
    config = inputs.config.addons
    if config is None:
        return None, {}, {}
    with timings.timed("read"):
        found = read_addons(inputs.root, config.manifests)
        texts = {file: read_text(inputs.root / file) for addon in found.addons for file in addon.files}
    view = inputs.cluster if config.installed == "cluster" and inputs.cluster is not None else None
    objects = view or ObjectsView.of_documents(found)
    observed = {}
    for addon in found.addons:
        subject = addon_subject(addon.name)
        if scope is None or subject in scope:
            with timings.timed("cluster"):
                observed[subject] = observe(objects, addon, config.canary_placements, config.installed)
    return found, texts, observed


def _templated(inputs: CycleInputs) -> tuple[Templated, ...]:
    """The templated ClusterCatalogs with their templates rendered (GVK variables read from the cluster)."""
    cluster = inputs.cluster
    lookup = cluster.get_object if cluster is not None else None
    found = []
    for doc in inputs.catalogs.manifests:
        template = catalog_template(doc)
        if template is not None:
            result = render_template(template, inputs.kube_version, lookup)
            found.append(Templated(doc, read_text(inputs.root / doc.file), result))
    return tuple(found)


def _automerge(root: Path, config: SyncConfig, approval: ApprovalCheck, now: datetime.datetime) -> Automerge | None:
    """The automerge decision of the cycle when ``automerge.enabled``: the policies the policy check loaded, and
    the base branch's ClusterExtensions and revisions as read from the checked-out tree."""
    if not config.automerge.enabled:
        return None
    files = matching_files(root, (*config.extensions, config.revisions))
    base = read_manifests({file: read_text(root / file) for file in files})
    applier = approval.config.applier
    return Automerge(approval.policies, applier, config.author_name, config.automerge.change, now, base)


def _addons_from_cluster(config: SyncConfig) -> bool:
    return config.addons is not None and config.addons.installed == "cluster"


def _next_window(schedule: tuple[Window, ...], now: datetime.datetime) -> str | None:
    """``None`` when branches may be pushed now (no ``schedule``, or inside one of its windows); else when the
    next window opens (RFC 3339; ``""`` when none ever will: every interval has ended)."""
    if not schedule or any(window.contains(now) for window in schedule):
        return None
    opening = [at for at in (window.opens_at(now) for window in schedule) if at is not None]
    return rfc3339(min(opening)) if opening else ""
