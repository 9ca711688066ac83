"""*Add a suite* (docs/console.md): an operator uploads a .tar.gz or .zip of a suite
folder and it is installed as `holon suites add DIR` installs one. Every bound and every
member that could land outside its folder is refused before anything is written; a bad
suite is refused with the member and the place in it; a suite with code is installed
only once its files' digests are confirmed on a second upload, and its code never runs
before; nobody but an operator, and no form without its CSRF token, uploads anything."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.console._web import csrf_token
from gateway.operations import (
    MAX_ARCHIVE_BYTES,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    MAX_UNPACKED_BYTES,
)
from records import Store
from tests.evals.suites._make import SUITE_YAML, tiny_suite
from tests.gateway.console._inproc import Console, console

PATH = "/ui/suites/upload"


@pytest.fixture
def live(sqlite_store: Store, tmp_path: Path) -> Iterator[Console]:
    with console(sqlite_store, tmp_path / "home") as built:
        yield built


def _upload(
    live: Console,
    data: bytes,
    role: str = "operator",
    *,
    name: str = "tiny.tar.gz",
    csrf: bool = True,
    **fields: str,
) -> httpx.Response:
    form = {"csrf": csrf_token(live.cookie(role))} if csrf else {}
    return live.request(
        "POST",
        PATH,
        headers=live.headers(role),
        data={**form, **fields},
        files={"archive": (name, data, "application/octet-stream")},
    )


def _targz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for info, data in members:
            archive.addfile(info, None if data is None else io.BytesIO(data))
    return out.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _of_folder(folder: Path, top: str = "tiny") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        archive.add(folder, arcname=top)
    return out.getvalue()


def _zip_of_folder(folder: Path) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return out.getvalue()


def _installed(store: Store) -> list[tuple[str, int]]:
    return [(s.id, s.version) for s in store.suites.list()]


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own temporary folder, where the gateway unpacks an upload."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_an_operator_adds_a_suite_from_a_tar_gz_or_a_zip(
    live: Console, tmp_path: Path, scratch: Path
) -> None:
    form = live.get(PATH, "operator")
    assert form.status_code == 200 and 'enctype="multipart/form-data"' in form.text
    assert 'href="/ui/suites/upload"' in live.get("/ui/suites", "operator").text
    folder = tiny_suite(tmp_path / "v1")
    added = _upload(live, _of_folder(folder))
    assert added.status_code == 201, added.text[-3000:]
    assert "Installed" in added.text and "tiny v1" in added.text and "(active)" in added.text
    assert _installed(live.store) == [("tiny", 1)]
    again = _upload(live, _zip_of_folder(folder), name="tiny.zip")
    assert again.status_code == 200 and "Already installed, unchanged" in again.text
    # A second version is not active until activated: the page offers the button.
    second = tiny_suite(
        tmp_path / "v2", suite_yaml=SUITE_YAML.replace("\nversion: 1", "\nversion: 2")
    )
    added = _upload(live, _zip_of_folder(second), name="tiny.zip")
    assert added.status_code == 201, re.findall(r'role="alert">([^<]*)', added.text)
    assert 'action="/ui/suites/tiny/activate"' in added.text
    assert live.store.suites.get("tiny").version == 1
    assert live.post("/ui/suites/tiny/activate", "operator", {"version": "2"}).status_code == 303
    assert live.store.suites.get("tiny").version == 2
    assert list(scratch.iterdir()) == []  # the unpacked folders are gone


def test_a_bad_suite_is_refused_naming_the_member_and_the_place(
    live: Console, tmp_path: Path
) -> None:
    folder = tiny_suite(
        tmp_path / "bad", suite_yaml=SUITE_YAML.replace("threshold: 0.8", "threshold: high")
    )
    refused = _upload(live, _of_folder(folder))
    assert refused.status_code == 422, refused.text[-3000:]
    assert "tiny.tar.gz:tiny/suite.yaml:9" in refused.text and "threshold" in refused.text
    assert "holon-suite-upload-" not in refused.text and 'type="file"' in refused.text
    cases = tiny_suite(tmp_path / "cases")
    (cases / "cases" / "public.jsonl").write_text(json.dumps({"id": "p0"}) + "\n{not json\n")
    refused = _upload(live, _zip_of_folder(cases), name="cases.zip")
    assert refused.status_code == 422 and "cases.zip:cases/public.jsonl:" in refused.text
    empty = _upload(live, _targz([_file("README", b"no suite here")]))
    assert empty.status_code == 422 and "no suite.yaml" in empty.text
    assert _installed(live.store) == []


@pytest.mark.parametrize(
    ("members", "said"),
    [
        ([_file("../evil.yaml")], "leads outside"),
        ([_file("/etc/evil.yaml")], "an absolute path"),
        ([_file("tiny/suite.yaml"), _file("tiny/./suite.yaml")], "twice"),
        ([_file("a\\b.yaml")], "backslash"),
    ],
)
def test_a_member_that_could_land_elsewhere_is_refused(
    live: Console, members: list[tuple[tarfile.TarInfo, bytes]], said: str
) -> None:
    refused = _upload(live, _targz(list(members)))
    assert refused.status_code == 400 and said in refused.text, refused.text[-2000:]
    assert _installed(live.store) == []


@pytest.mark.parametrize(
    "kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE]
)
def test_links_devices_and_pipes_are_refused(live: Console, tmp_path: Path, kind: bytes) -> None:
    link = tarfile.TarInfo("tiny/cases/holdout.jsonl")
    link.type = kind
    link.linkname = "/etc/passwd"
    folder = tiny_suite(tmp_path)
    (folder / "cases" / "holdout.jsonl").unlink()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        archive.add(folder, arcname="tiny")
        archive.addfile(link)
    refused = _upload(live, out.getvalue())
    assert refused.status_code == 400 and "a suite is regular files only" in refused.text
    assert _installed(live.store) == []


def test_a_symlink_in_a_zip_is_refused(live: Console) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        info = zipfile.ZipInfo("tiny/suite.yaml")
        info.external_attr = 0o120777 << 16  # S_IFLNK
        archive.writestr(info, "/etc/passwd")
    refused = _upload(live, out.getvalue(), name="link.zip")
    assert refused.status_code == 400 and "a symbolic link" in refused.text


def test_every_bound_is_refused_before_anything_is_written(live: Console, scratch: Path) -> None:
    zeros = b"\0" * (MAX_MEMBER_BYTES + 1)
    one_big = _upload(live, _targz([_file("tiny/big.jsonl", zeros)]))  # ~33 KB compressed
    assert one_big.status_code == 413 and "tiny/big.jsonl" in one_big.text
    part = b"\0" * (MAX_UNPACKED_BYTES // 3 + 1)
    together = _upload(live, _targz([_file(f"tiny/{i}.jsonl", part) for i in range(3)]))
    assert together.status_code == 413 and "together" in together.text
    many = _targz([_file(f"tiny/{i}", b"") for i in range(MAX_MEMBERS + 1)])
    crowded = _upload(live, many)
    assert crowded.status_code == 413 and f"more than {MAX_MEMBERS} members" in crowded.text
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("tiny/bomb.jsonl", b"\0" * (MAX_UNPACKED_BYTES + 1))
    exploded = _upload(live, bomb.getvalue(), name="bomb.zip")
    assert exploded.status_code == 413 and len(bomb.getvalue()) < 1024 * 1024
    import gzip

    inflating = _upload(live, gzip.compress(b"\0" * (MAX_UNPACKED_BYTES * 2)))
    assert inflating.status_code == 413 and "uncompressed" in inflating.text
    heavy = _upload(live, b"\x1f\x8b" + b"\1" * MAX_ARCHIVE_BYTES)
    assert heavy.status_code == 413
    assert _installed(live.store) == [] and list(scratch.iterdir()) == []


GRADER = """\
from pathlib import Path

