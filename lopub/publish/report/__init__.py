"""HTML release report: privacy, parameters, real-vs-synthetic pictures, SDMetrics-style scores.

:func:`build_report` returns one self-contained HTML page (pictures embedded
as PNG ``data:`` URIs, no script, no external resource); :func:`write_report`
writes it atomically.  The scores are in :mod:`lopub.publish.report.scores`.
"""
from lopub.publish.report.html import build_report, write_report
from lopub.publish.report.scores import (SDMETRICS_ASSOCIATION_THRESHOLD, IndependenceRelease, column_pair_trends,
                     column_shapes, cramers_v, quality_scores)

__all__ = ["SDMETRICS_ASSOCIATION_THRESHOLD", "IndependenceRelease", "build_report", "column_pair_trends",
           "column_shapes", "cramers_v", "quality_scores", "write_report"]
