"""Graphical model fitted to measurements (Private-PGM's estimator, numpy only).

:func:`fit_mrf` fits a Markov random field on a junction tree so that its
marginals match a set of noisy :class:`~lopub.estimate.measurement.Measurement` s,
weighted by inverse variance; :meth:`MRFFit.to_model` turns it into a
:class:`lopub.model.graphical.Model` (queries, synthesis, save/load).
Zero-variance measurements are exact constraints; :meth:`MRFFit.summary`
reports convergence honestly (stopping rule, Frank-Wolfe gap, chi-square
statistic and degrees of freedom).  Measured sets in no clique are kept as
relaxed regions (:mod:`lopub.model.pgm.relaxed`) and carried into the
synthetic records by GUM-style updating (:mod:`lopub.model.pgm.gum`).

References
----------
McKenna, Sheldon, Miklau, "Graphical-model based estimation and inference for
differential privacy", ICML 2019.
"""
from lopub.model.pgm.fit import (BYTES_PER_CELL, DEFAULT_MAX_ITER, DEFAULT_MEMORY_BUDGET, DEFAULT_TOL, MRFFit,
                  fit_bytes, fit_mrf)
from lopub.model.pgm.inference import CliqueTree
from lopub.model.pgm.loss import SIGMA2_FLOOR

__all__ = ["BYTES_PER_CELL", "DEFAULT_MAX_ITER", "DEFAULT_MEMORY_BUDGET", "DEFAULT_TOL", "MRFFit",
           "fit_bytes", "fit_mrf", "CliqueTree", "SIGMA2_FLOOR"]
