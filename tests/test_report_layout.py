"""The HTML report in headless Chromium at 1280 and 390 CSS pixels wide: no horizontal overflow.

The report is shown in an ``<iframe srcdoc>`` of the given width (Chromium's
headless window is at least 500 px wide, a phone is 390), and a script of the
probe page (the report itself has none) measures the framed document:
``scrollWidth <= innerWidth``, and no element reaches past the right edge
except inside a table's own scroll box (``.scroll``).  The result is read
back with ``--dump-dom``.  Skipped without chromium.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import warnings

import pytest

from lopub.collect import collect
from lopub.datasets import embedded
from lopub.pipeline.steps import fit
from lopub.publish.report import build_report
from lopub.publish.synthesize import synthesize

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")

PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}
iframe{border:0;width:%dpx;height:3000px}</style></head><body>
<iframe id="r" srcdoc="%s"></iframe>
<script>
document.getElementById("r").addEventListener("load", () => {
  const w = document.getElementById("r").contentWindow, d = w.document;
  const wide = [...d.querySelectorAll("body *")]
    .filter(e => e.getBoundingClientRect().right > w.innerWidth + 1 && !e.closest(".scroll"))
    .map(e => e.tagName + (e.id ? "#" + e.id : "")).slice(0, 8);
  document.body.setAttribute("data-layout", JSON.stringify(
    {scroll: d.documentElement.scrollWidth, inner: w.innerWidth, wide: wide}));
});
</script></body></html>"""


def layout(page: str, width: int, tmp_path) -> dict:
    """``{"scroll", "inner", "wide"}`` of ``page`` framed at ``width`` CSS pixels."""
    probe = tmp_path / f"probe_{width}.html"
    probe.write_text(PROBE % (width, html.escape(page, quote=True)), encoding="utf-8")
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1400,3000", "--virtual-time-budget=10000", "--dump-dom",
                           probe.as_uri()], capture_output=True, text=True, timeout=180, check=True)
    found = re.search(r'data-layout="([^"]*)"', done.stdout)
    assert found, f"the probe script did not run: {done.stdout[:300]!r} {done.stderr[-300:]!r}"
    return json.loads(html.unescape(found.group(1)))


@pytest.fixture(scope="module")
def page():
    real = embedded(3000, rng=1)
    reports, _ = collect(real, 8.0, protocol="marginals", rng=2)  # the long attribute-set table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit(reports).model
    return build_report(model, synthesize(model, rng=3), real.to_pandas())


@pytest.mark.parametrize("width", [1280, 390])
def test_report_fits_the_width(page, width, tmp_path):
    got = layout(page, width, tmp_path)
    assert got["inner"] == width
    assert got["scroll"] <= got["inner"] and not got["wide"], got


def test_probe_sees_overflow(tmp_path):
    # the check can fail: a fixed-width block wider than the phone overflows
    wide = "<!DOCTYPE html><html><body><div style=\"width:900px\">wide</div></body></html>"
    got = layout(wide, 390, tmp_path)
    assert got["scroll"] > got["inner"] and got["wide"]
