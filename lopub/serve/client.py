"""Python device client of ``lopub serve``, and wire reports for simulated devices and relays.

:class:`DeviceClient` is what a Python program on a person's device runs:
it reads the public description, enrols, randomizes the answers with the
device protocol of :mod:`lopub.client.device` (the algorithm ``clients/js/lopub.js``
runs, with the oracles' own public ``p``, ``q``, ``g``), every random word from
:func:`os.urandom` (a cryptographic source, never a seeded generator), and sends
only the randomized report.

:func:`wire_reports` randomizes many simulated devices at once (vectorized,
``rng`` for reproducible simulation) into the JSON wire format, and
:func:`post_batch` sends them through the relay endpoint.
"""
from __future__ import annotations

import datetime
import email.utils
import http.client
import json
import math
import time
import urllib.error
import urllib.request
from typing import Any, Mapping

import numpy as np

from lopub.client import device
from lopub.serve.protocol import Collection


#: HTTP statuses after which a request is sent again: 429 (rate limit), 503 (store unavailable;
#: nothing was stored, so the same token may be sent again)
RETRY_STATUS = (429, 503)
MAX_WAIT = 30.0  # seconds: the longest Retry-After honoured before giving up
#: what a request that may or may not have reached the service raises (no HTTP status came back)
TRANSPORT_ERRORS = (urllib.error.URLError, http.client.HTTPException, OSError)


class ServiceError(ValueError):
    """An HTTP error status from the service; ``status`` is the code."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _request(url: str, body: Any = None, headers: Mapping[str, str] | None = None,
             timeout: float = 30.0, retries: int = 0) -> Any:
    """JSON ``GET`` (``body is None``) or ``POST``; up to ``retries`` more attempts after HTTP 429
    or 503, each after the server's ``Retry-After`` (seconds or an HTTP date; at most
    :data:`MAX_WAIT`), else 1, 2, 4 ... seconds.  Other HTTP errors raise ``ValueError`` at once."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    for attempt in range(retries + 1):
        req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"content-type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")
            wait = _retry_after(exc.headers.get("retry-after") if exc.headers else None, attempt)
            if exc.code not in RETRY_STATUS or attempt == retries or wait is None:
                tried = f" (after {attempt + 1} attempts)" if attempt else ""
                raise ServiceError(f"{url}: HTTP {exc.code}{tried}: {detail}", exc.code) from None
        time.sleep(wait)
    raise AssertionError("unreachable")


