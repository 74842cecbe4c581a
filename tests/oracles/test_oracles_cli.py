"""The oracle subcommands, through a parser built with register()."""
import argparse
import json

import numpy as np
import pytest

from lopub.cli import main
from lopub.cli import oracles as cli_oracles
from lopub.progress import console_remarks


@pytest.fixture(autouse=True)
def remarks():
    """Remarks (logging) printed on stderr as by ``lopub``, also for direct ``args.func`` calls."""
    with console_remarks():
        yield


def _parser():
    p = argparse.ArgumentParser(prog="lopub")
    cli_oracles.register(p.add_subparsers(dest="command", required=True))
    return p


@pytest.fixture()
def data(tmp_path):
    from lopub.datasets import embedded
    d = embedded(2000, rng=0).select(["sex", "race"])
    d.to_pandas().to_csv(tmp_path / "d.csv", index=False)
    d.domain.to_json(tmp_path / "dom.json")
    return tmp_path, d


@pytest.mark.parametrize("extra", [["--protocol", "grr"], ["--protocol", "olh"],
                                   ["--protocol", "oue", "--solution", "smp"],
                                   ["--protocol", "l-osue", "--eps-1", "1"],
                                   ["--protocol", "allomfree", "--eps-1", "1"]])
def test_collect_then_estimate(data, extra, capsys):
    tmp, d = data
    args = _parser().parse_args(["collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                                 "--epsilon", "3", "--seed", "1", "--out", str(tmp / "r.npz"),
                                 *extra])
    args.func(args)
    args = _parser().parse_args(["estimate-freq", str(tmp / "r.npz"), "--json"])
    capsys.readouterr()
    args.func(args)
    out = json.loads(capsys.readouterr().out)
    assert out["postprocess"] == "clip"
    for attr in ("sex", "race"):
        freqs = out["marginals"][attr]
        assert list(freqs) == list(d.domain.labels(attr))
        assert sum(freqs.values()) == pytest.approx(1.0)
    meta, _ = cli_oracles.load_reports(str(tmp / "r.npz"))
    assert meta["protocol"] == extra[1] and meta["n"] == 2000


def test_longitudinal_needs_eps1(data):
    tmp, _ = data
    args = _parser().parse_args(["collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                                 "--epsilon", "3", "--protocol", "l-grr", "--out", str(tmp / "r.npz")])
    with pytest.raises(ValueError, match="--eps-1 is needed for l-grr"):
        args.func(args)
    assert not (tmp / "r.npz").exists()


def test_lip_needs_prior_and_estimates(data, capsys):
    tmp, d = data
    base = ["collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"), "--epsilon", "6",
            "--protocol", "rr-lip", "--out", str(tmp / "r.npz")]
    with pytest.raises(ValueError, match="--prior"):
        a = _parser().parse_args(base)
        a.func(a)
    prior = {a: (np.ones(k) / k).tolist() for a, k in zip(d.domain.attrs, d.domain.sizes)}
    (tmp / "p.json").write_text(json.dumps(prior))
    a = _parser().parse_args(base + ["--prior", str(tmp / "p.json"), "--seed", "2"])
    a.func(a)
    out = cli_oracles.estimate_file(str(tmp / "r.npz"))
    assert sum(out["race"].values()) == pytest.approx(1.0)


def test_help_mentions_protocols(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["collect", "--help"])
    assert "allomfree" in capsys.readouterr().out


def _collect(tmp, *extra, csv="d.csv"):
    args = _parser().parse_args(["collect", str(tmp / csv), "--domain", str(tmp / "dom.json"),
                                 "--out", str(tmp / "r.npz"), "--seed", "3", *extra])
    args.func(args)
    return cli_oracles.load_reports(str(tmp / "r.npz"))


def _rewrite(tmp, meta, arrays):
    cli_oracles.save_reports(str(tmp / "r.npz"), meta, arrays)


@pytest.fixture()
def invalid_prior(data):
    tmp, d = data
    # race has 5 categories; a prior this skewed is invalid for RR-LIP at eps = 1 per attribute
    prior = {"sex": [0.2, 0.8], "race": [0.02, 0.03, 0.05, 0.1, 0.8]}
    (tmp / "p.json").write_text(json.dumps(prior))
    return tmp, d


def test_rr_lip_file_carries_the_clients_channels(invalid_prior, monkeypatch):
    tmp, d = invalid_prior
    meta, arrays = _collect(tmp, "--protocol", "rr-lip", "--epsilon", "2", "--prior",
                            str(tmp / "p.json"))
    assert meta["version"] == 4 and meta["mechanisms"] == ["lp", "lp"]
    clients = [cli_oracles.RRLIP(p, 1.0, on_invalid="lp") for p in meta["priors"]]
    for stored, mech in zip(meta["matrices"], clients):
        assert np.array_equal(np.array(stored), mech.matrix)  # exact round trip through JSON
    # the server must not re-solve anything: break the solver, estimation still works
    import lopub.oracles.lip as lip

    def boom(*args, **kw):
        raise AssertionError("server re-solved the channel")
    monkeypatch.setattr(lip, "lip_fallback_channel", boom)
    monkeypatch.setattr(lip, "optimal_lip_matrix", boom)
    out = cli_oracles.estimate_file(str(tmp / "r.npz"), lip_method="invert")
    assert sum(out["race"].values()) == pytest.approx(1.0)
    # and it uses the stored matrix: a different valid channel changes the estimate
    # (a constant channel is 0-LIP; its posterior mean is the prior whatever was reported)
    meta["matrices"][1] = np.full((5, 5), 0.2).tolist()
    _rewrite(tmp, meta, arrays)
    out2 = cli_oracles.estimate_file(str(tmp / "r.npz"))
    assert out2["race"] == pytest.approx(dict(zip(meta["labels"][1], meta["priors"][1])))


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: np.eye(4).tolist(), r"\(shape \(4, 4\)\) must have shape \(5, 5\)"),
    (lambda m: (np.array(m) * 1.01).tolist(), "rows must sum to 1"),
    (lambda m: np.eye(5).tolist(), r"LIP level .* above epsilon \(1\)"),
])
def test_rr_lip_stored_matrix_is_validated(invalid_prior, change, message):
    tmp, _ = invalid_prior
    meta, arrays = _collect(tmp, "--protocol", "rr-lip", "--epsilon", "2", "--prior",
                            str(tmp / "p.json"))
    meta["matrices"][1] = change(meta["matrices"][1])
    _rewrite(tmp, meta, arrays)
    with pytest.raises(ValueError, match=r"stored matrices\[1\] of attribute 'race'.*" + message):
        cli_oracles.estimate_file(str(tmp / "r.npz"))


