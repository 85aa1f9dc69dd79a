"""``upgrade-gate serve``: the ASGI application under gunicorn, over TLS, with reloads.

Process model (gunicorn's, embedded with a ``BaseApplication`` subclass): the master loads the policy set
and the application once (``preload_app``), then forks ``workers`` workers that inherit both
(``webhook.serve.worker``: gunicorn's asyncio worker on uvloop, with kept-alive connections and I/O bounds). Each
worker accepts from the shared listening socket and decides reviews on its event loop, and those that outlive their
time slice in its ``threads`` evaluation threads (``webhook.serve.app``).

- Policies reload on SIGHUP, in place: the master loads the files again, keeps the new set only if it loads,
  and publishes it (``PolicyRuntime`` over a ``SharedRecord``) staged, then active (``PolicyArbiter``); each
  worker compiles a staged set in a background thread and adopts the active one before its next decision, with
  its connections and threads untouched. gunicorn's own SIGHUP handling
  (new workers, the old ones retiring) is not used: a retiring worker kept answering requests on its
  kept-alive connections with the old set after new workers served the new one. A thread in the master sends
  that SIGHUP itself when the policy or object files change (checked every ``reload_interval_s``).
- Certificates reload in each worker at the next connection after their files change
  (``tls.ReloadingContext``), without a restart.
- With a cluster, each worker runs its own watch cache (``webhook.io.kube.cache``), started after the fork.
- Metrics: ``prometheus_client`` multiprocess mode in ``metrics_dir``; an exited worker's live gauges are
  dropped.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import resource
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from webhook import logs
from webhook.errors import InputError, PolicyLoadError
from webhook.io.kube import ApiSource, WatchCache, connect, policy_resources
from webhook.policy import PolicySet, cluster_reads
from webhook.serve.app import AdmissionApp, create_app
from webhook.serve.metrics import Metrics, forget_process
from webhook.serve.runtime import PREPARE_INTERVAL_S, ClusterCache, PolicyRuntime
from webhook.serve.shared import SharedRecord
from webhook.serve.tls import ReloadingContext, development_certificates
from webhook.serve.worker import WorkerLogger, admission_worker
from webhook.settings import ServeSettings

log = logging.getLogger(__name__)

ClusterFactory = Callable[[], ClusterCache]

#: The apiserver decodes JSON nested up to 10,000 levels (``k8s.io/apimachinery/pkg/util/json``) and sends such
#: objects to webhooks as they are. Reading one takes a recursion level per nesting level, converting it to CEL
#: about two: the interpreter's limit and the stacks of the threads that evaluate are raised to match: the
#: evaluation threads' and, since reviews are first evaluated on the event loop, the main thread's (its stack grows
#: on demand up to the soft ``RLIMIT_STACK``, raised here before the workers are forked; Linux leaves at least
#: 128 MiB for it below the stack's top).
RECURSION_LIMIT = 24_000
STACK_BYTES = 64 * 1024 * 1024
#: How long a request thread keeps the interpreter before another may take it (CPython's default: 5 ms). A cheap
#: request sharing a worker with an expensive evaluation waits that long at each of its turns (reading, deciding,
#: answering): 40 ms at the default, 5 ms at this (``benchmarks/admission.py``, faults), for a few switches more
#: per busy millisecond.
SWITCH_INTERVAL_S = 0.0005


class WebhookServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn serving ``app`` (whose ``runtime`` it reloads) with ``settings``.

    ``cluster``: builds a started watch cache in each worker, or ``None`` without a cluster. ``metrics``: where
    the workers report their connections (default: a registry of its own).
    """

    def __init__(
        self,
        settings: ServeSettings,
        app: AdmissionApp,
        runtime: PolicyRuntime,
        tls: ReloadingContext,
        cluster: ClusterFactory | None = None,
        *,
        metrics: Metrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics if metrics is not None else Metrics(settings.metrics_dir)
        self.application = app
        self.runtime = runtime
        self.tls = tls
        self.cluster = cluster
        super().__init__()

    def load_config(self) -> None:
        """gunicorn's settings, from ``settings``."""
        settings = self.settings
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        config: dict[str, Any] = {
            "bind": [f"{host}:{settings.port}"],
            "workers": settings.worker_count,
            "worker_class": admission_worker(
                settings.io_timeout_s,
                settings.max_connections,
                self.metrics,
                settings.max_worker_memory_mib,
                settings.metrics_dir / REPLACEMENT_LOCK if settings.metrics_dir is not None else None,
            ),
            "asgi_loop": "uvloop",
            "asgi_lifespan": "off",
            "keepalive": math.ceil(settings.keepalive_s),
            # gunicorn kills a worker whose main loop (not a request) is silent for this long.
            "timeout": math.ceil(settings.request_timeout_s) + 10,
            "graceful_timeout": math.ceil(settings.request_timeout_s) + 2,
            # a worker is replaced after about max_requests, or past max_worker_memory_mib (AdmissionWorker): a leak
            # of cel-expr-python (ServeSettings); the jitter keeps workers from being replaced together
            "max_requests": settings.max_requests,
            "max_requests_jitter": settings.max_requests // 10,
            "preload_app": True,
            "certfile": str(self.tls.cert),
            "keyfile": str(self.tls.key),
            "ssl_context": self.tls,
            # gunicorn's runtime control socket ($HOME/.gunicorn/gunicorn.ctl) is shared by every server of a
            # user and writes outside the read-only root filesystem of the chart: SIGHUP and SIGTERM suffice.
            "control_socket_disable": True,
            "accesslog": None,
            "logger_class": WorkerLogger,
            "errorlog": "-",
            "logconfig_dict": logs.dict_config(settings.log_level),
            "when_ready": self._when_ready,
            "post_fork": self._post_fork,
            "child_exit": self._child_exit,
        }
        for key, value in config.items():
            self.cfg.set(key, value)

    def load(self) -> AdmissionApp:
        """The ASGI application (loaded once, in the master)."""
        return self.application

    def run(self) -> None:
        """Serve until SIGTERM/SIGINT, with SIGHUP reloading the policy set in place (``PolicyArbiter``)."""
        PolicyArbiter(self).run()

    def _when_ready(self, arbiter: Any) -> None:
        log.info(
            "serving",
            extra=logs.fields({"address": arbiter.cfg.bind[0], "workers": arbiter.cfg.workers}),
        )
        threading.Thread(target=self._watch_files, name="policy-file-watch", daemon=True).start()

    def _watch_files(self) -> None:
        """Master thread: SIGHUP ourselves when the policy or object files change."""
        master = os.getpid()
        stop = threading.Event()
        while not stop.wait(self.settings.reload_interval_s):
            if os.getpid() != master:  # pragma: no cover - a forked copy of this thread cannot exist
                return
            if self.runtime.changed():
                log.info("policy files changed; reloading", extra=logs.fields({logs.PATH: str(self.settings.policies)}))
                os.kill(master, signal.SIGHUP)

    def _post_fork(self, arbiter: Any, worker: Any) -> None:
        freeze_survivors()
        if self.cluster is not None:
            self.runtime.attach(self.cluster())
        self.runtime.prepare_in_background()

    def _child_exit(self, arbiter: Any, worker: Any) -> None:
        if self.settings.metrics_dir is not None:
            forget_process(self.settings.metrics_dir, worker.pid)


#: How long the master leaves the workers to compile a staged policy set before it activates it, as a multiple of
#: the time it took itself (the workers compile it in a thread beside their requests), plus the interval at which
#: they look for one.
WORKER_HEADSTART = 3.0
#: The file in ``metrics_dir`` whose lock a worker holds from the time it is replaced for its memory until it exits.
REPLACEMENT_LOCK = "worker-replacement.lock"


class PolicyArbiter(Arbiter):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's master process, except that SIGHUP reloads the policy set in place instead of replacing the
    workers: the master loads it and publishes it staged (``PolicyRuntime.stage``), leaves the workers
    ``WORKER_HEADSTART`` times its own loading time (and ``PREPARE_INTERVAL_S``) to compile it in the background,
    then activates it."""

    def handle_hup(self) -> None:
        runtime = self.app.runtime
        started = time.monotonic()
        if runtime.stage():
            time.sleep(WORKER_HEADSTART * (time.monotonic() - started) + PREPARE_INTERVAL_S)
            runtime.activate()


def freeze_survivors() -> None:
    """Keep the garbage collector's full collections short in this process: what exists now (in a worker: what the
    master loaded, modules, the policy set, the application) and what survives each full collection from now on is
    moved out of the collector's sight (``gc.freeze``), so that the next full collection scans only what came since.
    Young collections run every ``YOUNG_COLLECTION_THRESHOLD`` new objects instead of CPython's 700: an admission
    review allocates hundreds, so collections ran every few reviews, each scanning objects that live for a review
    (6% less worker CPU per review with the bundled policies, measured side by side; a young collection of this
    many objects takes about a millisecond).

    Without it a full collection scans the whole heap, and it grows: cel-expr-python 0.1.3 never frees the
    arguments of a call into Python (``ServeSettings.max_requests``), tuples the collector tracks. A worker's full
    collections then paused its event loop, and every connection's answers, for 30-80 ms (docs/performance.md).
    The price: a reference cycle that dies after a full collection found it alive is never freed; workers are
    replaced after ``max_requests`` or past ``max_worker_memory_mib``, which bounds that too."""
    gc.freeze()
    gc.callbacks.append(_freeze_after_full_collection)
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])


def _freeze_after_full_collection(phase: str, info: dict[str, int]) -> None:
    if phase == "stop" and info["generation"] == _OLDEST_GENERATION:
        gc.freeze()


#: CPython's generations are 0, 1 and 2; a collection of the oldest is a full collection.
_OLDEST_GENERATION = 2
#: New container objects (allocations less deallocations) that start a collection of the youngest generation.
YOUNG_COLLECTION_THRESHOLD = 20_000


def cluster_cache(settings: ServeSettings, policies: PolicySet) -> ClusterFactory | None:
    """When ``settings.watches_cluster``: a factory of started watch caches of what ``policies`` read from the
    cluster (``webhook.policy.admitting.lookups``; one cache per worker, each with its own API client). A policy set
    reloaded later is served from the same cache: a kind it newly reads is watched after a restart. Logs a
    warning naming the policies whose lookups compute their kind (not watched). Checks the configuration once;
    raises ``ClusterError`` if none."""
    if not settings.watches_cluster:
        return None
    connect(settings.kubeconfig)
    reads = cluster_reads(policies)
    if reads.computed:
        log.warning(
            "cluster lookups with a computed apiVersion or kind read only kinds watched for other reasons",
            extra=logs.fields({logs.POLICY: ", ".join(reads.computed)}),
        )
    resources = policy_resources(reads, settings.namespace)
    return lambda: WatchCache(ApiSource(connect(settings.kubeconfig)), resources, resync_s=settings.resync_s).start()


def check_address(host: str, port: int) -> None:
    """Raise ``InputError`` (``cannot listen on <host>:<port>: <reason>``) if the address cannot be bound, as
    gunicorn binds it (``SO_REUSEADDR``): gunicorn itself would retry for five seconds and log each attempt."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as error:
        shown = f"[{host}]" if ":" in host else host
        raise InputError(f"cannot listen on {shown}:{port}: {error.strerror or error}") from None


