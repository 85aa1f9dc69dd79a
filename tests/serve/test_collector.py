"""The worker's garbage collector: what survives a full collection is frozen, so the next one scans only what came
since (``webhook.serve.server.freeze_survivors``). Run in a child process: freezing is process-wide."""

from __future__ import annotations

import json
import subprocess
import sys

from webhook.serve.server import YOUNG_COLLECTION_THRESHOLD

PROGRAM = """
import gc, json
from webhook.serve.server import freeze_survivors

freeze_survivors()
started = gc.get_freeze_count()
kept = [[index] for index in range(10_000)]  # lists: tracked by the collector
gc.collect(1)
young = gc.get_freeze_count()
gc.collect()
full = gc.get_freeze_count()
print(json.dumps({"started": started, "young": young, "full": full, "threshold": gc.get_threshold()[0]}))
"""


def test_what_survives_a_full_collection_is_frozen_and_a_younger_collection_freezes_nothing() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True)
    counts = json.loads(done.stdout)
    assert counts["started"] > 0  # what the process had loaded
    assert counts["young"] == counts["started"]
    assert counts["full"] >= counts["started"] + 10_000


def test_young_collections_wait_for_many_more_objects_than_cpythons_default() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["threshold"] == YOUNG_COLLECTION_THRESHOLD > 700
