"""``lopub serve`` (issue 27): load, kill -9, release quality through HTTP, fake users.

Parts (``--only``), against a real service on 127.0.0.1: ``load`` (``--n`` reports in relay batches, then
``--single`` one per request from ``--clients`` keep-alive clients), ``kill`` (SIGKILL once half of ``--kill-n``
reports are acknowledged, restart, resend all), ``all`` (load and kill), ``quality`` (``collect_records`` vs
the same records through HTTP and ``serve-export``), ``attack`` (fake users with valid tokens).
Figures: docs/BENCHMARKS.md, "Collection service (`lopub serve`, issue 27)".

    nice python pipelines/bench_serve.py --n 1000000 --single 20000 --kill-n 200000
"""
import argparse
import functools
import http.client
import json
import signal
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # run as a script: the repository

from lopub import Attribute, Dataset, Domain, Synthesizer
from lopub.cli import main as lopub_main
from lopub.collect import MarginalPlan, MarginalReports, collect_records, plan_marginals
from lopub.serve import tokens
from lopub.serve.client import post_batch, to_wire, wire_reports
from lopub.serve.protocol import Collection
from pipelines.harness import datasets
from pipelines.harness.common import floats, ints, timed, write_json
from pipelines.harness.methods import score
from pipelines.harness.serve_live import running

RELAY = "bench-relay-key-0123456789abcdef"
DOMAIN = Domain([Attribute(f"q{j}", [f"v{i}" for i in range(s)]) for j, s in enumerate((2, 3, 4, 5, 8, 16))])
ATTACKS = (("grr", "target"), ("oue", "target"), ("olh", "target"), ("oue", "spread"))


def emit(row: dict) -> dict:
    print(json.dumps(row), flush=True)
    return row


def serve(work: Path, plan: MarginalPlan, name: str = "survey", workers: int = 1, fresh: bool = False):
    """A ``lopub serve`` of ``plan`` as collection ``name`` on ``work``'s store, secret and relay key."""
    if fresh:  # a new store: no reports, no used tokens
        for f in ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm"):
            (work / f).unlink(missing_ok=True)
    (work / "relay.key").write_text(RELAY)
    plan.to_json(work / f"{name}.json")
    return running({name: work / f"{name}.json"}, work / "store.sqlite", "--secret-file", str(work / "secret"),
                   "--relay-key-file", str(work / "relay.key"), "--rate", "1e9", "--workers", str(workers))


def items_for(plan: MarginalPlan, secret: bytes, codes, rng, name: str = "survey") -> list[dict]:
    """A device's request per record of ``codes``: a random subset, its randomized report, a token."""
    subsets = rng.integers(0, plan.n_subsets, len(codes))
    wire = wire_reports(Collection(name, plan), codes, subsets, rng=rng)
    return [{"token": tokens.issue(secret, name, int(s), plan=plan.plan_id), "subset": int(s), "report": w}
            for s, w in zip(subsets.tolist(), wire)]


def post_all(base: str, items: list[dict], batch: int, name: str = "survey") -> list:
    """``items`` through the relay endpoint in batches of ``batch``, 2 in flight: the service's answers."""
    def post(lo):
        return post_batch(base, name, items[lo:lo + batch], RELAY)

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(post, range(0, len(items), batch)))


