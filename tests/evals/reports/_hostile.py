"""Hostile values in real eval cells of a real store, and what every rendering of them must be.

`HostileStore` runs the report tests' tiny suite against the echo agent's
plan on a store, records every cell through the registry (claim, record),
then writes each cell's JSON columns as text, the way an older holon (or a
hand) left them: numbers in any form JSON allows (10^1000000 as a million
digits or as `1E+1000000`), lone surrogates as `\\ud800` escapes, nesting as
deep as a value has. `rendered` renders every report format in every
audience and every compare format, and `check_rendered` is the standard
each must meet (see its docstring).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from sqlalchemy import text

from evals import make_plan, start
from evals._visible import UNSAFE
from evals.reports import (
    build_report,
    compare_evals,
    render_compare_html,
    render_compare_markdown,
    render_html,
    render_json,
    render_junit,
    render_markdown,
)
from evals.reports._values import NUMBER_CHARS, OUTPUT_LIMIT, STRING_LIMIT
from records import CellResultRow, Store
from schema import validator
from schema.jsontext import dumps, loads
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import setup

# A report's string leaves: at most STRING_LIMIT characters, or the head plus the note.
STRING_BOUND = STRING_LIMIT
# Each rendering against the report's compact JSON (dumps), the canonical size
# (numbers measured below): every character of it can grow at most this much,
# and a report repeats a value at most a few times (a failed check's name is in
# the case row and in the failure's details).
JSON_FACTOR = 12  # an astral unsafe character: 1 character, `\udb40\udc41` 12
MARKDOWN_FACTOR = 12  # `\U000e0041` is 10, `&amp;` 5; the output shown once, names twice
HTML_FACTOR = 40  # one unsafe character between plain ones: a 25-character span around 10
JUNIT_FACTOR = 12  # as Markdown: `\U000e0041` is 10, `&amp;` 5; no outputs, check details only
SLACK = 20_000  # the page's fixed parts: headings, style sheet, empty tables

HTML_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "h1",
    "h2",
    "h3",
    "h4",
    "p",
    "section",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "div",
    "details",
    "summary",
    "span",
    "pre",
    "code",
    "ul",
    "li",
    "strong",
}
HTML_ATTRS = {
    "lang",
    "charset",
    "http-equiv",
    "content",
    "name",
    "class",
    "id",
    "role",
    "data-suite",
    "data-split",
    "aria-label",
    "style",
}


def stored_json(value: Any) -> str:
    """JSON text of `value` as an old store may hold it; never through Python's int-to-text.

    Strings ASCII-escaped (so a lone surrogate is `\\ud800`, which UTF-8 can
    hold), integers in digits however many (a Decimal writes them),
    Decimals as Decimal spells them (`1E+10000000`: valid JSON, and what a
    writer that kept exponents left).
    """
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item.text)
        elif item is None or isinstance(item, bool | str):
            out.append(json.dumps(item))
        elif isinstance(item, int):
            out.append(format(Decimal(item), "f"))
        elif isinstance(item, Decimal):
            out.append(str(item))
        elif isinstance(item, dict):
            parts: list[Any] = [_Raw("{")]
            for i, (k, v) in enumerate(item.items()):
                parts += [_Raw(("," if i else "") + json.dumps(str(k)) + ":"), v]
            stack.extend(reversed([*parts, _Raw("}")]))
        elif isinstance(item, list):
            parts = [_Raw("[")]
            for i, v in enumerate(item):
                parts += [_Raw(","), v] if i else [v]
            stack.extend(reversed([*parts, _Raw("]")]))
        else:
            raise TypeError(type(item).__name__)
    return "".join(out)


@dataclass(frozen=True)
class _Raw:
    text: str


class StoredCell:
    """What one cell's columns hold (JSON values written with `stored_json`).

    A plain class, not a dataclass: hypothesis prints a dataclass field by
    field with Python's repr, and a 5,000-digit integer has none.
    """

    FIELDS = ("output", "checks", "outcome", "tags", "case_id", "passed")

    def __init__(
        self,
        output: Any = None,
        checks: Any = None,
        outcome: Any = None,
        tags: Any = None,
        case_id: str | None = None,  # None: the plan's own
        passed: bool = False,
    ) -> None:
        self.output = output
        self.checks = checks
        self.outcome = {} if outcome is None else outcome
        self.tags = [] if tags is None else tags
        self.case_id = case_id
        self.passed = passed

    def __repr__(self) -> str:
        def short(value: Any) -> str:
            written = stored_json(value)
            return written if len(written) <= 160 else f"{written[:160]}…({len(written)} chars)"

        shown = ", ".join(f"{name}={short(getattr(self, name))}" for name in self.FIELDS)
        return f"StoredCell({shown})"


class HostileStore:
    """The echo agent's plan on `store`, run twice: a hostile eval and a plain reference."""

    def __init__(self, store: Store, root: Path) -> None:
        self.store = store
        setup(store, root)
        home = root / "home"
        self.hostile = self._recorded(make_plan(store, AGENT_ID, home=home))
        self.reference = self._recorded(make_plan(store, AGENT_ID, home=home))
        self.cells = store.evals.get(self.hostile).cells_total

    def _recorded(self, plan: Any) -> str:
        info = start(self.store, plan)
        claimed = self.store.evals.claim(info.id, "host:1:test", 1000, 3600)
        rows = [
            CellResultRow(
                c.idx, c.fence, "ok", True, "0.0001", 5.0, 1, {"cost_source": "reported"}, {}, []
            )
            for c in claimed
        ]
        assert len(self.store.evals.record(info.id, rows)) == info.cells_total
        return info.id

    def write(self, cells: list[StoredCell]) -> None:
        """Overwrite the hostile eval's first cells with these columns, as text."""
        json_column = "CAST(:{} AS JSON)" if self.store.dialect == "postgresql" else ":{}"
        columns = ("output", "checks", "outcome", "tags")
        sets = ", ".join(f"{c} = {json_column.format(c)}" for c in columns)
        sql = text(
            f"UPDATE eval_cells SET {sets}, case_id = COALESCE(:case_id, case_id), "
            "passed = :passed WHERE eval_id = :eval_id AND idx = :idx"
        )
        with self.store.engine.begin() as conn:
            for idx, cell in enumerate(cells):
                conn.execute(
                    sql,
                    {
                        "output": stored_json(cell.output),
                        "checks": stored_json(cell.checks),
                        "outcome": stored_json(cell.outcome),
                        "tags": stored_json(cell.tags),
                        "case_id": cell.case_id,
                        "passed": cell.passed,
                        "eval_id": self.hostile,
                        "idx": idx,
                    },
                )


