"""What the user sees while lopub works: progress display and remarks.

The algorithms only call a progress callback, ``progress(stage, done,
total)`` (see :class:`Progress`), and, in the EM loop, its optional
``em(evaluations, max_iter)`` hook; they never print.  This module is the
one place that turns those calls into a display (:class:`ConsoleProgress`,
built on tqdm) and the one place where remarks for the user -- notes and
warnings, all through the :mod:`logging` logger ``"lopub"`` -- become plain
text on stderr (:func:`console_remarks`, installed by the command line).

Library users who want the remarks configure logging as usual, e.g.
``logging.basicConfig(level=logging.INFO)``.
"""
from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator, Protocol

from tqdm import tqdm

logger = logging.getLogger("lopub")

_WORDS = {logging.DEBUG: "debug", logging.INFO: "note", logging.WARNING: "warning",
          logging.ERROR: "error", logging.CRITICAL: "error"}


class Progress(Protocol):
    """The progress callback the algorithms call: ``progress(stage, done, total)``.

    An object that also has ``em(evaluations, max_iter)`` receives the EM
    map evaluations of the joint being estimated (see
    :func:`lopub.pipeline.steps.make_estimator`).
    """

    def __call__(self, stage: str, done: int, total: int) -> None: ...


def isatty(stream: Any) -> bool:
    """Whether ``stream`` is an interactive terminal (``False`` when it cannot tell)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class _WorkClock:
    """Time left from the *work* done (``ConsoleProgress.work``), not from the items counted.

    Items of unequal cost (clique tables of 16 and of 320 cells; the largest
    first on parallel workers) make an item rate wrong by the cost ratio, and
    the first item carries the start-up (worker processes, shared arrays).
    So the clock starts at the first finished item and the rate is the work
    done since then per second: no estimate until a second item finishes.
    """

    def __init__(self) -> None:
        self.first: tuple[float, float] | None = None  # (time, work done) at the first report
        self.last: tuple[float, float, float] | None = None  # (time, work done, total work)

    def report(self, done: float, total: float) -> None:
        now = _clock()
        if self.first is None and done > 0:
            self.first = (now, done)
        self.last = (now, done, total)

    def left(self) -> float | None:
        if self.first is None or self.last is None:
            return None
        (t0, w0), (t1, w1, total) = self.first, self.last
        if not w1 > w0 or not t1 > t0 or w1 >= total:
            return None
        return (total - w1) * (t1 - t0) / (w1 - w0)


def _clock() -> float:
    return time.perf_counter()


class _WorkRate:
    """tqdm bar whose rate (hence its time left) follows the work clock when there is one."""

    work: _WorkClock | None = None

    @property
    def format_dict(self):  # type: ignore[override]
        d = super().format_dict  # type: ignore[misc]
        if self.work is not None:
            left = self.work.left()
            n, total = d["n"], d["total"]
            ok = left is not None and total and 0 < n < total
            d["rate"] = (total - n) / max(float(left), 1e-9) if ok else None  # type: ignore[arg-type]
        return d


class _Lines(_WorkRate, tqdm):
    """A tqdm bar printed as whole lines, for logs, pipes and CI (no ``\\r``).

    tqdm keeps time, rate and the rate limit (``mininterval``); every
    display is one line ``  stage: done/total``, with the estimated time left
    between the first and the last line and the EM step when there is one.
    """

    monitor_interval = 0  # no monitor thread: lines are printed on updates only
    disable: bool  # set by tqdm's __init__

    @staticmethod
    def status_printer(file: Any):
        def print_line(text: str) -> None:
            if text:  # tqdm clears a bar by printing "": nothing to clear here
                file.write(text + "\n")
                getattr(file, "flush", lambda: None)()

        return print_line

    def __str__(self) -> str:
        d = self.format_dict
        n, total = d["n"], d["total"]
        text = f"  {d['prefix']}: {n}" + ("" if total is None else f"/{total}")
        left = _time_left(n, total, d["rate"], d["elapsed"] if self.work is None else 0.0)
        if left is not None:
            text += f", about {self.format_interval(left)} left"
        return text + (f"  [{d['postfix']}]" if d["postfix"] else "")

    def close(self) -> None:
        """Forget the bar; every line it printed is already complete."""
        if not self.disable:
            self.disable = True
            self._decr_instances(self)


class _Bar(_WorkRate, tqdm):
    monitor_interval = 0


def _time_left(n: float, total: float | None, rate: float | None, elapsed: float) -> float | None:
    if total is None or not 0 < n < total:
        return None
    rate = rate or (n / elapsed if elapsed else None)
    return (total - n) / rate if rate else None


class ConsoleProgress:
    """Progress on a stream (stderr by default), one tqdm bar per stage.

    Call it as ``progress(stage, done, total)``; pass it to
    :func:`lopub.pipeline.steps.make_estimator` (or its :meth:`em` to
    ``Estimator(progress=...)``) to also show the EM map evaluations.  With
    no stage running, EM evaluations are counted on a bar of their own.

    On a terminal each stage is a bar rewritten in place (at most every
    ``interval`` seconds) with the estimated time left.  On anything else (a
    log file, a pipe, CI) plain lines are written: one when a stage starts,
    one when it ends and at most one every ``line_interval`` seconds in
    between, with the estimated time left -- no carriage returns.
    """

    def __init__(self, stream: Any = None, interval: float = 0.25,
                 line_interval: float = 10.0) -> None:
        self.out = stream if stream is not None else sys.stderr
        self.tty = isatty(self.out)
        self.interval = interval if self.tty else line_interval
        self.stage: str | None = None
        self._bar: tqdm | None = None
        self._last_eval = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage or self._bar is None:
            self._open(stage, done, total)
            return
        self._bar.set_postfix_str("", refresh=False)
        if done >= total:
            self._bar.n = done
            self._finish(redraw=True)
        else:
            self._bar.update(done - self._bar.n)

    def work(self, stage: str, done: float, total: float) -> None:
        """The work done of ``stage`` so far (any unit: cells, bytes), called before ``progress``.

        The time left is then estimated from the work done per second since
        the first finished item (:class:`_WorkClock`), not from the count of
        items, whose costs may differ a hundredfold.
        """
        if self._bar is None or stage != self.stage:
            return
        if self._bar.work is None:
            self._bar.work = _WorkClock()
        self._bar.work.report(done, total)

    def em(self, evaluations: int, max_iter: int) -> None:
        """Show the EM map evaluations of the joint being estimated."""
        if self._bar is None:
            if self.stage is not None:  # between stages: the next stage line follows
                return
            self._open_counter(evaluations)
        elif self._bar.total is None:
            step = evaluations - self._last_eval if evaluations > self._last_eval else evaluations
            self._bar.update(step)
        else:
            self._bar.set_postfix_str(f"EM step {evaluations}", refresh=False)
            self._bar.update(0)
        self._last_eval = evaluations

    def close(self) -> None:
        """End the open bar, if any (on a terminal it is left on screen).

        Plain lines: the EM evaluation count gets its final line; an
        unfinished stage does not (its last line stands).
        """
        if self._bar is None:
            return
        if not self.tty and self._bar.total is None and self._bar.n != self._bar.last_print_n:
            self._bar.refresh()
        self._bar.close()
        self._bar = None

    def __enter__(self) -> "ConsoleProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _new(self, desc: str, total: int | None, initial: int, fmt: str) -> tqdm:
        kind = _Bar if self.tty else _Lines
        return kind(total=total, initial=initial, desc=desc, file=self.out, leave=True,
                    mininterval=self.interval, miniters=0, dynamic_ncols=self.tty,
                    bar_format=fmt if self.tty else None)

    def _open(self, stage: str, done: int, total: int) -> None:
        self.close()
        self.stage = stage
        self._bar = self._new(stage, total, done, "  {l_bar}{bar}{r_bar}")
        if done >= total:
            self._finish(redraw=False)

    def _open_counter(self, evaluations: int) -> None:
        self._bar = self._new("EM evaluations", None, evaluations,
                              "  {desc}: {n_fmt} [{elapsed}, {rate_fmt}{postfix}]")

    def _finish(self, *, redraw: bool) -> None:
        bar, self._bar = self._bar, None
        if bar is None:
            return
        if redraw and not self.tty:
            bar.refresh()
        bar.close()  # on a terminal: the final state stays on its own line


def note(message: str) -> None:
    """A remark for the user (``note: ...`` on the command line; hidden by ``--quiet``)."""
    logger.info(message)


def warning(message: str, *, command: str | None = None) -> None:
    """A warning for the user; ``command`` prefixes it with ``lopub COMMAND:``."""
    logger.warning(message, extra={"command": command})


class RemarkFormatter(logging.Formatter):
    """Plain text: ``[lopub COMMAND: ]note|warning|error|debug: message``."""

    def format(self, record: logging.LogRecord) -> str:
        word = _WORDS.get(record.levelno, record.levelname.lower())
        command = getattr(record, "command", None)
        head = f"lopub {command}: " if command else ""
        return f"{head}{word}: {record.getMessage()}"


class RemarkHandler(logging.Handler):
    """Write remarks to the *current* ``sys.stderr``, around any progress bar on it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text, stream = self.format(record), sys.stderr
            if isatty(stream):
                tqdm.write(text, file=stream)
            else:
                stream.write(text + "\n")
                stream.flush()
        except Exception:  # noqa: BLE001 -- logging's own convention
            self.handleError(record)


@contextmanager
def console_remarks(level: int = logging.INFO) -> Iterator[logging.Handler]:
    """Print the ``"lopub"`` logger's records of ``level`` and above to stderr, as plain text."""
    handler = RemarkHandler()
    handler.setFormatter(RemarkFormatter())
    old = logger.level
    logger.setLevel(level)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
