"""A fit/sample object for Python users: :class:`Synthesizer`.

``Synthesizer(epsilon=4).fit(df).sample(1000)`` runs the whole flow:
:meth:`Synthesizer.fit` simulates the clients of a data owner who holds the
records (for evaluation and teaching: domain inference when none is given,
collection with :func:`lopub.collect.collect` at the per-record epsilon,
then :func:`lopub.pipeline.steps.fit`); :meth:`Synthesizer.fit_reports` fits the
reports of a real deployment (Bloom :class:`~lopub.reports.bloom.Reports` or
marginal-sampling :class:`~lopub.collect.MarginalReports`).  Parameters follow
the scikit-learn convention (``get_params``/``set_params``, fitted state in
attributes ending in ``_``) and their defaults are the library functions'.

File format of :meth:`Synthesizer.save`: :mod:`lopub.pipeline.synth_files`.
"""
from __future__ import annotations

import inspect
import os
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

import numpy as np
import pandas as pd

from lopub._util import resolve_rng
from lopub.collect import MarginalReports, collect, privacy_statement
from lopub.data.dataset import Dataset
from lopub.data.schema import infer_domain
from lopub.data.domain import Domain
from lopub.errors import DomainError
from lopub.data.marginal import Marginal
from lopub.model.graphical import Model
from lopub.model.verdict import GOOD, ReleaseQualityWarning
from lopub.pipeline.options import FitOptions
from lopub.pipeline.steps import fit as fit_pipeline
from lopub.publish.synthesize import synthesize
from lopub.pipeline import synth_dtypes as _dtypes, synth_files as _files
from lopub.pipeline.synth_reports import (PROTOCOLS, CollectionReport, NotFittedError, SynthesizerReport, protocol_of,
                                          reports_budget)

if TYPE_CHECKING:  # pragma: no cover
    from lopub.dependency.graph import DependencyGraph
    from lopub.reports.bloom import Reports
    from lopub.reports.dataset import ReportsDataset

    AnyReports = Union[Reports, ReportsDataset, MarginalReports]

_FIT_DEFAULTS = FitOptions()


def _default(func: Callable, name: str) -> Any:
    """The default of parameter ``name`` of the library function ``func`` (never re-typed)."""
    return inspect.signature(func).parameters[name].default


