"""What every exported page shares: the Jinja environment, escaping, styles, the shell.

Untrusted text cannot act in a page, by three layers:
- every `{{ value }}` goes through `visible()` (Jinja's `finalize`) and then HTML
  escaping (autoescape), so markup and control characters arrive as text;
- highlighted code is made from already visible text by pygments, which escapes it;
- a Content-Security-Policy allows only this page's own inline style and script
  (by a fresh nonce) and no fetch at all, so even a missed escape could run nothing
  and load nothing.
Pages are one file: no fonts, images, scripts or styles from anywhere else.
"""

from __future__ import annotations

import secrets
from functools import cache
from importlib.resources import files
from typing import Any

import jinja2
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from conductor.export.terminal import exec_status
from conductor_kernel.interfaces import Usage
from conductor_kernel.text.display import visible, visible_line
from record.findings import FINDING_KINDS

_FORMATTER = HtmlFormatter(nowrap=True, classes=True)
_LEXER = PythonLexer()


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return visible(value)
    return "" if value is None else value


def code_html(code: str) -> Markup:
    """Python highlighted as HTML spans (pygments escapes the text it is given)."""
    return Markup(highlight(visible(code.rstrip("\n")), _LEXER, _FORMATTER))


def tokens(usage: Usage) -> str:
    cached = f" ({usage.cache_read_tokens:,} cached)" if usage.cache_read_tokens else ""
    return f"{usage.input_tokens:,} in{cached} · {usage.output_tokens:,} out"


def money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def first_words(text: str, limit: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("conductor.export.html", "templates"),
        autoescape=True,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        code=code_html,
        line=visible_line,
        tokens=tokens,
        money=money,
        words=first_words,
    )
    env.globals.update(exec_status=exec_status, finding_kinds=FINDING_KINDS)
    return env


@cache
def _asset(name: str) -> str:
    return files("conductor.export.html").joinpath("templates", name).read_text(encoding="utf-8")


def styles() -> Markup:
    """The page's CSS: ours, then pygments' token colours under `.code`."""
    return Markup(_asset("page.css") + _FORMATTER.get_style_defs(".code"))


def render(template: str, **context: Any) -> str:
    """A whole page from `template` (which extends `shell.html.j2`)."""
    return (
        environment()
        .get_template(template)
        .render(
            nonce=secrets.token_urlsafe(16),
            css=styles(),
            js=Markup(_asset("page.js")),
            **context,
        )
    )
