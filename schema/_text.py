"""Text files people name: read whole and bounded, written whole or not at all.

Every command reads a person's file and writes one the same way (what is
wrong says the path and the fault), and none of them needs the YAML reader
of `schema.documents` to do it: `holon --help` imports the command modules
that use these, and so never loads that reader.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from schema.errors import EnvironmentFault, InputError, Location

__all__ = ["MAX_DOCUMENT_BYTES", "read_text", "write_error", "write_file", "writing_file"]

MAX_DOCUMENT_BYTES = 1 << 20  # manifests, suites, mandates: far smaller in practice


def read_text(
    path: str | Path,
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    expected: str = "a YAML or JSON file",
    cls: type[InputError] = InputError,
) -> str:
    """A UTF-8 text file, or `cls` naming the file and what is wrong with it.

    The one place files given by people are read: missing, a directory,
    oversized, not UTF-8 or unreadable all say so the same way.
    """
    where = Location(str(path))
    p = Path(path)
    try:
        status = p.stat()
        if stat.S_ISREG(status.st_mode):
            if status.st_size > max_bytes:
                raise cls(
                    f"file is {status.st_size} bytes, more than the {max_bytes} read",
                    location=where,
                )
            data = p.read_bytes()
        elif stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError
        else:
            # A pipe or a device (/dev/stdin, /dev/zero): read no more than the cap.
            # Opened without blocking, so a named pipe nobody writes to reads as
            # empty instead of waiting forever; then reads block as usual.
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb") as stream:
                data = stream.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise cls(f"more than the {max_bytes} bytes read", location=where)
        return data.decode("utf-8")
    except FileNotFoundError:
        raise cls("no such file", location=where) from None
    except IsADirectoryError:
        raise cls(f"is a directory, expected {expected}", location=where) from None
    except UnicodeDecodeError as exc:
        data = exc.object
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise cls(
            f"not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})",
            location=Location(str(path), line, column),
        ) from None
    except OSError as exc:
        raise cls(f"cannot read: {exc.strerror}", location=where) from None


# Errors of the machine rather than of the path a person named.
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS}


def write_file(path: str | Path, data: bytes, *, make_parents: bool = False) -> Path:
    """Write a file a person named, whole or not at all; the one place such files are written.

    A regular file (new or not) is written to a temporary file beside it and
    renamed over it, so a full disk or a crash leaves the old file or none,
    never half of one (`make_parents` creates missing folders first). A
    device or a pipe (/dev/stdout, /dev/null) is written straight to: it
    cannot be renamed over, and must not be replaced. A
    folder, a path under a regular file or a refused write is an `InputError`
    naming the path (exit 2); a full, failing or read-only disk is an
    `EnvironmentFault` (exit 3).
    """
    with writing_file(path, make_parents=make_parents) as stream:
        stream.write(data)
    return Path(path)


@contextlib.contextmanager
def writing_file(path: str | Path, *, make_parents: bool = False) -> Iterator[BinaryIO]:
    """`write_file` for a text written a piece at a time (a report of any size): the
    stream to write to, renamed into place when the block ends, removed if it raises."""
    target = Path(path)
    where = Location(str(target))
    try:
        try:
            status = target.stat()
        except FileNotFoundError:
            status = None
        if status is not None and stat.S_ISDIR(status.st_mode):
            raise InputError("is a directory, expected a file to write", location=where)
        if status is not None and not stat.S_ISREG(status.st_mode):
            with target.open("wb") as stream:
                yield stream
            return
        folder = target.parent
        if make_parents:
            folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{target.name[:40]}.tmp-")
        try:
            with os.fdopen(handle, "wb") as stream:
                yield stream
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise write_error(exc, target) from None


def write_error(exc: OSError, path: str | Path) -> InputError | EnvironmentFault:
    """The holon error for a failed write to `path`: the machine's fault, or the path's."""
    reason = exc.strerror or str(exc)
    if exc.errno in _ENVIRONMENT_ERRNOS:
        return EnvironmentFault(f"cannot write {path}: {reason}")
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        reason = "a part of the path is a file, not a folder"
    return InputError(f"cannot write: {reason}", location=Location(str(path)))
