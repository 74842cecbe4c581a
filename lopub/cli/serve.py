"""``lopub serve-plan | serve | serve-export``: real collection over HTTP.

* ``serve-plan --domain D --n N --epsilon E --out FILE``: the public plan
  (marginal plan JSON) or spec (Bloom) the planner recommends, to serve.
* ``serve NAME=FILE ...``: the ingestion service and the survey page
  (:mod:`lopub.serve.app`) on uvicorn.
* ``serve-export NAME=FILE OUT``: the stored reports, shuffled and without
  tokens or arrival times, as the file ``lopub fit`` reads.
"""
from __future__ import annotations

import argparse
from typing import Any

from ._commands import add_command
from ._common import add_verbosity, emit
from ._public import add_public


def _options(a: argparse.Namespace) -> dict[str, Any]:
    from ..serve.config import resolve

    return resolve({"collections": a.collections, "store": a.store, "secret_file": a.secret_file,
                    "relay_key_file": a.relay_key_file, "max_body": a.max_body, "rate": a.rate})


def cmd_serve(a: argparse.Namespace) -> None:
    import json
    import os

    import uvicorn

    from ..progress import note
    from ..serve.app import build_app
    from ..serve.config import ENV, build_config

    if not 1 <= a.workers <= 64:
        raise ValueError(f"--workers ({a.workers}) must be in [1, 64]")
    options = _options(a)
    _check_address(a.host, a.port)  # before any file is created: a busy port fails in one line
    new_key = a.relay_key_file is not None and not os.path.lexists(a.relay_key_file)
    cfg = build_config(options)  # checks everything (and creates the secret) before serving
    if new_key:
        note(f"created the relay key file {a.relay_key_file} (mode 0600): relays send its key as "
             "'Authorization: Bearer KEY' to /api/c/NAME/batch")
    print(f"lopub serve: {sorted(cfg.collections)} on http://{a.host}:{a.port}/ "
          f"(store {cfg.store.where}, {a.workers} worker(s))", flush=True)
    common = dict(host=a.host, port=a.port, log_level="info" if a.access_log else "warning",
                  access_log=a.access_log)
    if a.workers == 1:
        uvicorn.run(build_app(cfg), **common)
        return
    cfg.store.close()
    os.environ[ENV] = json.dumps(options)
    uvicorn.run("lopub.serve.config:app_from_env", factory=True, workers=a.workers, **common)


def _check_address(host: str, port: int) -> None:
    """Refuse a --port out of range, a --host that does not resolve, or an address in use,
    naming them (as uvicorn binds it: SO_REUSEADDR, so a port in TIME_WAIT is free)."""
    import socket

    if not 0 <= port <= 65535:
        raise ValueError(f"--port ({port}) must be in [0, 65535]")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ValueError(f"--host ({host!r}) must be an address or name of this machine: "
                         f"{exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise ValueError(f"--port ({port}) on --host {host} cannot be used: {exc.strerror}; "
                             "choose another --port, or stop what is listening there") from None


def cmd_export(a: argparse.Namespace) -> None:
    import os

    from ..serve.config import default_store, parse_collections
    from ..serve.export import check_target, export
    from ..serve.backends import is_url, open_store

    collection = next(iter(parse_collections([a.collection]).values()))
    check_target(collection, a.target)  # before any work
    where = a.store or default_store([a.collection])
    if not is_url(where) and not os.path.isfile(where):  # never create a store here
        if a.store:
            raise ValueError(f"--store ({where}) must be the store file lopub serve stored the "
                             "reports in; there is no such file")
        raise ValueError(f"no store at {where!r}, the default store of {a.collection} (its stem + "
                         ".reports.sqlite); give --store, the store lopub serve stored the reports in")
    store = open_store(where, readonly=True)
    try:
        summary = export(store, collection, a.target)
    finally:
        store.close()
    emit(summary, a.json, f"exported {summary['n']} shuffled reports of {summary['collection']!r} "
                          f"-> {summary['out']}")


