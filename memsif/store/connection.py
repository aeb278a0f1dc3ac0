"""Opening a Qdrant client for the MemoryStore: an embedded folder (checked; read-only from a snapshot
when it cannot be written, or, for a reader that asks, when another process holds it), ``:memory:``, or
a server; and every client call guarded (``Guarded``), so a failure of the
store itself is a :class:`StoreError` that says what to do."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import shutil
import sqlite3
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from qdrant_client import QdrantClient

from memsif.errors import CollectionMissing, EmbedderError, StoreError

log = logging.getLogger(__name__)

#: Client calls that change the store (refused on a read-only folder).
_WRITES = frozenset({"upsert", "delete", "create_collection", "delete_collection", "recreate_collection",
                     "set_payload", "overwrite_payload", "delete_payload", "clear_payload", "create_payload_index",
                     "update_vectors", "delete_vectors", "batch_update_points"})
_SQLITE_HEADER = b"SQLite format 3\x00"


class Guarded:
    """Every client call, translated: a failure of the store itself (a damaged file, a read-only or
    full disk, a collection deleted under it) becomes a :class:`StoreError` that names the folder,
    what is wrong and what to do. With ``lock``, calls are serialised: embedded Qdrant (in-process
    dicts and SQLite) is not thread-safe, and the app serves several sessions from worker threads;
    calls are short (one upsert batch, one scroll page, one search). ``read_only`` refuses writes."""

    def __init__(self, client: QdrantClient, location: str, lock: bool, read_only: str = "") -> None:
        self._client, self._location = client, location
        self._lock = threading.RLock() if lock else contextlib.nullcontext()
        self._read_only = read_only  # why writes are refused, said in the error; "" when they are not

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._read_only and name in _WRITES:
                raise StoreError(self._read_only)
            with self._lock:
                try:
                    return attr(*args, **kwargs)
                except (StoreError, EmbedderError):
                    raise
                except sqlite3.DatabaseError as exc:
                    raise StoreError(f"The memory folder {self._location} is damaged: a collection's SQLite file "
                                     f"cannot be read ({exc}). Nothing was changed; move the folder aside and build "
                                     "the memory again, or restore the folder from a backup.") from exc
                except OSError as exc:
                    raise StoreError(os_advice(self._location, exc)) from exc
                except ValueError as exc:
                    if "not found" in str(exc).lower():
                        raise CollectionMissing(f"A collection of the memory store at {self._location} is missing "
                                                f"({exc}).") from exc
                    raise
        return call


def os_advice(location: str, exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return (f"The disk of the memory folder {location} is full ({exc.strerror}). Free space and run the same "
                "command again: what was written before is kept.")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (f"The memory folder {location} cannot be written ({exc.strerror}). Make it writable, or set "
                "MEMSIF_DATA_DIR to a writable folder.")
    return f"The memory folder {location} could not be read or written: {exc}"


def check_folder(path: Path) -> None:
    """The embedded store's own files, checked before Qdrant opens them (Qdrant would raise a raw
    ``JSONDecodeError`` or ``DatabaseError``, or silently recreate a lost collection as empty).

    Raises:
        StoreError: ``meta.json`` is not Qdrant's, a collection it lists has no storage file, or a
            storage file is not SQLite. The message names the file; nothing is changed.
    """
    meta_path = path / "meta.json"
    if not meta_path.exists():
        return
    advice = ("Nothing was changed. Move the folder aside and build the memory again, or restore the folder "
              "from a backup.")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        collections = meta["collections"]
        if not isinstance(collections, dict):
            raise TypeError("'collections' is not an object")
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"The memory folder {path} is damaged: {meta_path.name} is not a Qdrant index "
                         f"({type(exc).__name__}: {exc}). {advice}") from exc
    except OSError as exc:
        raise StoreError(os_advice(str(path), exc)) from exc
    for name in collections:
        storage = path / "collection" / name / "storage.sqlite"
        if not storage.exists():
            raise StoreError(f"The memory folder {path} is damaged: collection {name} is listed in meta.json but its "
                             f"storage ({storage.relative_to(path)}) is missing, so its records are gone. {advice}")
        with storage.open("rb") as f:
            head = f.read(len(_SQLITE_HEADER))
        if head and head != _SQLITE_HEADER:
            raise StoreError(f"The memory folder {path} is damaged: {storage.relative_to(path)} is not an SQLite "
                             f"database. {advice}")


def writable(path: Path) -> bool:
    """Whether files can be created in ``path`` (tried, since permission bits do not bind root and a
    read-only mount shows none)."""
    try:
        with tempfile.TemporaryFile(dir=path):
            return True
    except OSError:
        return False


@dataclass
class Connection:
    """An open client and what the store must know of it."""

    client: Guarded
    location: str
    is_server: bool
    read_only: bool = False
    snapshot: tempfile.TemporaryDirectory[str] | None = None
    #: How a read-only store was opened, in words ("" for a store opened as it is).
    opened_from: str = ""


#: How an embedded folder is opened: "refuse" (a writer: an error when another process holds it),
#: "snapshot" (the folder itself when free, else a read-only snapshot), "read" (a reader that must never
#: hold the folder: always a read-only snapshot, so an ingest or the app can start while it runs).
WhenBusy = Literal["refuse", "snapshot", "read"]


def connect(*, path: str | Path | None = None, url: str | None = None, api_key: str | None = None,
            in_memory: bool = False, when_busy: WhenBusy = "refuse") -> Connection:
    """A guarded client for exactly one of ``path`` (embedded folder), ``url`` (server) or ``in_memory``.
    A folder another process holds (embedded Qdrant allows one) is, with ``when_busy="snapshot"``,
    opened read-only from a consistent copy taken now (``Connection.opened_from`` says so).

    Raises:
        StoreError: not exactly one was given; the folder is locked by another process (and
            ``when_busy`` is "refuse"), damaged (``check_folder``) or cannot be opened.
    """
    if sum(bool(x) for x in (path, url, in_memory)) != 1:
        raise StoreError("Give exactly one of path= (embedded folder), url= (server) or in_memory=True.")
    location = str(path or url or ":memory:")
    try:
        if in_memory:
            return _in_memory(location)
        if url:
            return Connection(Guarded(QdrantClient(url=url, api_key=api_key or None), location, lock=False),
                              location, is_server=True)
        if path is None:
            raise StoreError("No memory folder given: pass path=, url= or in_memory=True.")
        return _open_folder(Path(path), when_busy)
    except (RuntimeError, BlockingIOError) as exc:
        if _held(exc):
            raise StoreError(
                f"The memory folder {path} is in use by another MemSIF process (embedded Qdrant "
                "allows one). If that is the inspector (python app.py), make the change in its page: a "
                "fact's correction in the CoreFacts tab, a new chat in Build. Else stop that process, use "
                "another --data-dir, or run a Qdrant server and set MEMSIF_QDRANT_URL."
            ) from exc
        raise StoreError(f"Could not open the memory store at {location}: {exc}") from exc


def _held(exc: Exception) -> bool:
    """Whether opening a folder failed because another process holds it (embedded Qdrant allows one)."""
    return isinstance(exc, BlockingIOError) or "already accessed" in str(exc)


def _in_memory(location: str) -> Connection:
    """A store held in this process's memory, named ``location``."""
    client = QdrantClient(location=":memory:", force_disable_check_same_thread=True)
    return Connection(Guarded(client, location, lock=True), location, is_server=False)


