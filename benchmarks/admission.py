"""Admission benchmark: what the kube-apiserver sees of the webhook, the webhook on loopback, and the webhook
under faults.

Usage: python benchmarks/admission.py [--part apiserver|loopback|faults ...] [--workers 2] [--duration 5]
                                      [--requests 300] [--cel-engine cel-python|cel-expr] [--json]

1. ``apiserver`` (needs the kube-apiserver harness and binaries of the integration tests, else skipped with the
   reason): a real kube-apiserver 1.32 with
   the chart's ClusterExtensionRevision CRD (rendered by the Helm SDK). ``--requests`` server-side dry-run creates
   of a ClusterExtensionRevision over one kept-alive connection, timed by the client, for (a) no admission
   policies, (b) the same two checks (name prefix, semantic version) and two mutations (the ``clusterextension``
   label, ``approved: false``) as in-tree ValidatingAdmissionPolicy + MutatingAdmissionPolicy, (c) the chart's
   webhook configurations (rules as rendered, clientConfig pointing at a local server, caBundle our CA): first a
   no-op handler on the same gunicorn/TLS embedding (the transport alone), then ``upgrade-gate serve`` of the
   bundled policies on each CEL engine. Four rounds, each from (a) back to (a), taking the engines in turn from a
   different one; each figure is the median of the rounds', added latency the median of each round's mean minus
   its own (a)'s (the machine's drift between configurations is what varies most).
2. ``loopback``: the real gunicorn/TLS stack, a no-op ASGI handler (embedded exactly as ``serve`` embeds the
   webhook) and ``upgrade-gate serve`` of no policies (``empty``: the same server without policies) against
   ``upgrade-gate serve`` of the bundled policies on each CEL engine, the ``serve`` ones with the cluster objects
   of tests/data/admission/bundled/objects: open-loop fixed rates
   (50, 200, 1000 requests/s for ``--duration`` s; latency from each request's scheduled start) with p50/p99 and
   errors, closed-loop throughput (8 clients, in slices alternating between the servers, all running: the ratios to
   the no-op and to ``empty`` are the medians of the slices' ratios, so that the shared machine's drift hits every
   server alike), RSS
   per worker. Clients keep their connections alive as the apiserver does, and resend once when a kept-alive
   connection turns out closed (as Go's transport does).
   The headline's requests are tests/data/admission/bundled/reviews.yaml: what a cluster sends the chart's
   webhooks under the bundled policies (a ClusterExtensionRevision created and approved, a ClusterExtension's
   version change, ManagedClusterAddOn upgrades, re-applies and installs, on /mutate and /validate; operator-
   controller's release Secrets on /validate), mostly admitted with one denial in eight, as denials are rare in
   a cluster; no answer depends on the time of the run. Beside it, the ``denial path``: the closed-loop
   throughput of ``empty`` and the policy servers on tests/data/admission/reviews.yaml, in the same rounds. That
   corpus is written for the test policies (tests/data/admission/policies); the bundled policies deny 7 of its 9
   /validate reviews (approvers outside approverGroups, add-on versions no ClusterManagementAddOn publishes; its
   two ClusterExtension updates lack a catalog selector, which the bundled settings no longer require), so it
   mostly measures their denials, as this benchmark's headline did before the bundled corpus.
3. ``faults`` (2 workers, both CEL engines, tests/data/admission/limits): a runaway comprehension; the request
   deadline under two concurrent slow requests; cheap requests while expensive ones hold every thread, and beside
   one in the same worker (a 1-worker server: they share its interpreter); 200 idle
   connections; stalled handshakes and bodies; and 200 requests/s through 3 SIGHUPs, 2 policy file changes, a
   certificate rotation and a ``kill -9`` of a worker, with the errors counted.

The apiserver part sends its own dry-run creates; the faults part sends its own requests and, for its load, the
AdmissionReviews of tests/data/admission/reviews.yaml (with tests/data/admission/objects), in turn, to /validate
and /mutate.
(Named after what it measures: a script called webhook.py would shadow the ``webhook`` package.)
Goals: added latency within 2 ms of in-tree's; p99 under 5 ms at 200 requests/s; throughput with the bundled
policies on their corpus at least 0.8 of the same server's with no policies; RSS under 150 MB per worker; zero errors.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any, cast

import yaml

from webhook.serve.app import AdmissionApp
from webhook.serve.runtime import PolicyRuntime
from webhook.serve.server import WebhookServer
from webhook.serve.tls import ReloadingContext, generate_certificates
from webhook.settings import CEL_ENGINES, ServeSettings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import apiserver as harness  # noqa: E402 - after the repository root is importable

DATA = ROOT / "tests" / "data" / "admission"
LIMITS = DATA / "limits" / "policies.yaml"
#: The reviews and cluster objects written for the test policies (tests/data/admission/policies): the requests of
#: the apiserver and faults parts, and the loopback part's denial path (the bundled policies deny 7 of its 9
#: /validate reviews).
TEST_CORPUS, TEST_OBJECTS = DATA / "reviews.yaml", DATA / "objects"
#: The reviews a cluster sends the bundled policies, with the cluster objects they need: the loopback headline.
BUNDLED_CORPUS, BUNDLED_OBJECTS = DATA / "bundled" / "reviews.yaml", DATA / "bundled" / "objects"
SCRIPT = Path(sys.executable).parent / "upgrade-gate"
RATES = (50, 200, 1000)
#: Closed-loop slices per server, alternating between the servers (the throughput ratio is their median).
THROUGHPUT_ROUNDS = 5
APISERVER_ROUNDS = 4
JSON = {"Content-Type": "application/json"}


# --- servers ---------------------------------------------------------------------------------------------------


class NoopApp:
    """The transport alone: a bare ASGI handler that reads the review and allows it (what the admission endpoints
    do around the policies: read, parse, answer)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        if scope["path"] == "/readyz":
            answer = b'{"ready":true}'
        else:
            review = json.loads(body)
            response = {"uid": review["request"]["uid"], "allowed": True}
            document = {"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response}
            answer = json.dumps(document).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})


