"""The installVersion lifecycle's status of a ManagedClusterAddOn from its works (``webhook.ocm.lifecycle``), driven by
``tests/data/addons/lifecycle.yaml`` whose expectations are the lifecycle's and upstream's, not our code's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ocm import rows
from webhook.conditions import find_condition, parse_time
from webhook.ocm.addons import AddOnVersions
from webhook.ocm.lifecycle import RECORD, lifecycle_status

OWNED = ("Progressing", RECORD)


def work(shorthand: dict[str, Any]) -> dict[str, Any]:
    """A ManifestWork in cluster1 as the addon manager labels it and the work agent reports it (see the table)."""
    generation = shorthand.get("generation", 1)
    labels = {
        "open-cluster-management.io/addon-name": shorthand.get("addon", "helloworld"),
        "open-cluster-management.io/addon-version": shorthand["version"],
    }
    metadata = {"name": shorthand["name"], "namespace": "cluster1", "generation": generation, "labels": labels}

    def condition(kind: str, status: str, reason: str, message: str, observed: int, since: str) -> dict[str, Any]:
        return {"type": kind, "status": status, "observedGeneration": observed, "lastTransitionTime": since,
                "reason": reason, "message": message}  # fmt: skip

    if "ready" in shorthand:
        since = shorthand["ready"]
        conditions = [condition("Applied", "True", "AppliedManifestWorkComplete", "Apply manifest work complete",
                                generation, since),
                      condition("Available", "True", "ResourcesAvailable", "All resources are available",
                                generation, since)]  # fmt: skip
    elif "degraded" in shorthand:
        reason, _, message = shorthand["degraded"].partition(": ")
        since = "2022-11-02T05:49:00Z"
        conditions = [condition("Applied", "True", "AppliedManifestWorkComplete", "Apply manifest work complete",
                                generation, since),
                      condition("Degraded", "True", reason, message, generation, since)]  # fmt: skip
    else:
        since, observed = "2022-11-01T00:00:00Z", shorthand["stale"]
        conditions = [condition("Applied", "True", "AppliedManifestWorkComplete", "Apply manifest work complete",
                                observed, since),
                      condition("Available", "True", "ResourcesAvailable", "All resources are available",
                                observed, since)]  # fmt: skip
    return {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork", "metadata": metadata,
            "status": {"conditions": conditions}}  # fmt: skip


@pytest.mark.parametrize("row", rows("lifecycle.yaml", "rows"))
def test_lifecycle_status(row: dict[str, Any]) -> None:
    before = row["addon"]["status"]
    spec = {} if row["addon"]["installVersion"] is None else {"installVersion": row["addon"]["installVersion"]}
    addon = {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": "helloworld", "namespace": "cluster1", "generation": 2},
        "spec": spec,
        **({"status": before} if before is not None else {}),
    }
    status = lifecycle_status(
        addon, [work(w) for w in row["works"]], AddOnVersions.from_status(row["cma"]), now=parse_time(row["now"])
    )
    want = row["want"]
    assert (status["lastVersion"], status["currentVersion"]) == (want["lastVersion"], want["currentVersion"])
    assert find_condition(status["conditions"], "Progressing") == want["progressing"]
    assert (find_condition(status["conditions"], RECORD) or {}).get("message") == want["describes"]
    others = [c for c in (before or {}).get("conditions") or () if c["type"] not in OWNED]
    assert [c for c in status["conditions"] if c["type"] not in OWNED] == others, "others' conditions untouched"


def test_a_status_that_says_everything_is_derived_again_unchanged() -> None:
    """A resync of an add-on whose status is current derives the very same status: no write is due."""
    addon = {
        "metadata": {"name": "helloworld", "namespace": "cluster1", "generation": 2},
        "spec": {"installVersion": "v2"},
    }
    works = [work({"name": "addon-helloworld-deploy", "version": "v2", "ready": "2022-11-02T05:47:30Z"})]
    versions = AddOnVersions(("v1", "v2"), "v2")
    first = lifecycle_status(addon, works, versions, now=parse_time("2022-11-02T05:48:12Z"))
    again = lifecycle_status({**addon, "status": first}, works, versions, now=parse_time("2022-11-02T09:00:00Z"))
    assert again == first
