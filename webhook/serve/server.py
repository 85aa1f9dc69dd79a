"""``upgrade-gate serve``: the Flask application under gunicorn, over TLS, with reloads.

Process model (gunicorn's, embedded with a ``BaseApplication`` subclass): the master loads the policy set
and the application once (``preload_app``), then forks ``workers`` sync workers that inherit both. Each
worker answers one request at a time on the shared listening socket.

- Policies reload on SIGHUP (gunicorn's graceful reload): the master loads the files again, keeps the new
  set only if it loads, then replaces its workers; new workers serve the new set, old ones finish their
  request. A thread in the master sends that SIGHUP itself when the policy or object files change
  (checked every ``reload_interval_s``).
- Certificates reload in each worker at the next connection after their files change
  (``tls.ReloadingContext``), without a restart.
- With a cluster, each worker runs its own watch cache (``webhook.io.kube.cache``), started after the fork.
- Metrics: ``prometheus_client`` multiprocess mode in ``metrics_dir``; an exited worker's live gauges are
  dropped.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from webhook import logs
from webhook.errors import InputError, PolicyLoadError
from webhook.io.kube.cache import ApiSource, WatchCache, policy_resources
from webhook.io.kube.cluster import connect
from webhook.serve.app import create_app
from webhook.serve.metrics import Metrics, forget_process
from webhook.serve.runtime import ClusterCache, PolicyRuntime
from webhook.serve.tls import ReloadingContext, development_certificates
from webhook.settings import ServeSettings

log = logging.getLogger(__name__)

ClusterFactory = Callable[[], ClusterCache]


class WebhookServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn serving ``app`` (whose ``runtime`` it reloads) with ``settings``.

    ``cluster``: builds a started watch cache in each worker, or ``None`` without a cluster.
    """

    def __init__(
        self,
        settings: ServeSettings,
        app: Flask,
        runtime: PolicyRuntime,
        tls: ReloadingContext,
        cluster: ClusterFactory | None = None,
    ) -> None:
        self.settings = settings
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
            "worker_class": "sync",
            # The last resort behind the request deadline: gunicorn kills a worker silent for this long.
            "timeout": math.ceil(settings.request_timeout_s) + 10,
            "graceful_timeout": math.ceil(settings.request_timeout_s) + 2,
            "preload_app": True,
            "certfile": str(self.tls.cert),
            "keyfile": str(self.tls.key),
            "ssl_context": self.tls,
            # gunicorn's runtime control socket ($HOME/.gunicorn/gunicorn.ctl) is shared by every server of a
            # user and writes outside the read-only root filesystem of the chart: SIGHUP and SIGTERM suffice.
            "control_socket_disable": True,
            "accesslog": None,
            "errorlog": "-",
            "logconfig_dict": logs.dict_config(settings.log_level),
            "when_ready": self._when_ready,
            "post_fork": self._post_fork,
            "child_exit": self._child_exit,
        }
        for key, value in config.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        """The WSGI application (loaded once, in the master)."""
        return self.application

    def reload(self) -> None:
        """SIGHUP in the master: reload gunicorn's settings and the policy set (kept only if it loads)."""
        super().reload()
        self.runtime.load()

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
        if self.cluster is not None:
            self.runtime.attach(self.cluster())

    def _child_exit(self, arbiter: Any, worker: Any) -> None:
        if self.settings.metrics_dir is not None:
            forget_process(self.settings.metrics_dir, worker.pid)


def cluster_cache(settings: ServeSettings) -> ClusterFactory | None:
    """When ``settings.watches_cluster``: a factory of started watch caches of ``policy_resources`` (one per
    worker, each with its own API client). Checks the configuration once; raises ``ClusterError`` if none."""
    if not settings.watches_cluster:
        return None
    connect(settings.kubeconfig)
    resources = policy_resources(settings.namespace)
    return lambda: WatchCache(ApiSource(connect(settings.kubeconfig)), resources, resync_s=settings.resync_s).start()


def serve(settings: ServeSettings) -> None:
    """Load everything, then serve until SIGTERM/SIGINT. Raises ``InputError`` (bad certificate files,
    ``cert`` without ``key``), ``PolicyLoadError`` (a policy set that does not load at start) and
    ``ClusterError`` (a cluster to watch but no configuration for it)."""
    if (settings.cert is None) != (settings.key is None):
        raise InputError("--cert and --key go together")
    if settings.cert is not None and settings.key is not None:
        cert, key = settings.cert, settings.key
    else:
        cert, key = development_certificates(settings.dev_certs)
    tls = ReloadingContext(cert, key, settings.client_ca)
    tls.current()
    metrics = Metrics(settings.metrics_dir)
    runtime = PolicyRuntime(settings.policies, settings.objects, metrics=metrics, engine=settings.cel_engine)
    if not runtime.load():
        raise PolicyLoadError(runtime.error or "the policy set does not load")
    cluster = cluster_cache(settings)
    WebhookServer(settings, create_app(settings, runtime, metrics), runtime, tls, cluster).run()