def cmd_plan(a: argparse.Namespace) -> None:
    from ..collect import bloom_spec, plan
    from .. import Domain

    from ._public import planner_knowledge

    domain = Domain.from_json(a.domain)
    knowledge = planner_knowledge(a, domain)
    report = plan(domain, a.n, a.epsilon, key=a.key, **knowledge)
    choice = report.recommended if a.protocol == "auto" else a.protocol
    if choice == "bloom":
        obj = bloom_spec(domain, report, key=a.key)
    elif choice == "one-attribute":
        from ..collect import MarginalPlan

        obj = MarginalPlan(domain, tuple((x,) for x in domain.attrs), a.epsilon, key=a.key)
    else:
        from ..collect import plan_marginals

        obj = plan_marginals(domain, a.n, a.epsilon, key=a.key, **knowledge)  # one phase: a service serves one plan
    obj.to_json(a.out)
    print(f"{choice} -> {a.out}\n{report.privacy}")


def _register_serve(sub: Any) -> None:
    p = add_command(sub, "serve", description=(
        "Serve collections over HTTP: public plan/spec and privacy statement, single-use signed "
        "enrolment tokens, one validated report per token, stored durably before the answer "
        "(SQLite WAL beside the collection file, --store for several collections, or PostgreSQL "
        "by URL), the survey page at /c/NAME."))
    p.add_argument("collections", nargs="+", metavar="NAME=FILE",
                   help="collection name and its plan (lopub-marginal-plan) or spec (lopub-spec) JSON")
    p.add_argument("--store", help="SQLite file or postgresql:// URL (default, for one collection: FILE's "
                   "stem + .reports.sqlite beside FILE, as serve-export assumes; needed for several)")
    p.add_argument("--secret-file", help="token signing secret (created if absent; default: "
                   "lopub-serve.secret beside the first collection file)")
    p.add_argument("--relay-key-file", help="key a relay sends to use the batch endpoint (created with a "
                   "random key, mode 0600, if absent)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--rate", type=float, default=20.0, help="requests per second per address (default 20)")
    p.add_argument("--max-body", type=int, default=64 * 1024, help="bytes of one report request")
    p.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default 1)")
    p.add_argument("--access-log", action="store_true", help="log request lines (never bodies)")
    add_verbosity(p)
    p.set_defaults(func=cmd_serve)


def _register_export(sub: Any) -> None:
    p = add_command(sub, "serve-export", description=(
        "Export a served collection's stored reports, shuffled, without tokens or arrival times: "
        ".npz marginal reports or Parquet Bloom reports (file or dataset folder) for lopub fit."))
    p.add_argument("collection", metavar="NAME=FILE")
    p.add_argument("target", metavar="OUT", help="reports file: .npz for a plan, .parquet or a folder for a "
                   "spec (another suffix is refused)")
    p.add_argument("--store", help="the store lopub serve used (default: FILE's stem + .reports.sqlite "
                   "beside FILE, the default of lopub serve for one collection); never created here")
    p.add_argument("--json", action="store_true")
    add_verbosity(p)
    p.set_defaults(func=cmd_export)


def _register_plan(sub: Any) -> None:
    p = add_command(sub, "serve-plan", description=(
        "Write the plan (marginal sampling) or spec (Bloom) to serve, as the planner recommends "
        "for N users at a per-record epsilon (or --protocol)."))
    p.add_argument("--domain", required=True, help="domain JSON (the public schema)")
    p.add_argument("--n", required=True, type=int, help="expected number of users")
    p.add_argument("--epsilon", required=True, type=float, help="privacy budget per user")
    p.add_argument("--protocol", default="auto", choices=["auto", "marginals", "one-attribute", "bloom"])
    p.add_argument("--key", help="assignment key (stable subsets from user ids) / Bloom hash key")
    p.add_argument("--out", required=True, help="plan or spec JSON to write (.json; another format's suffix (.csv, .pdf, ...) is refused)")
    add_public(p)
    add_verbosity(p)
    p.set_defaults(func=cmd_plan)


REGISTER = {"serve-plan": _register_plan, "serve": _register_serve, "serve-export": _register_export}
