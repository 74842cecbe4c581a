"""The survey page in a real browser (Playwright driving Debian's Chromium).

A person opens /c/NAME, answers, submits: the service stores exactly one
report of the right shape, and no request the page made carries a true answer.
"""
from __future__ import annotations

import os
import shutil

import pytest

pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")

from lopub import Attribute, CollectionSpec, Domain  # noqa: E402
from lopub.collect import MarginalPlan  # noqa: E402
from lopub.serve.protocol import Collection  # noqa: E402
from lopub.serve.backends import SQLiteStore  # noqa: E402
from pipelines.harness.serve_live import running  # noqa: E402

CHROMIUM = os.environ.get("LOPUB_CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM),
                                reason=f"Chromium not found at {CHROMIUM}; .ci/run installs it "
                                       "(apt-get install chromium)")
# answers chosen to be distinctive strings, so that any leak would be visible in a request
DOMAIN = Domain([Attribute("smokes", ["Smokes-Yes-7f3a", "Smokes-No-9c1e"]),
                 Attribute("income", ["Income-Low-41d2", "Income-Mid-a8b0", "Income-High-55e9"]),
                 Attribute("diet", [f"Diet-{i}-c0de" for i in range(5)])])
ANSWERS = {"smokes": "Smokes-Yes-7f3a", "income": "Income-High-55e9", "diet": "Diet-3-c0de"}


@pytest.mark.parametrize("kind", ["marginal", "bloom"])
def test_page_randomizes_on_device_and_stores_one_report(tmp_path, kind):
    # marginal: the service assigns one of three subsets (GRR, OUE or OLH) at random
    plan = MarginalPlan(DOMAIN, (("smokes", "income"), ("income", "diet"), ("diet",)), 1.0,
                        oracles=("grr", "oue", "olh"))
    if kind == "bloom":
        plan = CollectionSpec.from_domain(DOMAIN, epsilon=1.0)
    plan.to_json(tmp_path / "plan.json")
    store = tmp_path / "r.sqlite"
    requests = []
    with running({"health": tmp_path / "plan.json"}, store) as (base, _), \
            sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("request", lambda r: requests.append((r.method, r.url, r.headers, r.post_data)))
        console = []
        page.on("console", lambda m: console.append(m.text))
        page.goto(f"{base}/c/health")
        page.wait_for_selector("#send:not([disabled])")
        expect = sync_api.expect  # locator assertions: the page's CSP forbids evaluated strings
        expect(page.locator("#count")).to_have_text("0", timeout=30_000)  # fetched after the page is ready
        assert "epsilon = 1" in page.text_content("#privacy")
        for attr, label in ANSWERS.items():
            page.check(f"input[name='{attr}'][value='{label}']")
        page.click("#send")
        expect(page.locator("#status")).not_to_be_empty(timeout=60_000)  # slow when the machine is busy
        status = page.text_content("#status")
        if status.startswith("Thank you"):
            expect(page.locator("#count")).to_have_text("1", timeout=30_000)
        browser.close()
    assert status.startswith("Thank you"), (status, console)
    subsets, payloads = SQLiteStore(store).fetch("health")
    assert subsets.shape == (1,) and len(payloads) == 1
    c = Collection("health", plan)
    assert len(payloads[0]) == c.payload_size(int(subsets[0]))
    posts = [r for r in requests if r[0] == "POST"]
    assert [r[1].rsplit("/", 1)[1] for r in posts] == ["enrol", "report"]
    for method, url, headers, body in requests:
        text = " ".join([url, str(headers), body or ""])
        for label in ANSWERS.values():
            assert label not in text, f"a true answer left the page in {method} {url}"
        for fragment in ("Smokes-", "Income-", "Diet-"):
            assert fragment not in text


def test_page_does_not_randomize_again_after_a_refused_report(tmp_path):
    """The service (here a route that answers 422) refuses the report: not stored, but it has reached
    the collector.  A second click used to enrol and randomize the same answers anew (a refusing
    collector got one randomization per click); now the page says so and sends nothing."""
    plan = MarginalPlan(DOMAIN, (("smokes", "income"), ("income", "diet"), ("diet",)), 1.0)
    plan.to_json(tmp_path / "plan.json")
    posts = []
    with running({"health": tmp_path / "plan.json"}, tmp_path / "r.sqlite") as (base, _), \
            sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("request", lambda r: posts.append(r.url.rsplit("/", 1)[1]) if r.method == "POST" else None)
        page.route("**/api/c/health/report", lambda route: route.fulfill(
            status=422, content_type="application/json", body='{"error": "refused by the collector"}'))
        page.goto(f"{base}/c/health")
        page.wait_for_selector("#send:not([disabled])")
        expect = sync_api.expect
        for attr, label in ANSWERS.items():
            page.check(f"input[name='{attr}'][value='{label}']")
        page.click("#send")
        expect(page.locator("#status")).to_contain_text("refused by the collector", timeout=60_000)
        page.wait_for_selector("#send:not([disabled])")
        page.click("#send")
        expect(page.locator("#status")).to_contain_text("refused a randomized report of these answers before",
                                                        timeout=60_000)
        other = next(v for v in DOMAIN.labels("diet") if v != ANSWERS["diet"])
        page.wait_for_selector("#send:not([disabled])")
        page.check(f"input[name='diet'][value='{other}']")  # other answers: a new report
        page.click("#send")
        expect(page.locator("#status")).not_to_contain_text("these answers before", timeout=60_000)
        page.wait_for_selector("#send:not([disabled])")
        page.check(f"input[name='diet'][value='{ANSWERS['diet']}']")  # back to the first answers: still refused
        page.click("#send")
        expect(page.locator("#status")).to_contain_text("refused a randomized report of these answers before",
                                                        timeout=60_000)
        browser.close()
    assert posts == ["enrol", "report", "enrol", "report"]  # was enrol, report four times