def _open_folder(path: Path, when_busy: WhenBusy) -> Connection:
    """The embedded store in ``path`` (created if missing). A folder that cannot be written, or that
    another process holds when ``when_busy`` is "snapshot", is opened from a snapshot copy, read-only:
    questions and views work, writes are refused."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(os_advice(str(path), exc)) from exc
    check_folder(path)
    if when_busy == "read" and not (path / "meta.json").exists():  # nothing stored yet: nothing to hold
        return _in_memory(str(path))
    if when_busy == "read":
        return _snapshot(path, f"a snapshot of {path} taken at {time.strftime('%H:%M:%S')}: a read never holds "
                         "the folder, so an ingest or the app may start meanwhile (what they add later is not seen)",
                         f"This command reads a snapshot of the memory folder {path}: it can be read, not changed.",
                         logging.INFO)
    if not writable(path):
        return _snapshot(path, f"a snapshot of the read-only memory folder {path}",
                         f"The memory folder {path} is read-only: it can be read, not changed. Make it writable, or "
                         "copy it and set MEMSIF_DATA_DIR to the copy.")
    try:
        client = QdrantClient(path=str(path), force_disable_check_same_thread=True)
    except (RuntimeError, BlockingIOError) as exc:
        if when_busy != "snapshot" or not _held(exc):
            raise
        return _snapshot(path, f"a snapshot of {path} taken at {time.strftime('%H:%M:%S')}: another MemSIF process "
                         "(the app?) holds the folder, so what it adds later is not seen and nothing is written",
                         f"This command reads a snapshot of the memory folder {path} (another MemSIF process holds "
                         "it): it can be read, not changed. Stop that process to change it, or use its app or API.")
    return Connection(Guarded(client, str(path), lock=True), str(path), is_server=False)


def _snapshot(path: Path, opened_from: str, refusal: str, level: int = logging.WARNING) -> Connection:
    """``path`` copied into a temporary folder and opened there, refusing writes with ``refusal``; logged at
    ``level``."""
    snapshot = tempfile.TemporaryDirectory(prefix="memsif-read-only-")
    try:
        copy_folder(path, Path(snapshot.name) / "qdrant")
    except (StoreError, OSError, sqlite3.Error) as exc:
        snapshot.cleanup()
        if isinstance(exc, StoreError):
            raise
        raise StoreError(os_advice(str(path), exc) if isinstance(exc, OSError) else
                         f"The memory folder {path} could not be copied to read it: {exc}") from exc
    log.log(level, "memory folder %s opened from %s; writes are refused", path, opened_from)
    client = QdrantClient(path=str(Path(snapshot.name) / "qdrant"), force_disable_check_same_thread=True)
    return Connection(Guarded(client, str(path), lock=True, read_only=refusal), str(path), is_server=False,
                      read_only=True, snapshot=snapshot, opened_from=opened_from)


#: The files SQLite keeps beside a database while it is written: the online backup reads what they hold,
#: and each may vanish between the folder's listing and its copy, so they are never copied.
SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")
#: Copies of a folder tried before a snapshot is given up: a file the writer replaced meanwhile (another
#: collection made, a file renamed into place) makes the copy start again.
COPY_TRIES = 3


def copy_folder(source: Path, target: Path) -> None:
    """An embedded store folder copied whole, its SQLite files through SQLite's online backup (each a
    consistent copy even while another process writes it), its lock file and SQLite's side files left out.
    A file that vanishes while it is copied (a writer at work) makes the copy start again, up to
    ``COPY_TRIES`` times.

    Raises:
        StoreError: the folder kept changing under every try.
        OSError, sqlite3.Error: it cannot be read.
    """
    for attempt in range(1, COPY_TRIES + 1):
        try:
            _copy_once(source, target)
            return
        except FileNotFoundError as exc:
            shutil.rmtree(target, ignore_errors=True)
            if attempt == COPY_TRIES:
                raise StoreError(f"The memory folder {source} changed while it was copied to be read ({COPY_TRIES} "
                                 f"tries; {Path(exc.filename or '?').name} vanished): a build is writing it. Try "
                                 "again in a moment, or when the build ends.") from exc


def _copy_once(source: Path, target: Path) -> None:
    for item in sorted(source.rglob("*")):
        dest = target / item.relative_to(source)
        if item.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif item.name != ".lock" and not item.name.endswith(SQLITE_SIDE_FILES):
            dest.parent.mkdir(parents=True, exist_ok=True)
            if item.suffix == ".sqlite":
                if not item.exists():
                    raise FileNotFoundError(2, "vanished while copied", str(item))  # sqlite would make it anew
                with contextlib.closing(sqlite3.connect(f"{item.as_uri()}?mode=ro", uri=True)) as src, \
                        contextlib.closing(sqlite3.connect(dest)) as out:
                    src.backup(out)
            else:
                shutil.copy2(item, dest)
