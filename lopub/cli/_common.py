"""Helpers shared by every ``lopub`` subcommand.

Output (:func:`emit`), reading input (:func:`split_list`; files: :mod:`lopub.cli._inputs`, re-exported here),
defaults taken from the library (:func:`default`), the ``--quiet`` and
``--verbose`` options, the progress display of a command (:func:`progress`)
and running a command (:func:`run`): remarks and Python warnings through
logging, errors as ``lopub COMMAND: error: ...`` with exit status 2, and a
closed output pipe (``lopub ... | head``) that is not an error.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import inspect
import json
import logging
import math
import os
import sys
import time
import warnings
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, NoReturn

from lopub.errors import BudgetError
from lopub.io import output_lock, unverified_reads
from lopub.limits import memory_limit
from lopub.cli._outputs import check_output_path, check_suffix, guard_outputs, input_paths, output_kind
from lopub.cli._inputs import (MAX_COLUMNS, NPZ_READERS, add_missing, dataset_from_file,  # noqa: F401 (re-exported)
                                load_bloom_reports, read_csv, refuse_npz)

if TYPE_CHECKING:  # pragma: no cover
    from lopub.progress import ConsoleProgress

# numpy, tqdm (lopub._util, lopub.progress) and pandas are imported where used: `lopub --help`
# and `lopub --version` import this module and must start fast (tests/test_startup.py)

__all__ = ["add_missing", "add_na_values", "add_verbosity", "csv_options", "default", "emit", "progress", "read_csv", "run", "seed_arg",
           "split_list"]

ERRORS = (ValueError, TypeError, OSError, BudgetError, KeyError)
EXIT_ERROR = 2
#: options naming a file a command writes
OUTPUT_OPTIONS = {"out": "--out", "out_json": "--out-json", "plot": "--plot"}
#: commands whose --out may be a folder (the demo's output folder, a reports dataset)
FOLDER_OUT = ("demo", "encode", "collect", "merge-reports")
_WRITE_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
#: warnings meant for developers, not users: shown only with --verbose
_DEVELOPER_WARNINGS = (RuntimeWarning, DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def emit(obj: Any, as_json: bool, text: str) -> None:
    """Print ``obj`` as indented JSON when ``as_json``, else ``text``."""
    print(json.dumps(obj, indent=2, default=str) if as_json else text)


def seed_arg(text: str) -> int:
    """argparse type of ``--seed``: :func:`lopub._util.seed_arg`, imported when first used."""
    from lopub._util import seed_arg as parse_seed

    return parse_seed(text)


def add_na_values(p: argparse.ArgumentParser, headerless: str = "") -> None:
    """The options of a command reading CSV files: ``--na-values X,Y`` (the tokens read as missing
    values besides empty cells), ``--sep``, ``--decimal``, and ``--names``/``--no-header`` for a
    file without a header row (pass them on with :func:`csv_options`); ``headerless`` says which
    of the command's files the last two apply to."""
    p.add_argument("--na-values", type=split_list, default=[], metavar="X,Y",
                   help="comma-separated cell values read as missing, besides empty cells "
                        "(default: none: \"NA\", \"None\", \"null\", \"nan\" are labels)")
    p.add_argument("--sep", type=sep_arg, metavar="CHAR",
                   help="delimiter of the CSV files read (',', ';', 'tab', '|', ...; default: detected "
                        "from the first lines among , ; tab |)")
    p.add_argument("--decimal", choices=(".", ","),
                   help="decimal mark of numbers in the CSV files read (default: ',' when the delimiter "
                        "is ';', else '.'; numbers with ',' thousands separators are read when it is '.')")
    which = f" ({headerless})" if headerless else ""
    header = p.add_mutually_exclusive_group()
    header.add_argument("--names", type=split_list, metavar="NAME,NAME,...",
                        help=f"the CSV file{which} has no header row: these are its column names, one per "
                             "column in order (default: its first row is the header; a first row that "
                             "looks like a record is warned about)")
    header.add_argument("--no-header", action="store_true",
                        help=f"the CSV file{which} has no header row: its columns are named col_1 .. col_k")


def sep_arg(text: str) -> str:
    """argparse type of ``--sep``: one character; ``tab`` or ``\\t`` for a tab."""
    sep = "\t" if text.lower() in ("tab", "\\t") else text
    if len(sep) != 1 or sep in "\"\r\n":
        raise argparse.ArgumentTypeError(f"--sep ({text!r}) must be one character (or 'tab'), e.g. ';'")
    return sep