def serve(settings: ServeSettings) -> None:
    """Load everything, then serve until SIGTERM/SIGINT. Raises ``InputError`` (no policies at ``policies``, an
    address that cannot be bound, bad certificate files, ``cert`` without ``key``), ``PolicyLoadError`` (a policy
    set that does not load at start) and ``ClusterError`` (a cluster to watch but no configuration for it)."""
    if (settings.cert is None) != (settings.key is None):
        raise InputError("--cert and --key go together")
    if not settings.policies.exists():
        raise InputError(
            f"no policies found: {settings.policies.absolute()} does not exist "
            "(give --policies DIR|FILE or UPGRADE_GATE_POLICIES)"
        )
    check_address(settings.host, settings.port)
    if settings.cert is not None and settings.key is not None:
        cert, key = settings.cert, settings.key
    else:
        cert, key = development_certificates(settings.dev_certs)
    tls = ReloadingContext(cert, key, settings.client_ca)
    tls.current()
    metrics = Metrics(settings.metrics_dir)
    runtime = PolicyRuntime(
        settings.policies,
        settings.objects,
        metrics=metrics,
        engine=settings.cel_engine,
        kubernetes_version=settings.kubernetes_version,
        shared=SharedRecord(),
    )
    if not runtime.load() or runtime.snapshot is None:
        raise PolicyLoadError(runtime.error or "the policy set does not load")
    cluster = cluster_cache(settings, runtime.snapshot.policies)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    threading.stack_size(STACK_BYTES)
    _raise_stack_limit(STACK_BYTES)
    sys.setswitchinterval(SWITCH_INTERVAL_S)  # the forked workers inherit it
    WebhookServer(settings, create_app(settings, runtime, metrics), runtime, tls, cluster, metrics=metrics).run()


def _raise_stack_limit(size: int) -> None:
    """Let the main thread's stack grow to ``size`` bytes (the soft ``RLIMIT_STACK``, within the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    wanted = size if hard == resource.RLIM_INFINITY else min(size, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_STACK, (wanted, hard))