def test_rr_lip_version1_file_without_matrices(invalid_prior):
    tmp, d = invalid_prior
    meta, arrays = _collect(tmp, "--protocol", "rr-lip", "--epsilon", "2", "--prior",
                            str(tmp / "p.json"))
    for key in ("matrices", "mechanisms", "lgrr_variant"):
        del meta[key]
    meta["version"] = 1
    _rewrite(tmp, meta, arrays)
    with pytest.raises(ValueError, match=r"no 'matrices' .* attribute 'sex' needed the LP"):
        cli_oracles.estimate_file(str(tmp / "r.npz"))
    # a version 1 file whose priors were valid for RR-LIP is safe: closed form, rebuilt exactly
    meta["priors"] = [[0.4, 0.6], [0.2] * 5]
    meta["epsilon"] = 12.0
    _rewrite(tmp, meta, arrays)
    out = cli_oracles.estimate_file(str(tmp / "r.npz"))
    assert sum(out["sex"].values()) == pytest.approx(1.0)


def test_lip_prior_length_must_match_domain(data):
    tmp, _ = data
    (tmp / "p.json").write_text(json.dumps({"sex": [0.2, 0.3, 0.5], "race": [0.2] * 5}))
    with pytest.raises(ValueError, match=r"--prior for attribute 'sex' has 3 probabilities; "
                                         r"expected 2, the attribute's domain size"):
        _collect(tmp, "--protocol", "ue-lip", "--epsilon", "2", "--prior", str(tmp / "p.json"))
    assert not (tmp / "r.npz").exists()


@pytest.mark.parametrize("solution", [[], ["--solution", "smp"]])
def test_lgrr_variant_stored_and_used(data, solution):
    tmp, _ = data
    meta, _ = _collect(tmp, "--protocol", "l-grr", "--epsilon", "2", "--eps-1", "1",
                       "--lgrr-variant", "exact", *solution)
    assert meta["lgrr_variant"] == "exact"
    scheme = cli_oracles.build_scheme(meta)
    assert [o.variant for o in scheme.oracles] == ["exact", "exact"]
    assert all(abs(o.single_report_epsilon() - 1.0 / (2 if not solution else 1)) < 1e-9
               for o in scheme.oracles)
    meta, _ = _collect(tmp, "--protocol", "allomfree", "--epsilon", "2", "--eps-1", "1",
                       "--lgrr-variant", "exact")
    assert cli_oracles.build_scheme(meta).lgrr_variant == "exact"
    meta, _ = _collect(tmp, "--protocol", "l-grr", "--epsilon", "2", "--eps-1", "1")
    assert meta["lgrr_variant"] == "paper"


def test_lgrr_help_figures_are_right():
    from lopub.oracles.longitudinal import LGRR
    assert f"{LGRR(1, 0.6, 32, 'paper').variance(10_000):.4f}" == "0.1250"
    assert f"{LGRR(1, 0.6, 32, 'exact').variance(10_000):.4f}" == "0.0047"
    assert "0.1250 paper vs 0.0047 exact" in cli_oracles.LGRR_HELP


