"""The HTML pieces of the release report: its style sheet, sections, tables, pictures and number formats."""
from __future__ import annotations

import base64
import html
from typing import Any, Sequence

import numpy as np

CSS = """body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;
padding-bottom:.2em;margin-top:2em}table{border-collapse:collapse;margin:.8em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}.warn{background:#fff4e5;border-left:4px solid
#e69500;padding:.4em .8em;margin:.4em 0}.danger{background:#fdecea;border-left-color:#d62728}
.note{color:#555;font-size:.92em}.grid{display:flex;flex-wrap:wrap;gap:.6em}img{max-width:100%}
figure{margin:.4em 0}figcaption{font-size:.85em;color:#555}details{margin:.6em 0}
summary{cursor:pointer;color:#245}.scroll{overflow-x:auto;max-width:100%}
@media (max-width:600px){body{margin:1em auto;padding:0 .5em}table{font-size:.8em}}"""


def html_details(summary: str, content: str) -> str:
    """A collapsed block (``<details>``): long tables stay one click away."""
    return f"<details><summary>{esc(summary)}</summary>\n{content}\n</details>"


def html_section(sid: str, title: str, content: str) -> str:
    return f"<section id=\"{sid}\">\n<h2>{esc(title)}</h2>\n{content}\n</section>"


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, header: bool = True) -> str:
    head = "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(html_cell(v, k, header) for k, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<div class=\"scroll\"><table>{head}{body}</table></div>"


def html_cell(v: Any, k: int, header: bool) -> str:
    if not header and k == 0:
        return f"<th>{esc(v)}</th>"
    num = isinstance(v, (int, float)) or (isinstance(v, str) and v.replace(".", "").replace(",", "").isdigit())
    return f"<td class=\"num\">{esc(v)}</td>" if num else f"<td>{esc(v)}</td>"


def html_img(data: bytes, alt: str) -> str:
    return (f"<figure><img alt=\"{esc(alt)}\" src=\"data:image/png;base64,"
            f"{base64.b64encode(data).decode('ascii')}\"></figure>")


def esc(v: Any) -> str:
    """``v`` as HTML text (quotes escaped too)."""
    return html.escape(str(v), quote=True)


def fmt_float(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "n/a"
    return f"{float(v):.{digits}f}"


def fmt_count(v: int | None, missing: str = "unknown") -> str:
    return missing if v is None else f"{v:,}"
