"""The table of ``lopub`` subcommands: name, registering module and one-line help.

Importing this module costs nothing: ``lopub --help`` lists the commands from
here, and only the module of the command being run is imported (with its
numerical dependencies).  Each module's ``REGISTER`` maps its commands to a
function adding the full parser; :func:`add_command` gives it the help below,
so the help text lives in one place.
"""
from __future__ import annotations

from typing import Any

#: every subcommand in the order of ``lopub --help``: name -> (module of lopub.cli, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "schema": ("collect", "infer a domain JSON from a CSV"),
    "plan": ("plan", "predicted release error of each protocol at a per-record budget; the choice"),
    "encode": ("collect", "simulate the clients: CSV -> randomized reports"),
    "privacy": ("collect", "epsilon for f, h, d — or f for a target epsilon"),
    "inspect-reports": ("reports_files", "show N, parts, attributes, spec and epsilon of a reports file "
                                   "or dataset folder"),
    "merge-reports": ("reports_files", "merge reports files and dataset folders into a new dataset folder"),
    "demo": ("pipeline", "run lopub on the embedded census-like dataset"),
    "estimate": ("estimate", "estimate the joint distribution of some attributes from reports"),
    "fit": ("pipeline", "reports -> dependency graph, junction tree, clique joints (model file)"),
    "synthesize": ("pipeline", "sample a synthetic release from a model (Alg. 6)"),
    "query": ("pipeline", "marginal (contingency table) query on a model"),
    "graph": ("pipeline", "dependency graph and junction tree of a model or reports file"),
    "evaluate": ("pipeline", "TVD of a synthetic release against real data"),
    "collect": ("oracles", "simulate clients with any protocol: CSV -> reports file"),
    "estimate-freq": ("oracles", "one-way marginals from any reports file"),
    "compare-protocols": ("oracles", "MSE_avg and time of protocols at equal epsilon"),
    "report": ("release", "self-contained HTML release report of a model (and its release)"),
    "export": ("release", "export a model as a UAI MARKOV file or a pickled pgmpy model"),
    "serve-plan": ("serve", "write the plan or spec to serve for N users at a budget"),
    "serve": ("serve", "HTTP ingestion service and survey page for real collection"),
    "serve-export": ("serve", "export served reports, shuffled, for lopub fit"),
}


def add_command(sub: Any, name: str, **kwargs: Any) -> Any:
    """``sub.add_parser(name, help=<the table's help>, **kwargs)``."""
    return sub.add_parser(name, help=COMMANDS[name][1], **kwargs)


#: top-level options that take a value (``--max-memory-mb 4000`` as well as ``--max-memory-mb=4000``)
VALUE_OPTIONS = ("--max-memory-mb",)


def command_of(argv: list[str]) -> str | None:
    """The subcommand named in ``argv``: its first word not starting with ``-`` that is not the
    value of a top-level option (``lopub --max-memory-mb 4000 fit ...``).

    The other top-level options (``--version``, ``--quiet``, ``--verbose``,
    ``--force``, ``--no-verify``, ``--help``) take no value.
    """
    skip = False
    for w in argv:
        if skip:
            skip = False
        elif w in VALUE_OPTIONS or any(len(w) > 2 and o.startswith(w) and w.startswith("--m")
                                       for o in VALUE_OPTIONS):
            skip = True
        elif not w.startswith("-"):
            return w
    return None
