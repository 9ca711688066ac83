"""Trusted case loaders: a suite's cases made by Python (`extensions: loaders:`).

A loader file defines `load()`, returning a list of case dicts (a dataset
reader, say). The suite names it for a split: `public: {loader: NAME}` or
`holdout: {loader: NAME}`. Its output is written as JSONL text and read by
the case-file reader, so it meets the same schema and bounds as a case file;
an error names the loader, the case's index and the JSON path in it.

Loaders run when a suite is loaded from its directory (`holon test`,
`holon suites add`), never from an installed copy: installing stores their
cases beside the suite's files, under LOADED_DIR, and an installed suite reads
those. So an installed suite's cases are the ones its digests cover, however
the loader (or the data it reads) behaves later; a re-run that disagreed could
only make an installed, certified suite unusable.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

from schema.documents import Document, PathKey
from schema.errors import Location, SuiteError
from schema.jsontext import dumps

# Hidden: a suite directory's dot-files are never installed (`suite_files`), so
# an author cannot plant cases here; only `describe` writes them, from the loader.
LOADED_DIR = ".loaded"


def pinned_file(split: str) -> str:
    """Where an installed suite keeps the cases its loader gave for `split`."""
    return f"{LOADED_DIR}/{split}.jsonl"


def run_loader(
    load: Callable[[], Any],
    *,
    name: str,
    relative: str,
    document: Document,
    at: PathKey,
    max_cases: int,
    max_chars: int,
) -> str:
    """The loader's cases as JSONL text (one canonical object a line), bounded."""
    where = f"loader {name!r} ({relative})"
    try:
        # What a loader prints (progress, say) must not mix into a `--json` answer.
        with contextlib.redirect_stdout(sys.stderr):
            cases = load()
    except (Exception, SystemExit) as exc:  # trusted code failing: say which and why
        raise document.error(
            f"{where} failed: {type(exc).__name__}: {exc}"[:2000], at, cls=SuiteError
        ) from None
    if not isinstance(cases, list | tuple):
        raise document.error(
            f"{where} returned {type(cases).__name__}, not a list of cases", at, cls=SuiteError
        )
    if len(cases) > max_cases:
        raise document.error(
            f"{where} returned {len(cases)} cases, more than {max_cases} in one split",
            at,
            cls=SuiteError,
        )
    lines: list[str] = []
    total = 0
    for index, case in enumerate(cases):
        if not isinstance(case, dict):
            raise SuiteError(
                f"loader {name!r} case {index}: each case is a dict, got {type(case).__name__}",
                location=loader_location(relative, index),
            )
        try:
            # ASCII: a lone surrogate stays an escape, which the reader refuses by name.
            line = dumps(case, ensure_ascii=True)
        except RecursionError:
            raise SuiteError(
                f"loader {name!r} case {index}: the case nests too deeply (or refers to itself)",
                location=loader_location(relative, index),
            ) from None
        except (TypeError, ValueError) as exc:
            raise SuiteError(
                f"loader {name!r} case {index}: not JSON: {exc}",
                location=loader_location(relative, index),
            ) from None
        total += len(line) + 1
        if total > max_chars:
            raise document.error(
                f"{where} returned more than {max_chars} characters of cases", at, cls=SuiteError
            )
        lines.append(line)
    return "".join(line + "\n" for line in lines)


def loader_location(relative: str, index: int, path: str | None = None) -> Location:
    """Case `index` of a loader's output: the loader's file and `$[index]…`."""
    return Location(relative, path=f"$[{index}]" + (path[1:] if path else ""))


def relocate(error: SuiteError, name: str, relative: str) -> SuiteError:
    """An error the case reader located at line N of the loader's text, located at the
    loader's case N-1 instead (the text is one case a line)."""
    line = error.location.line
    if line is None:
        return SuiteError(f"loader {name!r}: {error.message}", location=Location(relative))
    return SuiteError(
        f"loader {name!r} case {line - 1}: {error.message}",
        location=loader_location(relative, line - 1, error.location.path),
        hint=error.hint,
    )
