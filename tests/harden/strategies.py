"""Hypothesis strategies of generated inputs for every ``lopub`` subcommand (issue 25, item 6).

* :func:`file_cases`: ``(kind, bytes, how)``: a file of one of the six input kinds (CSV, domain,
  model, Bloom reports, marginal-sampling ``.npz``, oracle ``.npz``), valid, generated, edited or
  damaged (bytes flipped, truncated, zeroed, appended, JSON nested up to 100,000 deep, another
  kind's file);
* :func:`arg_cases`: ``("args", argv, command)``: generated command lines of the subcommands
  that read no file of those kinds (privacy, demo, compare-protocols, serve-plan, serve-export),
  their numbers drawn from all floats and integers, their domain files generated.

Used by :mod:`tests.harden.bad_inputs` (the 2,000-case run) and tests/harden/test_faults.py.
"""
from __future__ import annotations

import json

import pandas as pd
from hypothesis import strategies as st

LABEL = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
NUMBER = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(-5, 10**6)
          | st.sampled_from(["0.5", "1e-320", "1e400", "abc", ""]))


def _num(draw, strategy=NUMBER) -> str:
    return str(draw(strategy))


def file_cases(data: dict[str, bytes]):
    """``(kind, file bytes, how)`` from the valid files ``data`` (kind -> bytes)."""
    deep = st.integers(1, 100_000).map(lambda d: ("[" * d + "]" * d).encode())

    @st.composite
    def damaged(draw):
        kind = draw(st.sampled_from(sorted(data)))
        raw = bytearray(data[kind])
        how = draw(st.sampled_from(["flip", "truncate", "zero", "append", "deep", "swap"]))
        if how == "flip":
            for _ in range(draw(st.integers(1, 4))):
                raw[draw(st.integers(0, len(raw) - 1))] ^= draw(st.integers(1, 255))
        elif how == "truncate":
            raw = raw[:draw(st.integers(0, len(raw) - 1))]
        elif how == "zero":
            start = draw(st.integers(0, len(raw) - 1))
            raw[start:start + draw(st.integers(1, 64))] = b"\0" * len(raw[start:start + 64])
        elif how == "append":
            raw += draw(st.binary(min_size=1, max_size=64))
        elif how == "deep":
            raw = bytearray(draw(deep))
        else:  # another kind's file in place of this one: "swap:<its kind>"
            other = draw(st.sampled_from(sorted(data)))
            raw, how = bytearray(data[other]), f"swap:{other}"
        return kind, bytes(raw), how

    @st.composite
    def csv_table(draw):
        cols = draw(st.lists(LABEL, min_size=1, max_size=5))
        rows = draw(st.lists(st.lists(LABEL, min_size=len(cols), max_size=len(cols)), max_size=30))
        frame = pd.DataFrame(rows, columns=range(len(cols)))
        text = ",".join(json.dumps(c) for c in cols) + "\n" + frame.to_csv(index=False, header=False)
        return "csv", text.encode("utf-8", "surrogatepass"), "generated"

    @st.composite
    def json_doc(draw):
        kind = draw(st.sampled_from(["domain", "model"]))
        doc = json.loads(data[kind])
        leaf = st.none() | st.booleans() | st.integers() | st.floats() | LABEL
        value = draw(st.recursive(leaf, lambda k: st.lists(k, max_size=3)
                                  | st.dictionaries(LABEL, k, max_size=3), max_leaves=8))
        if isinstance(doc, dict) and doc:
            doc[draw(st.sampled_from(list(doc)))] = value
        return kind, json.dumps(doc).encode(), "edited"

    return st.one_of(damaged(), csv_table(), json_doc())


def domain_doc(draw) -> str:
    """A domain JSON text: 1-4 attributes of 1-6 categories (names possibly odd), or damaged."""
    attrs = draw(st.lists(st.tuples(LABEL, st.integers(1, 6)), min_size=1, max_size=4))
    doc = {"format": "lopub-domain", "version": 1,
           "attributes": [{"name": n, "categories": [f"c{i}" for i in range(k)]} for n, k in attrs]}
    text = json.dumps(doc)
    if draw(st.booleans()):
        return text
    cut = draw(st.integers(0, len(text)))
    return draw(st.sampled_from([text[:cut], text.replace('"c0"', '"c1"', 1), "[" * 50_000]))


def arg_cases(w: str):
    """``("args", argv, command)``: generated command lines writing under folder ``w``
    (``{W}/dom.json`` is written from ``files[...]`` by the harness: see ``argv[0]``)."""
    @st.composite
    def privacy(draw):
        argv = ["privacy", "--json"]
        if draw(st.booleans()):
            argv += ["--f", _num(draw, st.floats(0, 1) | NUMBER)]
        else:
            argv += ["--epsilon", _num(draw, st.floats(0, 60) | NUMBER)]
        for opt in ("--h", "--d"):
            if draw(st.booleans()):
                argv += [opt, _num(draw, st.integers(-2, 2_000) | NUMBER)]
        return argv

    @st.composite
    def demo(draw):
        argv = ["demo", "--out", f"{w}/demo", "--n", _num(draw, st.integers(-5, 150) | NUMBER.filter(
            lambda x: not isinstance(x, int) or x < 150))]
        if draw(st.booleans()):
            argv += ["--f", _num(draw, st.floats(0, 1) | NUMBER)]
        elif draw(st.booleans()):
            argv += ["--epsilon", _num(draw, st.floats(0, 20) | NUMBER)]
        return argv + ["--seed", _num(draw, st.integers(-2, 5))]

    protocols = ["bloom", "allomfree", "spl-grr", "smp-olh", "spl-oue", "smp-l-grr", "nosuch", "spl-x", ""]

    @st.composite
    def compare(draw):
        eps = draw(st.lists(st.floats(0.01, 10) | NUMBER, min_size=1, max_size=3))
        argv = ["compare-protocols", "--runs", "1", "--json", "--epsilons", ",".join(map(str, eps)),
                "--protocols", ",".join(draw(st.lists(st.sampled_from(protocols), min_size=1, max_size=3)))]
        if draw(st.booleans()):
            argv += ["--dataset", f"{w}/d.csv", "--domain", f"{w}/gen.json"]
        else:
            argv += ["--n", _num(draw, st.integers(-5, 400) | NUMBER.filter(
                lambda x: not isinstance(x, int) or x < 400))]
        if draw(st.booleans()):
            argv += ["--eps1-ratio", _num(draw, st.floats(0, 1) | NUMBER)]
        return argv

    @st.composite
    def serve_plan(draw):
        return ["serve-plan", "--domain", f"{w}/gen.json", "--n", _num(draw, st.integers(-5, 10**7) | NUMBER),
                "--epsilon", _num(draw, st.floats(0, 20) | NUMBER), "--out", f"{w}/sp.json",
                "--protocol", draw(st.sampled_from(["auto", "marginals", "one-attribute", "bloom"]))]

    @st.composite
    def serve_export(draw):
        name = draw(st.sampled_from(["x", "", "a b", "x/y", "..", "é"]))
        src = draw(st.sampled_from([f"{w}/gen.json", f"{w}/nosuch.json", f"{w}/d.csv"]))
        return ["serve-export", f"{name}={src}", f"{w}/exp.npz", "--store", f"{w}/store"]

    cases = st.one_of(privacy(), demo(), compare(), serve_plan(), serve_export())
    return st.tuples(cases, st.composite(lambda draw: domain_doc(draw))())
