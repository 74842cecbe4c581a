"""The user guide and API reference (MkDocs + mkdocstrings, mkdocs.yml): every public name has a page.

The full build (`mkdocs build --strict`, warnings as errors) runs in `.ci/run`
and here when MkDocs is installed (the `docs` extra); the coverage check needs
nothing but the page sources.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import lopub

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "guide" / "api"


def documented() -> set[str]:
    """Every ``::: module`` directive of the API pages."""
    return {m for page in API.glob("*.md") for m in re.findall(r"^::: ([\w.]+)", page.read_text(), re.M)}


def public_modules() -> list[str]:
    """Public packages with an ``__all__``; public modules of the packages without one."""
    out = []
    for info in pkgutil.iter_modules(lopub.__path__):
        if info.name.startswith("_") or info.name in ("cli",):
            continue
        name = f"lopub.{info.name}"
        mod = importlib.import_module(name)
        if not info.ispkg or hasattr(mod, "__all__"):
            out.append(name)
            continue
        out += [f"{name}.{sub.name}" for sub in pkgutil.iter_modules(mod.__path__) if not sub.name.startswith("_")]
    return out


def test_every_public_module_has_an_api_page():
    have = documented()
    missing = [m for m in public_modules() if m not in have and not any(m.startswith(d + ".") for d in have)]
    assert not missing, f"no API page documents {missing}: add '::: NAME' to a page in docs/guide/api/"


def test_every_top_level_name_is_linked():
    page = (API / "lopub.md").read_text()
    for name in lopub.__all__:
        assert f"lopub.{name}" in page, f"lopub.{name} missing from docs/guide/api/lopub.md"


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs" / "guide").as_posix() for p in (ROOT / "docs" / "guide").rglob("*.md")]
    assert pages and all(p in nav for p in pages), [p for p in pages if p not in nav]


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed in this Python (pip install '.[docs]')")
def test_docs_build_strict(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (tmp_path / "cli" / "index.html").read_text()
    assert "lopub synthesize" in cli and "--where" in cli  # generated from the parser
    assert "lopub.pipeline.synthesizer.Synthesizer.sample" in (tmp_path / "api" / "pipeline" / "index.html").read_text()
