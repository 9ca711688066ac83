"""Installing suites into the store, and reading installed ones back.

A suite is installed as its files (every regular file of its directory) with
its digests, so every host and worker sees the same suite. An installed suite
is read by writing its files into a content-addressed folder under
HOLON_HOME/suites/ (the operator's copy: never served) and loading that.
The cases a trusted loader gave are installed with the files (`_loaders`):
an installed suite reads them and never runs its loaders again.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from pathlib import Path

from ruamel.yaml import YAML

from evals.suites._extensions import Trusted
from evals.suites._identity import suite_digests
from evals.suites._load import SUITE_FILE, load_suite
from evals.suites._loaders import pinned_file
from evals.suites._model import Suite
from records import InstalledSuite, Store, SuiteInstall
from schema.errors import Location, SuiteError

MAX_SUITE_FILES = 1000
MAX_SUITE_BYTES = 64 * 1024 * 1024


def suite_files(suite: Suite) -> dict[str, str]:
    """Every regular, visible file of the suite directory as text, by relative path."""
    files: dict[str, str] = {}
    total = 0
    root = suite.directory
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if path.is_symlink() and not path.resolve().is_relative_to(root.resolve()):
            raise SuiteError(
                "a symlink leads outside the suite directory", location=Location(str(path))
            )
        if not path.is_file():
            continue
        data = path.read_bytes()
        total += len(data)
        if len(files) >= MAX_SUITE_FILES or total > MAX_SUITE_BYTES:
            raise SuiteError(
                f"a suite holds at most {MAX_SUITE_FILES} files and {MAX_SUITE_BYTES} bytes",
                location=Location(str(root)),
            )
        try:
            files[relative.as_posix()] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SuiteError(
                "suites are text (YAML, JSON, JSONL): this file is not UTF-8",
                location=Location(str(path)),
            ) from None
    return files


def describe(suite: Suite) -> SuiteInstall:
    digests = suite_digests(suite)
    pool = suite.holdout_pool
    if pool is not None:
        kind = "pool"
    elif suite.holdout_file is not None:
        kind = "file"
    elif suite.holdout_generator is not None:
        kind = "generate"
    else:
        kind = "none"
    return SuiteInstall(
        id=suite.id,
        version=suite.version,
        capability=suite.capability,
        title=suite.title,
        suite_digest=digests.suite,
        digests=digests.to_json(),
        files={
            **suite_files(suite),
            **{pinned_file(split): text for split, text in suite.loaded.items()},
        },
        public_cases=len(suite.public),
        holdout_cases=suite.holdout_count,
        holdout_kind=kind,
        grace_days=suite.grace_days,
        holdout_pool_cases=None if pool is None else pool.cases,
        holdout_pool_epochs=None if pool is None else pool.epochs,
    )


def install_suite(
    store: Store, path: str | Path, *, activate: bool = False, trusted: Trusted | None = None
) -> tuple[str, InstalledSuite]:
    """Validate the suite at `path` and install it; ("installed" | "unchanged", the version)."""
    suite = load_suite(path, trusted=trusted)
    existing = store.suites.for_capability(suite.capability)
    if existing is not None and existing.id != suite.id:
        raise SuiteError(
            f"capability {suite.capability} is certified by suite {existing.id!r} already; "
            "one suite certifies a capability",
            location=Location(str(Path(path))),
        )
    return store.suites.install(describe(suite), activate=activate)


def materialise(store: Store, suite_id: str, version: int, home: Path) -> Path:
    """The installed version's files in a folder under `home`/suites (written once)."""
    installed = store.suites.get(suite_id, version)
    target = home / "suites" / suite_id / f"{version}-{installed.suite_digest[:16]}"
    if (target / SUITE_FILE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        for relative, text in store.suites.files(suite_id, version).items():
            destination = staging / relative
            if not destination.resolve().is_relative_to(staging.resolve()):
                raise SuiteError(f"an installed file escapes its folder: {relative!r}")
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_text(text, encoding="utf-8")
        try:
            os.rename(staging, target)
        except OSError:
            if not (target / SUITE_FILE).is_file():  # lost a race to nobody: a real error
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def load_installed(store: Store, suite_id: str, home: Path, version: int | None = None) -> Suite:
    installed = store.suites.get(suite_id, version)
    # The files are the ones installed (pinned by the suite digest); the
    # operator trusted any extension among them when installing it, and the
    # loaders' cases are the ones stored then.
    return load_suite(
        materialise(store, suite_id, installed.version, home),
        trusted=lambda _digest: True,
        pinned=True,
    )


def public_files(suite: Suite) -> dict[str, str]:
    """The suite without its holdout: for `holon suites pull` (offline practice).

    Loaded cases are never among them (`suite_files` skips LOADED_DIR); a holdout
    loader's source goes too, as it may hold or make the holdout's cases.
    """
    files = suite_files(suite)
    holdout = suite.document.get("holdout") or {}
    if "file" in holdout:
        files.pop(holdout["file"], None)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    document = yaml.load(files[SUITE_FILE])
    document.pop("holdout", None)
    if "loader" in holdout:
        loaders = document["extensions"]["loaders"]
        files.pop(loaders.pop(holdout["loader"]), None)
        if not loaders:
            document["extensions"].pop("loaders")
        if not document["extensions"]:
            document.pop("extensions")
    out = io.StringIO()
    yaml.dump(document, out)
    files[SUITE_FILE] = out.getvalue()
    return files