Path({marker!r}).write_text("ran")  # what any code could do, once imported


def grade(actual, operand):
    return actual == operand
"""


def _with_a_grader(root: Path, marker: Path) -> Path:
    suite_yaml = SUITE_YAML.replace(
        "public: {file: cases/public.jsonl}",
        "extensions:\n  graders: {same: ext/grader.py}\npublic: {file: cases/public.jsonl}",
    ).replace(
        "  - {name: label, path: $.output.label, equals: {path: $.expected.label}}\n",
        "  - {name: label, path: $.output.label, equals: {path: $.expected.label}}\n"
        "  - {name: same, path: $.output.label, same: billing}\n",
    )
    folder = tiny_suite(root, suite_yaml=suite_yaml)
    (folder / "ext").mkdir()
    (folder / "ext" / "grader.py").write_text(GRADER.format(marker=str(marker)))
    return folder


def test_code_runs_only_once_its_digests_are_confirmed(live: Console, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    folder = _with_a_grader(tmp_path / "suite", marker)
    archive = _of_folder(folder)
    digest = hashlib.sha256((folder / "ext" / "grader.py").read_bytes()).hexdigest()
    first = _upload(live, archive)
    assert first.status_code == 200 and "This suite carries code" in first.text
    assert digest in first.text and "Path(" in first.text  # its text, to be read
    assert f'name="trust" value="{digest}"' in first.text
    assert not marker.exists() and _installed(live.store) == []
    unticked = _upload(live, archive, trust=digest)
    assert unticked.status_code == 400 and not marker.exists()
    other = hashlib.sha256(b"another file").hexdigest()
    wrong = _upload(live, archive, trust=other, confirm="yes")
    assert wrong.status_code == 200 and "This suite carries code" in wrong.text
    assert not marker.exists() and _installed(live.store) == []
    (folder / "ext" / "grader.py").write_text(GRADER.format(marker=str(marker)) + "# changed\n")
    changed = _upload(live, _of_folder(folder), trust=digest, confirm="yes")
    assert changed.status_code == 200 and "This suite carries code" in changed.text
    assert not marker.exists() and _installed(live.store) == []
    confirmed = _upload(live, archive, trust=digest, confirm="yes")
    assert confirmed.status_code == 201, confirmed.text[-3000:]
    assert marker.exists() and _installed(live.store) == [("tiny", 1)]


def test_only_an_operator_with_the_forms_token_uploads(live: Console, tmp_path: Path) -> None:
    archive = _of_folder(tiny_suite(tmp_path))
    for role in ("org:acme", "caller:finance-bot"):
        assert live.get(PATH, role).status_code == 403, role
        assert _upload(live, archive, role).status_code == 403, role
        assert 'href="/ui/suites/upload"' not in live.get("/ui/suites", role).text
    assert _upload(live, archive, csrf=False).status_code == 403
    wrong = live.request(
        "POST",
        PATH,
        headers=live.headers("operator"),
        data={"csrf": "0" * 64},
        files={"archive": ("tiny.tar.gz", archive, "application/gzip")},
    )
    assert wrong.status_code == 403
    cross = live.request(
        "POST",
        PATH,
        headers={**live.headers("operator"), "origin": "https://evil.example"},
        data={"csrf": csrf_token(live.cookie("operator"))},
        files={"archive": ("tiny.tar.gz", archive, "application/gzip")},
    )
    assert cross.status_code == 403
    signed_out = live.request("POST", PATH, files={"archive": ("t.tar.gz", archive)})
    assert signed_out.status_code == 401
    urlencoded = live.post(PATH, "operator", {"archive": "x"})
    assert urlencoded.status_code == 400
    assert _installed(live.store) == []


def test_a_file_named_as_a_folder_is_refused(live: Console) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("tiny/cases", "a file")
        archive.writestr("tiny/cases/public.jsonl", "{}")
    refused = _upload(live, out.getvalue(), name="clash.zip")
    assert refused.status_code == 400 and "cannot be unpacked" in refused.text
    clash = _targz([_file("tiny/cases"), _file("tiny/cases/public.jsonl")])
    refused = _upload(live, clash)
    assert refused.status_code == 400 and "cannot be unpacked" in refused.text
