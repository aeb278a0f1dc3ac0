"""Bytes of a transcript file → text that every model, tokenizer and store can take.

- A byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE) decides the encoding and is removed.
- Otherwise UTF-8; when that fails, or the bytes hold NULs (UTF-16 without a mark), the encoding is
  detected by ``charset-normalizer`` and the load warns which one it used.
- A binary file is refused as "not a text transcript (looks like PNG image)", its kind read from its
  magic bytes by ``puremagic``.
- Text that is not valid Unicode — lone UTF-16 surrogates, which JSON escapes such as ``\\ud83d`` (half
  an emoji) produce — is repaired with U+FFFD (:func:`repair`) and the load warns how many.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from memsif.errors import TranscriptError

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_SURROGATE = re.compile("[\ud800-\udfff]")
#: Control characters that never occur in text (tab, line feed and carriage return are fine).
_BINARY_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


def decode(data: bytes, path: str) -> tuple[str, list[str]]:
    """The text of a transcript file (without byte-order marks) and the warnings of its decoding.

    Raises:
        TranscriptError: a binary file (named by its magic bytes when known), or bytes that decode as
            no text encoding.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec).lstrip("\ufeff"), []
            except UnicodeDecodeError as exc:
                raise TranscriptError(f"starts with a {codec.upper()} byte-order mark but is not {codec.upper()} "
                                      f"text ({exc.reason} at byte {exc.start})", path=path) from exc
    kind = _binary_kind(data)
    if kind:
        raise TranscriptError(f"not a text transcript (looks like {kind}); upload a JSON, JSONL or text file",
                              path=path)
    if b"\x00" not in data:
        try:
            return data.decode("utf-8").lstrip("\ufeff"), []
        except UnicodeDecodeError:
            pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None or _BINARY_CONTROLS.search(str(best)):
        raise TranscriptError("not a text transcript (the bytes are no text encoding: a binary file?); upload a "
                              "JSON, JSONL or text file saved as UTF-8", path=path)
    return str(best).lstrip("\ufeff"), [f"the file is not UTF-8: decoded as {best.encoding} (detected); check names "
                                         "and accents"]


def parse_json(text: str, path: str, name: str = "", position: str | None = None) -> Any:
    """``text`` as JSON data.

    Raises:
        TranscriptError: it is not JSON: "<name> is not valid JSON (…)", or "invalid JSON (…)" without a
            ``name``; at ``position``, by default the error's line and column.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"{f'{name} is not valid' if name else 'invalid'} JSON ({exc.msg})", path=path,
                              position=position or f"line {exc.lineno}, column {exc.colno}") from exc


def _binary_kind(data: bytes) -> str | None:
    """A name for the file's kind when its magic bytes say it is not text (PNG image, ZIP archive, …)."""
    import puremagic

    try:
        matches = puremagic.magic_string(data[:8192])
    except (puremagic.PureError, ValueError):
        return None
    for match in matches:  # a signature at byte 0 that no text starts with: 4+ bytes, or a non-printing one
        mime = (match.mime_type or "").lower()
        signature = match.byte_match or b""
        if match.offset == 0 and (len(signature) >= 4 or any(b < 0x20 or b > 0x7e for b in signature)) \
                and not mime.startswith("text/") and "json" not in mime and "xml" not in mime:
            return str(match.name or match.extension.lstrip(".").upper())
    return None


def repair(text: str) -> tuple[str, int]:
    """``text`` with every lone UTF-16 surrogate replaced by U+FFFD (a valid pair is joined into its
    character), and how many were replaced."""
    if not _SURROGATE.search(text):
        return text, 0
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return fixed, fixed.count("\ufffd") - text.count("\ufffd")