def noop_server(port: int, certs: Path, workers: int) -> None:
    """Child process: the no-op handler on the production gunicorn/TLS embedding."""
    settings = ServeSettings(port=port, workers=workers, cluster="off", log_level="WARNING")
    tls = ReloadingContext(certs / "tls.crt", certs / "tls.key")
    tls.current()
    WebhookServer(settings, cast(AdmissionApp, NoopApp()), PolicyRuntime(DATA / "policies"), tls).run()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_argv(
    certs: Path, port: int, workers: int, engine: str, policies: Path, *extra: str, objects: Path = TEST_OBJECTS
) -> list[str]:
    """The command line of ``upgrade-gate serve`` of ``policies`` with the cluster objects ``objects`` (no cluster)
    on ``port`` with ``workers`` and the CEL ``engine``, then ``extra``."""
    argv = [str(SCRIPT), "serve", "--cert", str(certs / "tls.crt"), "--key", str(certs / "tls.key")]
    argv += ["--policies", str(policies), "--objects", str(objects), "--cluster", "off"]
    return [
        *argv,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "WARNING",
        "--cel-engine",
        engine,
        *extra,
    ]


@contextmanager
def running(argv: list[str], port: int, context: ssl.SSLContext, env: dict[str, str]) -> Iterator[int]:
    """Start a server process, wait for /readyz, yield its pid, stop it."""
    Path(env["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            with suppress(OSError):
                if Client(port, context).send("GET", "/readyz", None)[0] == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server did not start: {argv}")
            time.sleep(0.1)
        yield process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def worker_rss_mb(master: int) -> list[float]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    sizes = []
    for pid in children:
        with suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    sizes.append(round(int(line.split()[1]) / 1024, 1))
    return sizes


# --- clients -----------------------------------------------------------------------------------------------------


class Client:
    """One kept-alive HTTPS connection; a request on a reused connection that the server closed meanwhile is sent
    again once on a new one (what Go's transport does for a request whose body it can replay)."""

    def __init__(self, port: int, context: ssl.SSLContext, host: str = "127.0.0.1", timeout: float = 30) -> None:
        self.address, self.context, self.timeout = (host, port), context, timeout
        self.connection: http.client.HTTPSConnection | None = None

    def send(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        for attempt in (1, 2):
            reused = self.connection is not None
            if self.connection is None:
                self.connection = http.client.HTTPSConnection(*self.address, context=self.context, timeout=self.timeout)
            try:
                self.connection.request(method, path, body=body, headers=JSON)
                answer = self.connection.getresponse()
                data = answer.read()
            except (http.client.RemoteDisconnected, ConnectionError, ssl.SSLError, http.client.BadStatusLine):
                self.close()
                if reused and attempt == 1:
                    continue
                raise
            if answer.getheader("Connection", "").lower() == "close":
                self.close()
            return answer.status, data
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


Work = list[tuple[str, bytes]]
"""Requests to send in turn: (path, body)."""
Rounds = list[dict[str, dict[str, Any]]]
"""Closed-loop results per round, by server name."""


def reviews(corpus: Path) -> Work:
    """The cases of a review corpus (``cases:`` with ``endpoint`` and ``review``) as (``/validate|/mutate``, body)."""
    cases = yaml.safe_load(corpus.read_text("utf-8"))["cases"]
    return [(f"/{case['endpoint']}", json.dumps(case["review"]).encode()) for case in cases]


class Recorder:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors = 0
        self.lock = threading.Lock()

    def add(self, latency: float, ok: bool) -> None:
        with self.lock:
            self.latencies.append(latency)
            self.errors += not ok

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies) or [0.0]
        return {
            "requests": len(self.latencies),
            "errors": self.errors,
            "p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        }


def admitted(client: Client, path: str, body: bytes) -> bool:
    try:
        status, data = client.send("POST", path, body)
    except (OSError, http.client.HTTPException):  # IncompleteRead: the worker died mid-answer
        return False
    return status == 200 and b'"response"' in data


def fixed_rate(port: int, context: ssl.SSLContext, rate: float, duration: float, work: Work) -> dict[str, Any]:
    """Open loop: request i (``work`` in turn) is due at i/rate seconds; its latency counts from then. Kept-alive
    connections, one per sending thread."""
    recorder, total = Recorder(), int(rate * duration)
    counter, counter_lock = iter(range(total)), threading.Lock()
    start = time.perf_counter() + 0.2

    def sender() -> None:
        client = Client(port, context)
        while True:
            with counter_lock:
                index = next(counter, None)
            if index is None:
                client.close()
                return
            due = start + index / rate
            if (delay := due - time.perf_counter()) > 0:
                time.sleep(delay)
            ok = admitted(client, *work[index % len(work)])
            recorder.add(time.perf_counter() - due, ok)

    threads = [threading.Thread(target=sender) for _ in range(max(4, int(rate / 50)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    return {"rate": rate, **recorder.summary(), "achieved_per_s": round(total / elapsed, 1)}


def closed_loop(port: int, context: ssl.SSLContext, clients: int, duration: float, work: Work) -> dict[str, Any]:
    """Closed loop: ``clients`` kept-alive connections each sending ``work`` in turn, the next request as soon as
    the last is answered, for ``duration`` s; the requests per second answered and the errors."""
    recorder = Recorder()
    stop = time.perf_counter() + duration

    def sender(offset: int) -> None:
        client, index = Client(port, context), offset
        while time.perf_counter() < stop:
            began = time.perf_counter()
            ok = admitted(client, *work[index % len(work)])
            recorder.add(time.perf_counter() - began, ok)
            index += clients
        client.close()

    threads = [threading.Thread(target=sender, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "requests_per_s": round(len(recorder.latencies) / (time.perf_counter() - started), 1),
        "errors": recorder.errors,
    }


# --- 2. loopback ---------------------------------------------------------------------------------------------------


def loopback(tmp: Path, certs: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Part 2 (see the module docstring): by server name (``noop``, ``empty``, each engine), the open-loop
    ``rates``, the closed-loop ``requests_per_s``, ``errors``, ``throughput_ratio`` (to ``noop``),
    ``ratio_to_empty`` and ``rss_mb_per_worker`` on the bundled corpus, and (all but ``noop``) ``denial_path``:
    ``requests_per_s``, ``errors`` and ``ratio_to_empty`` on the test corpus."""
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    servers: dict[str, list[str]] = {}
    port = free_port()
    servers["noop"] = [sys.executable, __file__, "--workers", str(args.workers), "--noop-server", str(port), str(certs)]
    ports = {"noop": port, "empty": free_port()}
    empty = tmp / "no-policies"
    empty.mkdir()
    servers["empty"] = serve_argv(certs, ports["empty"], args.workers, engines(args)[0], empty, objects=BUNDLED_OBJECTS)
    for engine in engines(args):
        ports[engine] = free_port()
        policies = ROOT / "policies"
        servers[engine] = serve_argv(certs, ports[engine], args.workers, engine, policies, objects=BUNDLED_OBJECTS)
    work, denied = reviews(BUNDLED_CORPUS), reviews(TEST_CORPUS)
    results: dict[str, Any] = {}
    with ExitStack() as stack:
        pids = {}
        for name, argv in servers.items():
            env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp / f"metrics-{name}")}
            pids[name] = stack.enter_context(running(argv, ports[name], context, env))
            closed_loop(ports[name], context, 8, 1.0, work)  # warm up every worker
        for name in servers:
            results[name] = {"rates": [fixed_rate(ports[name], context, rate, args.duration, work) for rate in RATES]}
        rounds, denial_rounds = throughput_rounds(ports, context, args.duration, work, denied)
        for name in servers:
            results[name].update(
                requests_per_s=statistics.median(found[name]["requests_per_s"] for found in rounds),
                errors=sum(found[name]["errors"] for found in rounds),
                throughput_ratio=ratio(rounds, name, "noop"),
                ratio_to_empty=ratio(rounds, name, "empty"),
                rss_mb_per_worker=worker_rss_mb(pids[name]),
            )
        for name in denial_rounds[0]:
            results[name]["denial_path"] = {
                "requests_per_s": statistics.median(found[name]["requests_per_s"] for found in denial_rounds),
                "errors": sum(found[name]["errors"] for found in denial_rounds),
                "ratio_to_empty": ratio(denial_rounds, name, "empty"),
            }
    return results


def throughput_rounds(
    ports: dict[str, int], context: ssl.SSLContext, duration: float, work: Work, denied: Work
) -> tuple[Rounds, Rounds]:
    """Closed-loop throughput in ``THROUGHPUT_ROUNDS`` rounds, so that the machine's drift hits every server alike.
    Each round gives every server (``ports``: name to port) a slice of ``work``, then ``empty`` and the policy
    servers (all but ``noop``) a slice of ``denied``; a slice lasts ``duration / THROUGHPUT_ROUNDS``. Returns the
    rounds of ``work`` and the rounds of ``denied``."""
    denial_servers = [name for name in ports if name != "noop"]
    share = duration / THROUGHPUT_ROUNDS
    rounds: Rounds = []
    denial_rounds: Rounds = []
    for _ in range(THROUGHPUT_ROUNDS):
        rounds.append({name: closed_loop(port, context, 8, share, work) for name, port in ports.items()})
        denial_rounds.append({name: closed_loop(ports[name], context, 8, share, denied) for name in denial_servers})
    return rounds, denial_rounds


def ratio(rounds: Rounds, name: str, base: str) -> float:
    """The median over ``rounds`` of ``name``'s throughput over ``base``'s."""
    ratios: list[float] = [found[name]["requests_per_s"] / found[base]["requests_per_s"] for found in rounds]
    return round(statistics.median(ratios), 2)


def engines(args: argparse.Namespace) -> list[str]:
    return [args.cel_engine] if args.cel_engine else list(CEL_ENGINES)


# --- 1. apiserver ------------------------------------------------------------------------------------------------

REVISION = {
    "apiVersion": "olm.operatorframework.io/v1",
    "kind": "ClusterExtensionRevision",
    "metadata": {"name": "bench-operator-1.2.0"},
    "spec": {
        "clusterExtensionRef": {"name": "bench-operator"},
        "version": "1.2.0",
        "bundleMetadata": {"name": "bench-operator.v1.2.0", "version": "1.2.0"},
        "availableSince": "2026-01-05T10:00:00Z",
    },
}
REVISIONS = "/apis/olm.operatorframework.io/v1/clusterextensionrevisions"
RULES = [
    {
        "apiGroups": ["olm.operatorframework.io"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["clusterextensionrevisions"],
    }
]
# isSemver() comes with Kubernetes 1.33: a semantic version as a regular expression instead.
SEMVER = "object.spec.version.matches('^(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)([-+][0-9A-Za-z.+-]+)?$')"
IN_TREE = [
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "bench-revision-checks"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": RULES},
            "validations": [
                {"expression": "object.metadata.name.startsWith(object.spec.clusterExtensionRef.name + '-')"},
                {"expression": SEMVER},
            ],
        },
    },
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "bench-revision-checks"},
        "spec": {"policyName": "bench-revision-checks", "validationActions": ["Deny"]},
    },
    {
        "apiVersion": "admissionregistration.k8s.io/v1alpha1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "bench-revision-defaults"},
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": RULES},
            "mutations": [
                {
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {
                        "expression": "Object{metadata: Object.metadata{labels: "
                        "{'clusterextension': object.spec.clusterExtensionRef.name}}}"
                    },
                },
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {
                        "expression": "request.operation == 'CREATE' && !has(object.spec.approved) "
                        "? [JSONPatch{op: 'add', path: '/spec/approved', value: false}] : []"
                    },
                },
            ],
        },
    },
    {
        "apiVersion": "admissionregistration.k8s.io/v1alpha1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "bench-revision-defaults"},
        "spec": {"policyName": "bench-revision-defaults"},
    },
]
_PLURALS = {
    "CustomResourceDefinition": "customresourcedefinitions",
    "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
}


class Kube:
    """The harness's apiserver over one kept-alive connection, as its admin."""

    def __init__(self, info: dict[str, Any]) -> None:
        context = ssl.create_default_context(cafile=info["ca_crt"])
        context.load_cert_chain(info["admin_crt"], info["admin_key"])
        self.client = Client(int(info["server"].rsplit(":", 1)[1]), context)

    @staticmethod
    def collection(manifest: dict[str, Any]) -> str:
        return f"/apis/{manifest['apiVersion']}/{_PLURALS[manifest['kind']]}"

    def create(self, manifest: dict[str, Any]) -> None:
        status, data = self.client.send("POST", self.collection(manifest), json.dumps(manifest).encode())
        if status not in (200, 201):
            raise SystemExit(f"cannot create {manifest['kind']} {manifest['metadata']['name']}: {data[:300]!r}")

    def delete(self, manifest: dict[str, Any]) -> None:
        self.client.send("DELETE", f"{self.collection(manifest)}/{manifest['metadata']['name']}", None)

    def dry_run(self, revision: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, data = self.client.send("POST", f"{REVISIONS}?dryRun=All", json.dumps(revision).encode())
        try:
            return status, json.loads(data)
        except ValueError:  # "404 page not found" until the CRD is served
            return status, {}

    def until(self, condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise SystemExit(f"the apiserver did not {what} within {timeout:g}s")
            time.sleep(0.2)

    def mutated(self) -> bool:
        status, answer = self.dry_run(REVISION)
        labels = answer.get("metadata", {}).get("labels") or {}
        return status == 201 and labels.get("clusterextension") == "bench-operator"

    def denies_a_bad_name(self) -> bool:
        bad = json.loads(json.dumps(REVISION))
        bad["metadata"]["name"] = "other-1.2.0"
        return self.dry_run(bad)[0] in (400, 403, 422)

    def timed(self, count: int) -> dict[str, Any]:
        body = json.dumps(REVISION).encode()
        for _ in range(30):
            self.client.send("POST", f"{REVISIONS}?dryRun=All", body)
        latencies, errors = [], 0
        for _ in range(count):
            began = time.perf_counter()
            status, _ = self.client.send("POST", f"{REVISIONS}?dryRun=All", body)
            latencies.append(time.perf_counter() - began)
            errors += status != 201
        ordered = sorted(latencies)
        return {
            "requests": count,
            "errors": errors,
            "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
            "p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p99_ms": round(ordered[min(count - 1, int(count * 0.99))] * 1000, 2),
        }


def chart_manifests(port: int, ca_bundle: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The chart's CRD, and its two webhook configurations pointed at ``https://127.0.0.1:<port>``."""
    import helm_python as helm  # noqa: PLC0415  # a test dependency: only this part needs it

    with helm.Chart.load(ROOT / "charts" / "upgrade-gate") as chart:
        rendered = chart.render({}, name="gate", namespace="upgrade-gate", is_install=True)
    texts = [text for path, text in rendered.items() if path.endswith(".yaml")]
    documents = [doc for text in texts for doc in yaml.safe_load_all(text) if doc]
    crd = next(doc for doc in documents if doc["kind"] == "CustomResourceDefinition")
    webhooks = [doc for doc in documents if doc["kind"].endswith("WebhookConfiguration")]
    for configuration in webhooks:
        configuration["metadata"] = {"name": configuration["metadata"]["name"]}
        for hook in configuration["webhooks"]:
            path = hook["clientConfig"]["service"].get("path", "/")
            hook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": base64.b64encode(ca_bundle).decode(),
            }
    return crd, webhooks


OPEN = 'upgrade_gate_connections{state="open"}'


def server_time_per_call(before: str, after: str) -> float:
    """Mean time per admission call between two /metrics texts, in ms (the webhook's own latency histogram)."""
    totals = {"sum": 0.0, "count": 0.0}
    for endpoint in ("validate", "mutate"):
        for part in totals:
            name = f'upgrade_gate_admission_duration_seconds_{part}{{endpoint="{endpoint}"}}'
            totals[part] += gauge(after, name) - gauge(before, name)
    return round(totals["sum"] / totals["count"] * 1000, 2) if totals["count"] else 0.0


def apiserver(tmp: Path, certs: Path, args: argparse.Namespace) -> dict[str, Any]:
    reason = harness.unavailable()
    if reason is not None:
        return {"skipped": reason}
    run = tmp / "kube"
    started = subprocess.run(
        [sys.executable, str(harness.harness_path()), "start", str(run)],
        capture_output=True,
        text=True,
        check=False,
        env=harness.harness_environment(),
    )
    if started.returncode != 0:
        return {"skipped": f"the kube-apiserver harness did not start: {started.stderr.strip()[-300:]}"}
    try:
        kube = Kube(json.loads(started.stdout.strip().splitlines()[-1]))
        port = free_port()
        crd, webhooks = chart_manifests(port, (certs / "ca.crt").read_bytes())
        kube.create(crd)
        kube.until(lambda: kube.dry_run(REVISION)[0] == 201, "serve the ClusterExtensionRevision CRD")
        rounds = [
            _apiserver_round(kube, webhooks, port, tmp / f"round-{index}", certs, args, index)
            for index in range(APISERVER_ROUNDS)
        ]
    finally:
        harness.stop(run)
    results: dict[str, Any] = {}
    for name, last in rounds[-1].items():  # each figure the median of the rounds; the webhook's own from the last
        row = results[name] = dict(last)
        for figure in ("mean_ms", "p50_ms", "p99_ms"):
            row[figure] = round(statistics.median(found[name][figure] for found in rounds), 2)
        row["errors"] = sum(found[name]["errors"] for found in rounds)
        row["added_ms"] = round(
            statistics.median(found[name]["mean_ms"] - found["none"]["mean_ms"] for found in rounds), 2
        )
    return results


def _apiserver_round(
    kube: Kube, webhooks: list[dict[str, Any]], port: int, tmp: Path, certs: Path, args: argparse.Namespace, index: int
) -> dict[str, dict[str, Any]]:
    """One pass over the configurations (``args.requests`` creates each), from none back to none; round ``index``
    takes the engines in turn from a different one, so that no engine is always measured last."""
    results: dict[str, Any] = {"none": kube.timed(args.requests)}
    for manifest in IN_TREE:
        kube.create(manifest)
    kube.until(lambda: kube.mutated() and kube.denies_a_bad_name(), "apply the in-tree policies")
    results["in-tree"] = kube.timed(args.requests)
    for manifest in IN_TREE:
        kube.delete(manifest)
    kube.until(lambda: not kube.mutated(), "drop the in-tree policies")
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    noop = [sys.executable, __file__, "--workers", str(args.workers), "--noop-server", str(port), str(certs)]
    with running(noop, port, context, {"PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics-noop")}):
        for configuration in webhooks:
            kube.create(configuration)
        time.sleep(3)  # the no-op changes nothing to wait for: configurations reach the dispatcher within 1 s
        results["no-op webhook"] = kube.timed(args.requests)
    order = engines(args)
    for engine in order[index % len(order) :] + order[: index % len(order)]:
        argv = serve_argv(certs, port, args.workers, engine, ROOT / "policies")
        with running(argv, port, context, {"PROMETHEUS_MULTIPROC_DIR": str(tmp / f"metrics-{engine}")}):
            kube.until(lambda: kube.mutated() and kube.denies_a_bad_name(), "call the webhook")
            before = Client(port, context).send("GET", "/metrics", None)[1].decode()
            row = results[f"upgrade-gate {engine}"] = kube.timed(args.requests)
            after = Client(port, context).send("GET", "/metrics", None)[1].decode()
            row["server_ms_per_call"] = server_time_per_call(before, after)
            time.sleep(1.2)  # the connection gauges are refreshed every second
            row["connections"] = gauge(Client(port, context).send("GET", "/metrics", None)[1].decode(), OPEN)
    for configuration in webhooks:
        kube.delete(configuration)
    kube.until(lambda: kube.dry_run(REVISION)[0] == 201 and not kube.mutated(), "drop the webhooks")
    return results


# --- 3. faults ---------------------------------------------------------------------------------------------------


def limits_review(resource: str, obj: dict[str, Any]) -> bytes:
    """A CREATE AdmissionReview of ``obj`` as a ``limits.example.com/v1`` ``resource`` (``configmaps``: core)."""
    group = "" if resource == "configmaps" else "limits.example.com"
    kind = {"group": group, "version": "v1", "kind": resource.capitalize().rstrip("s")}
    request = {
        "uid": "u",
        "kind": kind,
        "resource": {**kind, "resource": resource},
        "operation": "CREATE",
        "object": obj,
    }
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


RUNAWAY = limits_review("runaways", {"items": list(range(60))})
SLOW = limits_review("slows", {"small": list(range(21))})
CHEAP = limits_review("configmaps", {"data": {"a": "b"}})


def answer(client: Client, body: bytes) -> tuple[float, dict[str, Any]]:
    began = time.perf_counter()
    status, data = client.send("POST", "/validate", body)
    elapsed = time.perf_counter() - began
    return elapsed, json.loads(data)["response"] if status == 200 else {"http": status}


def in_threads(count: int, target: Callable[[], None]) -> list[threading.Thread]:
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads


def evaluation_faults(port: int, context: ssl.SSLContext, timeout_s: float) -> dict[str, Any]:
    client = Client(port, context)
    runaway = [answer(client, RUNAWAY) for _ in range(5)]
    results: list[tuple[float, dict[str, Any]]] = []

    def slow_client() -> None:
        own = Client(port, context)
        results.extend(answer(own, SLOW) for _ in range(9))

    for thread in in_threads(2, slow_client):
        thread.join()
    timeouts = [elapsed for elapsed, response in results if response.get("status", {}).get("code") == 504]
    return {
        "runaway_ms": round(statistics.fmean(elapsed for elapsed, _ in runaway) * 1000, 1),
        "runaway_message": runaway[0][1].get("status", {}).get("message", "")[-48:],
        "deadline_requests": len(results),
        "deadline_504": len(timeouts),
        "deadline_max_s": round(max(elapsed for elapsed, _ in results), 2),
        "deadline_s": timeout_s,
        "cheap_beside_slow": {slow: cheap_beside(port, context, slow) for slow in (2, 8)},
    }


def cheap_beside(port: int, context: ssl.SSLContext, slow: int) -> dict[str, Any]:
    """Cheap requests (one kept-alive connection, 50/s) while ``slow`` clients each send two slow requests."""

    def slow_pair() -> None:
        own = Client(port, context)
        answer(own, SLOW)
        answer(own, SLOW)

    busy = in_threads(slow, slow_pair)
    time.sleep(0.3)
    client, cheap = Client(port, context), Recorder()
    while any(thread.is_alive() for thread in busy):
        began = time.perf_counter()
        ok = admitted(client, "/validate", CHEAP)
        cheap.add(time.perf_counter() - began, ok)
        time.sleep(0.02)
    return cheap.summary()


def transport_faults(
    port: int, context: ssl.SSLContext, io_timeout_s: float, metrics: Callable[[], str]
) -> dict[str, Any]:
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
    handshaken = []
    for _ in range(50):
        raw = socket.create_connection(("127.0.0.1", port))
        handshaken.append(context.wrap_socket(raw, server_hostname="localhost"))
    beside_idle = fixed_rate(port, context, 200, 3, reviews(TEST_CORPUS))
    time.sleep(1.2)
    idle_gauge = gauge(metrics(), 'upgrade_gate_connections{state="idle"}')
    for connection in silent + handshaken:
        connection.close()
    stalled: list[socket.socket] = []
    for _ in range(5):
        raw = socket.create_connection(("127.0.0.1", port))
        raw.sendall(b"\x16\x03\x01")
        stalled.append(raw)
        tls = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
        tls.sendall(
            b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"
        )
        stalled.append(tls)
    began = time.perf_counter()
    closed_after = []
    for connection in stalled:
        connection.settimeout(io_timeout_s + 10)
        with suppress(OSError):
            while connection.recv(65536):
                pass
        closed_after.append(time.perf_counter() - began)
        connection.close()
    return {
        "idle_connections": 250,
        "beside_idle": beside_idle,
        "idle_gauge": idle_gauge,
        "stalled_connections": len(stalled),
        "stalled_closed_max_s": round(max(closed_after), 2),
        "io_timeout_s": io_timeout_s,
        "connection_timeouts_total": gauge(metrics(), "upgrade_gate_connection_timeouts_total"),
    }


def gauge(text: str, prefix: str) -> float:
    found = [line for line in text.splitlines() if line.startswith(prefix + " ")]
    return float(found[0].split()[-1]) if found else 0.0


def reload_faults(tmp: Path, port: int, pid: int, certs: Path, policies: Path) -> dict[str, Any]:
    """200 requests/s for 12 s through SIGHUPs, policy file changes, a certificate rotation and a kill -9."""
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    outcome: dict[str, Any] = {}
    work = reviews(TEST_CORPUS)
    load = threading.Thread(target=lambda: outcome.update(fixed_rate(port, context, 200, 12, work)))
    policy = next(iter(sorted(policies.glob("*.yaml"))))
    events: list[tuple[float, str, Callable[[], object]]] = [
        (1.0, "SIGHUP", lambda: os.kill(pid, signal.SIGHUP)),
        (2.5, "policy change", lambda: policy.write_text(policy.read_text() + "\n")),
        (4.0, "certificate rotation", lambda: generate_certificates(certs, ["localhost"], ["127.0.0.1"])),
        (5.5, "SIGHUP", lambda: os.kill(pid, signal.SIGHUP)),
        (7.0, "kill -9 of a worker", lambda: os.kill(int(worker_pids(pid)[0]), signal.SIGKILL)),
        (8.5, "policy change", lambda: policy.write_text(policy.read_text() + "\n")),
        (10.0, "SIGHUP", lambda: os.kill(pid, signal.SIGHUP)),
    ]
    load.start()
    began = time.monotonic()
    for at, _, action in events:
        time.sleep(max(0.0, began + at - time.monotonic()))
        action()
    load.join()
    return {"events": [name for _, name, _ in events], **outcome}


def worker_pids(master: int) -> list[str]:
    return Path(f"/proc/{master}/task/{master}/children").read_text().split()


def faults(tmp: Path, certs: Path, args: argparse.Namespace) -> dict[str, Any]:
    timeout_s, io_timeout_s = 1.0, 2.0
    results: dict[str, Any] = {}
    for engine in engines(args):
        port = free_port()
        own_certs = tmp / f"certs-{engine}"
        generate_certificates(own_certs, ["localhost"], ["127.0.0.1"])
        context = ssl.create_default_context(cafile=str(own_certs / "ca.crt"))
        argv = serve_argv(own_certs, port, 2, engine, LIMITS, "--request-timeout", str(timeout_s))
        env = {
            "PROMETHEUS_MULTIPROC_DIR": str(tmp / f"fault-metrics-{engine}"),
            "UPGRADE_GATE_IO_TIMEOUT": str(io_timeout_s),
        }
        with running(argv, port, context, env):
            results[engine] = evaluation_faults(port, context, timeout_s)

            def metrics(port: int = port, context: ssl.SSLContext = context) -> str:
                return Client(port, context).send("GET", "/metrics", None)[1].decode()

            if engine == engines(args)[0]:
                results["transport"] = transport_faults(port, context, io_timeout_s, metrics)
        port = free_port()
        argv = serve_argv(own_certs, port, 1, engine, LIMITS, "--request-timeout", str(timeout_s))
        with running(argv, port, context, {**env, "PROMETHEUS_MULTIPROC_DIR": str(tmp / f"shared-{engine}")}):
            results[engine]["cheap_beside_1_slow_same_worker"] = cheap_beside(port, context, 1)
    policies = tmp / "reload-policies"
    policies.mkdir()
    for source in (ROOT / "policies").glob("*.yaml"):
        (policies / source.name).write_text(source.read_text())
    reload_certs = tmp / "reload-certs"
    generate_certificates(reload_certs, ["localhost"], ["127.0.0.1"])
    port = free_port()
    argv = serve_argv(reload_certs, port, 2, engines(args)[-1], policies)
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp / "reload-metrics"), "UPGRADE_GATE_RELOAD_INTERVAL": "0.5"}
    context = ssl.create_default_context(cafile=str(reload_certs / "ca.crt"))
    with running(argv, port, context, env) as pid:
        results["reloads"] = reload_faults(tmp, port, pid, reload_certs, policies)
    return results


# --- report ------------------------------------------------------------------------------------------------------


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"{os.cpu_count()} cores, {args.workers} workers x 4 threads; {platform()}")
    kube = results.get("apiserver")
    if kube is not None:
        print("\nAPI-server-observed dry-run creates of a ClusterExtensionRevision, one kept-alive connection")
        if "skipped" in kube:
            print(f"  skipped: {kube['skipped']}")
        else:
            print(f"  {'':24} {'mean ms':>8} {'p50 ms':>8} {'p99 ms':>8} {'added ms':>9} {'errors':>7}  webhook")
            for name, row in kube.items():
                inside = (
                    f"  {row['server_ms_per_call']} ms per call inside, {row['connections']:g} connections open"
                    if "connections" in row
                    else ""
                )
                print(
                    f"  {name:24} {row['mean_ms']:8} {row['p50_ms']:8} {row['p99_ms']:8} {row['added_ms']:9} "
                    f"{row['errors']:7}{inside}"
                )
    loop = results.get("loopback")
    if loop is not None:
        print("\nLoopback, kept-alive connections: open-loop rates (p50/p99 ms, errors), closed-loop throughput")
        print(f"  on {BUNDLED_CORPUS.relative_to(ROOT)} ({corpus_mix(BUNDLED_CORPUS)})")
        header = "".join(f"{f'{rate}/s':>22}" for rate in RATES)
        print(f"  {'':10}{header} {'req/s':>8} {'/no-op':>7} {'/empty':>7}  RSS MB/worker")
        for name, row in loop.items():
            cells = "".join(f"{cell(rate):>22}" for rate in row["rates"])
            print(
                f"  {name:10}{cells} {row['requests_per_s']:8} {row['throughput_ratio']:7} {row['ratio_to_empty']:7}"
                f"  {row['rss_mb_per_worker']}"
            )
        achieved = {name: [r["achieved_per_s"] for r in row["rates"]] for name, row in loop.items()}
        print(f"  achieved rates: {achieved}")
        print(f"  denial path, closed loop in the same rounds: {TEST_CORPUS.relative_to(ROOT)}")
        print(f"  ({len(reviews(TEST_CORPUS))} reviews; the bundled policies deny 7 of the 9 /validate ones)")
        print(f"  {'':10} {'req/s':>8} {'/empty':>7} {'errors':>7}")
        for name, row in loop.items():
            if "denial_path" in row:
                denial = row["denial_path"]
                print(f"  {name:10} {denial['requests_per_s']:8} {denial['ratio_to_empty']:7} {denial['errors']:7}")
    fault = results.get("faults")
    if fault is not None:
        print("\nFaults (2 workers)")
        for engine in engines(args):
            row = fault[engine]
            print(
                f"  {engine}: runaway comprehension answered in {row['runaway_ms']} ms ({row['runaway_message']!r}); "
                f"deadline {row['deadline_s']:g} s: {row['deadline_504']}/{row['deadline_requests']} answered 504, "
                f"the last after {row['deadline_max_s']} s"
            )
            beside = {f"beside {slow} slow ones": cheap for slow, cheap in row["cheap_beside_slow"].items()}
            beside["beside 1 slow one in their worker (1 worker)"] = row["cheap_beside_1_slow_same_worker"]
            for where, cheap in beside.items():
                print(
                    f"    cheap requests {where}: p50 {cheap['p50_ms']} ms, p99 {cheap['p99_ms']} ms, "
                    f"{cheap['errors']} errors of {cheap['requests']}"
                )
        transport = fault["transport"]
        idle = transport["beside_idle"]
        print(
            f"  {transport['idle_connections']} idle connections: 200 requests/s beside them p50 {idle['p50_ms']} ms, "
            f"p99 {idle['p99_ms']} ms, {idle['errors']} errors; idle gauge {transport['idle_gauge']:g}; "
            f"{transport['stalled_connections']} stalled handshakes and bodies closed within "
            f"{transport['stalled_closed_max_s']} s (I/O timeout {transport['io_timeout_s']:g} s), "
            f"timeouts counted {transport['connection_timeouts_total']:g}"
        )
        reloads = fault["reloads"]
        print(
            f"  {reloads['requests']} requests at 200/s through {', '.join(reloads['events'])}: "
            f"{reloads['errors']} errors, p50 {reloads['p50_ms']} ms, p99 {reloads['p99_ms']} ms"
        )


def corpus_mix(corpus: Path) -> str:
    """What a corpus sends, by its cases' ``endpoint`` and ``want.allowed``: ``16 reviews, 9 /validate and 7
    /mutate, 2 denied``."""
    cases = yaml.safe_load(corpus.read_text("utf-8"))["cases"]
    validate = sum(case["endpoint"] == "validate" for case in cases)
    denied = sum(not case["want"]["allowed"] for case in cases)
    return f"{len(cases)} reviews, {validate} /validate and {len(cases) - validate} /mutate, {denied} denied"


def cell(rate: dict[str, Any]) -> str:
    return f"{rate['p50_ms']}/{rate['p99_ms']} ({rate['errors']})"


def platform() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        "unknown CPU",
    )
    return f"{model}, Python {sys.version.split()[0]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", action="append", choices=["apiserver", "loopback", "faults"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--cel-engine", choices=CEL_ENGINES, help="measure one engine only (default: both)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--noop-server", nargs=2, metavar=("PORT", "CERTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.noop_server:
        noop_server(int(args.noop_server[0]), Path(args.noop_server[1]), args.workers)
        return
    parts = args.part or ["apiserver", "loopback", "faults"]
    measures = {"apiserver": apiserver, "loopback": loopback, "faults": faults}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="upgrade-gate-bench-") as tmp:
        certs = Path(tmp) / "certs"
        generate_certificates(certs, ["localhost"], ["127.0.0.1"])
        for part in parts:
            results[part] = measures[part](Path(tmp), certs, args)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results, args)


if __name__ == "__main__":
    main()
