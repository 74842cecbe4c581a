"""Defects found by session 39's command-line tour with a user's own CSVs (tests fail before the fixes)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lopub.cli import main


def _dotted_dates_csv(path, n=300):
    rng = np.random.default_rng(0)
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, n), "D")
    pd.DataFrame({"visit": days.strftime("%d.%m.%Y"),
                  "g": rng.choice(["a", "b"], n)}).to_csv(path, sep=";", index=False)


def test_dotted_day_first_dates_get_a_note(tmp_path, capsys):
    """'14.03.2024' dates (a German or other European export) were text with one category per
    distinct day (200+ categories in 300 rows) and no note; ../../YYYY dates got one."""
    csv = tmp_path / "de.csv"
    _dotted_dates_csv(csv)
    assert main(["schema", str(csv), "--out", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("visit"))
    assert "look like dates DD.MM.YYYY" in line and "YYYY-MM-DD" in line
