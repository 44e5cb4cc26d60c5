"""Write an output file without following a symlink planted at its name.

A plain ``open(path, "w")`` writes through a symlink at ``path`` into whatever it points to, so
a link planted in an output folder (``gpgpusim.config -> ~/.bashrc``) makes gpumem overwrite
a file it does not own. Here the data goes into a fresh temporary file in the destination's
folder (``O_CREAT | O_EXCL | O_NOFOLLOW``: never an existing file, never through a link),
is flushed and fsync'ed, and is then renamed onto the destination with :func:`os.replace`.

Chosen behaviour: a symlink at the destination is *replaced* (the link itself, not its
target), exactly as an existing regular file is; its target is never opened. A reader sees
the old file or the new one, never half of one. A directory at the destination is refused.
Failures are one line each: :class:`OutputError` (exit 2) when the destination the user named
cannot take the file (a folder there, no permission), :class:`WriteFailed` (exit 1) when the
file system fails the write itself (full, over quota, over the file-size limit, I/O error).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from gpumem.contracts.errors import GpumemError, OutputError

__all__ = ["EXCLUSIVE_FLAGS", "OutputError", "WriteFailed", "fsync_dir", "os_cause",
           "replace_file", "write_bytes", "write_text"]

#: A new file only: never an existing one, never through a symlink.
EXCLUSIVE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
    | getattr(os, "O_CLOEXEC", 0)


class WriteFailed(GpumemError):
    """The file system failed a write (disk full, quota, file-size limit, I/O error): not the
    user's choice of path, so exit 1, not 2."""


#: errnos that mean the medium failed the write, not that the path was a bad choice
MEDIUM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def os_cause(e: OSError) -> str:
    """An OSError's cause in words: 'No space left on device (ENOSPC)' (and what the raiser
    added as ``gpumem_detail``)."""
    name = errno.errorcode.get(e.errno or 0)
    text = e.strerror or str(e)
    out = f"{text} ({name})" if name else text
    detail = getattr(e, "gpumem_detail", "")
    return f"{out}; {detail}" if detail else out


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _failed(path: Path, e: OSError) -> GpumemError:
    """The one-line error for ``e`` while writing ``path``."""
    if e.errno in MEDIUM_ERRNOS:
        return WriteFailed(f"cannot write {path}: {os_cause(e)}")
    return OutputError(f"{path}: cannot write: {_why(e)}")


def _check_destination(path: Path) -> None:
    """Refuse a directory at ``path``; a missing file, a regular file or a link are fine."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {_why(e)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: is a directory; cannot write a file there")


def fsync_dir(directory: Path) -> None:
    """Make the rename durable; best effort (not every platform opens folders)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically, replacing a symlink there instead of following
    it; returns ``path``. The file gets the usual mode (0666 less the umask)."""
    path = Path(path)
    _check_destination(path)
    directory = path.parent
    for _ in range(100):
        tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, EXCLUSIVE_FLAGS, 0o666)
            break
        except FileExistsError:
            continue
        except OSError as e:
            raise _failed(path, e) from None
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise OutputError(f"{path}: cannot create a temporary file beside it")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise _failed(path, e) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(directory)
    return path


def write_text(path: str | Path, text: str, encoding: str = "utf-8",
               errors: str = "strict") -> Path:
    """:func:`write_bytes` of ``text`` encoded."""
    return write_bytes(path, text.encode(encoding, errors))


def replace_file(src: str | Path, dst: str | Path) -> Path:
    """Rename the file ``src`` (one this process just wrote) onto ``dst`` in the same
    filesystem, replacing a symlink at ``dst`` rather than following it; returns ``dst``."""
    dst = Path(dst)
    _check_destination(dst)
    try:
        os.replace(src, dst)
    except OSError as e:
        raise OutputError(f"{dst}: cannot write: {_why(e)}") from None
    return dst
