"""Reading operator-controller's release objects (cases in tests/data/release/cases.yaml), and the decoding bounds."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook import release
from webhook.errors import ReleaseError
from webhook.release import read_release

CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "release" / "cases.yaml").read_text(encoding="utf-8")
)


def index_data(payload: bytes, *, extra_chunks: list[str] | None = None, truncate: bool = False) -> dict[str, str]:
    """``data`` of an index Secret holding ``payload`` as helm-operator-plugins writes it (base64 of gzip)."""
    compressed = gzip.compress(payload, compresslevel=9, mtime=0)
    if truncate:
        compressed = compressed[: len(compressed) // 2]
    names = json.dumps(extra_chunks or []).encode()
    return {"chunk": base64.b64encode(compressed).decode(), "extraChunks": base64.b64encode(names).decode()}


def build(case: dict[str, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = copy.deepcopy(case["object"])
    if "payload" in case or "payloadText" in case:
        text = case.get("payloadText") or json.dumps(case["payload"])
        obj["data"] = index_data(
            text.encode(), extra_chunks=case.get("extraChunks"), truncate=case.get("truncate", False)
        )
    elif "chunk" in case:
        obj["data"] = {"chunk": case["chunk"], "extraChunks": "W10="}
    return obj


@pytest.mark.parametrize("case", CASES["reads"], ids=[c["why"] for c in CASES["reads"]])
def test_release_is_read(case: dict[str, Any]) -> None:
    assert read_release(build(case)).as_map() == case["want"]


@pytest.mark.parametrize("case", CASES["errors"], ids=[c["why"] for c in CASES["errors"]])
def test_unreadable_release_is_refused_with_what_is_wrong(case: dict[str, Any]) -> None:
    with pytest.raises(ReleaseError) as raised:
        read_release(build(case))
    assert str(raised.value) == case["error"]


def test_a_gzip_bomb_is_refused_at_the_decompressed_bound() -> None:
    secret = build(CASES["errors"][1])  # the index Secret of the error cases
    bomb = b'{"labels": {}, "manifest": "' + b" " * (release.MAX_PAYLOAD_BYTES + 1) + b'"}'
    secret["data"] = index_data(bomb)
    assert len(secret["data"]["chunk"]) < 64 * 1024  # about 1,000 to 1 on a real gzip stream
    with pytest.raises(ReleaseError, match=r"inflates past 32 MiB; refused as a gzip bomb$"):
        read_release(secret)


def test_a_chunk_larger_than_a_secret_can_hold_is_refused_before_decoding() -> None:
    secret = build(CASES["errors"][1])
    secret["data"] = {"chunk": "A" * (3 * 1024 * 1024), "extraChunks": "W10="}
    with pytest.raises(ReleaseError, match=r"data\.chunk is over 2048 KiB, larger than a release chunk$"):
        read_release(secret)


def test_inflation_stops_at_its_time_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = build(CASES["errors"][1])
    secret["data"] = index_data(b'{"m": "' + b"x" * (3 * 1024 * 1024) + b'"}')
    monkeypatch.setattr(release, "DECODE_SECONDS", -1.0)
    with pytest.raises(ReleaseError, match=r"inflating the release in data\.chunk took over -1 s$"):
        read_release(secret)
