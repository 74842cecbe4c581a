"""Write clients/js/test/vectors.json: reports of lopub.client.device from recorded random words.

Run from the repository root: ``python clients/js/test/make_vectors.py``, or with
``--refresh`` to keep the recorded random words and recompute the descriptions and
every report from them (after a change of the published probabilities: the diff then
shows only what changed).  The Node tests (``node --test clients/js``) check that lopub.js gives the same
reports from the same words; ``tests/test_serve_device.py`` checks that
Python still does.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from lopub import Attribute, CollectionSpec, Domain
from lopub.collect import MarginalPlan, assign_user
from lopub.client import device
from lopub.serve.protocol import Collection

OUT = Path(__file__).with_name("vectors.json")


def plan_and_spec():
    """The collections of the vectors (small domains, all three oracles, a long Bloom)."""
    dom = Domain([Attribute("sex", ["Female", "Male"]), Attribute("age", ["<30", "30-60", ">60"]),
                  Attribute("city", [f"city-{i}" for i in range(40)]),
                  Attribute("pet", ["cat", "dog", "🐟 fish", "none"])])
    plan = MarginalPlan(dom, (("sex", "age"), ("city",), ("age", "city"), ("pet",), ("sex", "pet")),
                        1.5, oracles=("grr", "oue", "olh", "oue", "grr"), key="vector-key")
    spec = CollectionSpec.from_domain(dom, epsilon=3.0, h=[2, 4, 9, 3], m=[16, 64, 100, 13])
    return plan, spec


def build() -> dict:
    plan, spec = plan_and_spec()
    answers = [{a: dom_labels[(k * 7 + j) % len(dom_labels)] for j, (a, dom_labels) in
                enumerate((a, plan.domain.labels(a)) for a in plan.domain.attrs)} for k in range(12)]
    marginal = [{"subset": i, "answers": ans, **device.vector(
        lambda s, i=i, ans=ans: device.marginal_report(plan, i, ans, s), device.random_words(4000))}
        for i in range(plan.n_subsets) for ans in answers[:4]]
    bloom = [{"answers": ans, **device.vector(lambda s, ans=ans: device.bloom_report(spec, ans, s),
                                              device.random_words(4000))} for ans in answers[:6]]
    probs = [0.5, 0.25, 1 / 3, 0.9375812532524875, 1e-300, 1 - 2 ** -53, plan.oracle(0).p]
    bern = [{"p": p, **device.vector(lambda s, p=p: device.bernoulli(p, s), device.random_words(60))}
            for p in probs for _ in range(3)]
    ints = [{"n": n, **device.vector(lambda s, n=n: device.randint(n, s), device.random_words(20))}
            for n in (1, 2, 3, 1000, 2 ** 31 - 1, 2 ** 32 - 5)]
    blake = [{"message": m.hex(), "key": k.hex(), "outlen": o,
              "digest": hashlib.blake2b(m, key=k, digest_size=o).hexdigest()}
             for m, k, o in ((b"abc", b"", 64), (b"", b"key", 16), (os.urandom(300), os.urandom(64), 8),
                             (os.urandom(128), b"", 32), (os.urandom(129), os.urandom(3), 64))]
    assign = [{"key": plan.key, "user_id": u, "g": plan.n_subsets, "subset": assign_user(plan, u)}
              for u in ("alice", "bob", "42", "ünïcode", "x" * 200)]
    return {"marginal_description": Collection("v", plan).describe(),
            "bloom_description": Collection("b", spec).describe(),
            "marginal": marginal, "bloom": bloom, "bernoulli": bern, "randint": ints,
            "blake2b": blake, "assign": assign}


def refresh(old: dict) -> dict:
    """``old`` vectors with the current descriptions and the reports their recorded words
    give now (the words a report no longer uses are dropped; one that needs more words
    than were recorded raises: run without ``--refresh``)."""
    plan, spec = plan_and_spec()
    makers = {"marginal": lambda v, s: device.marginal_report(plan, v["subset"], v["answers"], s),
              "bloom": lambda v, s: device.bloom_report(spec, v["answers"], s),
              "bernoulli": lambda v, s: device.bernoulli(v["p"], s),
              "randint": lambda v, s: device.randint(v["n"], s)}
    out = dict(old, marginal_description=Collection("v", plan).describe(),
               bloom_description=Collection("b", spec).describe())
    for part, make in makers.items():
        out[part] = [{**v, **device.vector(lambda s, v=v, make=make: make(v, s), v["words"])}
                     for v in old[part]]
    return out


if __name__ == "__main__":
    vectors = (refresh(json.loads(OUT.read_text(encoding="utf-8"))) if "--refresh" in sys.argv[1:]
               else build())
    OUT.write_text(json.dumps(vectors, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)