def _retry_after(value: str | None, attempt: int) -> float | None:
    """Seconds to wait before the next attempt; ``None`` if the server asks for more than
    :data:`MAX_WAIT`."""
    if value is None:
        return float(min(2 ** attempt, MAX_WAIT))
    value = value.strip()
    try:
        wait = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return float(min(2 ** attempt, MAX_WAIT))
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        wait = (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    if math.isnan(wait) or wait > MAX_WAIT:  # too long: give up now, say so
        return None
    return max(0.0, wait)


def to_wire(oracle: str, report: np.ndarray) -> list:
    """Oracle-format reports (one subset's) -> JSON wire values."""
    if oracle == "grr":
        return np.asarray(report, dtype=np.int64).tolist()
    if oracle == "olh":
        return np.asarray(report, dtype=np.int64).tolist()
    packed = np.packbits(np.asarray(report, dtype=bool), axis=1)  # oue
    return [row.tobytes().hex() for row in packed]


class DeviceClient:
    """One device reporting to collection ``name`` of the service at ``base_url``."""

    def __init__(self, base_url: str, name: str, *, retries: int = 3) -> None:
        """``retries``: attempts after HTTP 429 or 503, honouring ``Retry-After`` (see
        :func:`_request`; 0 for none)."""
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise ValueError(f"retries ({retries!r}) must be an integer in [0, 10]")
        self.retries = retries
        self.api = f"{base_url.rstrip('/')}/api/c/{name}"
        desc = _request(self.api, retries=retries)
        from lopub import CollectionSpec
        from lopub.collect import MarginalPlan

        params = (MarginalPlan.from_dict(desc["plan"]) if desc["kind"] == "marginal"
                  else CollectionSpec.from_dict(desc["spec"]))
        self.collection = Collection(name, params)
        from lopub.collect import privacy_statement

        #: the privacy statement of the randomization this client runs: made here from the plan's or
        #: spec's own epsilon (the oracles' p, q, g and the flip probability are derived from it here
        #: too), never the service's text, which a collector could word as it likes
        self.privacy = privacy_statement(self.collection.epsilon)[0]
        #: ``(answers, request body)`` of a report whose sending failed without an answer from the
        #: service: the next :meth:`submit` of the same answers sends this body again (:meth:`submit`)
        self.pending: tuple[dict[str, str], dict] | None = None
        #: ``(answers, error)`` of each report the service received and refused (an HTTP error other than
        #: 429 / 503): the collector has seen its randomization, so :meth:`submit` does not randomize
        #: the same answers again (:meth:`submit`)
        self.refused: list[tuple[dict[str, str], ServiceError]] = []

    def make_report(self, enrolment: Mapping[str, Any], answers: Mapping[str, str]) -> dict:
        """The request body for ``answers`` ({attribute: label}), randomized by
        :func:`~lopub.client.device.marginal_report` / :func:`~lopub.client.device.bloom_report`
        with ``WordSource(None)``: every random word from :func:`os.urandom`, as the JS client
        draws from ``crypto.getRandomValues``; no NumPy generator is made.

        Raises ``TypeError`` / ``ValueError`` (see :func:`check_answers`) for answers that
        do not fit the collection's questions, ``ValueError`` for an enrolment made under
        another plan than the one this client read (the service changed it since) or naming
        a subset the plan does not have.
        """
        c = self.collection
        answers = check_answers(c.params.domain, answers)
        enrolled = enrolment.get("plan_id")
        if enrolled is not None and enrolled != c.params_id:  # None: a service that does not say
            raise ValueError(f"enrolment plan_id ({enrolled!r}) must be the plan this client read "
                             f"({c.params_id!r}): collection {c.name!r} changed its plan (another "
                             "epsilon or subsets); make a new DeviceClient to read it")
        src = device.WordSource(None)  # OS words (os.urandom), one source for the whole report
        if c.kind == "bloom":
            return {"token": enrolment["token"], "report": device.bloom_report(c.params, answers, src)}
        i, g = enrolment.get("subset"), c.params.n_subsets
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < g:
            raise ValueError(f"enrolment subset ({i!r}) must be an integer in [0, {g - 1}]: the subsets "
                             f"of the plan this client read ({c.params_id!r})")
        i = int(i)
        return {"token": enrolment["token"], "subset": i,
                "report": device.marginal_report(c.params, i, answers, src)}

    def submit(self, answers: Mapping[str, str], user_id: str | None = None) -> dict:
        """Check the answers, enrol, randomize here, send; the service's answer.

        Every answer is checked against the questions before enrolling (no token is spent
        on answers that cannot be sent), also those outside the subset this device reports.

        One randomization per report: a report whose request failed without an HTTP answer
        (connection lost, timeout: the service may have stored it) is sent again as it was,
        same token and same randomized report, up to ``retries`` more times; a 409 (token
        used) then means an earlier attempt was stored, and the answer is ``{"stored": 1}``.
        If every attempt fails, the body is kept (:attr:`pending`) and the next ``submit`` of
        the same answers sends it again instead of enrolling and randomizing anew: a second
        randomization of the same answers would cost the person epsilon a second time.

        A report the service answered with a refusal (an HTTP error other than 429 / 503, e.g.
        422) was not stored, but the collector received its randomization; randomizing the same
        answers again would give the collector a second, independent randomization (epsilon
        spent twice), and a collector that refuses every report could so collect as many as the
        device sends.  So the next ``submit`` of those answers raises :class:`ServiceError`
        without enrolling or sending (:attr:`refused`); a new :class:`DeviceClient` starts afresh
        when the person accepts a second report.
        """
        answers = check_answers(self.collection.params.domain, answers)
        first = next((err for given, err in self.refused if given == answers), None)
        if first is not None:
            raise ServiceError(f"not sent: collection {self.collection.name!r} refused a randomized report of "
                               f"these answers before ({first}); it has seen that report, so a new "
                               f"randomization would cost this person epsilon {self.collection.epsilon:g} a "
                               "second time (make a new DeviceClient if they accept that)", first.status)
        pending = self.pending
        resend = pending is not None and pending[0] == answers
        if pending is not None and resend:
            body = pending[1]
        else:
            enrolment = _request(f"{self.api}/enrol", {} if user_id is None else {"user_id": user_id},
                                 retries=self.retries)
            body = self.make_report(enrolment, answers)
        self.pending = (answers, body)
        try:
            out = send_report(f"{self.api}/report", body, self.retries, sent_before=resend)
        except ServiceError as exc:
            if exc.status not in RETRY_STATUS:  # refused, nothing stored, but the collector saw it
                self.pending = None
                self.refused.append((answers, exc))
            raise
        self.pending = None
        return out


def send_report(url: str, body: dict, retries: int = 3, *, sent_before: bool = False) -> dict:
    """POST one report ``body``; after an attempt that got no HTTP answer (connection lost,
    timeout), the same body again, up to ``retries`` more times (1, 2, 4 ... s apart).  A 409
    (token already used) after such an attempt, or for a body ``sent_before`` without an answer,
    means that attempt was stored: ``{"stored": 1}``.

    Raises :class:`ServiceError` for an HTTP error status, ``ConnectionError`` naming the URL
    when no attempt got an answer.
    """
    lost: BaseException | None = None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(float(min(2 ** (attempt - 1), MAX_WAIT)))
        try:
            return _request(url, body, retries=retries)
        except ServiceError as exc:
            if (lost is not None or sent_before) and exc.status == 409:  # an earlier attempt was stored
                return {"stored": 1}
            raise
        except TRANSPORT_ERRORS as exc:
            lost = exc
    raise ConnectionError(f"{url}: no answer after {retries + 1} attempts ({lost}); the report may or may "
                          "not be stored: send the same body again (DeviceClient.submit does), never a "
                          "new randomization of the same answers") from None


def check_answers(domain: Any, answers: Any) -> dict[str, str]:
    """``answers`` ({attribute: label}, one per question of ``domain``) checked; labels as strings.

    A missing value (``None``, NaN, ``pandas.NA``) stands for the attribute's missing-value
    category where it has one (as :class:`lopub.client.Client` and ``Dataset.from_pandas`` read it).

    Raises ``TypeError`` if ``answers`` is not a mapping, ``ValueError`` naming the
    attribute, the value and the allowed labels for a value that is not one of them (or a
    missing value where the attribute has no missing-value category), the missing questions,
    or an attribute that is not a question.
    """
    if not isinstance(answers, Mapping):
        raise TypeError(f"answers ({type(answers).__name__}) must be a mapping {{attribute: label}}")
    answers = dict(answers)
    for a in domain.attrs:  # a missing value: the attribute's missing-value label, where it has one
        if a in answers and _is_missing(answers[a]) and domain[a].missing is not None:
            answers[a] = domain[a].missing
    out = {}
    for a in domain.attrs:  # the values given first: a typo in a value is the likelier mistake
        labels = [str(x) for x in domain.labels(a)]
        if a in answers and str(answers[a]) not in labels:
            if _is_missing(answers[a]):
                raise ValueError(f"answer for {a!r} is missing ({answers[a]!r}) but {a!r} has no missing-value "
                                 f"category; it must be one of {labels}")
            raise ValueError(f"answer for {a!r} ({answers[a]!r}) must be one of {labels}")
    unknown = [a for a in answers if a not in domain.attrs]
    if unknown:
        raise ValueError(f"answers has {unknown}, which are not questions; the questions are "
                         f"{list(domain.attrs)}")
    missing = [a for a in domain.attrs if a not in answers]
    if missing:
        raise ValueError(f"answers is missing {missing}; every question needs an answer "
                         f"(questions: {list(domain.attrs)})")
    for a in domain.attrs:
        value = answers[a]
        out[a] = str(value)
    return out


def _is_missing(value: Any) -> bool:
    """None, a float NaN or ``pandas.NA`` / ``NaT``."""
    if value is None:
        return True
    try:
        import pandas as pd

        return bool(pd.isna(value)) if pd.api.types.is_scalar(value) else False
    except (TypeError, ValueError):
        return False


def wire_reports(c: Collection, codes: np.ndarray, subsets: np.ndarray, *,
                 rng: np.random.Generator | int | None = None) -> list:
    """Wire reports of many simulated devices (``codes``: ``(n, d)``; ``subsets``: ``(n,)``).

    Vectorized: one oracle call per subset.  Returns the ``report`` values
    in the order of the rows.
    """
    rng = np.random.default_rng(rng)
    codes = np.asarray(codes)
    out: list = [None] * codes.shape[0]
    if c.kind == "bloom":
        from lopub import Dataset
        from lopub.client import encode

        packed = encode(Dataset(codes, c.params.domain), c.params, rng=rng).packed
        return [row.tobytes().hex() for row in packed]

    plan = c.params
    for i in range(plan.n_subsets):  # one vectorized oracle call per subset
        rows = np.flatnonzero(subsets == i)
        cols = plan.domain.indices(plan.subsets[i])
        values = np.ravel_multi_index(tuple(codes[rows, k] for k in cols),
                                      [plan.domain.sizes[k] for k in cols])
        for r, w in zip(rows.tolist(), to_wire(plan.oracles[i], plan.oracle(i).perturb(values, rng=rng))):
            out[r] = w
    return out


def enrol_many(base_url: str, name: str, n: int, retries: int = 3) -> list[dict]:
    """``n`` enrolments (simulation; a real device enrols itself); retries as :class:`DeviceClient`."""
    return [_request(f"{base_url.rstrip('/')}/api/c/{name}/enrol", {}, retries=retries) for _ in range(n)]


def post_batch(base_url: str, name: str, items: list, relay_key: str, timeout: float = 120.0,
               retries: int = 3) -> dict:
    """Send ``items`` (``{token, subset?, report}``) through the relay endpoint; after HTTP 429
    or 503 (nothing stored) up to ``retries`` more attempts, honouring ``Retry-After``."""
    return _request(f"{base_url.rstrip('/')}/api/c/{name}/batch", {"reports": items},
                    {"authorization": f"Bearer {relay_key}"}, timeout, retries)