def rendered(store: Store, eval_id: str, reference: str | None) -> Iterator[tuple[str, Any, str]]:
    """(name, document, text) for every report format × audience, and the comparisons.

    Compared with `reference` once per audience, `eval_id` as the base for an
    author (its case ids are the ones shown) and as the candidate for an
    operator (its ids shown beside the base's, holdout included).
    """
    for audience in ("author", "operator"):
        report = build_report(store, eval_id, audience=audience)
        yield f"json {audience}", report, render_json(report)
        yield f"md {audience}", report, render_markdown(report)
        yield f"html {audience}", report, render_html(report)
        yield f"junit {audience}", report, render_junit(report)
        if reference is None:
            continue
        base, candidate = (eval_id, reference) if audience == "author" else (reference, eval_id)
        comparison = compare_evals(store, base, candidate, audience=audience)
        yield f"compare json {audience}", comparison, render_json(comparison)
        yield f"compare md {audience}", comparison, render_compare_markdown(comparison)
        yield f"compare html {audience}", comparison, render_compare_html(comparison)


def _strings_bounded(value: Any, where: str) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            assert len(item) <= STRING_BOUND + 100, (where, len(item), _find(value, item))
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, int | Decimal) and not isinstance(item, bool):
            assert len(dumps(item)) <= NUMBER_CHARS, where


