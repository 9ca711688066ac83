"""A console form that carries a file (multipart/form-data): the suite upload's.

Bounded before it is parsed: the whole body (413 past it, declared or read), at most
MAX_PARTS parts. Parsed by the stdlib's MIME parser (holon has no multipart dependency):
a field is text, as an urlencoded form's; a file is its name as the browser sent it and
its bytes, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.policy import HTTP

from anyio import to_thread
from starlette.requests import Request

from gateway.web import read_body
from schema.errors import UsageError

__all__ = ["MAX_PARTS", "Upload", "read_multipart"]

MAX_PARTS = 16


@dataclass(frozen=True)
class Upload:
    filename: str  # as the browser sent it: hostile text, shown escaped
    data: bytes


def _text(value: str) -> str:
    # The parser keeps undecodable bytes as surrogates: show them as U+FFFD instead.
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


async def read_multipart(request: Request, limit: int) -> tuple[dict[str, str], dict[str, Upload]]:
    """The form's fields and files; the last of a repeated name wins. Parsed in a worker
    thread: 8 MiB take about 0.3 s, which the event loop does not wait for."""
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data") or not content_type.isascii():
        raise UsageError("this form is sent as multipart/form-data (it carries a file)")
    raw = await read_body(request, limit)
    return await to_thread.run_sync(_parsed, content_type, raw)


def _parsed(content_type: str, raw: bytes) -> tuple[dict[str, str], dict[str, Upload]]:
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("ascii")
    message = BytesParser(policy=HTTP).parsebytes(head + raw)
    if not isinstance(message, EmailMessage) or not message.is_multipart() or message.defects:
        raise UsageError("the form is not a valid multipart form")
    parts: list[Message] = list(message.iter_parts())
    if len(parts) > MAX_PARTS:
        raise UsageError(f"a form carries at most {MAX_PARTS} fields")
    fields: dict[str, str] = {}
    files: dict[str, Upload] = {}
    for part in parts:
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes):
            raise UsageError("the form is not a valid multipart form: a part has no name")
        filename = part.get_filename()
        if filename is not None:
            files[name] = Upload(_text(filename), payload)
            continue
        try:
            fields[name] = payload.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"the form's field {name[:40]!r} is not UTF-8 text") from None
    return fields, files
