"""A person's export as they download it: the ZIP a ChatGPT or Claude export comes as, or its
conversations split into parts (``conversations-000.json``, ``conversations-001.json``, …) in a ZIP or
a folder. Every part's conversations are read as one ``conversations.json``: one history. The ZIP
WhatsApp's "Export chat" makes (``_chat.txt`` or ``WhatsApp Chat with Ana.txt``, with or without the
media beside it) is read as its chat log (``zipped_chat``). A ZIP that cannot be opened, one protected by a
password or compressed by a method Python does not read (Deflate64, from Windows for large files), is
refused with its cause and what to do."""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from memsif.errors import TranscriptError
from memsif.io.apps import is_slack_export
from memsif.io.decode import decode, parse_json

#: A conversations document of an export, whole or one part of it.
PART = re.compile(r"^conversations(?:-(\d+))?\.json$", re.IGNORECASE)
#: The most a ZIP's conversation documents may unpack to (a ZIP bomb is refused, not unpacked).
MAX_UNPACKED = 2 * 1024**3


def is_export_bundle(path: Path) -> bool:
    """Whether ``path`` is a ZIP archive or a folder (read as an export's parts), not one transcript file."""
    if path.is_dir():
        return True
    with suppress(OSError), path.open("rb") as f:
        return f.read(4) == b"PK\x03\x04"
    return False


def history_name(stem: str) -> str:
    """The name of the history a part belongs to: ``conversations-000`` → ``conversations``."""
    return re.sub(r"-\d{3,}$", "", stem)


def read_bundle(path: Path) -> tuple[list[Any], list[str]]:
    """Every conversation of an export's ``conversations*.json`` documents (a ZIP's members at any depth,
    or a folder's files), in part order, and the warnings of their decoding.

    Raises:
        TranscriptError: the ZIP is damaged or would unpack to more than ``MAX_UNPACKED`` bytes, holds no
            conversations document (its members are named), or a document is not a JSON list.
    """
    documents = _zip_documents(path) if path.is_file() else _folder_documents(path)
    conversations: list[Any] = []
    warnings: list[str] = []
    for name, data in documents:
        text, said = decode(data, f"{path}:{name}")
        warnings += [f"{name}: {w}" for w in said]
        doc = parse_json(text, str(path), name)
        if not isinstance(doc, list):
            raise TranscriptError(f"{name} holds a JSON {type(doc).__name__}, not the list of conversations an "
                                  "export's conversations.json holds", path=str(path))
        conversations += doc
    if len(documents) > 1:
        warnings.append(f"read {len(documents)} parts of one export ({', '.join(n for n, _ in documents[:4])}"
                        f"{' …' if len(documents) > 4 else ''}) as one history")
    return conversations, warnings


def _order(name: str) -> tuple[int, str]:
    found = PART.match(Path(name).name)
    return (int(found.group(1)) if found and found.group(1) else -1, name)


#: The chat log in a WhatsApp export's ZIP.
CHAT_MEMBER = re.compile(r"^(?:_chat|whatsapp chat (?:with|-) .+)\.txt$", re.IGNORECASE)
#: Compression methods Python's zipfile reads: stored, Deflate, bzip2, LZMA.
READABLE = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA})
_METHODS = {9: "Deflate64 (Windows' own zipping of large folders)", 6: "Implode", 93: "Zstandard", 98: "PPMd",
            99: "AES encryption (WinZip)"}


def zipped_chat(path: Path) -> tuple[str, bytes] | None:
    """(member name, bytes) of the chat log in a WhatsApp export's ZIP at ``path``; None when the ZIP holds
    none (an export's conversations documents, or something else: ``read_bundle`` says what).

    Raises:
        TranscriptError: the ZIP cannot be read, or its chat log is protected or compressed unreadably.
    """
    with _opened(path) as archive:
        chats = [m for m in archive.infolist() if not m.is_dir() and CHAT_MEMBER.match(Path(m.filename).name)]
        if not chats or any(PART.match(Path(m.filename).name) for m in archive.infolist()):
            return None
        return chats[0].filename, _read_member(archive, chats[0], path)


