"""The oracle subcommands, through a parser built with register()."""
import argparse
import json

import numpy as np
import pytest

from lopub import cli_oracles


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
