"""``lopub demo``: the whole flow on the embedded census-like dataset.

Generates records, encodes them under LDP (what the clients send), saves the
reports and the public spec into the output folder, and prints a summary.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from .client import encode
from .spec import CollectionSpec


def run_demo(a: argparse.Namespace) -> dict:
    from .datasets import embedded_model

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    say = (lambda *x: None) if a.quiet else print
    t0 = time.perf_counter()
    model = embedded_model()
    data = model.sample(a.n, rng=a.seed)
    data.to_pandas().to_csv(out / "true_data.csv", index=False)
    model.domain.to_json(out / "domain.json")
    t1 = time.perf_counter()
    spec = CollectionSpec.from_domain(model.domain, f=a.f)
    reports = encode(data, spec, rng=a.seed + 1)
    reports.save(out / "reports.parquet")
    spec.to_json(out / "spec.json")
    t2 = time.perf_counter()
    summary = {
        "records": data.n,
        "attributes": len(model.domain),
        "f": spec.f,
        "epsilon_per_attribute": round(spec.epsilon_per_attribute[0], 4),
        "epsilon_per_record": round(spec.epsilon, 4),
        "seconds": {"generate": round(t1 - t0, 3), "encode": round(t2 - t1, 3)},
        "output": str(out),
    }
    say(json.dumps(summary, indent=2))
    return summary
