"""Shared test setup: point LOPUB_DATA_DIR at ../shared/datasets when it exists."""
import os
from pathlib import Path

_shared = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
if "LOPUB_DATA_DIR" not in os.environ and _shared.is_dir():
    os.environ["LOPUB_DATA_DIR"] = str(_shared)