def csv_options(a: argparse.Namespace, *, header: bool = False) -> dict[str, Any]:
    """``sep``, ``decimal``, ``names`` and ``no_header`` of :func:`read_csv` from the options of
    :func:`add_na_values`; ``header``: for a file known to have its header row (a release lopub
    wrote), without ``names`` and ``no_header``."""
    options = {"sep": getattr(a, "sep", None), "decimal": getattr(a, "decimal", None)}
    if not header:
        options |= {"names": getattr(a, "names", None), "no_header": getattr(a, "no_header", False)}
    return options


def split_list(text: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]`` (comma-separated, blanks dropped)."""
    return [x.strip() for x in text.split(",") if x.strip()]


def default(func: Callable, name: str) -> Any:
    """The default value of parameter ``name`` of the library function ``func``.

    The command line shows and uses the library's defaults instead of typing
    them a second time.
    """
    value = inspect.signature(func).parameters[name].default
    if value is inspect.Parameter.empty:
        raise TypeError(f"{func.__qualname__} has no default for {name!r}")
    return value


def add_verbosity(p: argparse.ArgumentParser, *, top: bool = False,
                  quiet_help: str = "no progress or notes on stderr (warnings and errors only)"
                  ) -> None:
    """``--quiet``, ``--verbose`` and ``--max-memory-mb``; on a subcommand they override the
    global ones."""
    unset: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    p.add_argument("--quiet", action="store_true", help=quiet_help, **unset)
    p.add_argument("--verbose", action="store_true",
                   help="also debugging remarks and numerical warnings on stderr", **unset)
    p.add_argument("--max-memory-mb", type=memory_mb, metavar="MB", **unset,
                   help="refuse sizes whose estimated memory exceeds MB MiB, before allocating "
                        "(default: the memory available)")
    p.add_argument("--force", action="store_true", **unset,
                   help="replace an output that is a symbolic link, device or pipe with a regular "
                        "file (an output that is one of the inputs is refused even so)")
    p.add_argument("--no-verify", action="store_true", **unset,
                   help="read input files that carry no checksum (older or hand-edited files); "
                        "their integrity is then NOT checked (a warning says so)")


#: Largest memory size in MiB an option takes: 2^63 bytes, more than any machine has.
MAX_MIB = float(2**43)


def memory_mb(text: str) -> float:
    """argparse type of ``--max-memory-mb`` and ``--memory-budget-mb``: a number of MiB in (0, 2^43]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_MIB):
        raise argparse.ArgumentTypeError(f"({text!r}) must be a finite number of MiB > 0 and at most "
                                         f"{MAX_MIB:.0f} (2^63 bytes)")
    return value


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: ``lopub CMD: error: ...``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def log_level(a: argparse.Namespace) -> int:
    """WARNING with ``--quiet``, DEBUG with ``--verbose``, else INFO."""
    if getattr(a, "quiet", False):
        return logging.WARNING
    return logging.DEBUG if getattr(a, "verbose", False) else logging.INFO


def progress(a: argparse.Namespace) -> ConsoleProgress | None:
    """The command's progress display on stderr; ``None`` with ``--quiet``.

    Made once per command and closed by :func:`run` when the command ends.
    """
    from lopub.progress import ConsoleProgress, logger

    if getattr(a, "quiet", False) or not logger.isEnabledFor(logging.INFO):
        return None
    if getattr(a, "_progress", None) is None:
        a._progress = ConsoleProgress()
    return a._progress


@contextmanager
def warnings_to_log(command: str) -> Iterator[None]:
    """Python warnings become remarks of ``command``: numerical ones (numpy's
    RuntimeWarning) and deprecations only at debug level, the others as warnings."""
    from lopub.progress import logger

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, _DEVELOPER_WARNINGS):
            logger.debug("%s: %s", category.__name__, message, extra={"command": command})
        else:
            logger.warning("%s", message, extra={"command": command})

    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        warnings.simplefilter("default", RuntimeWarning)
        warnings.showwarning = show
        yield


def _arguments(a: argparse.Namespace) -> dict:
    return {k: v for k, v in vars(a).items() if k != "func" and not k.startswith("_")}


