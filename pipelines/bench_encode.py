"""Client-side encoding throughput: ``--n`` records x ``--d`` attributes (2-41 categories) through the chunked
encoder; records/s, report bits/s and peak RSS (with the input codes and the packed output).
Figures: docs/BENCHMARKS.md, "Client encoding (foundation)".

    python pipelines/bench_encode.py --n 1000000 --d 15 --m 128 --h 4 --save /tmp/bench.parquet
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root
from lopub import CollectionSpec, Dataset, Domain
from lopub.client import encode
from pipelines.harness.common import peak_mb, timed


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in {"--n": 1_000_000, "--d": 15, "--m": 128, "--h": 4, "--f": 0.5, "--seed": 0}.items():
        p.add_argument(name, type=type(default), default=default)
    p.add_argument("--save", help="also write the reports file here and time it")
    a = p.parse_args(argv)
    sizes = [2 + (j * 7) % 40 for j in range(a.d)]  # 2 .. 41 categories, Adult-like spread
    domain = Domain.from_categories({f"a{j}": [str(v) for v in range(s)] for j, s in enumerate(sizes)})
    spec = CollectionSpec.from_domain(domain, f=a.f, m=a.m, h=a.h)
    rng = np.random.default_rng(a.seed)
    data = Dataset(np.column_stack([rng.integers(0, s, a.n, dtype=np.uint8) for s in sizes]), domain)
    reports, secs, _ = timed(lambda: encode(data, spec, rng=a.seed + 1, chunk_size=32768))
    out = {"records": a.n, "attributes": a.d, "bits_per_report": spec.total_bits, "seconds": round(secs, 3),
           "records_per_s": round(a.n / secs), "report_bits_per_s": float(f"{a.n * spec.total_bits / secs:.4g}"),
           "epsilon_per_record": round(spec.epsilon, 3)}
    if a.save:
        out["save_seconds"] = round(timed(lambda: reports.save(a.save))[1], 3)
    out["peak_rss_mb"] = round(peak_mb(), 1)
    for k, v in out.items():
        print(f"{k:>20}: {v}")
    return out


if __name__ == "__main__":
    main()
