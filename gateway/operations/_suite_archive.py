"""An uploaded suite archive (tar.gz or zip) unpacked into a fresh folder, bounded.

Every bound is checked on the archive's own listing before a byte is written: its
compressed size, its number of members, each member's size and all of them together
(a gzip stream is inflated in memory up to what that many members of that size can take,
and no further), and each member's name and kind: no absolute path, no `..`, no name
twice, nothing but regular files and folders (no symbolic or hard link, no device, no
pipe). Only then are the files written, into the folder given (tar through the stdlib's
`data` extraction filter as well; zip one member at a time, its declared size enforced).
What is refused is an `UsageError` naming the member (413 for a bound).
"""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path

from gateway.operations._suite_upload import (
    MAX_ARCHIVE_BYTES,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    MAX_UNPACKED_BYTES,
)
from schema.errors import PayloadTooLarge, UsageError

__all__ = ["unpack"]

MAX_NAME_CHARS = 1000
# A tar stream of MAX_MEMBERS members within the bounds: each member's header (512
# bytes, more for a long name) and its padding to 512 bytes, and the two end blocks.
MAX_TAR_BYTES = MAX_UNPACKED_BYTES + MAX_MEMBERS * 2048 + 2 * 512
CHUNK = 64 * 1024

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"


def _too_large(what: str, limit: int, member: str | None = None) -> PayloadTooLarge:
    details: dict[str, object] = {"limit": limit}
    if member is not None:
        details["member"] = member
    return PayloadTooLarge(f"{what} is over {limit} bytes", details=details)


def _crowded() -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the archive has more than {MAX_MEMBERS} members", details={"limit": MAX_MEMBERS}
    )


def _refused(member: str, why: str) -> UsageError:
    return UsageError(f"{member[:200]!r}: {why}", details={"member": member[:200]})


def member_name(raw: str) -> str:
    """A member's name as a relative path inside the archive ("" for its top folder),
    or the refusal of one that could land anywhere else."""
    if "\x00" in raw or "\\" in raw or len(raw) > MAX_NAME_CHARS:
        raise _refused(raw, "not a plain relative name (a NUL, a backslash, or too long)")
    if raw.startswith("/"):
        raise _refused(raw, "an absolute path: members are relative to the suite folder")
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _refused(raw, "'..' leads outside the suite folder")
    return "/".join(parts)


class _Listing:
    """The members seen so far: their count, names and sizes, each bound checked as it
    is added."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.total = 0

    def add(self, raw: str, size: int) -> str:
        if len(self.names) >= MAX_MEMBERS:
            raise _crowded()
        name = member_name(raw)
        if name in self.names:
            raise _refused(raw, "this name is in the archive twice")
        if size > MAX_MEMBER_BYTES:
            raise _too_large(f"member {raw[:200]!r}", MAX_MEMBER_BYTES, raw[:200])
        self.total += size
        if self.total > MAX_UNPACKED_BYTES:
            raise _too_large("the archive's files together", MAX_UNPACKED_BYTES)
        if name:
            self.names.add(name)
        return name


def _inflated(data: bytes) -> bytes:
    """A gzip stream's content, refused past MAX_TAR_BYTES before more is inflated."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_TAR_BYTES + 1)
    except zlib.error as exc:
        raise UsageError(f"not a valid gzip stream: {exc}") from None
    if len(out) > MAX_TAR_BYTES or inflater.unconsumed_tail:
        raise _too_large("the archive, uncompressed,", MAX_TAR_BYTES)
    if not inflater.eof:
        raise UsageError("the gzip stream is cut short")
    if inflater.unused_data:
        raise UsageError("there is more after the gzip stream: send one .tar.gz")
    return out


def _kind(member: tarfile.TarInfo) -> str | None:
    """What a tar member is, when it is not a regular file or a folder."""
    if member.issym():
        return "a symbolic link"
    if member.islnk():
        return "a hard link"
    if member.ischr() or member.isblk():
        return "a device"
    if member.isfifo():
        return "a named pipe"
    if not (member.isreg() or member.isdir()):
        return "not a regular file or a folder"
    return None


def _untar(data: bytes, into: Path) -> None:
    try:
        archive = tarfile.open(fileobj=io.BytesIO(_inflated(data)), mode="r:")
    except tarfile.TarError as exc:
        raise UsageError(f"not a valid tar archive inside the gzip stream: {exc}") from None
    with archive:
        listing, members = _Listing(), []
        try:
            for member in archive:
                kind = _kind(member)
                if kind is not None:
                    raise _refused(member.name, f"{kind}: a suite is regular files only")
                listing.add(member.name, member.size if member.isreg() else 0)
                members.append(member)
        except tarfile.TarError as exc:
            raise UsageError(f"the tar archive is damaged: {exc}") from None
        try:
            # The stdlib's own checks too (no link, no device, nothing outside `into`, no
            # set-user-id or other odd modes), where this Python has them (3.11.4 and
            # later, and distributions' backports); the checks above hold without them.
            if hasattr(tarfile, "data_filter"):
                archive.extractall(into, members=members, filter="data")
            else:  # pragma: no cover - a Python before PEP 706
                archive.extractall(into, members=members)
        except (tarfile.TarError, OSError) as exc:
            raise UsageError(f"the tar archive cannot be unpacked: {exc}") from None


def _zip_kind(info: zipfile.ZipInfo) -> str | None:
    kind = stat.S_IFMT(info.external_attr >> 16)  # 0: a zip tool that sets no file type
    if kind == stat.S_IFLNK:
        return "a symbolic link"
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "not a regular file or a folder"
    if info.flag_bits & 0x1:
        return "encrypted"
    return None


def _unzip(data: bytes, into: Path) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise UsageError(f"not a valid zip archive: {exc}") from None
    with archive:
        infos = archive.infolist()  # the central directory, read whole: its count first
        if len(infos) > MAX_MEMBERS:
            raise _crowded()
        listing, files = _Listing(), []
        for info in infos:
            kind = _zip_kind(info)
            if kind is not None:
                raise _refused(info.filename, f"{kind}: a suite is regular files only")
            name = listing.add(info.filename, 0 if info.is_dir() else info.file_size)
            if name:
                files.append((info, name))
        for info, name in files:
            target = into / name
            try:
                (target if info.is_dir() else target.parent).mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a file where a folder was named: `a` and `a/b`
                raise _refused(info.filename, f"cannot be unpacked: {exc.strerror}") from None
            if not info.is_dir():
                _copy(archive, info, target)


def _copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> None:
    """One member written, no more than its declared size (zipfile stops there and
    checks its CRC); a name taken already (a file where a folder was) is refused."""
    written = 0
    try:
        with archive.open(info) as source, target.open("xb") as out:
            while chunk := source.read(CHUNK):
                written += len(chunk)
                if written > info.file_size:
                    raise _too_large(f"member {info.filename[:200]!r}", info.file_size)
                out.write(chunk)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError) as exc:
        raise _refused(info.filename, f"cannot be unpacked: {exc}") from None


def unpack(data: bytes, into: Path) -> None:
    """The archive `data` (tar.gz or zip, told by its first bytes) written under the
    empty folder `into`, or refused with nothing more written than what was checked."""
    if len(data) > MAX_ARCHIVE_BYTES:
        raise _too_large("the archive", MAX_ARCHIVE_BYTES)
    if data.startswith(GZIP_MAGIC):
        _untar(data, into)
    elif data.startswith(ZIP_MAGIC):
        _unzip(data, into)
    else:
        raise UsageError("not a suite archive: send a .tar.gz or a .zip of a suite folder")
