"""Tour 40: a Bloom spec built for a budget never states (nor realizes) more than it.

The format's epsilon is sum_j 2 h_j ln((2 - f)/f) for the float f the devices flip with
(exact Bernoulli(f/2)); f_for_epsilon must give an f whose exact value is <= the budget,
and the stated epsilon_per_record (what inspect-reports, the served description and the
JS client's checkDescription read) must not round above it either.
"""
import decimal
import json
import shutil
import subprocess
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lopub import Attribute, CollectionSpec, Domain
from lopub.reports import privacy

ROOT = Path(__file__).resolve().parents[1]
HS = [[4], [4] * 3, [4] * 5, [4] * 15, [2, 4, 9, 3], [1] * 7, [4] * 40, [3, 1, 8]]
BUDGETS = [float(e) for e in np.round(np.linspace(0.1, 20, 100), 3)] + [0.01, 4.0, 40.0, 150.0]


def _exact_epsilon(f: float, hs) -> Decimal:
    """sum_j 2 h_j ln((2 - f)/f) of the float f, to 60 digits (exact rational inside the log)."""
    ratio = (2 - Fraction(f)) / Fraction(f)
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return 2 * sum(hs) * (ctx.ln(ratio.numerator) - ctx.ln(ratio.denominator))


def test_f_for_epsilon_never_exceeds_the_budget_exactly():
    """f = 2/(1 + e^(eps/(2 sum h))) rounded: the exact epsilon of the float f was above the
    budget for about half of these (eps, h), e.g. one attribute of h = 4 at eps 4."""
    bad = [(eps, hs) for eps in BUDGETS for hs in HS
           if _exact_epsilon(privacy.f_for_epsilon(eps, hs), hs) > Decimal(eps)]
    assert bad == []


def test_f_for_epsilon_adds_noise_by_a_few_ulps_only():
    import math

    for eps in BUDGETS:
        for hs in HS:
            f0 = 2 / (1 + math.exp(eps / (2 * sum(hs))))
            f = privacy.f_for_epsilon(eps, hs)
            assert f0 <= f <= f0 + 8 * math.ulp(f0)
    assert privacy.f_for_epsilon(4.0, 4, 3) == privacy.f_for_epsilon(4.0, [4, 4, 4])


def test_stated_epsilon_of_a_spec_is_never_above_its_budget():
    """spec.epsilon summed the per-attribute floats: even with an exact f at or below the
    budget, the float sum could land an ulp above it (4.000000000000001).  Now it is the
    exact value rounded once, so a budget met exactly is never stated above."""
    bad = []
    for eps in BUDGETS:
        for hs in HS:
            f = privacy.f_for_epsilon(eps, hs)
            stated = [privacy.epsilon_per_record(f, hs)]
            if len(set(hs)) == 1:
                stated.append(privacy.epsilon_per_record(f, hs[0], len(hs)))
            if max(stated) > eps or abs(stated[0] - float(_exact_epsilon(f, hs))) > 0:
                bad.append((eps, hs, stated))
    assert bad == []
    dom = Domain([Attribute(f"a{j}", ["x", "y", "z"]) for j in range(5)])
    spec = CollectionSpec.from_domain(dom, epsilon=4.0)  # h = 4: 4.000000000000004 before
    assert spec.epsilon <= 4.0 and spec.summary()["epsilon_per_record"] <= 4.0
    assert spec.epsilon == pytest.approx(4.0, rel=1e-14)
    per_attr = spec.epsilon_per_attribute
    assert all(float(_exact_epsilon(spec.f, [h])) == e for h, e in zip(spec.h, per_attr))


def test_collect_bloom_then_inspect_reports_states_at_most_the_budget(tmp_path, capsys):
    """lopub collect --protocol bloom --epsilon 4, then lopub inspect-reports, showed
    epsilon_per_record: 4.000000000000001 (four attributes, the planner's h = 1)."""
    from cli_run import run

    rng = np.random.default_rng(0)
    pd.DataFrame({c: rng.choice(list("xyz"), 400) for c in "abcd"}).to_csv(tmp_path / "d.csv", index=False)
    assert run(capsys, "schema", str(tmp_path / "d.csv"), "--out", str(tmp_path / "dom.json"))[0] == 0
    code, _, err = run(capsys, "collect", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"),
                       "--epsilon", "4", "--protocol", "bloom", "--out", str(tmp_path / "r.parquet"))
    assert code == 0, err
    code, out, err = run(capsys, "inspect-reports", str(tmp_path / "r.parquet"), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["h"] == [1] * 4 and info["epsilon_per_record"] <= 4.0, info
    assert max(info["epsilon_per_attribute"].values()) <= 1.0


@pytest.mark.skipif(shutil.which("node") is None, reason="node (Node.js) is not installed")
def test_js_check_description_accepts_bloom_specs_built_for_a_budget(tmp_path):
    """The JS client recomputes sum_j 2 h_j |ln(1 - f/2) - ln(f/2)| in floats and accepts it
    up to the stated epsilon times (1 + 1e-9): the specs f_for_epsilon now builds (f a few
    ulps higher, the epsilon stated rounded once) are still accepted, the tampered one not."""
    from lopub.serve.protocol import Collection

    descs = []
    for eps, hs in [(4.0, [4]), (4.0, [4] * 5), (3.0, [2, 4, 9, 3]), (0.5, [4] * 15), (40.0, [1, 2])]:
        dom = Domain([Attribute(f"a{j}", ["x", "y", "z"]) for j in range(len(hs))])
        descs.append(Collection("b", CollectionSpec.from_domain(dom, epsilon=eps, h=hs)).describe())
    weak = json.loads(json.dumps(descs[0]))
    weak["epsilon"] = weak["epsilon"] * (1 - 1e-6)
    (tmp_path / "d.json").write_text(json.dumps(descs + [weak]))
    script = ("import { checkDescription } from '%s';\n"
              "import { readFileSync } from 'node:fs';\n"
              "const out = JSON.parse(readFileSync(process.argv[2], 'utf8')).map((d) => {\n"
              "  try { checkDescription(d); return 'ok'; } catch (e) { return e.message; } });\n"
              "process.stdout.write(JSON.stringify(out));\n") % (ROOT / "clients" / "js" / "lopub.js").as_uri()
    (tmp_path / "check.mjs").write_text(script)
    run = subprocess.run(["node", str(tmp_path / "check.mjs"), str(tmp_path / "d.json")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got[:-1] == ["ok"] * len(descs)
    assert "not the stated epsilon" in got[-1]
