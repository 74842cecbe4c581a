"""Benchmark: client-side encoding throughput (issue: foundation).

Encodes N records x d attributes (default 1,000,000 x 15, m = 128, h = 4,
f = 0.5) with the vectorized, chunked encoder and prints records/s, report
bits/s and peak memory (max RSS of this process, which includes the input
codes and the packed output).

    python pipelines/bench_encode.py [--n 1000000] [--d 15] [--m 128] [--h 4] [--save out.parquet]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from lopub import CollectionSpec, Dataset, Domain


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=15)
    p.add_argument("--m", type=int, default=128)
    p.add_argument("--h", type=int, default=4)
    p.add_argument("--f", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", help="also write the reports file here and time it")
    a = p.parse_args(argv)
    from lopub.client import encode

    sizes = [2 + (j * 7) % 40 for j in range(a.d)]  # 2 .. 41 categories, Adult-like spread
    domain = Domain.from_categories({f"a{j}": [str(v) for v in range(s)] for j, s in enumerate(sizes)})
    spec = CollectionSpec.from_domain(domain, f=a.f, m=a.m, h=a.h)
    rng = np.random.default_rng(a.seed)
    data = Dataset(np.column_stack([rng.integers(0, s, a.n, dtype=np.uint8) for s in sizes]), domain)
    t = time.perf_counter()
    reports = encode(data, spec, rng=a.seed + 1, chunk_size=32768)
    secs = time.perf_counter() - t
    out = {
        "records": a.n, "attributes": a.d, "bits_per_report": spec.total_bits, "seconds": round(secs, 3),
        "records_per_s": round(a.n / secs), "report_bits_per_s": float(f"{a.n * spec.total_bits / secs:.4g}"),
        "epsilon_per_record": round(spec.epsilon, 3),
    }
    if a.save:
        t = time.perf_counter()
        reports.save(a.save)
        out["save_seconds"] = round(time.perf_counter() - t, 3)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    for k, v in out.items():
        print(f"{k:>20}: {v}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
