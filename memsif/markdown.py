"""Text from outside (a transcript, a child process's stderr) placed into Markdown as written."""

from __future__ import annotations

import html
import re

#: ASCII punctuation that Markdown may read as markup (CommonMark lets a backslash escape any of it).
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def escape_markdown(text: str) -> str:
    """``text`` shown literally in Markdown: HTML escaped (``<module>`` stays visible text, never a
    tag), Markdown punctuation backslash-escaped, line breaks kept as spaces."""
    return _MARKUP.sub(r"\\\1", html.escape(" ".join(text.split()), quote=False))
