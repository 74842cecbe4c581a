"""Helpers shared by every ``lopub`` subcommand.

Output (:func:`emit`), reading input (:func:`read_csv`, :func:`split_list`),
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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, NoReturn, Sequence

from lopub.errors import BudgetError
from lopub.io import output_lock, unverified_reads
from lopub.limits import memory_limit
from lopub.cli._outputs import check_output_path, guard_outputs, input_paths

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from lopub.progress import ConsoleProgress

# numpy, tqdm (lopub._util, lopub.progress) and pandas are imported where used: `lopub --help`
# and `lopub --version` import this module and must start fast (tests/test_startup.py)

__all__ = ["add_missing", "add_na_values", "add_verbosity", "default", "emit", "progress", "read_csv", "run", "seed_arg",
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


def read_csv(path: str, na_values: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a data file with a header row, keeping every label as written.

    CSV (any suffix but ``.parquet``/``.pq``): every column is read as text,
    so ``None``, ``NA``, ``null``, ``nan``, ``TRUE``, ``01`` stay the labels
    they spell.  Spaces around a value are not part of it (``a, b`` reads as
    ``a`` and ``b``); quote a value to keep commas or quotes in it.  Missing
    values are only empty cells, plus the cells equal to one of
    ``na_values`` (``--na-values``).  Parquet: the file's own nulls are
    missing, plus string cells in ``na_values``; labels are kept as stored
    (spaces and the empty label included).
    Clear errors when the file is missing or empty.
    """
    import pandas as pd  # here, not at the top: `lopub --help` must not load pandas

    na = {str(v).strip() for v in (na_values or ())}
    parquet = Path(path).suffix.lower() in (".parquet", ".pq")
    try:
        if parquet:
            return _text_missing(_read_parquet(path), na, strip=False)
        df = _read_csv_rows(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{'Parquet' if parquet else 'CSV'} file {path!r} does not exist") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"data file {path!r} is a folder") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"CSV file {path!r} is empty") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"CSV file {path!r} is not UTF-8 text (it has the byte "
                         f"{exc.object[exc.start]:#04x}); save it as UTF-8") from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"CSV file {path!r} cannot be read: {' '.join(str(exc).split())}") from None
    return _text_missing(df, na | {""}, strip=True)


#: most columns a data file may have: each is an attribute of the domain, and a domain is
#: planned, encoded and modelled attribute by attribute (a 10 MB header line is refused at once)
MAX_COLUMNS = 10_000


def _check_header_width(path: str) -> None:
    """Refuse a CSV whose header row has more than :data:`MAX_COLUMNS` columns, reading only
    that row (at most 64 MiB of it)."""
    import csv

    with open(path, encoding="utf-8", newline="") as fh:
        line = fh.readline(64 * 2**20)
    try:
        width = len(next(csv.reader([line]), []))
    except csv.Error as exc:  # e.g. a header cell over the csv module's 131,072 characters
        raise ValueError(f"CSV file {path!r} cannot be read: its header row: {exc}") from None
    if width > MAX_COLUMNS:
        raise ValueError(f"CSV file {path!r} has {width:,} columns in its header row; lopub handles "
                         f"at most {MAX_COLUMNS:,} attributes (select the columns you need first)")


def _read_csv_rows(path: str) -> pd.DataFrame:
    """The CSV's header and rows, as text; a row longer than the header or a repeated
    column name is an error (pandas would shift the columns or rename ``a`` to ``a.1``)."""
    import pandas as pd

    _check_header_width(path)
    raw = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, header=None,
                      skipinitialspace=True, encoding="utf-8")
    header = [str(c).strip() for c in raw.iloc[0]]
    seen = set()
    for c in header:  # loop over columns
        if c in seen:
            raise ValueError(f"CSV file {path!r} has the column {c!r} twice in its header row; "
                             f"column names must be unique")
        seen.add(c)
    df = raw.iloc[1:].reset_index(drop=True)
    df.columns = header
    return df


def _read_parquet(path: str) -> pd.DataFrame:
    """A Parquet data file; categorical columns become their string labels."""
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except (ImportError, FileNotFoundError):
        raise
    except Exception as exc:  # pyarrow's own errors: not a Parquet file, damaged
        raise ValueError(f"Parquet file {path!r} cannot be read: {exc}") from None
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


def _text_missing(df: pd.DataFrame, na: set[str], *, strip: bool) -> pd.DataFrame:
    """Text columns: strip surrounding spaces (CSV) and mark the ``na`` cells missing."""
    import pandas as pd

    for c in df.columns:
        col = df[c]
        if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
            continue
        text = col.str.strip() if strip else col
        df[c] = text.mask(text.isin(na))
    return df


