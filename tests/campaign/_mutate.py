"""Hypothesis strategies that break valid documents in the ways people and attackers do.

Two families, drawn at random (derandomized: the same inputs every run):

- structural: on the parsed value, delete a key, change a value's type,
  inject an unknown key, rename a key, duplicate or swap items, put a huge
  number, a deep nesting, a bad JSONPath or a bad regex where one is read;
- textual: on the bytes, delete, duplicate (duplicate keys), or cut lines,
  and insert YAML/JSON syntax, tags, aliases, tabs, NUL, a BOM or bytes that
  are not UTF-8.

`judge` runs one loader on one input and files the outcome: it loaded, or it
raised a holon `InputError` that names where (file, and line where the file
has lines). Any other exception escapes and fails the test, with the input
that caused it printed by hypothesis.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from schema import jsontext
from schema.errors import HolonError, InputError
from tests.campaign._tally import record

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_SUITES = ROOT / "examples" / "suites"
SHIPPED_AGENTS = ROOT / "examples" / "agents"

PathKey = tuple[str | int, ...]


class Shown(tuple[Any, ...]):
    """A drawn (what, content) pair that prints short in a failure report."""

    def __repr__(self) -> str:
        what, *rest = self
        preview = ", ".join(repr(item)[:300] for item in rest)
        return f"({what!r}, {preview})"


def fuzz_settings(examples: int) -> settings:
    """Derandomized (the same inputs on every run), no example database, no deadline.

    No shrinking: a failure reports the input that broke the loader as drawn
    (each draw says what was mutated), at once rather than minutes later.
    """
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        phases=[Phase.explicit, Phase.generate],
        report_multiple_bugs=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for index in range(levels):
        value = [value] if index % 2 else {"k": value}
    return value


BAD_PATHS = [
    "$..[",
    "$[",
    "a.b",
    "$.a[?@.b ==]",
    "$.a[1:2:0]",
    "$['unterminated",
    "$.*.*[",
    "$" + ".a" * 3000,
    "$[99999999999999999999]",
    "$.a[?match(@.b, '(')]",
    "$.a[?length(@) > ]",
    "",
    "$.output.report.pdf.pages[?@.text",
]
BAD_REGEXES = ["(", "[a-", "(?P<x", "\\", "a{99999}", "(?<=a)b", "\\1", "(?i", "x**", "[z-a]"]
# The odd JSON scalars every fuzzer's list of odd values starts with.
ODD_SCALARS: list[Any] = [None, True, False, 0, -1, 10**30]
ODD_VALUES: list[Any] = [
    *ODD_SCALARS,
    -(10**30),
    Decimal("1E+999"),
    Decimal("-1E+999"),
    Decimal("1E-999"),
    Decimal("0.1"),
    "",
    "x",
    "\u202e\x00\ud7ff",
    "\ud800",
    "a" * 20_000,
    [],
    {},
    [1] * 1000,
    deep(150),
    {"$ref": "../../../../etc/passwd"},
    {"$ref": "/etc/passwd"},
    {"$fixture": "invoice", "seed": -1},
    {"$truth": "nope"},
    {"path": "$.expected.x"},
    {"path": "$..["},
]
INJECTED_KEYS = ["unknown", "Checks", "$ref", "__proto__", "id ", "", "pathh", "é" * 3]
JUNK: list[bytes] = [
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\x00",
    b"\t",
    b": ",
    b"- ",
    b"{",
    b"[",
    b"}",
    b"&a ",
    b"*a",
    b"!!python/object/apply:os.system ['true'] ",
    b"!!omap ",
    b"!!set ",
    b"!!int ",
    b"!!bool ",
    b"!!binary ",
    b"!custom ",
    b"<<: ",
    b"? ",
    b"'",
    b'"',
    b"#",
    b"\n",
    b"\r",
    b"---\n",
    b"...\n",
    b"%YAML 1.1\n",
    b"\xef\xbb\xbf",
    "\u2028".encode(),
    b'"\\ud800"',
    b"9" * 5000,
    b"1e999999",
    b"-0x",
    b".nan",
    b"~",
    b"|",
    b">-",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[" * 12,
    b"- " * 400,
]


# -- structural mutations --------------------------------------------------------------------


def nodes(value: Any, at: PathKey = ()) -> list[PathKey]:
    """Every node's path, root first."""
    out = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(nodes(item, (*at, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(nodes(item, (*at, index)))
    return out


def get(value: Any, at: PathKey) -> Any:
    for part in at:
        value = value[part]
    return value


def put(value: Any, at: PathKey, new: Any) -> Any:
    if not at:
        return new
    parent = get(value, at[:-1])
    parent[at[-1]] = new
    return value


def _checks_in(value: Any) -> list[PathKey]:
    """Paths of dicts that look like checks (they have a `path`)."""
    return [p for p in nodes(value) if isinstance(get(value, p), dict) and "path" in get(value, p)]


def mutated_value(value: Any) -> st.SearchStrategy[tuple[str, Any]]:
    """One structural mutation of a JSON-like value: (what was done, new value)."""
    return _mutated_value(value).map(Shown)


def mutated_bytes(data: bytes) -> st.SearchStrategy[tuple[str, bytes]]:
    """One textual mutation of a file's bytes: (what was done, new bytes)."""
    return _mutated_bytes(data).map(Shown)


@st.composite
def _mutated_value(draw: st.DrawFn, value: Any) -> tuple[str, Any]:
    """One structural mutation of a (deep-copied) JSON-like value: (what was done, new value)."""
    value = jsontext.loads(jsontext.dumps(value))  # a private copy, numbers kept exact
    everything = nodes(value)
    kind = draw(
        st.sampled_from(
            [
                "delete",
                "retype",
                "inject",
                "rename",
                "duplicate",
                "swap",
                "bad_path",
                "bad_regex",
                "huge",
            ]
        )
    )
    inner = [p for p in everything if p]
    if kind == "delete" and inner:
        at = draw(st.sampled_from(inner))
        parent = get(value, at[:-1])
        del parent[at[-1]]
        return f"delete {at}", value
    if kind == "retype":
        at = draw(st.sampled_from(everything))
        new = draw(st.sampled_from(ODD_VALUES))
        return f"retype {at}", put(value, at, jsontext.loads(jsontext.dumps(new)))
    if kind == "inject":
        dicts = [p for p in everything if isinstance(get(value, p), dict)]
        if dicts:
            at = draw(st.sampled_from(dicts))
            key = draw(st.sampled_from(INJECTED_KEYS))
            get(value, at)[key] = draw(st.sampled_from(ODD_VALUES[:14]))
            return f"inject {key!r} at {at}", value
    if kind == "rename":
        keyed = [p for p in inner if isinstance(p[-1], str)]
        if keyed:
            at = draw(st.sampled_from(keyed))
            parent = get(value, at[:-1])
            parent[str(at[-1]) + draw(st.sampled_from(["s", "_", "X"]))] = parent.pop(at[-1])
            return f"rename {at}", value
    if kind == "duplicate":
        lists = [p for p in everything if isinstance(get(value, p), list) and get(value, p)]
        if lists:
            at = draw(st.sampled_from(lists))
            items = get(value, at)
            items.append(jsontext.loads(jsontext.dumps(items[0])))
            return f"duplicate {at}[0]", value
    if kind == "swap" and len(inner) > 1:
        a, b = draw(st.sampled_from(inner)), draw(st.sampled_from(inner))
        if a[: len(b)] != b and b[: len(a)] != a:
            va, vb = get(value, a), get(value, b)
            put(value, a, vb)
            put(value, b, va)
            return f"swap {a} {b}", value
    if kind == "bad_path":
        checks = _checks_in(value)
        if checks:
            at = draw(st.sampled_from(checks))
            get(value, at)["path"] = draw(st.sampled_from(BAD_PATHS))
            return f"bad path at {at}", value
    if kind == "bad_regex":
        checks = _checks_in(value)
        if checks:
            at = draw(st.sampled_from(checks))
            check = get(value, at)
            for predicate in ("equals", "contains", "one_of", "approx", "between", "similar"):
                check.pop(predicate, None)
            key = draw(st.sampled_from(["matches", "full_match"]))
            check[key] = draw(st.sampled_from(BAD_REGEXES))
            return f"bad regex at {at}", value
    if kind == "huge":
        numbers = [p for p in everything if isinstance(get(value, p), int | Decimal)]
        numbers = [p for p in numbers if not isinstance(get(value, p), bool)]
        if numbers:
            at = draw(st.sampled_from(numbers))
            new = draw(
                st.sampled_from(
                    [10**400, -(10**400), Decimal("9E+99999"), Decimal("1E-99999"), 2**63, 2**64]
                )
            )
            return f"huge number at {at}", put(value, at, new)
    # Nothing of that kind to mutate here: inject instead, which always applies.
    key = draw(st.sampled_from(INJECTED_KEYS))
    if isinstance(value, dict):
        value[key] = None
    return f"inject {key!r} at top", value


def pretty(value: Any, indent: int = 0) -> str:
    """Indented JSON (one key a line, so errors have lines to point at); numbers exact."""
    pad = "  " * (indent + 1)
    if isinstance(value, dict) and value:
        items = [f"{pad}{_scalar(k)}: {pretty(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list) and value and indent < 40:
        items = [f"{pad}{pretty(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    # ASCII escapes, so a lone surrogate survives as `\\ud800` for the parser to judge.
    return jsontext.dumps(value, ensure_ascii=True)


# -- textual mutations ------------------------------------------------------------------------


@st.composite
def _mutated_bytes(draw: st.DrawFn, data: bytes) -> tuple[str, bytes]:
    """One textual mutation of a file's bytes: (what was done, new bytes)."""
    lines = data.split(b"\n")
    kind = draw(st.sampled_from(["delete_line", "duplicate_line", "cut", "insert", "insert_line"]))
    index = draw(st.integers(0, max(0, len(lines) - 1)))
    if kind == "delete_line":
        del lines[index]
        return f"delete line {index + 1}", b"\n".join(lines)
    if kind == "duplicate_line":
        lines.insert(index, lines[index])
        return f"duplicate line {index + 1}", b"\n".join(lines)
    if kind == "cut":
        at = draw(st.integers(0, len(data)))
        return f"cut at byte {at}", data[:at]
    junk = draw(st.sampled_from(JUNK))
    if kind == "insert_line":
        lines.insert(index, junk)
        return f"insert line {index + 1}: {junk[:20]!r}", b"\n".join(lines)
    at = draw(st.integers(0, len(data)))
    return f"insert at byte {at}: {junk[:20]!r}", data[:at] + junk + data[at:]


# -- judging ----------------------------------------------------------------------------------

# Faults about a whole file, where no line can be named.
WHOLE_FILE = (
    "no such",
    "is a directory",
    "more than the",
    "not a suite",
    "file is ",
    "cannot read",
)


# Bugs the campaign knows of and tolerates, by (exception, file, function) -> id.
# Empty: every one it found is fixed (tests/campaign/test_known_bugs.py keeps
# them as regression tests). An entry here must come with an issue.
KNOWN_BUGS: dict[tuple[str, str, str], str] = {}


def _known(exc: BaseException) -> str | None:
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    last = frames[-1]
    for (name, file, function), bug in KNOWN_BUGS.items():
        if type(exc).__name__ == name and last.filename.endswith(file) and last.name == function:
            return bug
    return None


def judge(campaign: str, load: Callable[[], Any], *, files_with_lines: bool = True) -> str:
    """Run `load`; file its outcome. Only holon input errors with a location may escape it."""
    try:
        load()
    except Exception as exc:
        if isinstance(exc, HolonError):
            return _judge_error(campaign, exc, files_with_lines)
        bug = _known(exc)
        if bug is None:
            raise
        record(campaign, f"known bug:{bug}")
        return f"known bug:{bug}"
    record(campaign, "loaded")
    return "loaded"


def _judge_error(campaign: str, exc: HolonError, files_with_lines: bool) -> str:
    assert isinstance(exc, InputError), f"not an input error: {type(exc).__name__}: {exc}"
    text = str(exc)
    assert "Traceback" not in text, text
    location = exc.location
    if files_with_lines:
        assert location.file, f"no file named: {text}"
        if location.line is None:
            assert any(word in exc.message for word in WHOLE_FILE), f"no line named: {text}"
    outcome = f"error:{exc.code}"
    record(campaign, outcome)
    return outcome


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes: what a loader must leave as it found it."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }
