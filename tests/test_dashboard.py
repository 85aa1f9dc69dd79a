"""The Grafana dashboard the chart ships (``charts/upgrade-gate/files/grafana-dashboard.json``).

Every PromQL expression of its panels and variables is checked against the metrics the code registers (the
webhook's and the controller's ``Metrics``, instantiated): each series exported, with the labels it carries and the
values the code sets, selected by the job and namespace variables. Its panels cover every metric family the code
exports. The chart ships the file unchanged in a ConfigMap with the label Grafana's dashboard sidecar selects.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest

from tests.test_chart import (
    CHART,
    CONTROLLER_SERIES,
    DASHBOARD_VARIANT,
    FULLNAME,
    NAMESPACE,
    TARGET_LABELS,
    VARIANTS,
    WEBHOOK_SERIES,
    find,
    promql_findings,
    render,
)

DASHBOARD_FILE = CHART / "files" / "grafana-dashboard.json"
DASHBOARD: dict[str, Any] = json.loads(DASHBOARD_FILE.read_text())
# The variables the selectors name: one webhook job, one controller job, one namespace.
SELECTORS = {"webhook": "$webhook", "controller": "$controller", "namespace": "$namespace"}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def targets(dashboard: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for panel in panels(dashboard):
        for target in panel["targets"]:
            yield panel["title"], target


def dashboard_findings(dashboard: dict[str, Any]) -> list[str]:
    """Every target's and query variable's finding, prefixed with its panel or variable."""
    findings = [
        f"{title} {target['refId']}: {finding}"
        for title, target in targets(dashboard)
        for finding in promql_findings(target["expr"], **SELECTORS)
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = re.fullmatch(r"label_values\((\w+)(?:\{[^}]*\})?, (\w+)\)", variable["query"]["query"])
        if match is None:
            findings.append(f"${variable['name']}: not label_values(<series>, <label>)")
            continue
        series, label = match.groups()
        exported = {**WEBHOOK_SERIES, **CONTROLLER_SERIES}
        if series not in exported:
            findings.append(f"${variable['name']}: {series} is not exported by the webhook or the controller")
        elif label not in exported[series] | TARGET_LABELS:
            findings.append(f"${variable['name']}: {series} has no label {label}")
    return findings


def test_every_expression_selects_series_the_code_exports():
    assert dashboard_findings(DASHBOARD) == []


@pytest.mark.parametrize(
    ("expr", "finding"),
    [
        ('sum(rate(upgrade_gate_admision_requests_total{job="$webhook", namespace="$namespace"}[5m]))',
         "upgrade_gate_admision_requests_total: not exported by the webhook or the controller"),
        ('sum(rate(upgrade_gate_fail_closed{job="$webhook", namespace="$namespace"}[5m]))',
         "upgrade_gate_fail_closed: not exported by the webhook or the controller"),
        ('upgrade_gate_controller_leader{job="$webhook", namespace="$namespace"}',
         "upgrade_gate_controller_leader: not selected by job='$controller' and namespace='$namespace'"),
        ('sum by (policy) (upgrade_gate_admission_requests_total{job="$webhook", namespace="$namespace"})',
         "grouping by policy: no series of the expression has it"),
    ],
    ids=["a misspelt series", "a counter without _total", "the wrong job", "a label the series lacks"],
)  # fmt: skip
def test_the_check_fails_on_a_typo(expr, finding):
    broken = copy.deepcopy(DASHBOARD)
    panels(broken)[0]["targets"][0]["expr"] = expr
    assert finding in " ".join(dashboard_findings(broken))


def _family(series: str) -> str:
    return re.sub(r"_(total|bucket|sum|count)$", "", series)


def test_the_panels_cover_every_metric_family_the_code_exports():
    used = {
        _family(name)
        for _, target in targets(DASHBOARD)
        for name in re.findall(r"\b([a-z_:][a-z0-9_:]*)\{", target["expr"])
    }
    exported = {_family(name) for name in {**WEBHOOK_SERIES, **CONTROLLER_SERIES}}
    assert exported - used == set()


def test_every_legend_names_labels_its_expression_keeps():
    for title, target in targets(DASHBOARD):
        grouping = re.search(r"\bby \(([^)]*)\)", target["expr"])
        kept = {label.strip() for label in grouping.group(1).split(",")} if grouping else set()
        assert set(re.findall(r"\{\{(\w+)\}\}", target["legendFormat"])) <= kept, title


def test_the_panels_read_the_chosen_data_source_and_tile_the_grid():
    assert DASHBOARD["uid"] == "upgrade-gate"
    assert [v["name"] for v in DASHBOARD["templating"]["list"]] == ["datasource", "namespace", "webhook", "controller"]
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in DASHBOARD["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        area = {
            (x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area
    for panel in panels(DASHBOARD):
        assert panel["datasource"] == DATASOURCE
        assert panel["description"]
        assert all(t["datasource"] == DATASOURCE for t in panel["targets"])


def test_the_chart_ships_the_dashboard_unchanged_for_the_grafana_sidecar():
    values = VARIANTS[DASHBOARD_VARIANT]["values"]
    with helm.Chart.load(CHART) as chart:
        objects = render(chart, values)
        elsewhere = render(chart, {**values, "grafana": {**values["grafana"], "namespace": "monitoring"}})
        assert not [o for o in render(chart) if o["kind"] == "ConfigMap"]  # off by default
    configmap = find(objects, "ConfigMap", f"{FULLNAME}-dashboard")
    assert configmap["metadata"]["namespace"] == NAMESPACE
    assert find(elsewhere, "ConfigMap", f"{FULLNAME}-dashboard")["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "Platform"}
    (name,) = configmap["data"]
    assert name.endswith(".json")
    assert json.loads(configmap["data"][name]) == DASHBOARD
