"""Case files (JSONL): strict, line-numbered, bounded (docs/suites.md, "Cases")."""

from __future__ import annotations

import json
import re  # noqa: TID251 - a fixed, linear pattern of holon's own
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from evals.checks import CompiledCheck, compile_checks
from evals.suites._model import Case, Split
from schema import load_schema, quick_validity, validator
from schema.documents import Document, PathKey, explain, read_text
from schema.errors import Location, SuiteError
from schema.jsontext import dumps, size_bound

# A \uD800 to \uDFFF escape, either case: where a surrogate may be (a paired one too).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

MAX_CASES = 5000
MAX_INPUT_CHARS = 20_000
MAX_CASE_FILE_BYTES = 64 * 1024 * 1024

# Checks a case adds compile against the case's own line: `Document` gives
# file:line positions, the column being that of the line's start.
ReferenceCheck = Callable[[Any, PathKey, Location], None]


class _DuplicateKey(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"duplicate key {key!r}")
            seen.add(key)
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# As `schema.jsontext.loads` (exact numbers, no NaN), and strict like the YAML
# loader: a duplicate key would silently keep only its last value.
_DECODER = json.JSONDecoder(
    parse_float=Decimal, parse_constant=_reject_constant, object_pairs_hook=_unique
)


def _lone_surrogate(value: Any) -> str | None:
    """The first string (or key) holding an unpaired UTF-16 surrogate, which no store can keep."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _line_document(value: Any, file: str, line: int) -> Document:
    doc = Document(value, file)
    doc.positions[()] = (line, 1)
    return doc


_EXPECTED_HINT = (
    "an expected answer must be one the output schema accepts; if it "
    "holds facts for the checks instead, set `expected_kind: facts` in suite.yaml"
)


def read_cases(
    path: Path,
    *,
    relative: str,
    split: Split,
    default_checks: tuple[CompiledCheck, ...],
    base_dir: Path,
    check_reference: ReferenceCheck,
    input_validator: Any | None,
    expected_validator: Any | None = None,
    extensions: Any = None,
    text: str | None = None,
) -> tuple[Case, ...]:
    """Every case of one file (or of `text`, a loader's output), or a SuiteError naming
    file and line.

    The case schema and `input_validator`'s schema are checked through their
    `quick_validity` first where they have one: a case the fast path does not
    know to be valid goes to the validator, which explains what is wrong.
    """
    shown = str(path)
    if text is None:
        if not path.exists():
            raise SuiteError(
                f"no such case file (named by the suite as {relative!r})", location=Location(shown)
            )
        text = read_text(
            path, max_bytes=MAX_CASE_FILE_BYTES, expected="a JSONL file", cls=SuiteError
        )

    cases: list[Case] = []
    seen: dict[str, int] = {}
    case_validator = validator("case")
    case_quick = _quick_case()
    # What each case's input and expected answer must match, when the suite says.
    schemas = [
        (key, against, quick_validity(against.schema), schema, hint)
        for key, against, schema, hint in (
            ("input", input_validator, "input", None),
            ("expected", expected_validator, "output", _EXPECTED_HINT),
        )
        if against is not None
    ]
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = Location(shown, number)
        try:
            raw = _DECODER.decode(line)
        except RecursionError:
            raise SuiteError("the case nests too deeply", location=where) from None
        except _DuplicateKey as exc:
            raise SuiteError(f"not a JSON object: {exc}", location=where) from None
        except ValueError as exc:
            column = getattr(exc, "colno", None)
            message = getattr(exc, "msg", None) or str(exc)
            raise SuiteError(
                f"not a JSON object: {message}", location=Location(shown, number, column)
            ) from None
        if not isinstance(raw, dict):
            raise SuiteError("each line is one JSON object (a case)", location=where)
        # A key or a surrogate can only hide behind a \u escape: a line without one shows
        # every `$fixture` and `$truth` key as such, and holds no lone surrogate.
        escaped = "\\u" in line
        referring = escaped or "$fixture" in line or "$truth" in line
        if escaped and _SURROGATE_ESCAPE.search(line):
            bad = _lone_surrogate(raw)
            if bad is not None:
                raise SuiteError(
                    f"the text {bad[:40]!r} holds a lone UTF-16 surrogate, which is not Unicode",
                    location=where,
                )
        for error in () if case_quick(raw) else case_validator.iter_errors(raw):
            message, at = explain(error)
            raise SuiteError(
                f"invalid case: {message}", location=Location(shown, number, path=_fmt(at))
            )
        case_id: str = raw["id"]
        if case_id in seen:
            raise SuiteError(
                f"duplicate case id {case_id!r} (first on line {seen[case_id]})",
                location=Location(shown, number, path="$.id"),
            )
        seen[case_id] = number
        if len(cases) == MAX_CASES:
            raise SuiteError(f"more than {MAX_CASES} cases in one split", location=where)
        # The line bounds its input's size as written: most lines need no writing.
        size_in = len(dumps(raw["input"])) if size_bound(line) > MAX_INPUT_CHARS else 0
        if size_in > MAX_INPUT_CHARS:
            raise SuiteError(
                f"input is {size_in} serialized characters, more than {MAX_INPUT_CHARS} "
                "(refer to fixtures instead of embedding documents)",
                location=Location(shown, number, path="$.input"),
            )
        if referring:
            for key in ("input", "expected"):
                check_reference(raw[key], (key,), where)
        for key, against, quick, schema, hint in schemas:
            value = raw[key]
            if (referring and _has_fixture(value)) or (quick is not None and quick(value)):
                continue
            for error in against.iter_errors(value):
                message, at = explain(error)
                raise SuiteError(
                    f"{key} does not match the suite's {schema} schema: {message}",
                    location=Location(shown, number, path=_fmt((key, *at))),
                    hint=hint,
                )
        own: list[CompiledCheck] = []
        if "checks" in raw:
            own = compile_checks(
                raw["checks"],
                document=_line_document(raw, shown, number),
                base_path=("checks",),
                base_dir=base_dir,
                extensions=extensions,
            )
        checks = (*default_checks, *own)
        _refuse_clashes(default_checks, own, where)
        if len(checks) == 0:
            raise SuiteError(
                f"case {case_id!r} has no checks: a case that cannot fail measures nothing",
                location=where,
            )
        cases.append(
            Case(
                id=case_id,
                split=split,
                input=raw["input"],
                expected=raw["expected"],
                tags=tuple(raw.get("tags", ())),
                checks=checks,
                raw=raw,
                source=where,
            )
        )
    return tuple(cases)


_REFERENCES = frozenset({"$fixture", "$truth"})


def _quick_case() -> Callable[[Any], bool]:
    quick = quick_validity(load_schema("case"))
    return quick if quick is not None else lambda raw: False


def _refuse_clashes(
    defaults: tuple[CompiledCheck, ...], own: list[CompiledCheck], where: Location
) -> None:
    names = {c.name for c in defaults}
    for check in own:
        if check.name in names:
            raise SuiteError(
                f"the case's check {check.name!r} has the name of a suite check; "
                "per-check pass rates are kept by name, so give it another",
                location=where,
            )


def _has_fixture(value: Any) -> bool:
    """Whether a value holds a `$fixture` or `$truth` reference (known only once expanded)."""
    if isinstance(value, dict):
        return bool(_REFERENCES & value.keys()) or any(_has_fixture(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_fixture(v) for v in value)
    return False


def _fmt(path: PathKey) -> str:
    from schema.documents import format_path

    return format_path(path)