class Synthesizer:
    """Fit a private model of categorical data and sample synthetic records from it.

    Parameters
    ----------
    epsilon : float
        Per-record privacy budget of the collection (finite, > 0): each
        user's report is epsilon-LDP for the whole record.  Used by
        :meth:`fit`; :meth:`fit_reports` records the reports' own budget.
    protocol : {"auto", "marginals", "one-attribute", "bloom"}
        Collection protocol of :meth:`fit`; "auto" is the planner's choice
        (:func:`lopub.collect.plan`).
    method : str
        Estimator of the Bloom reports (:func:`lopub.pipeline.steps.fit`).
    release : {"pgm", "cliques"}
    structure : {"auto", "phi", "tree"}
    domain : Domain, optional
        The public domain; inferred from the data by :meth:`fit` when None
        (acceptable in a simulation; in a deployment the domain must be
        public): :func:`lopub.infer_domain`, except that a pandas categorical
        column keeps its declared categories in their order.
    bins : int, optional
        Quantile bins of numeric columns when the domain is inferred
        (default: from the number of rows, :func:`lopub.data.schema.auto_bins`).
        Missing values are kept as a category of their own.
    clique_budget : int, optional
        Largest clique of the model in cells (default: ``fit``'s for the
        release, :func:`lopub.pipeline.steps.default_clique_budget`).
    rng : Generator, int or None
        Randomness of the simulated clients (None: OS entropy).
    random_state : Generator, int or None
        scikit-learn's name for ``rng``: give either (an int seed, a
        ``numpy.random.Generator`` or None).  Both given with different
        values raise ``ValueError``; the same seed twice is accepted.  Both
        are constructor parameters, so ``get_params``, ``set_params`` and
        ``sklearn.base.clone`` keep whichever was given.  :meth:`sample`
        takes its own ``seed``.

    Attributes
    ----------
    model_ : Model
    domain_ : Domain
    fit_report_ : SynthesizerReport
    dtypes_ : dict
        The input's pandas categorical and duration columns, nullable integer columns without a
        value and integer column labels, ``{name: {"type", "ordered", "label"}}`` (:mod:`~lopub.pipeline.synth_dtypes`), which
        :meth:`sample` gives back as such.
    verdict_ : Verdict or None
        Good / usable with caveats / not usable, with the reasons
        (:mod:`lopub.model.checks`); :meth:`fit` and :meth:`fit_reports`
        emit a :class:`~lopub.model.verdict.ReleaseQualityWarning` (a
        ``UserWarning``) when it is not "good".  None for a model file
        written before verdicts.

    Examples
    --------
    >>> from lopub.datasets import embedded
    >>> syn = Synthesizer(epsilon=4, rng=0).fit(embedded(5000, rng=0).to_pandas())
    >>> syn.sample(10, seed=1).shape
    (10, 13)
    >>> set(syn.sample(5, seed=1, conditions={"sex": "Female"})["sex"])
    {'Female'}
    """

    def __init__(self, *, epsilon: float, protocol: str = _default(collect, "protocol"),
                 method: str = _FIT_DEFAULTS.method,
                 release: str = _FIT_DEFAULTS.release,
                 structure: str = _FIT_DEFAULTS.structure,
                 domain: Domain | None = None, bins: int | None = _default(infer_domain, "bins"),
                 clique_budget: int | None = _FIT_DEFAULTS.clique_budget,
                 rng: np.random.Generator | int | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.epsilon = epsilon
        self.protocol = protocol
        self.method = method
        self.release = release
        self.structure = structure
        self.domain = domain
        self.bins = bins
        self.clique_budget = clique_budget
        self.rng = rng
        self.random_state = random_state
        self._check_params()

    # parameters (scikit-learn convention) -------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters as a dict (``deep`` is accepted for scikit-learn)."""
        return {p: getattr(self, p) for p in self._param_names()}

    def set_params(self, **params: Any) -> "Synthesizer":
        """Set constructor parameters by name and return ``self`` (the fitted state is kept)."""
        names = self._param_names()
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown}; expected some of {names}")
        old = self.get_params()
        for k, v in params.items():
            setattr(self, k, v)
        try:
            self._check_params()
        except (TypeError, ValueError):
            for k, v in old.items():
                setattr(self, k, v)
            raise
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={_short(v)}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_params(self) -> None:
        from lopub._util import check_int, check_positive, resolve_rng

        check_positive("epsilon", self.epsilon)
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol ({self.protocol!r}) must be one of {list(PROTOCOLS)}")
        self.fit_options()  # method, release, structure, clique_budget: checked by FitOptions
        if self.domain is not None and not isinstance(self.domain, Domain):
            raise TypeError(f"domain ({type(self.domain).__name__}) must be a lopub Domain or None")
        if self.bins is not None:
            check_int("bins", self.bins, 2)
        for name in ("rng", "random_state"):
            value = getattr(self, name)
            if not isinstance(value, np.random.Generator):
                resolve_rng(value, name)  # type and sign of a seed
        if not _same_seed(self.rng, self.random_state):
            raise ValueError(f"rng ({_short(self.rng)}) and random_state ({_short(self.random_state)}) "
                             f"differ; they are two names of one seed (random_state is scikit-learn's): "
                             f"give one of them")

    def _seed(self) -> np.random.Generator | int | None:
        """The seed of the simulated clients: ``random_state`` or ``rng``, whichever is given."""
        return self.rng if self.random_state is None else self.random_state

    def fit_options(self) -> FitOptions:
        """The :class:`~lopub.pipeline.options.FitOptions` of this synthesizer's model fit."""
        return FitOptions(method=self.method, release=self.release, structure=self.structure,
                          clique_budget=self.clique_budget)

    # fitting -----------------------------------------------------------------
    def fit(self, data: pd.DataFrame | Dataset) -> "Synthesizer":
        """Simulate every record's client at ``epsilon``, then fit the model.

        Parameters
        ----------
        data : DataFrame or Dataset
            The records (a DataFrame's columns are the attributes, named by
            ``str(column)``, and :meth:`sample` gives integer labels back; with a ``domain``, extra
            columns are ignored, with a warning).

        Returns
        -------
        Synthesizer
            ``self``, fitted.

        Warns
        -----
        UserWarning
            ``epsilon`` above 10 per record is a weak guarantee (the message
            says how weak); ``fit_report_.collection.warning`` holds it too.
        ReleaseQualityWarning
            The release's verdict (``verdict_``) is "not usable" or "usable
            with caveats"; the message gives the reasons.
        RecordHeaderWarning
            Without a ``domain``: the column names look like a record (a CSV read without its names).
        UserWarning
            Without a ``domain``: a column left out (identifier-like) or constant (:func:`lopub.infer_domain`);
            with one: the data's columns that it does not name.
        """
        self._check_params()
        t0 = time.perf_counter()
        dataset, dtypes = self._dataset(data)
        t1 = time.perf_counter()
        reports, plan = collect(dataset, self.epsilon, protocol=self.protocol, rng=self._seed())
        t2 = time.perf_counter()
        ran = plan.recommended if self.protocol == "auto" else self.protocol
        info = CollectionReport(ran, plan.epsilon, dataset.n, True, plan.recommended,
                                plan.option(ran).predicted_tvd, plan.privacy, plan.warning)
        return self._fit(reports, info, {"domain": t1 - t0, "collect": t2 - t1}, t0, dtypes)

    def fit_reports(self, reports: "AnyReports") -> "Synthesizer":
        """Fit the model to collected reports (a real deployment).

        Parameters
        ----------
        reports : Reports, ReportsDataset or MarginalReports
            Bloom reports or marginal-sampling reports; their own budget is
            recorded (``epsilon`` is not used).  A ``domain`` parameter, when
            set, must equal the reports' domain.

        Warns
        -----
        UserWarning, ReleaseQualityWarning
            As :meth:`fit`, with the reports' own budget.
        """
        self._check_params()
        t0 = time.perf_counter()
        protocol = protocol_of(reports)
        eps, domain = reports_budget(reports)
        if self.domain is not None and self.domain != domain:
            raise DomainError(f"domain (attributes {list(self.domain.attrs)}) differs from the reports' "
                              f"domain (attributes {list(domain.attrs)})")
        text, warning = privacy_statement(eps)
        users = int(getattr(reports, "users", reports.n))  # with a screen's users whose reports are not here
        info = CollectionReport(protocol, eps, users, False, None, None, text, warning)
        return self._fit(reports, info, {}, t0)

    def _fit(self, reports: "AnyReports", info: CollectionReport, seconds: dict[str, float],
             t0: float, dtypes: dict | None = None) -> "Synthesizer":
        if info.warning:  # a weak budget (above 10 per record), as lopub collect and plan say too
            warnings.warn(info.warning.removeprefix("WARNING: "), UserWarning, stacklevel=3)
        t1 = time.perf_counter()
        with warnings.catch_warnings():  # the verdict is warned below, once, with the synthesizer's stack level
            warnings.simplefilter("ignore", ReleaseQualityWarning)
            result = fit_pipeline(reports, self.fit_options())
        seconds.update(fit=time.perf_counter() - t1, total=time.perf_counter() - t0)
        self.model_ = result.model
        self.domain_ = result.model.domain
        self.dtypes_ = dtypes or {}
        rounded = {k: round(v, 3) for k, v in seconds.items()}
        self.fit_report_ = SynthesizerReport(info, result.report, rounded)
        self.model_.meta["synthesizer"] = self._meta()
        self.verdict_ = self.fit_report_.verdict
        if self.verdict_ is not None and self.verdict_.level != GOOD:
            warnings.warn(self.verdict_.warning_text(), ReleaseQualityWarning, stacklevel=3)
        return self

    def _dataset(self, data: Any) -> tuple[Dataset, dict]:
        """The records coded, and the input's dtypes to give back (:func:`~lopub.pipeline.synth_dtypes.coded`)."""
        return _dtypes.coded(data, self.domain, self.bins)

    # using the model ---------------------------------------------------------
    def sample(self, n: int | None = None, seed: np.random.Generator | int | None = None, *,
               labels: bool = False, conditions: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """``n`` synthetic records (default: as many as users, ``fit_report_.collection.n``: the input's
        rows after :meth:`fit`, even where a screen's reports were not released; after
        :meth:`fit_reports` the reports' ``users``) in the input's shape.

        Numbers, integers, booleans and dates come back as such (a binned
        number drawn uniformly within its bin) and missing values as missing
        (:func:`lopub.publish.synthesize.synthesize`); a pandas categorical column of the input as a
        categorical with its ``ordered`` flag and its int or float categories, a duration as a
        duration, a column labelled by an integer (``header=None``) under that label, as ``conditions``
        take it (:mod:`~lopub.pipeline.synth_dtypes`); ``labels=True`` gives the
        category labels instead.  The same ``seed`` gives the same records
        (also after :meth:`save` / :meth:`load`).
        ``conditions = {attr: value}`` samples conditionally (SDV's
        ``sample_from_conditions``; a value is a label or a value as the data
        held it: ``{"hours": 40}`` names the bin holding 40, ``{"flag": True}``,
        ``None`` the missing category): every record carries those values and the
        other attributes follow the model's exact conditional distribution
        (evidence clamped in the junction tree,
        :func:`lopub.publish.synthesize.sample_codes`, which says how a model's
        relaxed regions update the draw and the gap that heuristic leaves).  An unknown attribute
        or label raises ``DomainError``; a condition the model gives
        probability zero raises ``ZeroProbabilityError`` (both ``ValueError``); a list, set or array of
        values (``{"b": ["p", "q"]}``) ``TypeError`` before any sampling (a condition fixes one label).
        """
        model = self._fitted()
        if n is None:
            report = getattr(self, "fit_report_", None)
            n = (report.collection.n or None) if report is not None else None  # 0: unknown, the model's n
        dtypes = getattr(self, "dtypes_", {})
        _dtypes.check_conditions(conditions, model.domain, dtypes)
        out = synthesize(model, n, labels=labels, rng=resolve_rng(seed, "seed"),
                         where=_dtypes.names(conditions, dtypes) or None)
        return _dtypes.relabel(out, dtypes) if labels else _dtypes.restore(out, dtypes)

    def query(self, attrs: str | Sequence[str], where: Mapping[str, Any] | None = None) -> Marginal:
        """The model's marginal over ``attrs`` (one name or a list; conditioned on ``where``); see
        :meth:`Model.query`."""
        model = self._fitted()
        _dtypes.check_conditions(where, model.domain, getattr(self, "dtypes_", {}), "where")
        return model.query(attrs if isinstance(attrs, str) else list(attrs), where)

    def graph(self) -> "DependencyGraph | None":
        """The dependency graph (:class:`~lopub.dependency.graph.DependencyGraph`; ``.graph`` is
        networkx); None for a model file that stores none."""
        return self._fitted().graph

    def report(self, path: str | os.PathLike, real: pd.DataFrame | Dataset | None = None, *,
               n: int | None = None, seed: np.random.Generator | int | None = None) -> None:
        """Write the HTML release report (:func:`lopub.publish.report.write_report`) of ``sample(n, seed)``."""
        from lopub.publish.report import write_report

        write_report(path, self._fitted(), self.sample(n, seed), real)

    def _fitted(self) -> Model:
        model = getattr(self, "model_", None)
        if model is None:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(data) or "
                                 "fit_reports(reports) first")
        return model

    # files ------------------------------------------------------------------
    def _meta(self) -> dict[str, Any]:
        return _files.file_meta(self)  # format: lopub.pipeline.synth_files

    def save(self, path: str | os.PathLike) -> None:
        """Write the model file with the synthesizer's parameters in its meta (atomic; format in
        the module docstring)."""
        model = self._fitted()
        model.meta["synthesizer"] = self._meta()
        model.save(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Synthesizer":
        """Read a file written by :meth:`save`, or a model written by ``lopub fit``.

        A ``lopub fit`` model (no ``meta['synthesizer']``) becomes a fitted
        synthesizer whose parameters are the fit's (``epsilon`` and
        ``protocol`` from the collection parameters in ``meta['fit']``,
        ``method``, ``release``, ``structure``, ``clique_budget``; the
        model's domain) and whose collection report says the reports were
        not simulated here.

        Raises
        ------
        FileNotFoundError, ModelFormatError
            As :meth:`lopub.model.graphical.Model.load`.
        ValueError
            A model without the fit's collection parameters (e.g. fitted to
            exact marginals: there is no privacy budget to record); the
            message says how to sample it with :meth:`Model.load` and
            :func:`lopub.publish.synthesize.synthesize`.  Or another
            synthesizer version.
        """
        return _files.load(cls, path)


def _same_seed(a: Any, b: Any) -> bool:
    """Whether ``rng`` and ``random_state`` agree: one is None, or the same seed or Generator."""
    if a is None or b is None or a is b:
        return True
    return not isinstance(a, np.random.Generator) and not isinstance(b, np.random.Generator) and a == b


def _short(value: Any) -> str:
    if isinstance(value, Domain):
        return f"Domain({len(value)} attributes)"
    if isinstance(value, np.random.Generator):
        return "Generator(...)"
    return repr(value)
