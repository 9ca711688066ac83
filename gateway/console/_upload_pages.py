"""*Add a suite*: an operator uploads a .tar.gz or .zip of a suite folder, installed as
`holon suites add DIR` installs one (gateway.operations.upload_suite: bounded unpacking,
the same validation and located errors, the same trust gate for code).

A suite with code (graders, generators, loaders under `extensions:`) takes two steps: the
first upload installs nothing and shows each code file, its sha256 and its text; the
operator reads them, chooses the same archive again and confirms those digests, and only
then is the code run (validated, then installed). A refused upload is shown on the form,
its error naming the archive's member and the place in it.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from evals import visible
from gateway.console._web import Web
from gateway.operations import (
    MAX_ARCHIVE_BYTES,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    MAX_UNPACKED_BYTES,
    SuiteUpload,
    upload_suite,
)
from schema.errors import HolonError, UsageError

__all__ = ["UPLOAD_BODY_BYTES", "upload_form", "upload_suite_page"]

# The archive, and room for the form's other fields and the multipart framing.
UPLOAD_BODY_BYTES = MAX_ARCHIVE_BYTES + 64 * 1024
MAX_NAME_CHARS = 200
HEX = frozenset("0123456789abcdef")
BOUNDS = {
    "archive": MAX_ARCHIVE_BYTES,
    "unpacked": MAX_UNPACKED_BYTES,
    "member": MAX_MEMBER_BYTES,
    "members": MAX_MEMBERS,
}


def _page(web: Web, status: int = 200, **context: Any) -> Response:
    values: dict[str, Any] = {"problem": None, "pending": None, "result": None, "activate": False}
    return web.page("suite_upload.html", status, bounds=BOUNDS, **{**values, **context})


async def upload_form(web: Web) -> Response:
    return _page(web)


def _archive_name(filename: str) -> str:
    """The file's own name (a browser may send a whole path), visible and bounded: it
    names the archive in the errors shown."""
    name = filename.replace("\\", "/").rsplit("/", 1)[-1].strip() or "the archive"
    return visible(name[:MAX_NAME_CHARS])


def _trusted(web: Web) -> frozenset[str]:
    """The digests confirmed on the form: none unless its box is ticked."""
    digests = [d.strip() for d in web.form.get("trust", "").split(",") if d.strip()]
    if not digests:
        return frozenset()
    if web.form.get("confirm") != "yes":
        raise UsageError(
            "tick the box that says you read the code and trust it to run in this gateway",
            details={"field": "confirm"},
        )
    if len(digests) > 1000 or not all(len(d) == 64 and set(d) <= HEX for d in digests):
        raise UsageError("the confirmed digests are not sha256 digests", details={"field": "trust"})
    return frozenset(digests)


async def upload_suite_page(web: Web) -> Response:
    archive = web.files.get("archive")
    activate = web.form.get("activate") == "yes"
    if archive is None or not archive.data:
        return _page(web, 400, problem={"message": "choose a suite archive (.tar.gz or .zip)"})
    name = _archive_name(archive.filename)
    try:
        asked = SuiteUpload(name, archive.data, activate=activate, trust=_trusted(web))
        result = await web.shared.run(upload_suite, web.shared.service, asked)
    except HolonError as exc:
        # Shown on the form, as `holon suites add` prints it: the member and the place.
        status = exc.http_status if exc.http_status >= 400 else 500
        return _page(web, status, problem=exc.to_body()["error"], activate=activate)
    if result["status"] == "needs_trust":
        return _page(web, pending=result, activate=activate)
    return _page(web, 201 if result["status"] == "installed" else 200, result=result)
