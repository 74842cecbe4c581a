"""Writing and reading a synthesizer file: :meth:`lopub.pipeline.synthesizer.Synthesizer.save` and ``load``.

The functions take the synthesizer class as their first argument, so this module never imports
:mod:`lopub.pipeline.synthesizer` (which imports it).

The file: a ``lopub-model`` file
(:mod:`lopub.model.format`, written atomically, gzip when the name ends in
``.gz``) whose ``meta["synthesizer"]`` is ``{"format": "lopub-synthesizer",
"version": 1, "params": {...}, "collection": {...}}``: the constructor
parameters (an ``rng`` or ``random_state`` Generator is stored as ``null``, a
``random_state`` of None is left out, as in files written before it; a ``domain``
parameter as ``"model"``: the model's domain), the
:class:`~lopub.pipeline.synth_reports.CollectionReport` and ``"dtypes"``, the input's pandas categorical and duration columns, nullable
integer columns without a value and integer column labels (:mod:`lopub.pipeline.synth_dtypes`); the fit
report is the model's ``meta["fit"]``.
Any ``lopub`` command that reads a model reads this file.
"""
from __future__ import annotations

import os
from typing import Any

from lopub.collect import privacy_statement
from lopub.estimate.registry import METHODS
from lopub.model.fit_result import FitReport
from lopub.model.graphical import Model
from lopub.pipeline import synth_dtypes
from lopub.pipeline.synth_reports import FORMAT, PROTOCOLS, VERSION, CollectionReport, SynthesizerReport

def load(cls: Any, path: str | os.PathLike) -> Any:
    """The synthesizer in the model file at ``path`` (the rules: :meth:`Synthesizer.load
    <lopub.pipeline.synthesizer.Synthesizer.load>`)."""
    model = Model.load(path)
    meta = model.meta.get("synthesizer")
    fit = model.meta.get("fit")
    if not isinstance(meta, dict) and isinstance(fit, dict):
        return _from_fit(cls, model, fit, path)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(fit, dict):
        raise ValueError(f"{os.fspath(path)!r} is a model file without a synthesizer "
                         f"(meta['synthesizer'] of format {FORMAT!r} and meta['fit']); "
                         f"{_HOW_TO_SAMPLE.format(path=os.fspath(path))}")
    if meta.get("version") != VERSION:
        raise ValueError(f"{os.fspath(path)!r}: synthesizer version ({meta.get('version')!r}) "
                         f"must be {VERSION}")
    params = dict(meta["params"])
    params["domain"] = model.domain if params.get("domain") == "model" else None
    self = cls(**params)
    self.model_, self.domain_ = model, model.domain
    self.dtypes_ = synth_dtypes.check(meta.get("dtypes"), repr(os.fspath(path)))
    self.fit_report_ = SynthesizerReport(CollectionReport(**meta["collection"]), FitReport(**fit),
                                         dict(meta.get("seconds", {})))
    self.verdict_ = self.fit_report_.verdict
    return self

def _from_fit(cls: Any, model: Model, fit: dict, path: str | os.PathLike) -> Any:
    """A fitted synthesizer from a ``lopub fit`` model (see :func:`load`)."""
    coll = fit.get("collection")
    coll = coll if isinstance(coll, dict) else {}
    eps = coll.get("epsilon_per_record")
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps > 0:
        raise ValueError(f"{os.fspath(path)!r} is a model fitted without collection parameters "
                         f"(meta['fit']['collection'] is {fit.get('collection')!r}): no privacy budget to give a "
                         f"Synthesizer; {_HOW_TO_SAMPLE.format(path=os.fspath(path))}")
    protocol = coll.get("protocol") if coll.get("protocol") in PROTOCOLS else "auto"
    params: dict[str, Any] = {"epsilon": float(eps), "protocol": protocol, "domain": model.domain}
    for name in ("method", "release", "structure", "clique_budget"):
        value = fit.get(name)
        # the recorded method of marginal-sampling reports ("marginal-sampling") names no
        # Bloom estimator: the default stays (it applies to Bloom reports only)
        if value is not None and (name != "method" or value in METHODS):
            params[name] = value
    self = cls(**params)
    text, warning = privacy_statement(float(eps))
    info = CollectionReport(protocol=str(coll.get("protocol")), epsilon_per_record=float(eps),
                            n=int(model.users or 0), simulated=False, recommended=None,
                            predicted_tvd=None, privacy=text, warning=warning)
    self.model_, self.domain_ = model, model.domain
    self.dtypes_ = {}
    self.fit_report_ = SynthesizerReport(info, FitReport(**fit), dict(fit.get("seconds") or {}))
    self.model_.meta["synthesizer"] = file_meta(self)
    return self


_HOW_TO_SAMPLE = ("sample it with: from lopub.model.graphical import Model; "
                  "from lopub.publish.synthesize import synthesize; "
                  "synthesize(Model.load({path!r}), n, rng=seed) (or `lopub synthesize {path} --n N`)")


def file_meta(synth: Any) -> dict[str, Any]:
    """The synthesizer's part of a model file's meta (``meta["synthesizer"]``): format, parameters,
    collection report, column dtypes and seconds (:meth:`Synthesizer.save
    <lopub.pipeline.synthesizer.Synthesizer.save>`)."""
    params = synth.get_params()
    params["domain"] = None if params["domain"] is None else "model"  # the model file holds it
    for name in ("rng", "random_state"):
        if not (params[name] is None or isinstance(params[name], int)):
            params[name] = None
    if params["random_state"] is None:  # as files were written before random_state
        del params["random_state"]
    return {"format": FORMAT, "version": VERSION, "params": params,
            "collection": synth.fit_report_.collection.to_dict(),
            "dtypes": getattr(synth, "dtypes_", {}),
            "seconds": dict(synth.fit_report_.seconds)}
