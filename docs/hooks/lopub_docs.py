"""MkDocs hook: pages generated from the code at build time.

* ``<!-- lopub:cli -->`` becomes the command line reference: the help text of
  ``lopub`` and of every subcommand, taken from the argparse parser itself
  (:func:`lopub.cli.build_parser`), so the page cannot drift from the code.
* ``<!-- lopub:schema NAME -->`` becomes the JSON Schema ``NAME.schema.json``
  shipped in :mod:`lopub.formats` (``lopub/formats/jsonschema/``).
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "lopub" / "formats" / "jsonschema"


def _cli_reference() -> str:
    from lopub.cli import build_parser

    parser = build_parser()
    out = ["```text", _help(parser), "```"]
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subs.choices.items():
        out += ["", f"## lopub {name}", "", "```text", _help(sub), "```"]
    return "\n".join(out)


def _help(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
    return parser.format_help().rstrip()


def _schema(name: str) -> str:
    path = SCHEMAS / f"{name}.schema.json"
    text = json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=2)
    return f"```json\n{text}\n```"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs' signature
    markdown = markdown.replace("<!-- lopub:cli -->", _cli_reference()) if "<!-- lopub:cli -->" in markdown \
        else markdown
    return re.sub(r"<!-- lopub:schema ([a-z-]+) -->", lambda m: _schema(m.group(1)), markdown)
