"""Seed means, wins / ties / losses and Markdown tables of the harness's tidy rows.

Verdict rule (per dataset x epsilon): the best baseline is the one of
lowest mean TVD over the seeds; the paired difference d = lopub - best over
the seeds that both ran has mean m and standard error s; ``win`` if
m < -2 s, ``loss`` if m > 2 s, else ``tie``.  With one seed (no standard
error) the sign decides and the verdict is marked ``(1 seed)``.  A cell
where lopub's release failed or timed out is ``failed``.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np

VERDICTS = ("win", "tie", "loss", "failed")


def _ok(rows):
    return [r for r in rows if r["status"] == "ok" and math.isfinite(float(r["tvd"]))]


def cells(rows: list[dict]) -> list[tuple[str, float]]:
    """(dataset, epsilon) in first-seen order."""
    return list(dict.fromkeys((r["dataset"], float(r["epsilon"])) for r in rows))


def mean_se(vals) -> tuple[float, float]:
    """Mean and standard error (nan with fewer than two values)."""
    v = np.asarray(vals, dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan


def verdict(rows: list[dict], lopub: str = "planned", baselines=None) -> list[dict]:
    """One record per (dataset, epsilon): lopub's mean, the best baseline's, the paired verdict."""
    out = []
    for ds, eps in cells(rows):
        cell = [r for r in rows if r["dataset"] == ds and float(r["epsilon"]) == eps]
        ok = _ok(cell)
        names = sorted({r["method"] for r in cell if r["role"] == "baseline"}) if baselines is None else baselines
        by = {m: {int(r["seed"]): float(r["tvd"]) for r in ok if r["method"] == m} for m in [lopub, *names]}
        means = {m: mean_se(list(by[m].values()))[0] for m in names if by[m]}
        rec = {"dataset": ds, "epsilon": eps, "n": cell[0]["n"], "d": cell[0]["d"]}
        own = by[lopub]
        rec["lopub"], rec["lopub_se"] = mean_se(list(own.values()))
        if not means:
            out.append(rec | {"best": None, "verdict": "failed" if not own else "no baseline"})
            continue
        best = min(means, key=means.get)
        seeds = sorted(set(own) & set(by[best]))
        m, s = mean_se([own[k] - by[best][k] for k in seeds])
        rec |= {"best": best, "best_tvd": means[best], "ratio": rec["lopub"] / means[best] if own else math.nan,
                "diff": m, "diff_se": s, "seeds": len(seeds)}
        if not own or not seeds:
            rec["verdict"] = "failed"
        elif math.isnan(s):
            rec["verdict"] = ("win" if m < 0 else "loss" if m > 0 else "tie") + (" (1 seed)" if len(seeds) == 1 else "")
        else:
            rec["verdict"] = "win" if m < -2 * s else "loss" if m > 2 * s else "tie"
        out.append(rec)
    return out


def tally(verdicts: list[dict]) -> dict:
    """Counts of win / tie / loss / failed (a one-seed verdict counts as its sign)."""
    c = Counter(v["verdict"].split(" ")[0] for v in verdicts)
    return {k: c.get(k, 0) for k in VERDICTS}


def _fmt(rows, ds, eps, method) -> str:
    cell = [r for r in rows if r["dataset"] == ds and float(r["epsilon"]) == eps and r["method"] == method]
    if not cell:
        return ""
    ok = _ok(cell)
    if not ok:
        return cell[0]["status"]
    m, s = mean_se([float(r["tvd"]) for r in ok])
    txt = f"{m:.3f}" if math.isnan(s) else f"{m:.3f}±{s:.3f}"
    return txt + ("*" if len(ok) < len(cell) else "")


def _pick(rows, ds, eps) -> str:
    picks = Counter(json.loads(r["extra"]).get("pick", "?") for r in _ok(rows)
                    if r["dataset"] == ds and float(r["epsilon"]) == eps and r["method"] == "planned")
    return "/".join(p for p, _ in picks.most_common())


def markdown(rows: list[dict], methods: list[str], lopub: str = "planned", baselines=None) -> str:
    """Markdown: one line per (dataset, epsilon): each method's mean ± SE, the best baseline, verdict."""
    vs = {(v["dataset"], v["epsilon"]): v for v in verdict(rows, lopub, baselines)}
    head = ["dataset", "N", "d", "eps", "pick", *methods, "best baseline", "ratio", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ds, eps in cells(rows):
        v = vs[(ds, eps)]
        ratio = f"{v['ratio']:.2f}" if v.get("ratio") is not None and math.isfinite(v["ratio"]) else ""
        lines.append("| " + " | ".join([ds, str(v["n"]), str(v["d"]), f"{eps:g}", _pick(rows, ds, eps),
                                        *(_fmt(rows, ds, eps, m) for m in methods), v.get("best") or "",
                                        ratio, v["verdict"]]) + " |")
    return "\n".join(lines)


def tally_markdown(rows: list[dict], lopub: str = "planned", baselines=None) -> str:
    """Markdown: wins / ties / losses / failed per dataset and in total."""
    vs = verdict(rows, lopub, baselines)
    lines = ["| dataset | " + " | ".join(VERDICTS) + " |", "|" + "---|" * (len(VERDICTS) + 1)]
    for ds in dict.fromkeys(v["dataset"] for v in vs):
        t = tally([v for v in vs if v["dataset"] == ds])
        lines.append(f"| {ds} | " + " | ".join(str(t[k]) for k in VERDICTS) + " |")
    t = tally(vs)
    lines.append("| **all** | " + " | ".join(f"**{t[k]}**" for k in VERDICTS) + " |")
    return "\n".join(lines)


def replace_section(path: str | Path, tag: str, text: str) -> None:
    """Replace the text between ``<!-- tag:begin -->`` and ``<!-- tag:end -->`` in ``path``
    (appended as a new section when the markers are absent)."""
    from lopub.io import atomic_write_text

    path = Path(path)
    doc = path.read_text()
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in doc and end in doc:
        doc = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, doc, flags=re.DOTALL)
    else:
        doc = doc.rstrip() + "\n\n" + block + "\n"
    atomic_write_text(path, doc)
