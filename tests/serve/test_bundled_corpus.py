"""The bundled policies on the reviews matched to them (tests/data/admission/bundled), served in process as
``upgrade-gate serve --policies policies --objects tests/data/admission/bundled/objects --cluster off`` serves
them, on each CEL engine: every case gets its ``want``, at the real time and at fixed times years apart; and the
two corpora of the admission benchmark are what its report calls them (a mix of mostly admissions, and a denial
path)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from a2wsgi import ASGIMiddleware
from werkzeug.test import Client, TestResponse

from tests.serve.conftest import CASES as TEST_CORPUS
from tests.serve.conftest import expected, summary
from webhook.objects import ObjectStore
from webhook.policy import PolicySet
from webhook.serve.app import create_app
from webhook.serve.metrics import Metrics
from webhook.serve.runtime import AdmitterFactory, EngineAdmitter, PolicyRuntime
from webhook.settings import CEL_ENGINES, ServeSettings

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "tests" / "data" / "admission" / "bundled"
CORPUS: list[dict[str, Any]] = yaml.safe_load((BUNDLED / "reviews.yaml").read_text("utf-8"))["cases"]
#: How a ``want.patch`` value gives the time at which the webhook decided (``clock.now()``, as RFC 3339).
REQUEST_TIME = "<the time of the request>"
#: Request times for the time-independence check: a Saturday night soon after the corpus's last clock-relevant
#: time (2025-10-06), and a Monday noon years later.
MOMENTS = (
    datetime.datetime(2025, 12, 6, 3, 30, tzinfo=datetime.UTC),
    datetime.datetime(2031, 2, 17, 12, 0, tzinfo=datetime.UTC),
)


class BufferedClient(Client):
    """werkzeug's test client reading every answer whole, so that a2wsgi's adapter lets the application finish."""

    def open(self, *args: Any, **kwargs: Any) -> TestResponse:
        return super().open(*args, buffered=True, **kwargs)


def serve_settings(engine: str) -> ServeSettings:
    """The settings of ``upgrade-gate serve --policies policies --objects tests/data/admission/bundled/objects
    --cluster off --cel-engine <engine>``."""
    return ServeSettings(policies=ROOT / "policies", objects=BUNDLED / "objects", cluster="off", cel_engine=engine)


def serving(settings: ServeSettings, make_admitter: AdmitterFactory = EngineAdmitter) -> Client:
    """A test client of the webhook application serving ``settings``' policies and objects, as ``serve`` builds
    it (a ``PolicyRuntime`` loaded once, ``create_app``); ``make_admitter`` may fix the admitter's clock."""
    metrics = Metrics()
    runtime = PolicyRuntime(
        settings.policies, settings.objects, metrics=metrics, make_admitter=make_admitter, engine=settings.cel_engine
    )
    assert runtime.load(), runtime.error
    return BufferedClient(ASGIMiddleware(create_app(settings, runtime, metrics)), TestResponse)  # type: ignore[arg-type]


def at(moment: datetime.datetime) -> AdmitterFactory:
    """An admitter factory whose admitters decide every request at ``moment``."""

    def make(policies: PolicySet, store: ObjectStore) -> EngineAdmitter:
        return EngineAdmitter(policies, store, clock=lambda: moment)

    return make


def post(client: Client, case: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview answered to ``case``'s review on its endpoint (checked: HTTP 200, the request's uid)."""
    answer = client.post(f"/{case['endpoint']}", data=json.dumps(case["review"]), content_type="application/json")
    assert answer.status_code == 200
    document = answer.json
    assert isinstance(document, dict)
    assert document["response"]["uid"] == case["review"]["request"]["uid"]
    return document


def with_request_time(found: dict[str, Any], want: dict[str, Any], made: Callable[[str], bool]) -> dict[str, Any]:
    """``found`` with each patch value that ``want`` gives as ``REQUEST_TIME`` replaced by ``REQUEST_TIME`` when
    ``made`` says the value found is such a time (it is left as found otherwise, so the comparison fails)."""
    wanted, patch = want.get("patch"), found.get("patch")
    if not isinstance(wanted, list) or not isinstance(patch, list) or len(wanted) != len(patch):
        return found
    replaced = [
        {**op, "value": REQUEST_TIME} if mine.get("value") == REQUEST_TIME and made(str(op.get("value"))) else op
        for mine, op in zip(wanted, patch, strict=True)
    ]
    return {**found, "patch": replaced}


def between(earliest: datetime.datetime, latest: datetime.datetime) -> Callable[[str], bool]:
    """Whether an RFC 3339 text is a time from ``earliest`` (to the second) to
    ``latest``."""

    def check(text: str) -> bool:
        try:
            moment = datetime.datetime.fromisoformat(text)
        except ValueError:
            return False
        return earliest.replace(microsecond=0) <= moment <= latest

    return check


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@pytest.fixture(scope="module", params=CEL_ENGINES)
def client(request: pytest.FixtureRequest) -> Client:
    return serving(serve_settings(request.param))


@pytest.mark.parametrize("case", CORPUS, ids=[case["id"] for case in CORPUS])
def test_a_bundled_review_gets_its_answer(client: Client, case: dict[str, Any]) -> None:
    before = utc_now()
    document = post(client, case)
    found = with_request_time(summary(document, case["want"]), case["want"], between(before, utc_now()))
    assert found == expected(case)


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize("moment", MOMENTS, ids=[moment.strftime("%A %Y-%m-%d %H:%M") for moment in MOMENTS])
def test_the_answers_do_not_depend_on_the_time_of_the_request(engine: str, moment: datetime.datetime) -> None:
    fixed = serving(serve_settings(engine), at(moment))
    found = [
        with_request_time(summary(post(fixed, case), case["want"]), case["want"], between(moment, moment))
        for case in CORPUS
    ]
    assert found == [expected(case) for case in CORPUS]


def test_the_corpus_is_mostly_admissions_on_both_endpoints_with_a_denial_in_six_to_eight() -> None:
    endpoints = [case["endpoint"] for case in CORPUS]
    denials = sum(not case["want"]["allowed"] for case in CORPUS)
    assert sorted(set(endpoints)) == ["mutate", "validate"]
    assert abs(endpoints.count("mutate") - endpoints.count("validate")) <= len(CORPUS) // 4
    assert denials > 0 and 6 <= len(CORPUS) / denials <= 8
    assert len({case["review"]["request"]["uid"] for case in CORPUS}) == len(CORPUS)


def test_the_test_corpus_is_a_denial_path_for_the_bundled_policies(client: Client) -> None:
    """The admission benchmark's "denial path": the bundled policies deny every /validate review of
    tests/data/admission/reviews.yaml (written for tests/data/admission/policies) but its ClusterExtension updates,
    which lack a catalog selector, as OLM allows (the bundled settings do not require one)."""
    validations = [case for case in TEST_CORPUS if case["endpoint"] == "validate"]
    kinds = [case["review"]["request"]["kind"]["kind"] for case in validations]
    assert kinds.count("ClusterExtension") == 2 and len(kinds) == 9
    found = [post(client, case)["response"]["allowed"] for case in validations]
    assert found == [kind == "ClusterExtension" for kind in kinds]
