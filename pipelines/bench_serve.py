"""``lopub serve`` (issue 27): load, kill -9, release quality through HTTP, fake users.

Parts (``--only``; figures and commands: docs/BENCHMARKS.md, "Collection service"), all on 127.0.0.1
against a real ``lopub serve`` process (tokens minted with its secret, reports randomized by
:func:`lopub.serve.client.wire_reports`; neither is timed):

``load``     ``--n`` reports through the relay endpoint (``--batch`` per request, 2 in flight), then
             ``--single`` reports one per request from ``--clients`` threads (latency percentiles).
``kill``     SIGKILL after about half of ``--kill-n`` unique OLH reports, restart, resend everything:
             every acknowledged report stored, none twice, acknowledged ones refused as replays.
``quality``  per seed, the embedded dataset and the planner's plan at ``--epsilon``: collect_records
             vs the same records through HTTP and ``serve-export``, both fitted, 2-way TVD of a sample.
``attack``   a share of fake users with valid tokens sending reports that pass validation (support one
             value; OUE: as many values as the cap on ones allows): shift of the attacked estimate
             against the analytic share (1 - q)/(p - q)/(1 + share), total absolute error.
``all``      load and kill.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from serve_live import free_port, running, wait_up  # noqa: E402

from lopub import Attribute, Dataset, Domain, Synthesizer  # noqa: E402
from lopub.cli import main as lopub_main  # noqa: E402
from lopub.collect import MarginalPlan, MarginalReports, collect_records, plan_marginals  # noqa: E402
from lopub.serve import tokens  # noqa: E402
from lopub.serve.client import post_batch, to_wire, wire_reports  # noqa: E402
from lopub.serve.protocol import Collection  # noqa: E402

RELAY = "bench-relay-key-0123456789abcdef"
DOMAIN = Domain([Attribute(f"q{j}", [f"v{i}" for i in range(s)]) for j, s in enumerate((2, 3, 4, 5, 8, 16))])


def start(work: Path, plan_file: Path, port: int, workers: int = 1) -> subprocess.Popen:
    args = [sys.executable, "-m", "lopub", "serve", f"survey={plan_file}", "--store", str(work / "store.sqlite"),
            "--secret-file", str(work / "secret"), "--relay-key-file", str(work / "relay.key"),
            "--port", str(port), "--rate", "1e9", "--max-body", "65536", "--workers", str(workers)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_up(f"http://127.0.0.1:{port}", proc)
    return proc


def items_for(plan: MarginalPlan, secret: bytes, codes: np.ndarray, rng: np.random.Generator,
              name: str = "survey") -> list[dict]:
    """A device's request per record of ``codes``: a random subset, its randomized report, a token."""
    subsets = rng.integers(0, plan.n_subsets, len(codes))
    wire = wire_reports(Collection(name, plan), codes, subsets, rng=rng)
    return [{"token": tokens.issue(secret, name, int(s)), "subset": int(s), "report": w}
            for s, w in zip(subsets.tolist(), wire)]


