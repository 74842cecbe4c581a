"""HTML release report: self-contained page, decodable pictures, filled tables, scores on SDMetrics' definitions."""
import base64
import io
import itertools
import shutil
import subprocess
import warnings
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from lopub.client import encode
from lopub.data.dataset import Dataset
from lopub.datasets import embedded
from lopub.data.domain import Attribute, Domain
from lopub.pipeline.steps import fit
from lopub.publish.report import build_report, column_pair_trends, cramers_v, quality_scores, write_report
from lopub.publish.report.scores import IndependenceRelease
from lopub.reports.spec import CollectionSpec
from lopub.publish.synthesize import synthesize

ATTRS = ["age_group", "sex", "marital", "relationship", "household_size", "urban", "race"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
REAL_ONLY = {"scores", "pair-tvd", "pairs"}
ALWAYS = {"verdict", "summary", "warnings", "privacy", "protocol", "model", "distributions",
          "mutual-information", "structure"}


def fitted_model(**kw):
    """fit() returns (Model, report) today and may return a result object with .model later."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fit(**kw)
    return out[0] if isinstance(out, tuple) else getattr(out, "model", out)


@pytest.fixture(scope="module")
def real():
    return embedded(3000, rng=1).select(ATTRS)


@pytest.fixture(scope="module")
def model(real):
    reports = encode(real, CollectionSpec.from_domain(real.domain, f=0.5), rng=2)
    return fitted_model(reports=reports, phi=0.4, method="moment")


@pytest.fixture(scope="module")
def synthetic(model):
    return synthesize(model, rng=3)


class Page(HTMLParser):
    """Sections, images and tables of a report page."""

    def __init__(self, text):
        super().__init__()
        self.sections, self.images, self.tables, self.stack = [], [], [], []
        self.cells = {}  # section id -> text of its table cells
        self.scripts = self.links = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        elif tag == "img":
            self.images.append(a.get("src", ""))
        elif tag == "table":
            self.tables.append(0)
        elif tag == "tr":
            self.tables[-1] += 1
        elif tag in ("td", "th"):
            self.stack.append("")
        elif tag == "script":
            self.scripts += 1
        elif tag == "link" or (tag != "img" and any(k in ("src", "href") for k in a)):
            self.links += 1

    def handle_data(self, data):
        if self.stack:
            self.stack[-1] += data

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.cells.setdefault(self.sections[-1], []).append(self.stack.pop())


@pytest.fixture(scope="module")
def full_page(model, synthetic, real, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(path, model, synthetic, real.to_pandas())
    return path


def check_images(page):
    assert page.images
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert data[:8] == PNG_MAGIC
        import matplotlib.image

        assert matplotlib.image.imread(io.BytesIO(data), format="png").ndim == 3
        try:
            from PIL import Image
        except ImportError:  # pragma: no cover
            continue
        with Image.open(io.BytesIO(data)) as img:
            img.verify()


def test_full_report_is_self_contained_and_filled(full_page, model):
    page = Page(full_page.read_text(encoding="utf-8"))
    assert set(page.sections) == ALWAYS | REAL_ONLY and "absent" not in page.sections
    check_images(page)
    assert len(page.images) == len(model.domain) + 3  # bars per attribute, TVD, MI, structure
    assert page.tables and all(rows > 0 for rows in page.tables)
    assert page.scripts == 0 and page.links == 0
    scores = [c for c in page.cells["scores"] if c.replace(".", "").isdigit()]
    assert len(scores) >= 12
    assert all(0.0 <= float(c) <= 1.0 for c in scores)
    text = full_page.read_text(encoding="utf-8")
    for a in model.domain.attrs:
        assert a in page.cells["protocol"]
    assert "above 10" in text and "must not be published" in text


def test_report_without_real_data_shows_the_model_only(model, synthetic):
    text = build_report(model, synthetic, title="Model only <check>")
    page = Page(text)
    assert set(page.sections) == ALWAYS | {"absent"}
    assert not REAL_ONLY & set(page.sections)
    check_images(page)
    assert len(page.images) == len(model.domain) + 2  # bars per attribute, MI, structure
    assert all(rows > 0 for rows in page.tables)
    assert "<title>Model only &lt;check&gt;</title>" in text


def test_model_without_privacy_parameters_says_so(real):
    small = real.select(["sex", "relationship", "marital"])
    exact = fitted_model(estimator=small, phi=0.4)
    text = build_report(exact, real=small)
    assert "NO differential privacy guarantee" in text
    assert "No collection parameters are stored" in text


def sdmetrics_contingency_similarity(real, synth, a, b):
    """SDMetrics' ContingencySimilarity, transcribed from its definition on DataFrames."""
    r = real.groupby([a, b], observed=True).size() / len(real)
    s = synth.groupby([a, b], observed=True).size() / len(synth)
    idx = r.index.union(s.index)
    return 1.0 - 0.5 * (r.reindex(idx, fill_value=0) - s.reindex(idx, fill_value=0)).abs().sum()


def test_scores_follow_sdmetrics_definitions(model, synthetic, real):
    from scipy.stats.contingency import association

    syn = Dataset.from_pandas(synthetic, model.domain)
    rdf, sdf = real.to_pandas(), synthetic
    s = quality_scores(model, real, syn)
    pairs = list(itertools.combinations(model.domain.attrs, 2))
    cs = [sdmetrics_contingency_similarity(rdf, sdf, a, b) for a, b in pairs]
    v = [association(pd.crosstab(rdf[a], rdf[b]).to_numpy(), method="cramer") for a, b in pairs]
    assert s["release"]["column_pair_trends"] == pytest.approx(np.mean(cs), abs=1e-12)
    kept = [c for c, x in zip(cs, v) if x > 0.3]
    assert 0 < len(kept) < len(pairs)
    assert s["release"]["column_pair_trends_associated"] == pytest.approx(np.mean(kept), abs=1e-12)
    assert s["release"]["associated_pairs"] == len(kept)
    np.testing.assert_allclose([p["real_association"] for p in s["pairs"]], v, atol=1e-12)
    shapes = [1 - 0.5 * (rdf[a].value_counts(normalize=True)
                         - sdf[a].value_counts(normalize=True)).abs().sum() for a in model.domain.attrs]
    assert s["release"]["column_shapes"] == pytest.approx(np.mean(shapes), abs=1e-12)
    assert s["release"]["mean_pair_tvd"] == pytest.approx(1 - np.mean(cs), abs=1e-12)


def test_independence_baseline_is_exact_product_of_model_one_ways(model, real):
    base = IndependenceRelease(model)
    s = quality_scores(model, real, model)
    rdf = real.to_pandas()
    for p in s["pairs"][:6]:
        a, b = p["a"], p["b"]
        prod = np.outer(model.project([a]).values, model.project([b]).values)
        np.testing.assert_array_equal(base.project([a, b]).values, prod)
        r = pd.crosstab(rdf[a], rdf[b], normalize=True, dropna=False).reindex(
            index=list(model.domain.labels(a)), columns=list(model.domain.labels(b)), fill_value=0)
        assert p["tvd_independence"] == pytest.approx(0.5 * np.abs(r.to_numpy() - prod).sum(), abs=1e-12)


def test_identical_release_scores_perfectly(real):
    out = column_pair_trends(real, real)
    assert out["score"] == 1.0 and out["total"] == 21
    assert cramers_v(np.eye(3)) == pytest.approx(1.0)
    assert np.isnan(cramers_v(np.array([[5.0, 3.0], [0.0, 0.0]])))  # one observed row


def test_inputs_outside_the_domain_name_column_and_value(model, synthetic, real):
    df = real.to_pandas()
    # an extra real column is left out only when all the model's columns are there (see
    # test_user_tour_fixes.py); with one of them missing it is still named
    with pytest.raises(ValueError, match=r"real: column 'zip' is not in the model's domain"):
        build_report(model, synthetic, df.assign(zip="12345").drop(columns="urban"))
    with pytest.raises(ValueError, match=r"synthetic: column 'zip' is not in the model's domain"):
        build_report(model, synthetic.assign(zip="12345"))
    bad = synthetic.astype(str)
    bad.loc[5, "race"] = "Martian"
    with pytest.raises(ValueError, match=r"synthetic: attribute 'race': unknown category \['Martian'\]"):
        build_report(model, bad)
    with pytest.raises(ValueError, match=r"real: column 'urban' of the model's domain is missing"):
        build_report(model, real=df.drop(columns="urban"))
    attrs = [Attribute(a.name, a.categories + (("Martian",) if a.name == "race" else ()))
             for a in real.domain.attributes]
    codes = real.codes.astype(np.int64)
    codes[7, ATTRS.index("race")] = len(real.domain.labels("race"))
    other = Dataset(codes, Domain(tuple(attrs)))
    with pytest.raises(ValueError, match=r"real: column 'race' has the value 'Martian', which is not in "
                                         r"the model's domain"):
        build_report(model, real=other)
    with pytest.raises(TypeError, match=r"synthetic \(list\) must be a pandas DataFrame or a lopub Dataset"):
        build_report(model, [1, 2])
    with pytest.raises(TypeError, match=r"model \(str\) must be a lopub Model"):
        build_report("model.json")


def test_dataset_over_reordered_domain_is_recoded(model, real):
    flipped = real.select(list(reversed(ATTRS)))
    s1 = quality_scores(model, real, model)
    from lopub.publish.report.data import as_dataset

    s2 = quality_scores(model, as_dataset(flipped, model.domain, "real"), model)
    assert s1["release"]["column_pair_trends"] == s2["release"]["column_pair_trends"]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_report_renders_in_headless_chromium(full_page, tmp_path):
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1200,2400", full_page.as_uri()], check=True, timeout=120,
                   capture_output=True)
    data = shot.read_bytes()
    assert data[:8] == PNG_MAGIC
    import matplotlib.image

    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    assert pixels.shape[0] > 100 and pixels.std() > 0.01  # something was drawn


def test_drawing_leaves_the_users_matplotlib_backend_alone(tmp_path):
    # importing and drawing used to switch every caller (e.g. a notebook) to Agg
    import os
    import subprocess
    import sys

    code = (
        "import matplotlib\n"
        "from lopub.datasets import embedded\n"
        "from lopub.dependency import structure_graph\n"
        "from lopub.publish.plots import plot_mi\n"
        "import lopub.publish.report.figures\n"
        "data = embedded(500, rng=0)\n"
        f"plot_mi(structure_graph(data, 'auto'), {str(tmp_path / 'mi.png')!r})\n"
        "print(matplotlib.get_backend())\n")
    env = {**os.environ, "MPLBACKEND": "svg"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().lower() == "svg"
    assert (tmp_path / "mi.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
