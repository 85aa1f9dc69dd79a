"""``upgrade-gate controller``: report ClusterExtensionRevisions' state in their status and Events; in ``cluster``
mode, also create, update and delete them."""

from __future__ import annotations

import dataclasses
import signal
import socket
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click

from webhook import logs
from webhook.cli.common import handle_errors
from webhook.cli.sync import parse_duration
from webhook.controller import CONTROLLER_NAME, CatalogLoader, Controller, EventRecorder, EventsOverApi, Metrics
from webhook.io.kube import ApiSource, ApiWriter, Cluster, LeaseElector, connect
from webhook.settings import CONTROLLER_MODES, ControllerSettings

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.option("--mode", type=click.Choice(CONTROLLER_MODES), help="gitops: status and Events only; cluster: also "
              "create, update and delete the revisions.  [default: gitops]")  # fmt: skip
@click.option("--kubeconfig", type=_FILE, help="kubeconfig file (else in-cluster, then $KUBECONFIG).")
@click.option("--resync", metavar="DURATION", help="Reconcile everything again this often.  [default: 30m]")
@click.option("--catalogd-ca", type=_FILE, help="CA bundle of catalogd's serving certificate (cluster mode).")
@click.option("--leader-election/--no-leader-election", default=None, help="Elect one active replica through a "
              "Lease in $POD_NAMESPACE.  [default: on]")  # fmt: skip
@click.option("--lease-name", help="The Lease's name.  [default: upgrade-gate-controller]")
@click.option("--workers", type=click.IntRange(1), help="ClusterExtensions reconciled at once.  [default: 4]")
@click.option("--health-host", help="Address of /healthz, /readyz and /metrics.  [default: 127.0.0.1]")
@click.option("--health-port", type=click.IntRange(0, 65535), help="Their port (0: any).  [default: 8081]")
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
@handle_errors
def controller(**flags: Any) -> None:
    """Report each ClusterExtensionRevision's state in its status and Events, in the cluster.

    Writes the conditions Approved, Progressing (with operator-controller's message while the gate holds
    the upgrade), Succeeded, and the kstatus conditions Reconciling, Stalled and Ready, through the status
    subresource; records Events (events.k8s.io/v1) on the revision and its ClusterExtension when an upgrade
    becomes available, is approved, is held, completes or fails. In cluster mode it also resolves every
    ClusterExtension against the ClusterCatalogs catalogd serves and creates the revision of an available
    upgrade (approved: false, owned by the ClusterExtension), updates it in place for a newer one (approval
    reset) and deletes it once the upgrade completed or nothing is left to upgrade to.

    \b
    Runs until stopped (SIGTERM, Ctrl-C). Every flag has an environment variable (UPGRADE_GATE_CONTROLLER_MODE,
    _RESYNC, _CATALOGD_CA, _LEADER_ELECTION, _LEASE_NAME, _CONTROLLER_WORKERS, _HEALTH_HOST, _HEALTH_PORT, _LOG_LEVEL;
    KUBECONFIG, POD_NAMESPACE, POD_NAME); flags win.
    """
    renamed = {"resync": "resync_s"}
    given = {renamed.get(name, name): value for name, value in flags.items() if value is not None}
    if "resync_s" in given:
        given["resync_s"] = parse_duration(given["resync_s"])
    if "log_level" in given:
        given["log_level"] = given["log_level"].upper()
    settings = dataclasses.replace(ControllerSettings.from_env(), **given)
    logs.configure(settings.log_level)
    api_client = connect(settings.kubeconfig)
    identity = settings.identity or socket.gethostname()
    metrics = Metrics()
    writer = ApiWriter(api_client, on_request=metrics.count_request)
    elector = None
    if settings.leader_election:
        duration = settings.lease_duration_s
        elector = LeaseElector(api_client, settings.namespace, settings.lease_name, identity, duration_s=duration)
    catalogs = None
    if settings.mode == "cluster":
        catalogs = CatalogLoader.over_http(cafile=settings.catalogd_ca, timeout_s=settings.catalog_timeout_s)
    recorder = EventRecorder(EventsOverApi(writer), f"{CONTROLLER_NAME}-{identity}")
    source = ApiSource(api_client)
    cluster = Cluster(api_client)
    running = Controller(
        settings, source, writer, recorder, elector=elector, catalogs=catalogs, cluster=cluster, doctor=cluster,
        metrics=metrics,
    )  # fmt: skip
    stop = threading.Event()

    def finish(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, finish)
    try:
        running.run(stop)
    except KeyboardInterrupt:
        stop.set()
