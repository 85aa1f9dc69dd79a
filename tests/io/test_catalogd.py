"""``fetch_catalog`` against a loopback server: a catalog served as catalogd serves it (``/api/v1/all``, JSON lines),
and each failure in its class: an outage (no answer, 5xx, 429) is ``CatalogUnavailable`` (exit 3: retry), another
HTTP error (404: no such catalog) a plain ``FetchError`` (exit 1)."""

from __future__ import annotations

import json

import pytest

from tests.io.kube.fakeapi import JsonHandler, serving
from webhook.errors import CatalogUnavailable, FetchError, Unavailable
from webhook.io.catalogd import fetch_catalog

BLOBS = [
    {"schema": "olm.package", "name": "hello", "defaultChannel": "stable"},
    {"schema": "olm.channel", "package": "hello", "name": "stable", "entries": [{"name": "hello.v1.0.0"}]},
    {"schema": "olm.bundle", "package": "hello", "name": "hello.v1.0.0", "image": "example.com/hello:1.0.0",
     "properties": [{"type": "olm.package", "value": {"packageName": "hello", "version": "1.0.0"}}]},
]  # fmt: skip


class Catalogd(JsonHandler):
    """``/catalogs/<name>/api/v1/all``: ``ok`` serves the blobs, ``down`` 503, ``busy`` 429, anything else 404."""

    def do_GET(self) -> None:
        name = self.path.split("/")[2]
        codes = {"ok": 200, "down": 503, "busy": 429}
        body = "\n".join(map(json.dumps, BLOBS)).encode() if name == "ok" else b"{}"
        self.answer(codes.get(name, 404), body)


def test_a_served_catalog_is_read_and_named_after_its_url() -> None:
    with serving(Catalogd) as (api, _):
        catalog = fetch_catalog(f"{api.configuration.host}/catalogs/ok")
    assert catalog.name == "ok"
    assert [blob.schema for blob in catalog.blobs["hello"]] == ["olm.package", "olm.channel", "olm.bundle"]


@pytest.mark.parametrize(
    ("name", "code", "unavailable"),
    [
        pytest.param("down", 503, True, id="HTTP 503: an outage"),
        pytest.param("busy", 429, True, id="HTTP 429: throttled"),
        pytest.param("missing", 404, False, id="HTTP 404: no such catalog, not an outage"),
    ],
)
def test_an_http_failure_is_a_fetch_error_and_an_outage_is_unavailable(name: str, code: int, unavailable: bool) -> None:
    with (
        serving(Catalogd) as (api, _),
        pytest.raises(
            FetchError, match=rf"/catalogs/{name}/api/v1/all: cannot fetch catalog: HTTP Error {code}"
        ) as raised,
    ):
        fetch_catalog(f"{api.configuration.host}/catalogs/{name}")
    assert isinstance(raised.value, Unavailable) is unavailable


def test_a_server_that_does_not_answer_is_unavailable() -> None:
    with pytest.raises(CatalogUnavailable, match=r"^http://127.0.0.1:9/catalogs/x/api/v1/all: cannot fetch catalog: "):
        fetch_catalog("http://127.0.0.1:9/catalogs/x", timeout=5)
