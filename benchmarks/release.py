"""The upgrade gate's decoding: an operator-controller release of about 1 MiB compressed, read and decided.

Usage: python benchmarks/release.py [--seconds 1.0] [--size-kib 1024] [--json]

Builds a Helm release index Secret as helm-operator-plugins stores it (``data.chunk``: base64 of gzip level 9 of
the release JSON) whose compressed payload is ``--size-kib`` large, made of real File-Based Catalog text (the
bundled certified-operators catalog) as the release's manifest and chart files. Measured on one core, side by
side in one run: the floor ("gzip + json": ``gzip.decompress`` and ``json.loads`` of the same bytes),
``webhook.olm.release.read_release`` on it, ``read_release`` when the bundle is on the Secret's labels (no payload
decoded), and the whole decision of the policy ``upgrade-gate-upgrade-approval`` (``PolicyEngine.validate`` of
the AdmissionReview) on each CEL engine. Memory: the peak Python allocation of one decode, and of refusing a gzip
bomb (1 GiB of zeros, 1 MiB compressed). Goal (the gate issue): under 2 ms per request on one core; the bomb
refused within the bound.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import datetime
import functools
import gzip
import json
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from webhook.errors import ReleaseError
from webhook.objects import InMemoryObjectStore
from webhook.olm import release
from webhook.policy.admitting.engine import PolicyEngine
from webhook.policy.loading.loader import load_policy_set
from webhook.settings import CEL_ENGINES

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "catalogs" / "certified-operators-v4.22"
NOW = datetime.datetime(2026, 6, 10, 12, tzinfo=datetime.UTC)
OPERATOR_CONTROLLER = "system:serviceaccount:olmv1-system:operator-controller-controller-manager"
NAMESPACE: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "olmv1-system"}}
EXTENSION: dict[str, Any] = {
    "apiVersion": "olm.operatorframework.io/v1",
    "kind": "ClusterExtension",
    "metadata": {"name": "cloudnative-pg"},
    "spec": {
        "namespace": "cnpg-system",
        "source": {"sourceType": "Catalog", "catalog": {"packageName": "cloudnative-pg"}},
    },
    "status": {"install": {"bundle": {"name": "cloudnative-pg.v1.27.1", "version": "1.27.1"}}},
}
APPROVED_REVISION: dict[str, Any] = {
    "apiVersion": "olm.operatorframework.io/v1",
    "kind": "ClusterExtensionRevision",
    "metadata": {"name": "cloudnative-pg-1.28.0"},
    "spec": {"clusterExtensionRef": {"name": "cloudnative-pg"}, "version": "1.28.0", "approved": True},
}
BUNDLE = {
    "olm.operatorframework.io/bundle-name": "cloudnative-pg.v1.28.0",
    "olm.operatorframework.io/bundle-version": "1.28.0",
    "olm.operatorframework.io/package-name": "cloudnative-pg",
    "olm.operatorframework.io/bundle-reference": "registry.connect.redhat.com/enterprisedb/cloudnative-pg@sha256:4a7c",
}


def release_payload(size_kib: int) -> bytes:
    """Release JSON whose gzip (level 9) is about ``size_kib`` KiB: catalog text as manifest and chart files."""
    texts = [path.read_text() for path in sorted(CATALOG.rglob("*.json"))]
    manifest: list[str] = []
    files: list[dict[str, str]] = []
    body = b""
    for index, text in enumerate(texts * 4):
        if index % 2:
            manifest.append(text)
        else:
            files.append({"name": f"templates/{index}.yaml", "data": base64.b64encode(text.encode()).decode()})
        if index % 4 == 0:
            body = _encode(manifest, files)
            if len(zlib.compress(body, 1)) >= size_kib * 1024 * 1.15:  # level 1 is fast; level 9 is ~15% smaller
                break
    return body


def _encode(manifest: list[str], files: list[dict[str, str]]) -> bytes:
    document = {
        "name": "cloudnative-pg",
        "info": {"status": "pending-upgrade", "description": "Upgrade complete"},
        "chart": {"metadata": {"name": "cloudnative-pg", "version": "1.28.0"}, "files": files},
        "manifest": "\n---\n".join(manifest),
        "version": 5,
        "namespace": "cnpg-system",
        "labels": BUNDLE,
    }
    return json.dumps(document).encode()


def index_secret(chunk: bytes, labels_on_secret: bool) -> dict[str, Any]:
    labels = {"name": "cloudnative-pg", "owner": "operator-controller", "status": "pending-upgrade", "version": "5",
              "key": "sh.helm.release.v1.cloudnative-pg.v5", "type": "index"}  # fmt: skip
    annotations: dict[str, str] = {}
    if labels_on_secret:  # as helm-operator-plugins writes release labels: invalid label values as annotations
        reference = "olm.operatorframework.io/bundle-reference"
        labels.update({k: v for k, v in BUNDLE.items() if k != reference})
        annotations[reference] = BUNDLE[reference]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": release.INDEX_SECRET_TYPE,
        "metadata": {"name": "sh.helm.release.v1.cloudnative-pg.v5", "namespace": "olmv1-system",
                     "labels": labels, "annotations": annotations},
        "data": {"chunk": base64.b64encode(chunk).decode(), "extraChunks": base64.b64encode(b"[]").decode()},
    }  # fmt: skip


def review(secret: dict[str, Any]) -> dict[str, Any]:
    gvk = {"group": "", "version": "v1", "kind": "Secret"}
    gvr = {"group": "", "version": "v1", "resource": "secrets"}
    return {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": secret["metadata"]["name"],
        "namespace": "olmv1-system",
        "operation": "CREATE",
        "userInfo": {"username": OPERATOR_CONTROLLER, "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": secret,
        "oldObject": None,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }


def per_call_ms(run: Callable[[], object], seconds: float) -> float:
    """Best mean of three timed batches, each about ``seconds / 3`` long."""
    run()
    best = float("inf")
    for _ in range(3):
        calls, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds / 3:
            run()
            calls += 1
        best = min(best, elapsed / calls)
    return best * 1000


def peak_kib(run: Callable[[], object]) -> tuple[float, float]:
    """(peak traced Python allocation in KiB, milliseconds) of one call of ``run``."""
    tracemalloc.start()
    started = time.perf_counter()
    with contextlib.suppress(ReleaseError):
        run()
    elapsed = (time.perf_counter() - started) * 1000
    peak = tracemalloc.get_traced_memory()[1] / 1024
    tracemalloc.stop()
    return peak, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement (default 1 s)")
    parser.add_argument("--size-kib", type=int, default=1024, help="compressed release size (default 1024 KiB)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    payload = release_payload(args.size_kib)
    chunk = gzip.compress(payload, 9)
    in_payload, on_labels = index_secret(chunk, False), index_secret(chunk, True)
    figures: dict[str, Any] = {
        "compressed KiB": round(len(chunk) / 1024),
        "decompressed KiB": round(len(payload) / 1024),
        "floor: gzip + json (ms)": per_call_ms(lambda: json.loads(gzip.decompress(chunk)), args.seconds),
        "read_release, bundle in the payload (ms)": per_call_ms(lambda: release.read_release(in_payload), args.seconds),
        "read_release, bundle on the Secret (ms)": per_call_ms(lambda: release.read_release(on_labels), args.seconds),
    }  # fmt: skip
    objects = [NAMESPACE, EXTENSION, APPROVED_REVISION]
    for engine_name in CEL_ENGINES:
        policies = load_policy_set([ROOT / "policies" / "upgrade-approval.yaml", ROOT / "policies" / "settings.yaml"],
                                   engine=engine_name)  # fmt: skip
        engine = PolicyEngine(policies, InMemoryObjectStore([*policies.params, *objects]))
        for label, secret in (("bundle in the payload", in_payload), ("bundle on the Secret", on_labels)):
            request = review(copy.deepcopy(secret))
            decide = functools.partial(engine.validate, request, NAMESPACE, now=NOW)
            assert decide().allowed
            figures[f"decision on {engine_name}, {label} (ms)"] = per_call_ms(decide, args.seconds)
    figures["peak memory of one decode (KiB)"], _ = peak_kib(lambda: release.read_release(in_payload))
    bomb = gzip.compress(b"\0" * (1024 * 1024 * 1024), 9)
    figures["gzip bomb: compressed KiB"] = round(len(bomb) / 1024)
    peak, elapsed = peak_kib(lambda: release.read_release(index_secret(bomb, False)))
    figures["gzip bomb: refused after (ms)"], figures["gzip bomb: peak memory (KiB)"] = elapsed, peak
    figures["decision / floor (bundle in the payload, cel-expr)"] = (
        figures["decision on cel-expr, bundle in the payload (ms)"] / figures["floor: gzip + json (ms)"]
    )
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    width = max(map(len, figures))
    for name, value in figures.items():
        print(f"{name:<{width}}  {value:,.2f}" if isinstance(value, float) else f"{name:<{width}}  {value:,}")


if __name__ == "__main__":
    main()