def client(base: str, items: list[dict]) -> list[float]:
    """One device after the other on one keep-alive connection: the latency of each report."""
    conn, lat = http.client.HTTPConnection(base.removeprefix("http://"), timeout=60), []
    for item in items:
        body = json.dumps(item)
        t = time.perf_counter()
        conn.request("POST", "/api/c/survey/report", body=body, headers={"content-type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        lat.append(time.perf_counter() - t)
        if resp.status != 201:
            raise RuntimeError(f"report refused: HTTP {resp.status}")
    return lat


def run_load(work: Path, secret: bytes, a) -> dict:
    """The batch and single-report benchmarks on a fresh store."""
    plan, rng = plan_marginals(DOMAIN, 10**6, 2.0), np.random.default_rng(0)
    t = time.perf_counter()
    batch, single = (items_for(plan, secret, np.column_stack([rng.integers(0, s, n) for s in plan.domain.sizes]), rng)
                     for n in (a.n, a.single))
    print(f"prepared {a.n + a.single} reports in {time.perf_counter() - t:.1f} s "
          f"(plan: {plan.n_subsets} subsets, oracles {sorted(set(plan.oracles))})", flush=True)
    with serve(work, plan, workers=a.workers, fresh=True) as (base, _):
        answers, sec, _ = timed(lambda: post_all(base, batch, a.batch))
        stored = sum(r["stored"] for r in answers)
        out = {"workers": a.workers, "batch": emit({"n": a.n, "batch": a.batch, "stored": stored,
                                                     "seconds": round(sec, 2), "reports_per_s": round(a.n / sec)})}
        shares = [single[i::a.clients] for i in range(a.clients)]  # one share per client
        with ThreadPoolExecutor(a.clients) as pool:
            lat, sec, _ = timed(lambda: list(pool.map(functools.partial(client, base), shares)))
    ms = np.concatenate(lat) * 1000
    out["single"] = emit({"n": ms.size, "clients": a.clients, "reports_per_s": round(ms.size / sec),
                          **{f"p{q}_ms": round(float(np.percentile(ms, q)), 1) for q in (50, 90, 99)},
                          "max_ms": round(float(ms.max()), 1)})
    return out


def bench_kill(work: Path, secret: bytes, n: int, batch: int) -> dict:
    """kill -9 a random 0-200 ms after half the reports are acknowledged, restart, resend all."""
    plan = MarginalPlan(DOMAIN, (("q5",),), 2.0, oracles=("olh",))
    g, delay = plan.oracle(0).g, np.random.default_rng().uniform(0, 0.2)
    items = [{"token": tokens.issue(secret, "survey", 0, plan=plan.plan_id), "subset": 0, "report": [i + 1, i % 1000, i % g]}
             for i in range(n)]  # a = i + 1 identifies the report
    acked: list[int] = []

    def send(base: str, lo: int) -> None:
        try:
            out = post_batch(base, "survey", items[lo:lo + batch], RELAY, timeout=30)
        except (OSError, ValueError, http.client.HTTPException):
            return  # the service died: this chunk was not acknowledged
        refused = {lo + r["index"] for r in out["refused"]}
        acked.extend([i for i in range(lo, min(lo + batch, n)) if i not in refused])

    with serve(work, plan, fresh=True) as (base, proc), ThreadPoolExecutor(2) as pool:  # 2 chunks in flight
        sending = [pool.submit(send, base, lo) for lo in range(0, n, batch)]
        while len(acked) < n // 2 and not all(s.done() for s in sending):
            time.sleep(0.005)
        time.sleep(delay)  # a random moment: batches are being validated, written or answered
        proc.kill()
        proc.wait()
    acked_at_kill = len(acked)
    with serve(work, plan) as (base, _):
        resend = post_all(base, items, batch)
    replays = {i * batch + r["index"] for i, out in enumerate(resend) for r in out["refused"]}
    db = sqlite3.connect(work / "store.sqlite")
    a_values = [int(np.frombuffer(p, "<i8")[0]) for (p,) in db.execute("SELECT payload FROM reports")]
    stored = set(a_values)
    return {"n": n, "kill_delay_ms": round(1000 * delay, 1), "acknowledged_before_kill": acked_at_kill,
            "acknowledged_all_present": all(i + 1 in stored for i in acked),
            "duplicates": len(a_values) - len(stored), "stored_after_resend": len(a_values),
            "used_tokens": db.execute("SELECT COUNT(*) FROM used_tokens").fetchone()[0],
            "acknowledged_refused_as_replay": set(acked) <= replays,
            "stored_before_restart_not_acknowledged": len(replays) - acked_at_kill}


def release_tvd(reports, data: Dataset, epsilon: float, seed: int) -> float:
    """Mean 2-way TVD of a synthetic sample (``data.n`` records) of the release fitted on ``reports``."""
    sample = Synthesizer(epsilon=epsilon).fit_reports(reports).sample(data.n, seed=seed)
    return float(score(data, Dataset.from_pandas(sample, data.domain)))


def quality(a) -> list[dict]:
    """Per seed: the embedded data's planned collection simulated vs through HTTP and ``serve-export``."""
    rows = []
    for seed in a.seeds:
        data = datasets.load("embedded", a.n, seed)
        plan, t = plan_marginals(data.domain, a.n, a.epsilon), time.perf_counter()
        sim = release_tvd(collect_records(data, plan, rng=seed), data, a.epsilon, seed)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            items = items_for(plan, tokens.load_secret(work / "secret"), np.asarray(data.codes),
                              np.random.default_rng(seed + 1000), "q")
            with serve(work, plan, "q") as (base, _):
                stored = sum(r["stored"] for r in post_all(base, items, 10_000, "q"))
            exported = lopub_main(["serve-export", f"q={work / 'q.json'}", str(work / "x.npz"),
                                   "--store", str(work / "store.sqlite"), "--quiet"])
            if stored != data.n or exported != 0:
                raise RuntimeError(f"stored {stored} of {data.n} reports; serve-export exited {exported}")
            http = release_tvd(MarginalReports.load(work / "x.npz", plan=plan), data, a.epsilon, seed)
        rows.append(emit({"seed": seed, "n": a.n, "epsilon": a.epsilon, "subsets": plan.n_subsets,
                          "tvd_collect": round(sim, 4), "tvd_http": round(http, 4),
                          "seconds": round(time.perf_counter() - t, 1)}))
    return rows


def fake_reports(oracle: str, k: int, m: int, ones: int) -> np.ndarray:
    """``m`` reports supporting value 0 in the oracle's format (OUE: ones on the first ``ones`` values)."""
    if oracle == "oue":
        return np.tile(np.arange(k) < ones, (m, 1))
    if oracle == "olh":
        return np.column_stack([np.arange(1, m + 1), np.zeros((m, 2), np.int64)])  # (a, b = 0, h = 0): h_a(0)
    return np.zeros(m, dtype=np.int64)  # grr


def attack(oracle: str, how: str, share: float, a, rng) -> dict:
    """``a.n`` honest users (uniform over ``a.k`` values) plus a ``share`` of fake ones supporting value 0."""
    plan = MarginalPlan(Domain([Attribute("x", [str(i) for i in range(a.k)])]), (("x",),), a.epsilon,
                        oracles=(oracle,))
    c, obj = Collection("m", plan), plan.oracle(0)
    n, m = a.n, round(share * a.n)
    honest_values = rng.integers(0, a.k, n)
    honest = obj.perturb(honest_values, rng=rng)
    uncapped = fake_reports(oracle, a.k, m, a.k if how == "spread" else 1)
    _, errors = c.validate([{"subset": 0, "report": w} for w in to_wire(oracle, uncapped)], np.zeros(m, np.int64))
    cap = c.max_ones(0) if oracle == "oue" else a.k
    truth, est_clean = np.bincount(honest_values, minlength=a.k) / n, obj.estimate(honest)
    est = obj.estimate(np.concatenate([honest, fake_reports(oracle, a.k, m, cap if how == "spread" else 1)]))
    est_uncapped = obj.estimate(np.concatenate([honest, uncapped]))
    return {"oracle": oracle, "attack": how, "share": share, "fake": m, "uncapped_refused": len(errors), "cap": cap,
            "shift_target": round(float(est[0] - est_clean[0] * n / (n + m)), 4),
            "analytic_target": round(share / (1 + share) * (1 - obj.q) / (obj.p - obj.q), 4),
            "total_abs_error": round(float(np.abs(est - truth).sum()), 3),
            "total_abs_error_uncapped": round(float(np.abs(est_uncapped - truth).sum()), 3),
            "total_abs_error_clean": round(float(np.abs(est_clean - truth).sum()), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["all", "load", "kill", "quality", "attack"], default="all")
    ap.add_argument("--n", type=int, default=None, help="reports (default 10^6; quality, attack: 10^5 users)")
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--single", type=int, default=20_000)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--kill-n", type=int, default=200_000)
    ap.add_argument("--kill-runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1, help="uvicorn workers of the service")
    ap.add_argument("--epsilon", type=float, default=2.0, help="quality, attack")
    ap.add_argument("--seeds", type=ints, default="0,1,2", help="quality")
    ap.add_argument("--k", type=int, default=36, help="attack: values of the attacked attribute")
    ap.add_argument("--shares", type=floats, default="0.001,0.01,0.05", help="attack: shares of fake users")
    ap.add_argument("--seed", type=int, default=0, help="attack")
    ap.add_argument("--workdir", default="/tmp/lopub-bench-serve")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    a.n = a.n or (100_000 if a.only in ("quality", "attack") else 1_000_000)
    if a.only == "attack":
        rng = np.random.default_rng(a.seed)
        results = [emit(attack(oracle, how, share, a, rng)) for share in a.shares for oracle, how in ATTACKS]
    elif a.only == "quality":
        results = quality(a)
    else:
        work = Path(a.workdir)
        work.mkdir(parents=True, exist_ok=True)
        secret = tokens.load_secret(work / "secret")
        results = run_load(work, secret, a) if a.only in ("all", "load") else {}
        runs = a.kill_runs if a.only != "load" else 0  # kill -9 at random moments after half
        results["kill"] = [emit(bench_kill(work, secret, a.kill_n, min(a.batch, 2000))) for _ in range(runs)]
    if a.out:
        write_json(a.out, results)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
