"""Loading File-Based Catalogs: the real catalog, streams, YAML, HTTP, and malformed input."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from webhook.catalog import Catalog, VersionRelease, iter_json_stream, load_catalog
from webhook.errors import CatalogError, FetchError

REAL = Path(__file__).resolve().parent.parent / "catalogs" / "certified-operators-v4.22"


@pytest.fixture(scope="module")
def real() -> Catalog:
    return load_catalog(REAL)


def test_the_real_catalog_loads_with_its_documented_counts(real: Catalog) -> None:
    # Counts from catalogs/README.md (measured upstream of this project).
    packages = [real.package(name) for name in real.package_names()]
    entries = [e for p in packages for c in p.channels for e in c.entries]
    assert real.name == "certified-operators-v4.22"
    assert len(packages) == 48
    assert sum(len(p.channels) for p in packages) == 138
    assert sum(len(p.bundles) for p in packages) == 413
    assert len(entries) == 735
    assert sum(1 for e in entries if e.replaces) == 536
    assert sum(1 for e in entries if e.skips) == 68
    assert sum(1 for e in entries if e.skip_range) == 278
    assert (
        sum(1 for p in packages for b in p.bundles if b.version_release and b.version_release.version.prerelease) == 47
    )
    assert sum(1 for p in packages for b in p.bundles if b.dependency_property()) == 16
    assert real.problems() == []


def test_the_catalog_is_labelled_with_its_name(real: Catalog) -> None:
    assert real.labels["olm.operatorframework.io/metadata.name"] == "certified-operators-v4.22"


def test_a_json_stream_may_be_pretty_printed() -> None:
    text = '{"schema": "olm.package",\n "name": "a"}\n\n{"schema": "olm.bundle",\n "package": "a",\n "name": "a.v1"}'
    assert [(v["schema"], loc.line) for v, loc, _ in iter_json_stream(text, "f.json")] == [
        ("olm.package", 1),
        ("olm.bundle", 4),
    ]


def test_a_malformed_line_names_its_file_and_line() -> None:
    with pytest.raises(CatalogError) as raised:
        list(iter_json_stream('{"schema": "olm.package", "name": "a"}\n{"schema": oops}\n', "f.json"))
    assert str(raised.value) == "f.json:2: invalid JSON: Expecting value"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_one_bad_package_never_hides_the_others(tmp_path: Path) -> None:
    good = '{"schema":"olm.package","name":"good"}\n{"schema":"olm.bundle","package":"good","name":"good.v1",'
    good += '"properties":[{"type":"olm.package","value":{"packageName":"good","version":"1.0.0"}}]}\n'
    _write(tmp_path / "cat" / "good" / "catalog.json", good)
    bad = _write(tmp_path / "cat" / "bad" / "catalog.json", '{"schema":"olm.package","name":"bad"}\n{"schema":\n')
    catalog = load_catalog(tmp_path / "cat")
    assert catalog.package("good").bundles[0].name == "good.v1"
    with pytest.raises(CatalogError) as raised:
        catalog.package("bad")
    assert str(raised.value) == f"{bad}:3: invalid JSON: Expecting value"
    assert [str(p) for p in catalog.problems()] == [str(raised.value)]


def test_a_blob_with_a_wrong_field_type_names_its_line(tmp_path: Path) -> None:
    text = '{"schema":"olm.package","name":"p"}\n{"schema":"olm.channel","package":"p","name":"s","entries":{}}\n'
    path = _write(tmp_path / "p.json", text)
    with pytest.raises(CatalogError) as raised:
        load_catalog(path).package("p")
    assert str(raised.value) == f"{path}:2: olm.channel 's' entries must be a list"


def test_yaml_catalogs_and_unknown_schemas_load(tmp_path: Path) -> None:
    text = (
        "schema: olm.package\nname: y\n---\nschema: olm.channel\npackage: y\nname: stable\n"
        "entries:\n- name: y.v1.0.0\n---\nschema: io.example.custom\npackage: y\n---\n"
        "schema: olm.bundle\npackage: y\nname: y.v1.0.0\nproperties:\n"
        "- type: olm.package\n  value: {packageName: y, version: 1.0.0}\n"
    )
    catalog = load_catalog(_write(tmp_path / "yaml-cat" / "index.yaml", text))
    package = catalog.package("y")
    assert catalog.name == "index"
    assert [c.name for c in package.channels] == ["stable"]
    assert package.other_blobs == 1
    assert package.bundles[0].location.line == 13


def test_a_missing_path_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError) as raised:
        load_catalog(tmp_path / "nowhere")
    assert str(raised.value) == f"{tmp_path / 'nowhere'}: no such catalog file or directory"


class _CatalogdHandler(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        if self.path != "/catalogs/certified/api/v1/all":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/jsonl")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def catalogd() -> Iterator[str]:
    _CatalogdHandler.body = b"".join(p.read_bytes() for p in sorted(REAL.glob("*/catalog.json")))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _CatalogdHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/catalogs/certified"
    server.shutdown()
    server.server_close()


def test_a_catalogd_endpoint_serves_the_same_catalog(catalogd: str, real: Catalog) -> None:
    served = load_catalog(catalogd)
    assert served.name == "certified"
    assert served.package_names() == real.package_names()
    assert served.bundle_count() == 413


def test_an_unreachable_catalogd_is_one_clear_error(catalogd: str) -> None:
    with pytest.raises(FetchError) as raised:
        load_catalog(catalogd + "-missing")
    assert str(raised.value).startswith(f"{catalogd}-missing/api/v1/all: cannot fetch catalog: HTTP Error 404")


@pytest.mark.parametrize(
    ("text", "version", "release"),
    [
        pytest.param("1.0.0+2", "1.0.0", (2,), id="numeric build metadata is a release"),
        pytest.param("1.0.0-pre+1.alpha.2", "1.0.0-pre", (1, "alpha", 2), id="dotted build metadata is a release"),
        pytest.param("1.0.0+001", "1.0.0+001", None, id="leading zeros keep build metadata and no release"),
        pytest.param("1.0.0", "1.0.0", None, id="no build metadata has no release"),
    ],
)
def test_legacy_release_parsing(text: str, version: str, release: tuple[int | str, ...] | None) -> None:
    parsed = VersionRelease.parse(text)
    assert (str(parsed.version), parsed.release) == (version, release)


def test_release_ordering() -> None:
    ordered = ["1.0.0-rc.1", "1.0.0", "1.0.0+1", "1.0.0+2", "1.0.0+alpha", "1.0.1"]
    shuffled = sorted(ordered, key=lambda t: json.dumps(t)[::-1])
    assert sorted(shuffled, key=lambda t: VersionRelease.parse(t).sort_key()) == ordered
