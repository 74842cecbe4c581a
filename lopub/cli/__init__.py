"""The ``lopub`` command line.

One module per group of subcommands; the table of commands (name, module,
one-line help) is :data:`lopub.cli._commands.COMMANDS`, and each module's
``REGISTER`` maps its commands to the function adding their parser:

* :mod:`~lopub.cli.collect`: ``schema``, ``encode``, ``privacy``, ``inspect-reports``,
  ``merge-reports``
* :mod:`~lopub.cli.estimate`: ``estimate``
* :mod:`~lopub.cli.pipeline`: ``fit``, ``synthesize``, ``query``, ``graph``
  (its code in :mod:`~lopub.cli.graph`), ``evaluate`` and ``demo``
* :mod:`~lopub.cli.oracles`: ``collect``, ``estimate-freq``, ``compare-protocols``
* :mod:`~lopub.cli.release`: ``report``, ``export``
* :mod:`~lopub.cli.plan`: ``plan``

Shared helpers (output, errors and exit status, ``--quiet``/``--verbose``,
progress) are in :mod:`lopub.cli._common` (reading input files in
:mod:`lopub.cli._inputs`); the progress display and the remarks on stderr in
:mod:`lopub.progress`.

Fast start: :func:`main` imports only the module of the command being run;
the other commands get a placeholder parser with their help line, so
``lopub --help``, ``lopub --version`` and ``lopub privacy`` load neither
pandas, pyarrow nor scipy (checked by ``tests/test_startup.py``).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Collection, Sequence

from lopub._version import __version__
from lopub.cli._commands import COMMANDS, command_of
from lopub.cli._common import Parser, add_verbosity, read_csv, run

__all__ = ["build_parser", "main", "read_csv"]


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The ``lopub`` argument parser.

    Parameters
    ----------
    commands : collection of str, optional
        The subcommands to register fully (importing their modules); the
        others get a placeholder with their help line, enough for
        ``lopub --help``.  Default: all of them.
    """
    p = Parser(prog="lopub", description="Publish categorical data under local differential privacy (LoPub).")
    p.add_argument("--version", action="version", version=f"lopub {__version__}")
    add_verbosity(p, top=True)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        if commands is None or name in commands:
            importlib.import_module(f"{__name__}.{module}").REGISTER[name](sub)
        else:
            sub.add_parser(name, help=help_, add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``lopub`` with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    0 on success, 2 on a usage or input error (a one-line message on stderr).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    command = command_of(argv)
    parser = build_parser({command} & set(COMMANDS) if command is not None else set())
    args = parser.parse_args(argv)
    if args.quiet and args.verbose:
        parser.error("--quiet and --verbose exclude each other")
    return run(args)
