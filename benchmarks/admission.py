"""Webhook benchmark: the real gunicorn/TLS stack on loopback, a no-op handler vs the bundled policies on each
CEL engine.

Usage: python benchmarks/serve.py [--workers 2] [--rate 200] [--duration 10] [--clients 8]
                                  [--cel-engine cel-python|cel-expr] [--json]

For each server, (a) a no-op Flask handler embedded by ``webhook.admission.server.WebhookServer`` exactly as
``serve`` does (same TLS contexts, same sync workers) and (b) ``upgrade-gate serve`` on the bundled
``policies/`` with tests/data/admission/objects standing in for the cluster, once per CEL engine (or the one
``--cel-engine`` names):
1. latency at a fixed rate (``--rate`` requests/s for ``--duration`` s, open loop: requests start on
   schedule whatever the previous ones did): p50/p99, errors;
2. throughput, closed loop with ``--clients`` connections in flight for ``--duration`` s: requests/s, errors;
3. RSS of each worker (``/proc``) after the runs.
Requests are the AdmissionReviews of tests/data/admission/reviews.yaml, in turn, to /validate and /mutate.
Each request is a new TLS connection, as gunicorn's sync workers close every connection.
(Named after the command: a script called webhook.py would shadow the ``webhook`` package.)
Goals (issue 4): p99 <= 10 ms at 200 requests/s on 2 workers; throughput >= 50% of the no-op's;
RSS <= 150 MB per worker; zero errors over 60 s (run with --duration 60). The policies' share of a request is
estimated as (p50 with policies - p50 of the no-op) / p50 with policies; goal (issue 5): under 10% with cel-expr.
"""

from __future__ import annotations

import argparse
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from flask import Flask, jsonify, request

from webhook.admission.runtime import PolicyRuntime
from webhook.admission.server import WebhookServer
from webhook.admission.tls import ReloadingContext, generate_certificates
from webhook.settings import CEL_ENGINES, ServeSettings

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "admission"
SCRIPT = Path(sys.executable).parent / "upgrade-gate"


def noop_server(port: int, certs: Path, workers: int) -> None:
    """Child process: the no-op handler on the production gunicorn/TLS embedding."""
    app = Flask("noop")

    @app.post("/validate")
    @app.post("/mutate")
    def admit() -> Any:
        review = json.loads(request.get_data())
        return jsonify(
            {
                "apiVersion": review["apiVersion"],
                "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], "allowed": True},
            }
        )

    @app.get("/readyz")
    def ready() -> Any:
        return jsonify({"ready": True})

    settings = ServeSettings(port=port, workers=workers, cluster="off", log_level="WARNING")
    tls = ReloadingContext(certs / "tls.crt", certs / "tls.key")
    tls.current()
    WebhookServer(settings, app, PolicyRuntime(DATA / "policies"), tls).run()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running(argv: list[str], port: int, context: ssl.SSLContext, env: dict[str, str]) -> Iterator[int]:
    """Start a server process, wait for /readyz, yield its pid, stop it."""
    process = subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if call(port, context, "GET", "/readyz", None)[0] == 200:
                    break
            except OSError:
                pass
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


