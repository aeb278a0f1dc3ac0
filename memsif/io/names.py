"""Names that become namespaces: a file's name read as text whatever its bytes, and a namespace checked
before any work is done, so a build never fails at its end over a name."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from memsif.errors import MemSIFError

#: Longest namespace accepted, in characters.
MAX_NAMESPACE = 200


def readable(name: str) -> str:
    """A name Python read from the file system as text: its bytes as UTF-8 where they are, else as
    Windows-1252, where every byte is a character (b"caf\\xe9" → "café"). Python hands a name that is not
    UTF-8 over with lone surrogates, which no store, id or terminal accepts."""
    raw = os.fsencode(name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return unicodedata.normalize("NFC", raw.decode("cp1252", errors="replace"))


def name_of_file(path: str | Path) -> tuple[str, list[str]]:
    """The stem of ``path`` as text (``readable``), and a warning when its bytes are not UTF-8."""
    stem = Path(path).stem
    name = readable(stem)
    return name, [] if name == stem else [f"the file name is not valid UTF-8 ({os.fsencode(stem)!r}): its memory is "
                                          f"called {name!r}"]


def checked_namespace(namespace: str) -> str:
    """``namespace`` without surrounding blanks, if a store can keep it.

    Raises:
        MemSIFError: it is empty, longer than ``MAX_NAMESPACE`` characters, holds a control character, or
            is not valid Unicode (lone surrogates: a name made from bytes that are not UTF-8). Nothing is
            written.
    """
    name = (namespace or "").strip()
    if not name:
        raise MemSIFError("The namespace is empty: name the memory, e.g. --namespace alice.")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        shown = name.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        raise MemSIFError(f"The namespace {shown!r} is not valid text (bytes that are not UTF-8, e.g. from a file "
                          "name): give one with --namespace (Python: namespace=...). Nothing was written.") from None
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise MemSIFError(f"The namespace {name!r} holds a control character: give another. Nothing was written.")
    if len(name) > MAX_NAMESPACE:
        raise MemSIFError(f"The namespace is {len(name)} characters long; use at most {MAX_NAMESPACE}. "
                          "Nothing was written.")
    return name
