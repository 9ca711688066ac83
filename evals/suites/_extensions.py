"""Trusted Python extensions of a suite: custom graders, fixture generators, case loaders.

Suites are data; where an operator really needs code, a suite names Python
files under `extensions:` and holon runs them only once they are trusted:
`holon suites trust PATH` records the sha256 of each file (after a person
has read them). A changed file has another digest, so it is untrusted again.
Trust is kept per user under HOLON_HOME (like an allow-list), because
`holon test` runs suites with no store; an installed suite's files are
pinned by its digest and were trusted by the operator who installed it.

- a grader file defines `grade(actual, operand) -> bool | (bool, detail)`
  and is used in checks as a predicate named by its key;
- a generator file defines `GENERATOR`, an `evals.fixtures.Generator` whose
  name is its key;
- a loader file defines `load() -> list[dict]`, a split's cases (`_loaders`).
The source digests go into `checks_digest` (a loader's into `dataset_digest` too).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.fixtures import Generator, get_generator, register_generator
from schema.documents import Document, write_file
from schema.errors import EnvironmentFault, InputError, SuiteError

TRUST_FILE = "trusted-extensions.json"

Trusted = Callable[[str], bool]  # sha256 hex -> trusted?

EXTENSION_KINDS = ("graders", "generators", "loaders")  # the keys of a suite's `extensions:` block


@dataclass(frozen=True)
class ExtensionFile:
    kind: str  # one of EXTENSION_KINDS
    name: str
    relative: str
    path: Path
    sha256: str


def extension_files(directory: Path, document: Document) -> list[ExtensionFile]:
    """The files a suite's `extensions:` block names, with their digests."""
    block = document.value.get("extensions") or {}
    files = []
    for kind in EXTENSION_KINDS:
        for name, relative in (block.get(kind) or {}).items():
            path = (directory / relative).resolve()
            if not path.is_relative_to(directory.resolve()):
                raise document.error(
                    f"{relative!r} leads outside the suite directory",
                    ("extensions", kind, name),
                    cls=SuiteError,
                )
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise document.error(
                    f"cannot read extension {relative!r}: {exc.strerror}",
                    ("extensions", kind, name),
                    cls=SuiteError,
                ) from None
            files.append(
                ExtensionFile(kind, name, relative, path, hashlib.sha256(data).hexdigest())
            )
    return files


class TrustStore:
    """Digests of extension files a person has trusted, under HOLON_HOME."""

    def __init__(self, home: Path) -> None:
        self.path = home / TRUST_FILE

    def _load(self) -> dict[str, Any]:
        # The list is HOLON_HOME's state, not the suite's: a fault in it is the
        # environment's (exit 3), with what to do about it.
        hint = "fix or delete the file, then trust the suites again"
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise EnvironmentFault(
                f"cannot read the trust list {self.path}: {exc.strerror or exc}", hint=hint
            ) from None
        except ValueError as exc:  # not UTF-8, not JSON
            raise EnvironmentFault(
                f"the trust list {self.path} is damaged: {exc}", hint=hint
            ) from None
        if not isinstance(loaded, dict):
            raise EnvironmentFault(f"the trust list {self.path} is damaged", hint=hint)
        return loaded

    def trusted(self, sha256: str) -> bool:
        return sha256 in self._load()

    def trust(self, files: list[ExtensionFile]) -> None:
        # Here, not at the top: `holon test` loads suites with no store, and
        # importing records would load SQLAlchemy and every model for it.
        from records import utc_text, utcnow

        entries = self._load()
        now = utc_text(utcnow())
        for file in files:
            entries[file.sha256] = {"file": str(file.path), "trusted_at": now}
        text = json.dumps(entries, indent=1, sort_keys=True)
        write_file(self.path, text.encode("utf-8"), make_parents=True)  # whole or not at all


def _import(file: ExtensionFile) -> Any:
    spec = importlib.util.spec_from_file_location(f"holon_ext_{file.sha256[:16]}", file.path)
    if spec is None or spec.loader is None:
        raise SuiteError(f"cannot import extension {file.relative!r}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # trusted code failing to import: say which and why
        raise SuiteError(f"extension {file.relative!r} failed to import: {exc}") from None
    return module


@dataclass(frozen=True)
class Extensions:
    """A suite's imported extensions (generators are registered, not kept)."""

    graders: dict[str, Callable[[Any, Any], Any]]
    loaders: dict[str, tuple[ExtensionFile, Callable[[], Any]]]
    files: list[ExtensionFile]


def load_extensions(directory: Path, document: Document, trusted: Trusted | None) -> Extensions:
    """Import the suite's trusted extensions: graders and loaders by name; generators get
    registered."""
    files = extension_files(directory, document)
    graders: dict[str, Callable[[Any, Any], Any]] = {}
    loaders: dict[str, tuple[ExtensionFile, Callable[[], Any]]] = {}
    for file in files:
        if trusted is None or not trusted(file.sha256):
            raise _refusal(
                document,
                file,
                f"extension {file.relative!r} (sha256 {file.sha256[:16]}…) is not trusted; "
                "read it, then run `holon suites trust " + str(directory) + "`",
            )
        module = _import(file)
        if file.kind == "graders":
            graders[file.name] = _function(
                module, document, file, "grader", "grade(actual, operand)"
            )
        elif file.kind == "loaders":
            loaders[file.name] = (file, _function(module, document, file, "loader", "load()"))
        else:
            generator = getattr(module, "GENERATOR", None)
            if not isinstance(generator, Generator) or generator.name != file.name:
                raise _refusal(
                    document,
                    file,
                    f"generator {file.relative!r} defines no GENERATOR named {file.name!r}",
                )
            _register(generator, file, document)
    return Extensions(graders, loaders, files)


def _refusal(document: Document, file: ExtensionFile, message: str) -> InputError:
    """A SuiteError at the file's entry of the suite's `extensions:` block."""
    return document.error(message, ("extensions", file.kind, file.name), cls=SuiteError)


def _function(
    module: Any, document: Document, file: ExtensionFile, what: str, signature: str
) -> Callable[..., Any]:
    """The function `signature` names that an extension file must define."""
    function: object = getattr(module, signature.split("(", 1)[0], None)
    if not callable(function):
        raise _refusal(document, file, f"{what} {file.relative!r} defines no function {signature}")
    return function


_SOURCES: dict[str, str] = {}  # generator name -> the digest of the file that registered it


def _register(generator: Generator, file: ExtensionFile, document: Document) -> None:
    known = _SOURCES.get(generator.name)
    if known == file.sha256:
        return
    if known is not None or _builtin(generator.name):
        raise _refusal(
            document, file, f"a fixture generator named {generator.name!r} exists already"
        )
    register_generator(generator)
    _SOURCES[generator.name] = file.sha256


def _builtin(name: str) -> bool:
    try:
        get_generator(name)
    except SuiteError:
        return False
    return True


def digests(files: list[ExtensionFile]) -> Mapping[str, str]:
    return {f"{f.kind}/{f.name}": f.sha256 for f in files}