def call(port: int, context: ssl.SSLContext, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def requests() -> list[tuple[str, bytes]]:
    cases = yaml.safe_load((DATA / "reviews.yaml").read_text("utf-8"))["cases"]
    return [(f"/{case['endpoint']}", json.dumps(case["review"]).encode()) for case in cases]


class Recorder:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors = 0
        self.lock = threading.Lock()

    def send(self, port: int, context: ssl.SSLContext, path: str, body: bytes) -> None:
        started = time.perf_counter()
        try:
            status, data = call(port, context, "POST", path, body)
            ok = status == 200 and b'"response"' in data
        except OSError:
            ok = False
        elapsed = time.perf_counter() - started
        with self.lock:
            self.latencies.append(elapsed)
            self.errors += not ok


def fixed_rate(port: int, context: ssl.SSLContext, rate: float, duration: float) -> dict[str, Any]:
    """Open loop: request i starts at i/rate seconds (a pool of threads keeps the schedule)."""
    work, recorder, total = requests(), Recorder(), int(rate * duration)
    counter = iter(range(total))
    counter_lock = threading.Lock()
    start = time.perf_counter() + 0.1

    def worker() -> None:
        while True:
            with counter_lock:
                index = next(counter, None)
            if index is None:
                return
            delay = start + index / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            recorder.send(port, context, *work[index % len(work)])

    threads = [threading.Thread(target=worker) for _ in range(max(4, int(rate / 25)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ordered = sorted(recorder.latencies)
    return {
        "requests": len(ordered),
        "errors": recorder.errors,
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
    }


def closed_loop(port: int, context: ssl.SSLContext, clients: int, duration: float) -> dict[str, Any]:
    work, recorder = requests(), Recorder()
    stop = time.perf_counter() + duration

    def worker(offset: int) -> None:
        index = offset
        while time.perf_counter() < stop:
            recorder.send(port, context, *work[index % len(work)])
            index += clients

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {"requests_per_s": round(len(recorder.latencies) / elapsed, 1), "errors": recorder.errors}


def worker_rss_mb(master: int) -> list[float]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    sizes = []
    for pid in children:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                sizes.append(round(int(line.split()[1]) / 1024, 1))
    return sizes


def measure(argv: list[str], port: int, certs: Path, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    with running(argv, port, context, env) as pid:
        closed_loop(port, context, args.clients, 1.0)  # warm up every worker
        latency = fixed_rate(port, context, args.rate, args.duration)
        throughput = closed_loop(port, context, args.clients, args.duration)
        return {**latency, **throughput, "rss_mb_per_worker": worker_rss_mb(pid)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--cel-engine", choices=CEL_ENGINES, help="measure one engine only (default: both)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--noop-server", nargs=2, metavar=("PORT", "CERTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.noop_server:
        noop_server(int(args.noop_server[0]), Path(args.noop_server[1]), args.workers)
        return
    with tempfile.TemporaryDirectory(prefix="upgrade-gate-bench-") as tmp:
        certs = Path(tmp) / "certs"
        generate_certificates(certs, ["localhost"], ["127.0.0.1"])
        results = {}
        port = free_port()
        env = {"PROMETHEUS_MULTIPROC_DIR": str(Path(tmp) / "noop-metrics")}
        Path(env["PROMETHEUS_MULTIPROC_DIR"]).mkdir()
        noop = [sys.executable, __file__, "--workers", str(args.workers), "--noop-server", str(port), str(certs)]
        results["noop"] = measure(noop, port, certs, args, env)
        for engine in [args.cel_engine] if args.cel_engine else list(CEL_ENGINES):
            port = free_port()
            serve = [str(SCRIPT), "serve", "--cert", str(certs / "tls.crt"), "--key", str(certs / "tls.key")]
            serve += ["--policies", str(ROOT / "policies"), "--objects", str(DATA / "objects"), "--cluster", "off"]
            serve += ["--port", str(port), "--workers", str(args.workers), "--log-level", "WARNING"]
            serve += ["--cel-engine", engine]
            metrics = {"PROMETHEUS_MULTIPROC_DIR": str(Path(tmp) / f"m-{engine}")}
            results[engine] = measure(serve, port, certs, args, metrics)
    noop_row = results["noop"]
    for row in list(results.values())[1:]:
        row["throughput_ratio"] = round(row["requests_per_s"] / noop_row["requests_per_s"], 2)
        row["policy_share_pct"] = round(max(0.0, row["p50_ms"] - noop_row["p50_ms"]) / row["p50_ms"] * 100, 1)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{args.workers} workers; {args.rate:g} requests/s for {args.duration:g} s; closed loop: {args.clients} clients"
    )
    print(
        f"{'':10} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8} {'errors':>7} {'vs noop':>8} {'policy %':>8}  RSS MB/worker"
    )
    for name, row in results.items():
        ratio = f"{row['throughput_ratio']:8}" if "throughput_ratio" in row else f"{'-':>8}"
        share = f"{row['policy_share_pct']:8}" if "policy_share_pct" in row else f"{'-':>8}"
        print(
            f"{name:10} {row['p50_ms']:8} {row['p99_ms']:8} {row['requests_per_s']:8} "
            f"{row['errors']:7} {ratio} {share}  {row['rss_mb_per_worker']}"
        )


if __name__ == "__main__":
    main()
