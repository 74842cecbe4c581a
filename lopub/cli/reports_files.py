"""``lopub inspect-reports | merge-reports``: reports files and dataset folders.

* ``inspect-reports REPORTS``: size, parts, spec and epsilon of a reports file or folder
* ``merge-reports OUT IN1 IN2 ...``: a new dataset folder with the reports of all inputs
"""
from __future__ import annotations

import argparse
import os
from typing import Any

from lopub.cli._commands import add_command
from lopub.cli._common import add_verbosity, emit
from lopub.cli.collect import _spec_text


def _inspect_npz(path: str) -> dict | None:
    """Summary of an ``.npz`` reports file (marginal sampling, one attribute, frequency oracle);
    None when ``path`` is no ZIP archive."""
    from lopub.cli.oracle_files import MARGINAL_FORMAT, load_reports, npz_format

    if os.path.isdir(path) or not os.path.isfile(path):
        return None
    with open(path, "rb") as fh:
        if fh.read(2) != b"PK":
            return None
    if npz_format(path) == MARGINAL_FORMAT:
        from lopub.collect import MarginalReports

        r = MarginalReports.load(path)
        sizes = r.group_sizes()
        one = all(len(x) == 1 for x in r.plan.subsets)
        return {"file": path, "protocol": "one-attribute" if one else "marginals", "n": r.n,
                **({"users": r.users, "screened_not_released": r.screened} if r.screened else {}),
                "epsilon_per_record": float(r.plan.epsilon), "subsets": len(r.plan.subsets),
                "fewest_users_per_subset": int(sizes.min()), "attribute_names": list(r.plan.domain.attrs),
                "read_with": f"lopub fit {path}; lopub estimate-freq {path}"}
    meta, _ = load_reports(path)
    p = meta["protocol"]
    out = {"file": path, "protocol": p, "solution": meta["solution"], "n": meta["n"],
           "epsilon": meta["epsilon"]}
    if p.startswith("l-") or p == "allomfree":  # longitudinal: the budget of one report too
        out["eps_1"] = meta.get("eps_1")
    if p in ("l-grr", "allomfree"):
        out["lgrr_variant"] = meta.get("lgrr_variant", "paper")
    if meta["solution"] == "smp" and p != "allomfree":
        out["r"] = meta.get("r", 1)
    lip = p.endswith("-lip")
    out["privacy"] = "lip" if lip else "ldp"
    if lip:
        out["privacy_note"] = (f"each attribute's reports are {meta['epsilon'] / len(meta['attrs']):g}-LIP "
                               f"under the stored prior (LIP: local information privacy; it implies "
                               f"twice that in LDP), epsilon split over {len(meta['attrs'])} attribute(s)")
    out.update(attribute_names=list(meta["attrs"]), read_with=f"lopub estimate-freq {path}")
    return out


def cmd_inspect(a: argparse.Namespace) -> None:
    from lopub.progress import warning
    from lopub.reports.dataset import ReportsDataset

    npz = _inspect_npz(a.reports)
    if npz is not None:
        emit(npz, a.json, "\n".join(f"{k}: {v}" for k, v in npz.items()))
        return
    ds = ReportsDataset.open(a.reports)
    if ds.is_folder:
        ds.verify()
        for _ in ds.iter_reports():  # read every report: nulls, padding bits, row counts
            pass
        s = ds.summary()
        if s.get("unlisted_parts"):
            warning(f"{a.reports}: part files not in the manifest (left by an interrupted append; "
                    f"ignored): {', '.join(s['unlisted_parts'])}")
    else:
        r = ds.load()
        s = r.summary()
    s["attribute_names"] = list(ds.spec.domain.attrs)
    emit(s, a.json, _inspect_text(s))


def _inspect_text(s: dict) -> str:
    parts = s.get("parts")
    if parts is None:
        return _spec_text(s)
    head = {k: v for k, v in s.items() if k not in ("parts", "unlisted_parts")}
    lines = [f"  {p['file']}: {p['n']} reports, {p['bytes']} bytes" for p in parts]
    return (f"dataset folder, {len(parts)} part(s), checksums verified\n" + "\n".join(lines)
            + "\n" + _spec_text(head))


def cmd_merge(a: argparse.Namespace) -> None:
    from lopub.reports.dataset import merge_datasets

    merged = merge_datasets(a.out, *a.inputs)
    s = merged.summary()
    users = (f" of {merged.users} users (the {merged.screened} reports of the screens that chose the "
             "protocol are not part of the release)") if merged.screened else ""
    emit(s, a.json, f"merged {len(a.inputs)} input(s) -> {a.out}: {merged.n} reports{users} in "
                    f"{len(merged.parts)} part(s)")


def _register_inspect(sub: Any) -> None:
    i = add_command(sub, "inspect-reports", description="Validate a reports file or dataset folder (manifest, every part's size and SHA-256, every report) and print its size, parts, spec and privacy.")
    i.add_argument("reports", help="reports file or dataset folder")
    i.add_argument("--json", action="store_true")
    add_verbosity(i)
    i.set_defaults(func=cmd_inspect)


def _register_merge(sub: Any) -> None:
    m = add_command(sub, "merge-reports", description="Write a new dataset folder OUT holding the reports of every input (reports files or dataset folders, in order; parts are copied byte for byte and their checksums checked). The inputs must share one collection spec.")
    m.add_argument("out", metavar="OUT", help="new dataset folder (must not exist yet)")
    m.add_argument("inputs", metavar="IN", nargs="+", help="reports files or dataset folders")
    m.add_argument("--json", action="store_true")
    add_verbosity(m)
    m.set_defaults(func=cmd_merge)


#: command -> function adding its parser (see :mod:`lopub.cli._commands`)
REGISTER = {"inspect-reports": _register_inspect, "merge-reports": _register_merge}
