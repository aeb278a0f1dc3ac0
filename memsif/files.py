"""Files written for the user (exports, evaluation reports): whole or not at all.

A file is written beside its destination under a temporary name and moved into place in one step
(``os.replace``), so a failed write (a full disk, a file-size limit) leaves the file that was there
before byte for byte, and no partial file.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from pathlib import Path

from memsif.errors import FileWriteError


def write_file(path: str | Path, data: bytes | str, what: str = "the file") -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; returns the path. A file already at
    ``path`` is replaced only once the new one is complete, and keeps its permissions.

    Raises:
        FileWriteError: the file could not be written (``what`` names it in the message, with the path
            and the system's reason); a file that was at ``path`` is unchanged.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as fh:  # created with the usual permissions (umask), unlike mkstemp's 0600
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise FileWriteError(_why(path, what, exc)) from exc
    return path


#: What to do next, by the system's reason (errno).
_ADVICE = {
    errno.ENOSPC: "free some space on that disk, or write it elsewhere",
    errno.EDQUOT: "free some of your disk quota, or write it elsewhere",
    errno.EFBIG: "the file is larger than this system lets a process write (a file-size limit); raise the "
                 "limit, or write it elsewhere",
    errno.EACCES: "choose a folder you may write to",
    errno.EPERM: "choose a folder you may write to",
    errno.EROFS: "the disk is read-only; choose another place",
    errno.EISDIR: "that path is a folder; name a file",
}


def _why(path: Path, what: str, exc: OSError) -> str:
    if not path.parent.is_dir():
        return f"Cannot write {what} {path}: the folder {path.parent} does not exist; create it or choose another path."
    kept = f"the {path.name} that was there is unchanged" if path.is_file() else "nothing was written"
    advice = _ADVICE.get(exc.errno or 0, "choose another path")
    return f"Cannot write {what} {path}: {exc.strerror or exc}; {kept}. To go on: {advice}."
