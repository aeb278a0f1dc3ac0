"""Text from outside (a transcript, a model's answer, a child process's stderr) placed into Markdown
or HTML as written: shown literally, never read as markup (a tag, a link, emphasis)."""

from __future__ import annotations

import html
import re

#: Characters Markdown reads as markup anywhere in a line: a backslash escape, emphasis, code, a link
#: or image (its brackets), a table cell, strike-through (``<``, ``>`` and ``&`` are escaped as HTML).
_MARKUP = re.compile(r"([\\`*_\[\]|~])")
#: What makes a line a heading, a list item or a heading's underline when it starts the line.
_LINE_START = re.compile(r"^(?:([#+=-])|(\d+)([.)]))")


def escape_markdown(text: str) -> str:
    """``text`` shown literally in Markdown: HTML escaped (``<module>`` stays visible text, never a
    tag), the characters of emphasis, code, links and tables backslash-escaped, and what would start a
    heading or a list at the start; line breaks kept as spaces."""
    flat = _MARKUP.sub(r"\\\1", html.escape(" ".join(text.split()), quote=False))
    return _LINE_START.sub(lambda m: f"\\{m.group(1)}" if m.group(1) else f"{m.group(2)}\\{m.group(3)}", flat)


def escape_html(text: str) -> str:
    """``text`` shown literally where HTML is rendered (plotly's hover and tick text, Gradio's error
    pop-ups): ``<``, ``>`` and ``&`` escaped, so ``<b>`` stays visible text."""
    return html.escape(text, quote=False)


def code_span(text: str) -> str:
    """``text`` as a Markdown code span (an id, a file name), shown literally whatever it holds: fenced
    by one more backtick than its longest run of backticks, line breaks as spaces."""
    text = " ".join(text.split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or text.startswith(" ") or text.endswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else ""