class _Page(HTMLParser):
    """The tags, attributes and text a browser's parser would see."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str]] = []
        self.text: list[str] = []
        self.escapes: list[str] = []  # the text of each <span class="esc">
        self._spans: list[bool] = []  # open spans: is each an escape?

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs += [(name, value or "") for name, value in attrs]
        if tag == "span":
            self._spans.append(("class", "esc") in attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self._spans:
            self._spans.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._spans and self._spans[-1]:
            self.escapes.append(data)


def _markdown_prose(markdown: str) -> Iterator[str]:
    """The lines of a Markdown document outside its code fences."""
    fence: str | None = None
    for line in markdown.split("\n"):
        stripped = line.lstrip("`")
        marks = len(line) - len(stripped)
        if fence is None and marks >= 3:
            fence = "`" * marks
        elif fence is not None and line == fence:
            fence = None
        elif fence is None:
            yield line


def _unescaped(line: str, char: str) -> int:
    """How many times `char` occurs in `line` not escaped by a backslash."""
    count = backslashes = 0
    for ch in line:
        if ch == char and backslashes % 2 == 0:
            count += 1
        backslashes = backslashes + 1 if ch == "\\" else 0
    return count


def check_rendered(name: str, document: Any, output: str) -> dict[str, Any]:
    """One rendering meets the standard; returns what the checks saw (for tests to look into).

    - JSON: it is valid JSON, reads back as the document, is valid against
      its schema, carries every string within STRING_BOUND (+ the note),
      every number within NUMBER_CHARS and each output within OUTPUT_LIMIT;
    - no format holds an unsafe character (a bidi control, a zero-width
      space, NUL, a C1 control, a lone surrogate ...), raw (nor, in HTML and
      Markdown, as a character reference), and each encodes to UTF-8;
    - HTML parses, has only the renderer's tags and attributes (no script,
      no handler), and no attribute value holds an unsafe character;
    - Markdown has no raw `<` and no unescaped `[` outside code fences, and
      every table row has as many cells as its header;
    - sizes: each at most its factor times the document's compact JSON,
      plus SLACK.
    """
    output.encode("utf-8")  # raises on a lone surrogate
    canonical = len(dumps(document))
    assert UNSAFE.search(output) is None, name
    if not name.startswith(("json", "compare json")):  # JSON text is no HTML: `&#…;` is text
        assert UNSAFE.search(html.unescape(output)) is None, name
    seen: dict[str, Any] = {"size": len(output), "canonical": canonical}
    if name.startswith(("json", "compare json")):
        assert loads(output) == loads(dumps(document)), name
        schema = "compare" if name.startswith("compare") else "report"
        errors = list(validator(schema).iter_errors(loads(output)))
        assert not errors, (name, [(list(e.absolute_path), e.message) for e in errors[:3]])
        _strings_bounded(document, name)
        if schema == "report":
            for suite in document["suites"]:
                for case in suite["cases"]:
                    for cell in case["cells"]:
                        assert len(dumps(cell["output"])) <= OUTPUT_LIMIT + 2, name
        assert len(output) <= JSON_FACTOR * canonical + 1, name
    elif name.startswith("junit"):
        # Well-formed XML 1.0 (the parser refuses what XML cannot hold), with one
        # testsuite a suite, and what it says made visible as in every format.
        root = ElementTree.fromstring(output.encode("utf-8"))
        assert root.tag == "testsuites" and len(root) == len(document["suites"]), name
        everything = " ".join(
            [*(v for e in root.iter() for v in e.attrib.values()), *(root.itertext())]
        )
        assert UNSAFE.search(everything) is None, name
        seen.update(text=everything)
        assert len(output) <= JUNIT_FACTOR * canonical + SLACK, (name, len(output), canonical)
    elif name.startswith(("html", "compare html")):
        page = _Page()
        page.feed(output)
        page.close()
        assert page.tags <= HTML_TAGS, (name, page.tags - HTML_TAGS)
        assert {a for a, _ in page.attrs} <= HTML_ATTRS, name
        for _, value in page.attrs:
            assert UNSAFE.search(value) is None, name
        assert UNSAFE.search("".join(page.text)) is None, name
        seen.update(text="".join(page.text), escapes=page.escapes)
        assert len(output) <= HTML_FACTOR * canonical + SLACK, (name, len(output), canonical)
    else:
        header_cells = 0
        for line in _markdown_prose(output):
            assert "<" not in line, (name, line[:200])
            assert _unescaped(line, "[") == 0, (name, line[:200])
            if line.startswith("|"):
                cells = _unescaped(line, "|")
                if line.startswith("|---") or not header_cells:
                    header_cells = header_cells or cells
                assert cells == header_cells, (name, line[:300])
            else:
                header_cells = 0
        assert len(output) <= MARKDOWN_FACTOR * canonical + SLACK, (name, len(output), canonical)
    return seen


def _find(value: Any, target: str, path: str = "$") -> str | None:
    if value is target:
        return path
    if isinstance(value, dict):
        for k, v in value.items():
            if k is target:
                return path + "<key>"
            found = _find(v, target, f"{path}.{k}")
            if found:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _find(v, target, f"{path}[{i}]")
            if found:
                return found
    return None
