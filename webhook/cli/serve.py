"""``upgrade-gate serve``: the validating and mutating admission webhook over HTTPS."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from webhook import logs
from webhook.cli.common import cel_engine_option, handle_errors, kubernetes_version_option
from webhook.settings import ServeSettings

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.option("--cert", type=_FILE, help="Serving certificate (PEM). Default: development certificates.")
@click.option("--key", type=_FILE, help="Private key of --cert (PEM).")
@click.option("--client-ca", type=_FILE, help="Require client certificates signed by this CA bundle (PEM).")
@click.option(
    "--policies",
    type=click.Path(path_type=Path),
    help="Policy directory or file.  [default: ./policies, else the bundled policies installed with upgrade-gate]",
)
@click.option(
    "--objects", type=click.Path(path_type=Path), help="Manifests that stand in for the cluster (no cluster then)."
)
@click.option("--host", help="Address to listen on.  [default: 127.0.0.1]")
@click.option("--port", type=click.IntRange(1, 65535), help="HTTPS port.  [default: 8443]")
@click.option(
    "--workers",
    type=click.IntRange(0),
    help="Worker processes; 0 = one per CPU the container may use (its CPU limit).  [default: 0]",
)
@click.option(
    "--threads",
    type=click.IntRange(1),
    help="Evaluation threads per worker, for reviews that outlive their slice on the event loop.  [default: 4]",
)
@click.option("--cluster", type=click.Choice(["auto", "on", "off"]), help="Watch a cluster.  [default: auto]")
@click.option("--kubeconfig", type=_FILE, help="kubeconfig file (else in-cluster, then $KUBECONFIG).")
@click.option(
    "--request-timeout",
    type=click.FloatRange(0.1),
    help="Seconds to decide a review, from its arrival; then it is refused (504).  [default: 8]",
)
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
@cel_engine_option(default=None)
@kubernetes_version_option(from_env=False)
@handle_errors
def serve(**flags: Any) -> None:
    """Serve the policies to the kube-apiserver: POST /validate and /mutate (AdmissionReview v1, v1beta1).

    Also GET /healthz, /readyz (a policy set is loaded and the cluster cache synced) and /metrics
    (Prometheus). Policies reload on SIGHUP and when their files change; a set that does not load is
    reported and the previous one keeps serving. Certificates reload when their files change.

    \b
    Without --cert/--key, development certificates for localhost, 127.0.0.1 and ::1 are generated
    in certs/ on first run (CA in certs/ca.crt). Every flag has an environment variable
    (UPGRADE_GATE_<FLAG>, see webhook/settings.py); flags win.
    \b
    Example:
      upgrade-gate serve --cert tls.crt --key tls.key --policies policies/ --port 8443
    """
    renamed = {"request_timeout": "request_timeout_s"}
    given = {renamed.get(name, name): value for name, value in flags.items() if value is not None}
    if "log_level" in given:
        given["log_level"] = given["log_level"].upper()
    settings = dataclasses.replace(ServeSettings.from_env(), **given)
    from webhook.serve import multiprocess_directory  # noqa: PLC0415 - webhook.serve loads Flask and gunicorn
    from webhook.serve import serve as run  # noqa: PLC0415

    settings = dataclasses.replace(settings, metrics_dir=multiprocess_directory(settings.metrics_dir))
    logs.configure(settings.log_level)
    run(settings)
