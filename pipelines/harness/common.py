"""What every benchmark script needs once: timing and memory, comma lists, Bloom reports, outputs."""
from __future__ import annotations

import gc
import json
import resource
import time
import warnings
from pathlib import Path


def timed(fn, *, collect: bool = False):
    """``(fn(), wall seconds, CPU seconds of this process)``; ``collect``: garbage-collect first."""
    if collect:
        gc.collect()
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def peak_mb() -> float:
    """This process's peak resident memory in MB (Linux ``ru_maxrss`` is in kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def floats(text: str) -> list[float]:
    """``"0.5,1,2"`` -> [0.5, 1.0, 2.0] (an argparse ``type``)."""
    return [float(x) for x in str(text).split(",") if x.strip()]


def ints(text: str) -> list[int]:
    """``"0,1,2"`` -> [0, 1, 2] (an argparse ``type``)."""
    return [int(x) for x in str(text).split(",") if x.strip()]


def names(text: str) -> list[str]:
    """``"em,moment"`` -> ["em", "moment"] (an argparse ``type``)."""
    return [x.strip() for x in str(text).split(",") if x.strip()]


def bloom_spec(domain, *, f=None, epsilon=None, m=None, h=None):
    """A Bloom collection spec; with ``m`` given it is doubled (to 8,192 at most) until every
    attribute's values get distinct filters (``m=None``: the paper's defaults, m = 128, h = 4, m = 32
    for binary attributes)."""
    from lopub.errors import SpecError
    from lopub.reports.spec import CollectionSpec

    while True:
        try:
            return CollectionSpec.from_domain(domain, f=f, epsilon=epsilon, m=m, h=h)
        except SpecError:
            if m is None or m >= 8192:
                raise
            m *= 2


def bloom_reports(data, seed: int, **spec):
    """Simulated Bloom reports of every record of ``data`` (seeded); ``spec``: :func:`bloom_spec`'s."""
    from lopub.client import encode

    return encode(data, bloom_spec(data.domain, **spec), rng=seed)


def quiet_fit(reports=None, **kw):
    """``lopub.pipeline.steps.fit`` with its warnings silenced (the whole result)."""
    from lopub.pipeline.steps import fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(reports, **kw)


def write_json(path, obj) -> Path:
    """``obj`` as JSON indented by 2 (as the saved runs in docs/ are) at ``path``, written atomically."""
    from lopub.io import atomic_write_text

    path = Path(path)
    atomic_write_text(path, json.dumps(obj, indent=2, default=str) + "\n")
    return path


def md_table(rows, columns, fmt=None) -> str:
    """A Markdown table of dict ``rows`` over ``columns`` (``fmt``: column -> format spec)."""
    fmt = fmt or {}

    def cell(r, c):
        v = r.get(c, "")
        return "" if v is None else format(v, fmt[c]) if c in fmt and isinstance(v, (int, float)) else str(v)

    return "\n".join(["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
                      *("| " + " | ".join(cell(r, c) for c in columns) + " |" for r in rows)])