def _close_progress(a: argparse.Namespace) -> None:
    shown = getattr(a, "_progress", None)
    if shown is not None:
        shown.close()


def _outputs(a: argparse.Namespace) -> list[tuple[str, str]]:
    """``(path, option)`` of the single files the command will write (``--out`` of ``demo``,
    ``encode``, ``collect`` may be a folder: checked by the command itself)."""
    return [(getattr(a, attr), opt) for attr, opt in OUTPUT_OPTIONS.items()
            if getattr(a, attr, None) and not (a.command in FOLDER_OUT and attr == "out")]


def _locked_outputs(a: argparse.Namespace) -> list[str]:
    """The outputs locked for the whole command: a second ``lopub`` writing one of them fails
    at once.  Not ``--append`` (concurrent appenders are safe) nor the demo's folder."""
    if getattr(a, "append", False) or a.command == "demo":
        return []
    return [getattr(a, attr) for attr in OUTPUT_OPTIONS if getattr(a, attr, None)]


def _write_error(a: argparse.Namespace, exc: OSError) -> OSError:
    """A full disk or a too-large file, naming the outputs being written."""
    names = " / ".join(f"{opt} {path}" for path, opt in _outputs(a)) or "the output"
    return OSError(f"cannot write {names}: {exc.strerror or exc} (disk full, quota or file "
                   f"size limit); the existing output is unchanged")


def _all_outputs(a: argparse.Namespace) -> list[tuple[str, str]]:
    """``(path, option)`` of every output the command names, folders included."""
    return [(getattr(a, attr), opt if not (a.command == "merge-reports" and attr == "out") else "OUT")
            for attr, opt in OUTPUT_OPTIONS.items() if getattr(a, attr, None)]


def check_outputs(a: argparse.Namespace) -> None:
    """Before any work: every output is a writable path, is not (or is not inside) an input, is
    no link, device or pipe unless ``--force``, and is named for what it holds."""
    for path, option in _outputs(a):
        check_output_path(path, option)
    outputs = _all_outputs(a)
    if outputs:
        inputs = input_paths(vars(a), set(OUTPUT_OPTIONS))
        guard_outputs(outputs, inputs, force=getattr(a, "force", False),
                      folders=a.command in FOLDER_OUT)
    for attr, option in OUTPUT_OPTIONS.items():  # an existing folder: a dataset to grow, or refused
        kind = output_kind(a.command, attr, getattr(a, "format", None))
        if kind is not None and getattr(a, attr, None) and not os.path.isdir(getattr(a, attr)):
            check_suffix(getattr(a, attr), option, kind)


def _call(a: argparse.Namespace) -> Exception | None:
    """Run the command; the error to report, if any.  A closed stdout is not one."""
    try:
        check_outputs(a)  # before any work: a bad output path fails at once
        with contextlib.ExitStack() as locks:
            for path in _locked_outputs(a):
                locks.enter_context(output_lock(path))
            a.func(a)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:
        return _write_error(a, exc) if exc.errno in _WRITE_ERRNOS else exc
    except ERRORS as exc:
        return exc
    except RecursionError:  # a nested input the readers' own limits did not catch
        return ValueError("an input file is nested too deeply (JSON arrays or objects inside each "
                          "other beyond the reader's limit); it is not a lopub file")
    except MemoryError as exc:  # an allocation the estimates before it did not foresee
        return MemoryError(f"out of memory ({' '.join(str(exc).split()) or 'MemoryError'}); "
                           f"use smaller sizes")
    finally:
        _close_progress(a)
    return None


def run(a: argparse.Namespace) -> int:
    """Run a parsed command: 0 on success, 2 on a user error (reported on stderr)."""
    from lopub.progress import console_remarks, logger

    cmd = {"command": a.command}
    with console_remarks(log_level(a)), warnings_to_log(a.command):
        logger.debug("arguments %s", _arguments(a), extra=cmd)
        t0 = time.perf_counter()
        limit = getattr(a, "max_memory_mb", None)
        with memory_limit(None if limit is None else int(limit * 2**20)), \
                unverified_reads(getattr(a, "no_verify", False)):
            exc = _call(a)
        if exc is not None:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            logger.error("%s", msg, extra=cmd)
            return EXIT_ERROR
        logger.debug("done in %.3f s", time.perf_counter() - t0, extra=cmd)
    return 0
