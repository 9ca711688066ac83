"""A suite installed from an uploaded archive (the console's *Add a suite*, operators').

The archive (tar.gz or zip of a suite folder) is unpacked, within its bounds, into a
fresh temporary folder (_suite_archive.py), and installed from there by `suites.add`'s
own code (`installed_view`): the same validation and the same located errors, which
name the archive and the member (`suite.tar.gz:tiny/cases.jsonl:3:1: $.input: …`)
instead of the temporary folder. The folder is gone once the answer is made.

A suite's code (graders, generators and case loaders under `extensions:`) runs inside
the gateway as soon as the suite is validated, and again whenever an eval is graded, so
it is the gate the CLI has (`holon suites trust` records each file's sha256 after a
person read it; `suites add` imports only trusted files), with the trust given on the
upload itself: an upload with code installs nothing and answers each code file, its
sha256 and its text (`needs_trust`) until the same upload comes again with every one of
those digests confirmed (`trust`). Nothing is trusted from the gateway's own trust list
(whoever uploads confirms the code each time), and a file that changed between the two
uploads has another digest, so it is shown again rather than run.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.operations._suites import installed_view
from schema.errors import HolonError, InputError, Location, SuiteError
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService

__all__ = [
    "MAX_ARCHIVE_BYTES",
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "MAX_UNPACKED_BYTES",
    "SuiteUpload",
    "upload_suite",
]

# What an upload may be (_suite_archive.py holds the archive to them before writing).
MAX_ARCHIVE_BYTES = 8 * 1024 * 1024  # as sent (the gateway's usual request body bound)
MAX_UNPACKED_BYTES = 64 * 1024 * 1024  # every file together (a suite's own bound)
MAX_MEMBER_BYTES = 32 * 1024 * 1024  # one file
MAX_MEMBERS = 10_000  # files and folders

MACOS_FOLDER = "__MACOSX"  # what macOS's Finder adds to a zip: resource forks, not the suite


@dataclass(frozen=True)
class SuiteUpload:
    name: str  # the archive's file name as sent: its errors name it
    data: bytes
    activate: bool = False
    # The sha256 of each code file the uploader read and confirmed (none: a first upload).
    trust: frozenset[str] = field(default_factory=frozenset)


def upload_suite(service: StoreService, upload: SuiteUpload) -> JSONObject:
    """`{"status": "needs_trust", "code": [...]}` for a suite whose code is not all
    confirmed (nothing installed), else what `holon suites add` answers."""
    from gateway.operations._suite_archive import unpack

    with tempfile.TemporaryDirectory(prefix="holon-suite-upload-") as folder:
        root = Path(folder)
        try:
            unpack(upload.data, root)
            suite = _suite_folder(root, upload.name)
            code = _code(suite)
            if any(entry["sha256"] not in upload.trust for entry in code):
                return {"status": "needs_trust", "archive": upload.name, "code": code}
            return installed_view(
                service, suite, activate=upload.activate, trusted=upload.trust.__contains__
            )
        except HolonError as exc:
            raise _relocated(exc, root, upload.name) from None


def _suite_folder(root: Path, name: str) -> Path:
    """The suite's folder in the archive: its top, or its one top folder (`tar czf
    suite.tar.gz my-suite/`)."""
    from evals.suites import SUITE_FILE

    tops = [p for p in root.iterdir() if not p.name.startswith(".") and p.name != MACOS_FOLDER]
    folders = [root, *tops] if len(tops) == 1 and tops[0].is_dir() else [root]
    for folder in folders:
        if (folder / SUITE_FILE).is_file():
            return folder
    raise SuiteError(
        f"no {SUITE_FILE} at the archive's top or in its one top folder: "
        "send a .tar.gz or .zip of one suite folder",
        location=Location(name),
    )


def _code(suite: Path) -> list[dict[str, Any]]:
    """The suite's code files as `holon suites trust` lists them, with their text."""
    from evals.suites import extension_files, suite_file
    from schema import load_document, validate_document, validator

    file = suite_file(suite)
    document = load_document(file)
    # Checked as `suites add` checks it first, so an `extensions:` block is read whole.
    validate_document(document, validator("suite"), cls=SuiteError, what="suite")
    return [
        {
            "kind": f.kind,
            "name": f.name,
            "file": f.relative,
            "sha256": f.sha256,
            "text": f.path.read_bytes().decode("utf-8", errors="replace"),
        }
        for f in extension_files(file.parent, document)
    ]


def _relocated(exc: HolonError, root: Path, name: str) -> HolonError:
    """`exc` with the temporary folder's paths read as the archive's members."""
    prefixes = sorted({str(root.resolve()), str(root)}, key=len, reverse=True)

    def swap(text: str) -> str:
        for prefix in prefixes:
            text = text.replace(prefix + "/", name + ":").replace(prefix, name)
        return text

    exc.message = swap(exc.message)
    exc.args = (exc.message, *exc.args[1:])
    exc.hint = None if exc.hint is None else swap(exc.hint)
    exc.details = {k: swap(v) if isinstance(v, str) else v for k, v in exc.details.items()}
    if isinstance(exc, InputError) and exc.location.file is not None:
        exc.location = dataclasses.replace(exc.location, file=swap(exc.location.file))
    return exc