def dataset_from_file(path: str, domain: Any, na_values: Sequence[str] | None = None,
                      missing: str = "category") -> Any:
    """The records of a data file coded against ``domain``; errors name the file.

    ``missing``: ``"category"`` codes a missing value as its attribute's
    missing category (an error when the domain has none), ``"drop"`` drops
    the rows holding a missing value in an attribute without one (with a
    warning giving the count), ``"refuse"`` raises on any missing value.
    """
    from lopub.data.dataset import Dataset

    df = read_csv(path, na_values)
    try:
        df = _missing_rows(df, domain, missing, path)
        return Dataset.from_pandas(df, domain)
    except ValueError as exc:  # DomainError: missing columns, unknown categories, no rows
        raise type(exc)(f"data file {path!r}: {exc}") from None


#: what reads each kind of ``.npz`` reports file
NPZ_READERS = {"lopub-marginal-reports": ("marginal-sampling reports (lopub collect --protocol "
                                          "auto|marginals|one-attribute)", "lopub fit"),
               "lopub-oracle-reports": ("one-way oracle reports (lopub collect --protocol "
                                        "grr|oue|olh|...)", "lopub estimate-freq")}


def refuse_npz(path: str, command: str) -> None:
    """A ``.npz`` reports file (zip magic) given to a command reading Bloom reports: ValueError
    naming the file's kind and the command that reads it."""
    from lopub.formats._io import npz_format

    if not os.path.isfile(path):
        return
    with open(path, "rb") as fh:
        if fh.read(2) != b"PK":
            return
    kind = npz_format(path)
    what, reader = NPZ_READERS.get(kind or "", (f"a zip archive (format {kind!r})", None))
    hint = f"; read it with {reader}" if reader else ""
    raise ValueError(f"reports file {path!r} holds {what}, not the Bloom reports (Parquet file or "
                     f"dataset folder) lopub {command} reads{hint}")


def _missing_rows(df: pd.DataFrame, domain: Any, missing: str, path: str) -> pd.DataFrame:
    """Apply ``--missing`` to the rows of ``df`` (see :func:`dataset_from_file`)."""
    import pandas as pd

    from lopub.errors import DomainError
    from lopub.progress import warning

    cols = [a.name for a in domain.attributes if a.name in df.columns]
    if missing == "category" or not cols:
        return df
    if missing == "refuse":
        bad = df[cols].isna().sum()
        if bad.any():
            raise DomainError(f"--missing refuse: missing values in {bad[bad > 0].to_dict()}")
        return df
    no_cat = [a.name for a in domain.attributes if a.name in df.columns and a.missing is None]
    drop = df[no_cat].isna().any(axis=1) if no_cat else pd.Series(False, index=df.index)
    if drop.any():
        warning(f"--missing drop: {int(drop.sum())} of {len(df)} rows of {path!r} dropped for a "
                f"missing value in {sorted(c for c in no_cat if df[c].isna().any())}")
    return df[~drop].reset_index(drop=True)


def add_missing(p: argparse.ArgumentParser) -> None:
    """``--missing category|drop|refuse`` of the commands that code a data file."""
    p.add_argument("--missing", choices=("category", "drop", "refuse"), default="category",
                   help="missing cells: their attribute's missing category (default; the schema must "
                        "have one: lopub schema keeps them so), drop the rows holding one in an "
                        "attribute without that category, or refuse any")


def load_bloom_reports(path: str, command: str = "estimate") -> Any:
    """A Bloom reports file to estimate from: at least one report (else a clear error now,
    not after the estimator's iterations)."""
    from lopub.reports.bloom import Reports

    refuse_npz(path, command)
    reports = Reports.load(path)
    if reports.n == 0:
        raise ValueError(f"reports file {path!r} holds no reports (n = 0); nothing to estimate from")
    return reports


def add_na_values(p: argparse.ArgumentParser) -> None:
    """``--na-values X,Y``: the tokens read as missing values besides empty cells."""
    p.add_argument("--na-values", type=split_list, default=[], metavar="X,Y",
                   help="comma-separated cell values read as missing, besides empty cells "
                        "(default: none: \"NA\", \"None\", \"null\", \"nan\" are labels)")


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
    """Before any work: every output is a writable path, none is (or is inside) an input, and
    none is a link, device or pipe unless ``--force``."""
    for path, option in _outputs(a):
        check_output_path(path, option)
    outputs = _all_outputs(a)
    if outputs:
        inputs = input_paths(vars(a), set(OUTPUT_OPTIONS))
        guard_outputs(outputs, inputs, force=getattr(a, "force", False),
                      folders=a.command in FOLDER_OUT)


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