def test_budget_errors_show_typed_values(data):
    tmp, _ = data
    with pytest.raises(ValueError, match=r"--eps-1 \(2\) must be > 0 and < --epsilon \(1\)"):
        _collect(tmp, "--protocol", "l-grr", "--epsilon", "1", "--eps-1", "2")
    with pytest.raises(ValueError, match=r"--eps-1 \(0\) must be > 0"):
        _collect(tmp, "--protocol", "allomfree", "--epsilon", "1", "--eps-1", "0")
    with pytest.raises(ValueError, match=r"--epsilon \(-1\) must be a finite number > 0"):
        _collect(tmp, "--protocol", "grr", "--epsilon", "-1")


def test_loue_limit_in_typed_values(data):
    tmp, _ = data
    # 2 attributes: each gets eps_inf = 0.5, eps_1 = 0.45 > ln((2 e^0.5 + 1)/3) = 0.3594
    with pytest.raises(ValueError, match=r"--eps-1 \(0.9\) must be < 0.718\d+ for l-oue with "
                                         r"--epsilon \(1\) and --solution spl over 2 attributes: "
                                         r"each attribute gets eps_inf = 0.5 and eps_1 = 0.45"):
        _collect(tmp, "--protocol", "l-oue", "--epsilon", "1", "--eps-1", "0.9")
    meta, _ = _collect(tmp, "--protocol", "l-oue", "--epsilon", "1", "--eps-1", "0.7")
    assert meta["eps_1"] == 0.7


@pytest.mark.parametrize(("extra", "ignored"), [
    (["--protocol", "allomfree", "--eps-1", "1", "--solution", "smp"], ["--solution"]),
    (["--protocol", "grr", "--eps-1", "1"], ["--eps-1"]),
    (["--protocol", "oue", "--r", "2"], ["--r"]),
    (["--protocol", "grr", "--lgrr-variant", "exact"], ["--lgrr-variant"]),
    (["--protocol", "l-osue", "--eps-1", "1", "--solution", "smp", "--r", "2"], []),
])
def test_collect_warns_about_ignored_options(data, capsys, extra, ignored):
    tmp, _ = data
    _collect(tmp, "--epsilon", "3", *extra)
    err = capsys.readouterr().err
    for option in ignored:
        assert f"warning: {option} is ignored with --protocol {extra[1]}" in err
    assert err.count("warning") == len(ignored)


def test_collect_warns_solution_for_lip(data, capsys):
    tmp, d = data
    prior = {a: (np.ones(k) / k).tolist() for a, k in zip(d.domain.attrs, d.domain.sizes)}
    (tmp / "p.json").write_text(json.dumps(prior))
    _collect(tmp, "--protocol", "rr-lip", "--epsilon", "6", "--prior", str(tmp / "p.json"),
             "--solution", "smp")
    assert "warning: --solution is ignored with --protocol rr-lip" in capsys.readouterr().err


def test_estimate_attribute_without_reports(data, capsys):
    tmp, d = data
    d.to_pandas().iloc[:1].to_csv(tmp / "one.csv", index=False)  # one user, two attributes
    meta, arrays = _collect(tmp, "--protocol", "grr", "--epsilon", "2", "--solution", "smp",
                            csv="one.csv")
    empty = meta["attrs"][1 - int(arrays["attributes"][0, 0])]
    capsys.readouterr()
    assert main(["estimate-freq", str(tmp / "r.npz"), "--json"]) == 0
    cap = capsys.readouterr()
    out = json.loads(cap.out)["marginals"]
    assert out[empty] is None
    assert all(v is not None for k, v in out.items() if k != empty)
    assert f"attributes ['{empty}'] got no reports" in cap.err
    assert main(["estimate-freq", str(tmp / "r.npz")]) == 0
    assert f"{empty}: no reports" in capsys.readouterr().out


def test_compare_rejects_unknown_protocol_up_front(monkeypatch):
    import lopub.datasets as ds

    def no_data(*a, **k):
        raise AssertionError("data loaded before the protocol check")
    monkeypatch.setattr(ds, "embedded", no_data)
    args = _parser().parse_args(["compare-protocols", "--protocols", "smp-grr,smp-foo,bogus",
                                 "--epsilons", "1"])
    with pytest.raises(ValueError, match=r"protocols \('smp-foo', 'bogus'\) must be 'bloom'"):
        args.func(args)


def test_compare_cli_lgrr_variant(capsys):
    args = _parser().parse_args(["compare-protocols", "--protocols", "smp-l-grr,allomfree",
                                 "--epsilons", "1", "--n", "3000", "--lgrr-variant", "exact",
                                 "--seed", "1", "--json"])
    args.func(args)
    rows = json.loads(capsys.readouterr().out)
    assert [r["protocol"] for r in rows] == ["smp-l-grr", "allomfree"]
    assert all(r["error"] is None and r["mse_avg"] > 0 for r in rows)
