"""The public faces of the pipeline: fit, its options, the Synthesizer and the demo.

* :func:`fit` / :func:`dependency` (:mod:`.steps`): reports -> dependency graph,
  junction tree and the release model (:class:`~lopub.model.fit_result.FitResult`).
* :class:`FitOptions` (:mod:`.options`): every option of a fit, checked in one place,
  shared by :func:`fit`, the ``lopub fit`` / ``lopub graph`` commands, the
  :class:`Synthesizer` and the demo.
* :class:`Synthesizer` (:mod:`.synthesizer`): the scikit-learn-style face
  (``fit(df)``, ``sample(n)``, ``query``, ``report``, ``save``/``load``).
* :mod:`.demo`: ``lopub demo`` on the embedded dataset.

Names are imported on first use, so ``import lopub.pipeline`` stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"fit": "steps", "dependency": "steps", "independence_model": "steps", "make_estimator": "steps",
         "FitOptions": "options", "Synthesizer": "synthesizer"}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lopub.pipeline' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"lopub.pipeline.{module}"), name)
    globals()[name] = value
    return value
