"""The resolver against OLM v1's semantics (cases in tests/data/resolve/cases.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import tables
from webhook import errors
from webhook.catalog import Catalog, load_catalog
from webhook.resolve.extension import CatalogSource, ClusterExtension, InstalledBundle
from webhook.resolve.resolver import resolve
from webhook.resolve.revision import check_extension
from webhook.resolve.successors import Edge

DATA = Path(__file__).resolve().parent.parent / "data" / "resolve"
CASES: dict[str, list[dict[str, Any]]] = tables.load("resolve/cases.yaml")


@pytest.fixture(scope="module")
def catalogs() -> dict[str, Catalog]:
    return {path.name: load_catalog(path) for path in sorted((DATA / "catalogs").iterdir())}


def _source(case: dict[str, Any]) -> CatalogSource:
    return CatalogSource(
        package=case["package"],
        version=case.get("version", ""),
        channels=tuple(case.get("channels", ())),
        selector=case.get("selector"),
        upgrade_constraint_policy=case.get("policy", "CatalogProvided"),
    )


def _installed(case: dict[str, Any]) -> InstalledBundle | None:
    return InstalledBundle.parse(case["installed"]) if "installed" in case else None


def _assert_edge(edge: Edge, want: dict[str, str]) -> None:
    got = {"kind": edge.kind, "channel": edge.channel, "entry": edge.entry, "value": edge.value}
    assert got == {"channel": None, "entry": None, "value": None, **want}


@pytest.mark.parametrize("case", CASES["resolve"], ids=[c["why"] for c in CASES["resolve"]])
def test_resolve(case: dict[str, Any], catalogs: dict[str, Catalog]) -> None:
    selected = [catalogs[name] for name in case["catalogs"]]
    if "want" not in case:
        raised = getattr(errors, case.get("raises", "ResolutionError"))
        with pytest.raises(raised) as failure:
            resolve(_source(case), selected, _installed(case))
        assert type(failure.value) is raised
        if "error" in case:
            assert str(failure.value) == case["error"]
        else:
            assert str(failure.value).startswith(case["error_prefix"])
        return
    resolution = resolve(_source(case), selected, _installed(case))
    want = case["want"]
    assert resolution.bundle.name == want["bundle"]
    assert str(resolution.version) == want["version"]
    assert resolution.catalog == want["catalog"]
    if "edge" in want:
        _assert_edge(resolution.edge, want["edge"])


@pytest.mark.parametrize("case", CASES["revisions"], ids=[c["why"] for c in CASES["revisions"]])
def test_revision(case: dict[str, Any], catalogs: dict[str, Catalog]) -> None:
    extension = ClusterExtension("ext", _source(case), _installed(case))
    check = check_extension(extension, [catalogs[name] for name in case["catalogs"]])
    got = {"name": check.revision.name, "version": check.revision.version} if check.revision else None
    assert got == case["revision"]


def test_every_other_bundle_is_explained(catalogs: dict[str, Catalog]) -> None:
    resolution = resolve(CatalogSource("pkg", channels=("beta",)), [catalogs["main"]], None)
    reasons = {d.bundle: d.reason for d in resolution.dropped}
    assert reasons == {
        "pkg.v1.0.0": "not in channels [beta]",
        "pkg.v1.0.1": "not in channels [beta]",
        "pkg.v2.0.0": "not in channels [beta]",
        "pkg.v3.0.0": "not in channels [beta]",
        "pkg.v0.1.0": "pkg.v1.0.2 (1.0.2) is newer",
    }


def test_catalog_order_does_not_change_the_outcome(catalogs: dict[str, Catalog]) -> None:
    names = ["var-f", "var-d", "var-b"]
    source = CatalogSource("var", version=">=1.0.0 <=1.0.3")
    forward = resolve(source, [catalogs[n] for n in names], None)
    backward = resolve(source, [catalogs[n] for n in reversed(names)], None)
    assert (forward.bundle.name, forward.catalog) == (backward.bundle.name, backward.catalog) == ("var.v1.0.2", "var-d")


@pytest.fixture(scope="module")
def real_catalog() -> Catalog:
    return load_catalog(Path(__file__).resolve().parents[2] / "catalogs" / "certified-operators-v4.22")


@pytest.mark.parametrize("case", CASES["real"], ids=[c["why"] for c in CASES["real"]])
def test_resolve_on_the_real_catalog(case: dict[str, Any], real_catalog: Catalog) -> None:
    resolution = resolve(_source(case), [real_catalog], _installed(case))
    want = case["want"]
    assert (resolution.bundle.name, str(resolution.version)) == (want["bundle"], want["version"])
    assert resolution.catalog == "certified-operators-v4.22"
    if "edge" in want:
        _assert_edge(resolution.edge, want["edge"])


@pytest.mark.parametrize(
    ("source", "installed", "between"),
    [
        pytest.param(
            CatalogSource("gpu-operator-certified", version="<26.0.0"),
            "25.3.0",
            ("25.3.1", "25.3.2", "25.3.3", "25.3.4", "25.10.0"),
            id="a skipRange upgrade skips every version between the installed and the resolved one",
        ),
        pytest.param(
            CatalogSource("gpu-operator-certified", channels=("v25.10",)),
            "25.10.0",
            (),
            id="a replaces upgrade to the next version skips nothing",
        ),
    ],
)
def test_the_versions_an_upgrade_skips_are_listed(
    source: CatalogSource, installed: str, between: tuple[str, ...], real_catalog: Catalog
) -> None:
    bundle = InstalledBundle(f"gpu-operator-certified.v{installed}", installed)
    resolution = resolve(source, [real_catalog], bundle)
    assert (resolution.bundle.name, resolution.between) == ("gpu-operator-certified.v25.10.1", between)