def slack_files(path: Path) -> list[tuple[str, bytes]] | None:
    """The JSON files (name relative to the export, bytes) of a Slack export's ZIP or folder at ``path``
    (``apps.is_slack_export``); None when it is not one.

    Raises:
        TranscriptError: the ZIP cannot be read, or would unpack to more than ``MAX_UNPACKED`` bytes.
    """
    if path.is_dir():
        files = sorted(f for f in path.rglob("*.json") if f.is_file())
        names = [f.relative_to(path).as_posix() for f in files]
        if not is_slack_export(names):
            return None
        try:
            return [(n, f.read_bytes()) for n, f in zip(names, files, strict=True)]
        except OSError as exc:
            raise TranscriptError(f"cannot read the export's files ({exc.strerror or exc})", path=str(path)) from exc
    with _opened(path) as archive:
        members = [m for m in archive.infolist() if not m.is_dir() and m.filename.endswith(".json")]
        root = _common_root([m.filename for m in members])
        names = [m.filename[len(root):] for m in members]
        if not is_slack_export(names):
            return None
        if sum(m.file_size for m in members) > MAX_UNPACKED:
            raise TranscriptError(f"the Slack export would unpack to more than {MAX_UNPACKED // 1024**3} GB; it "
                                  "is not read", path=str(path))
        return [(n, _read_member(archive, m, path)) for n, m in zip(names, members, strict=True)]


def _common_root(names: list[str]) -> str:
    """The folder every name of a ZIP lies in ("export/"), or "" (a ZIP of a folder holds it at its top)."""
    tops = {n.split("/", 1)[0] + "/" for n in names if "/" in n}
    return tops.pop() if len(tops) == 1 and all("/" in n for n in names) else ""


@contextmanager
def _opened(path: Path) -> Iterator[zipfile.ZipFile]:
    """The ZIP archive at ``path``, open.

    Raises:
        TranscriptError: the archive, or a member read from it, is damaged (download the export again).
    """
    try:
        with zipfile.ZipFile(path) as archive:
            yield archive
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError, zlib.error) as exc:
        raise TranscriptError(f"not a text transcript (looks like a ZIP archive) and the archive cannot be read "
                              f"({exc}); download the export again", path=str(path)) from exc


def _read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, path: Path) -> bytes:
    """The bytes of one member of ``archive`` (opened by ``_opened``, which refuses damaged data).

    Raises:
        TranscriptError: it is protected by a password or compressed by a method Python does not read;
            each with what to do.
    """
    if member.flag_bits & 0x1:
        raise TranscriptError(f"the ZIP is protected by a password ({member.filename} is encrypted). Open it with "
                              f"its password (e.g. 7-Zip, or unzip -P) and upload {Path(member.filename).name} "
                              "itself", path=str(path))
    if member.compress_type not in READABLE:
        method = _METHODS.get(member.compress_type, f"method {member.compress_type}")
        raise TranscriptError(f"the ZIP is compressed with {method}, which this reader cannot unpack. Unpack it "
                              f"(7-Zip, or unzip) and upload {Path(member.filename).name} itself, or zip it again "
                              "with standard compression", path=str(path))
    return archive.read(member)


def _zip_documents(path: Path) -> list[tuple[str, bytes]]:
    with _opened(path) as archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        wanted = sorted((m for m in members if PART.match(Path(m.filename).name)), key=lambda m: _order(m.filename))
        if not wanted:
            shown = ", ".join(m.filename for m in members[:8]) + (" …" if len(members) > 8 else "")
            raise TranscriptError(f"the ZIP holds no conversations.json (nor conversations-000.json, … parts); it "
                                  f"holds: {shown or 'nothing'}. A ChatGPT or Claude export's ZIP holds one, and "
                                  "WhatsApp's a _chat.txt; for another transcript, upload the file itself",
                                  path=str(path))
        if sum(m.file_size for m in wanted) > MAX_UNPACKED:
            raise TranscriptError(f"the ZIP's conversations would unpack to more than {MAX_UNPACKED // 1024**3} GB; "
                                  "it is not read", path=str(path))
        return [(m.filename, _read_member(archive, m, path)) for m in wanted]


def _folder_documents(path: Path) -> list[tuple[str, bytes]]:
    files = sorted((f for f in path.rglob("*.json") if PART.match(f.name)), key=lambda f: _order(str(f)))
    if not files:
        raise TranscriptError("the folder holds no conversations.json (nor conversations-000.json, … parts) of a "
                              "ChatGPT or Claude export", path=str(path))
    try:
        return [(str(f.relative_to(path)), f.read_bytes()) for f in files]
    except OSError as exc:
        raise TranscriptError(f"cannot read the export's files ({exc.strerror or exc})", path=str(path)) from exc