def bench_batch(base: str, items: list[dict], batch: int) -> dict:
    chunks = [items[i:i + batch] for i in range(0, len(items), batch)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        stored = sum(r["stored"] for r in pool.map(lambda c: post_batch(base, "survey", c, RELAY), chunks))
    sec = time.perf_counter() - t0
    return {"n": len(items), "batch": batch, "stored": stored, "seconds": round(sec, 2),
            "reports_per_s": round(len(items) / sec)}


def _client(port: int, items, lock: threading.Lock, lat: list) -> None:
    """One client on its own keep-alive connection, taking reports from the shared iterator."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while True:
        with lock:
            item = next(items, None)
        if item is None:
            return
        body = json.dumps(item)
        t = time.perf_counter()
        conn.request("POST", "/api/c/survey/report", body=body, headers={"content-type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        lat.append(time.perf_counter() - t)
        if resp.status != 201:
            raise RuntimeError(f"report refused: HTTP {resp.status}")


def bench_single(port: int, items: list[dict], clients: int) -> dict:
    lat: list[float] = []
    shared, lock = iter(items), threading.Lock()
    threads = [threading.Thread(target=_client, args=(port, shared, lock, lat)) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sec = time.perf_counter() - t0
    ms = np.array(lat) * 1000
    return {"n": len(lat), "clients": clients, "reports_per_s": round(len(lat) / sec),
            **{f"p{q}_ms": round(float(np.percentile(ms, q)), 1) for q in (50, 90, 99)},
            "max_ms": round(float(ms.max()), 1)}


def bench_kill(work: Path, secret: bytes, n: int, batch: int, delay: float) -> dict:
    """kill -9 during load, restart, resend everything; check acknowledged == durable."""
    plan = MarginalPlan(DOMAIN, (("q5",),), 2.0, oracles=("olh",))
    plan.to_json(work / "kill_plan.json")
    store = work / "store.sqlite"
    for f in (store, Path(f"{store}-wal"), Path(f"{store}-shm")):
        f.unlink(missing_ok=True)
    g = plan.oracle(0).g
    items = [{"token": tokens.issue(secret, "survey", 0), "subset": 0, "report": [i + 1, i % 1000, i % g]}
             for i in range(n)]  # a = i + 1 identifies the report
    port = free_port()
    proc = start(work, work / "kill_plan.json", port)
    base = f"http://127.0.0.1:{port}"
    acked: list[int] = []
    lock = threading.Lock()

    def send(start_at: int) -> None:
        for lo in range(start_at, n, 2 * batch):  # two senders interleave their chunks
            try:
                out = post_batch(base, "survey", items[lo:lo + batch], RELAY, timeout=30)
            except Exception:
                return  # the service died: this chunk was not acknowledged
            refused = {r["index"] for r in out["refused"]}
            with lock:
                acked.extend(lo + j for j in range(len(items[lo:lo + batch])) if j not in refused)

    threads = [threading.Thread(target=send, args=(k * batch,)) for k in range(2)]
    for t in threads:
        t.start()
    while len(acked) < n // 2 and any(t.is_alive() for t in threads):
        time.sleep(0.005)
    time.sleep(delay)  # a random moment: batches are being validated, written or answered
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for t in threads:
        t.join()
    acked_at_kill = len(acked)
    proc = start(work, work / "kill_plan.json", port)
    resend = [post_batch(base, "survey", items[lo:lo + batch], RELAY) for lo in range(0, n, batch)]
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait()
    replays = {lo * batch + r["index"] for lo, out in enumerate(resend) for r in out["refused"]}
    db = sqlite3.connect(store)
    a_values = [int(np.frombuffer(p, "<i8")[0]) for (p,) in db.execute("SELECT payload FROM reports")]
    n_tokens = db.execute("SELECT COUNT(*) FROM used_tokens").fetchone()[0]
    stored = set(a_values)
    return {"n": n, "kill_delay_ms": round(1000 * delay, 1), "acknowledged_before_kill": acked_at_kill,
            "acknowledged_all_present": all(i + 1 in stored for i in acked),
            "duplicates": len(a_values) - len(stored), "stored_after_resend": len(a_values),
            "used_tokens": n_tokens, "acknowledged_refused_as_replay": set(acked) <= replays,
            "stored_before_restart_not_acknowledged": len(replays) - acked_at_kill}


def run_load(work: Path, secret: bytes, a: argparse.Namespace) -> dict:
    """The batch and single-report benchmarks on a fresh store."""
    plan = plan_marginals(DOMAIN, 10**6, 2.0)
    plan.to_json(work / "plan.json")
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    batch_items, single_items = (items_for(plan, secret, np.column_stack(
        [rng.integers(0, s, n) for s in plan.domain.sizes]), rng) for n in (a.n, a.single))
    print(f"prepared {a.n + a.single} reports in {time.perf_counter() - t:.1f} s "
          f"(plan: {plan.n_subsets} subsets, oracles {sorted(set(plan.oracles))})", flush=True)
    port = free_port()
    proc = start(work, work / "plan.json", port, a.workers)
    try:
        out = {"workers": a.workers, "batch": bench_batch(f"http://127.0.0.1:{port}", batch_items, a.batch)}
        print(json.dumps(out["batch"]), flush=True)
        out["single"] = bench_single(port, single_items, a.clients)
        print(json.dumps(out["single"]), flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    return out


# release quality through HTTP --------------------------------------------------------------------
def quality_score(reports, data: Dataset, epsilon: float, seed: int) -> float:
    from lopub.publish.evaluate import average_tvd

    syn = Synthesizer(epsilon=epsilon).fit_reports(reports)
    sample = Dataset.from_pandas(syn.sample(data.n, seed=seed), data.domain)
    return float(average_tvd(data, sample, k=2)["mean"])


def through_http(data: Dataset, plan, work: Path, seed: int):
    plan.to_json(work / "plan.json")
    (work / "relay.key").write_text(RELAY)
    secret = tokens.load_secret(work / "secret")
    items = items_for(plan, secret, np.asarray(data.codes), np.random.default_rng(seed + 1000), "q")
    with running({"q": work / "plan.json"}, work / "store.sqlite", "--relay-key-file",
                 str(work / "relay.key"), "--secret-file", str(work / "secret")) as (base, _):
        stored = sum(post_batch(base, "q", items[i:i + 10_000], RELAY)["stored"]
                     for i in range(0, len(items), 10_000))
    exported = lopub_main(["serve-export", f"q={work / 'plan.json'}", str(work / "x.npz"),
                           "--store", str(work / "store.sqlite"), "--quiet"])
    if stored != data.n or exported != 0:
        raise RuntimeError(f"stored {stored} of {data.n} reports; serve-export exited {exported}")
    return MarginalReports.load(work / "x.npz", plan=plan)


# fake users --------------------------------------------------------------------------------------
def fake_reports(oracle: str, obj, m: int, t: int, attack: str, cap: int) -> np.ndarray:
    """``m`` crafted reports in the oracle's format."""
    if oracle == "grr":
        return np.full(m, t, dtype=np.int64)
    if oracle == "olh":
        a = np.arange(1, m + 1, dtype=np.int64)
        return np.column_stack([a, np.zeros(m, np.int64), (a * t % ((1 << 31) - 1)) % obj.g])
    bits = np.zeros((m, obj.k), dtype=bool)
    bits[:, :cap if attack == "spread" else 0] = True
    bits[:, t] = True
    return bits


def attack(oracle: str, n: int, k: int, eps: float, share: float, attack: str, rng) -> dict:
    dom = Domain([Attribute("x", [str(i) for i in range(k)])])
    plan = MarginalPlan(dom, (("x",),), eps, oracles=(oracle,))
    c, obj = Collection("m", plan), plan.oracle(0)
    honest_values = rng.integers(0, k, n)
    honest = obj.perturb(honest_values, rng=rng)
    m, t = int(round(share * n)), 0
    uncapped = fake_reports(oracle, obj, m, t, attack, k)
    items = [{"subset": 0, "report": w} for w in to_wire(oracle, uncapped)]
    _, errors = c.validate(items, np.zeros(m, dtype=np.int64))
    cap = c.max_ones(0) if oracle == "oue" else k
    fakes = fake_reports(oracle, obj, m, t, attack, cap)
    truth = np.bincount(honest_values, minlength=k) / n
    est_clean = obj.estimate(honest)
    est = obj.estimate(np.concatenate([honest, fakes]))
    return {"oracle": oracle, "attack": attack, "share": share, "fake": m,
            "uncapped_refused": len(errors), "cap": cap,
            "shift_target": round(float(est[t] - est_clean[t] * n / (n + m)), 4),
            "analytic_target": round(share / (1 + share) * (1 - obj.q) / (obj.p - obj.q), 4),
            "total_abs_error": round(float(np.abs(est - truth).sum()), 3),
            "total_abs_error_uncapped": round(float(np.abs(
                obj.estimate(np.concatenate([honest, uncapped])) - truth).sum()), 3),
            "total_abs_error_clean": round(float(np.abs(est_clean - truth).sum()), 3)}


def run_quality(a: argparse.Namespace) -> list[dict]:
    from lopub.datasets.embedded import embedded

    rows = []
    for seed in [int(s) for s in a.seeds.split(",")]:
        data = embedded(a.n, rng=seed)
        plan = plan_marginals(data.domain, a.n, a.epsilon)
        t = time.perf_counter()
        sim = quality_score(collect_records(data, plan, rng=seed), data, a.epsilon, seed)
        with tempfile.TemporaryDirectory() as tmp:
            http = quality_score(through_http(data, plan, Path(tmp), seed), data, a.epsilon, seed)
        rows.append({"seed": seed, "n": a.n, "epsilon": a.epsilon, "subsets": plan.n_subsets,
                     "tvd_collect": round(sim, 4), "tvd_http": round(http, 4),
                     "seconds": round(time.perf_counter() - t, 1)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


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
    ap.add_argument("--seeds", default="0,1,2", help="quality")
    ap.add_argument("--k", type=int, default=36, help="attack: values of the attacked attribute")
    ap.add_argument("--shares", default="0.001,0.01,0.05", help="attack: shares of fake users")
    ap.add_argument("--seed", type=int, default=0, help="attack")
    ap.add_argument("--workdir", default="/tmp/lopub-bench-serve")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.only == "attack":
        a.n = a.n or 100_000
        if not (1000 <= a.n <= 10**7 and 2 <= a.k <= 4096):
            ap.error(f"--n ({a.n}) must be in [1000, 10^7] and --k ({a.k}) in [2, 4096]")
        rng = np.random.default_rng(a.seed)
        for share in [float(s) for s in a.shares.split(",")]:
            for oracle, how in (("grr", "target"), ("oue", "target"), ("olh", "target"), ("oue", "spread")):
                print(json.dumps(attack(oracle, a.n, a.k, a.epsilon, share, how, rng)), flush=True)
        return
    if a.only == "quality":
        a.n = a.n or 100_000
        if not 1000 <= a.n <= 2_000_000:
            ap.error(f"--n ({a.n}) must be in [1000, 2000000]")
        results: object = run_quality(a)
    else:
        a.n = a.n or 1_000_000
        for name in ("n", "batch", "single", "clients", "kill_n", "kill_runs", "workers"):
            if not 1 <= getattr(a, name) <= 10_000_000:
                ap.error(f"--{name.replace('_', '-')} ({getattr(a, name)}) must be in [1, 10^7]")
        work = Path(a.workdir)
        work.mkdir(parents=True, exist_ok=True)
        (work / "relay.key").write_text(RELAY)
        secret = tokens.load_secret(work / "secret")
        (work / "store.sqlite").unlink(missing_ok=True)
        results = run_load(work, secret, a) if a.only in ("all", "load") else {}
        results["kill"] = []
        for _ in range(a.kill_runs if a.only != "load" else 0):  # kill -9 at random moments after half
            delay = int.from_bytes(os.urandom(2), "little") / 65536 * 0.2
            results["kill"].append(bench_kill(work, secret, a.kill_n, min(a.batch, 2000), delay))
            print(json.dumps(results["kill"][-1]), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
