"""Whatever an eval's cells hold, every report and comparison renders: bounded, escaped, valid.

Two campaigns over real eval cells of a real SQLite store (tests/evals/
reports/_hostile.py writes each drawn value into the cells' columns as an
old store may hold it):

- stored values: arbitrary JSON (objects, arrays, strings with lone
  surrogates, bidi and control characters, integers up to 10^6000, past
  Python's 4,300-digit limit on int-to-text, Decimals with exponents up to
  ±10^7) as outputs, check results, outcomes and tags; every report format
  × audience and both comparison formats must render and meet
  `check_rendered` (valid JSON against its schema, bounded, no unsafe
  character in any format, HTML of the renderer's tags only, Markdown whose
  tables keep their columns);
- agent text: strings of bidi controls, zero-width and control characters
  and markup (`<script>`, `|`, backticks, `[x](javascript:…)`, entities) in
  every text slot (output, error, case id, tags, check name and detail);
  each unsafe character shows as its escape (`\\u202e`) where the text is
  shown, in HTML inside `<span class="esc">`.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evals._visible import UNSAFE, escape_char, visible
from evals.reports import build_report, render_markdown
from evals.reports._markdown import md
from records import Store, new_key, open_store
from schema.jsontext import dumps, loads
from tests.campaign._mutate import fuzz_settings
from tests.campaign._tally import record
from tests.evals.reports._hostile import (
    HostileStore,
    StoredCell,
    check_rendered,
    rendered,
    stored_json,
)

STORED = "stored values in reports"
TEXT = "bidi and control characters in reports"

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u2028\u2029\U000e0041\U000e007f"
CONTROLS = "\x00\x01\x07\x08\x0b\x0c\x0d\x1b\x1f\x7f\x80\x85\x9b\x9f"
SURROGATES = "\ud800\udbff\udc00\udfff"
UNSAFE_CHARS = BIDI + INVISIBLE + CONTROLS + SURROGATES
MARKUP = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "|",
    "`",
    "```",
    "[x](javascript:alert(1))",
    "![i](http://evil.example/x.png)",
    "&#x202e;",
    "&lt;b&gt;",
    "# title",
    "> quote",
    "\\",
    "*bold*",
    "_x_",
    "~~s~~",
    '"',
    "'",
    "\n",
    "\r\n",
    "\t",
    "txt.exe",
]

characters = st.one_of(st.characters(), st.sampled_from(UNSAFE_CHARS))
pieces = st.one_of(st.sampled_from(MARKUP), st.sampled_from(UNSAFE_CHARS), st.text(max_size=5))
strings = st.one_of(
    st.text(characters, max_size=30),
    st.lists(pieces, max_size=8).map("".join),
    st.builds(
        lambda s, n: s * n, st.text(characters, min_size=1, max_size=3), st.integers(1, 9000)
    ),
)
integers = st.one_of(
    st.integers(),
    st.builds(lambda m, e: m * 10**e, st.integers(-9, 9), st.integers(90, 6000)),
)
decimals = st.builds(
    lambda m, e: Decimal(f"{m}E{e}"),
    st.integers(-(10**20), 10**20),
    st.integers(-(10**7), 10**7),
)
scalars = st.one_of(st.none(), st.booleans(), integers, decimals, strings)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(strings, inner, max_size=5)
    ),
    max_leaves=25,
)
CHECK_KEYS = ("name", "predicate", "status", "passed", "critical", "detail", "path")
CHECK_KEYS += ("expected", "actual", "offending", "metrics")
checks = st.one_of(
    st.lists(
        st.fixed_dictionaries({}, optional=dict.fromkeys(CHECK_KEYS, json_values)), max_size=4
    ),
    json_values,
)
ATTEMPT_KEYS = ("number", "code", "latency_ms", "http_status", "error", "started_at", "span_id")
attempts = st.one_of(
    st.lists(
        st.fixed_dictionaries({}, optional=dict.fromkeys(ATTEMPT_KEYS, json_values)), max_size=4
    ),
    json_values,
)
outcomes = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "cost_source": json_values,
            "http_status": json_values,
            "error": json_values,
            # What a cell shows besides its verdict: each attempt, the answer's metadata.
            "attempts": attempts,
            "metadata": json_values,
        },
    ),
    json_values,
)
tags = st.one_of(st.lists(st.one_of(strings, st.just("critical")), max_size=4), json_values)
# A case id is a string column: SQLite's text is UTF-8, so no lone surrogate
# (`characters()` draws them too, rarely: excluded by category).
case_ids = st.none() | st.text(
    st.one_of(
        st.characters(exclude_categories=("Cs",)), st.sampled_from(BIDI + INVISIBLE + CONTROLS)
    ),
    max_size=150,
)
stored_cells = st.builds(
    StoredCell,
    output=json_values,
    checks=checks,
    outcome=outcomes,
    tags=tags,
    case_id=case_ids,
    passed=st.booleans(),
)


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


MILLION = Decimal("1" + "0" * 1_000_000)  # 10^1000000 as `dumps` writes it: a million digits
ISSUE = StoredCell(
    output={"sum": MILLION},
    checks=[{"name": "sum", "passed": False, "expected": "2", "actual": MILLION}],
)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileStore]:
    root = tmp_path_factory.mktemp("hostile")
    store: Store = open_store(
        f"sqlite:///{root / 'holon.db'}", secret_key=new_key(), auto_upgrade=True
    )
    try:
        yield HostileStore(store, root)
    finally:
        store.close()


def _render_all(hostile: HostileStore, cells: list[StoredCell]) -> dict[str, dict[str, Any]]:
    hostile.write(cells)
    return {
        name: check_rendered(name, document, text)
        for name, document, text in rendered(hostile.store, hostile.hostile, hostile.reference)
    }


def _stored_values(hostile: HostileStore, cells: list[StoredCell]) -> None:
    seen = _render_all(hostile, cells)
    assert len(seen) == 14  # 4 formats × 2 audiences, and a comparison in 3 formats each
    record(STORED, "rendered")


STORED_EXAMPLES = [
    [ISSUE] * 3,
    [StoredCell(output=10**5000, tags=[10**5000, "critical"], checks=[{"name": -(10**4400)}])],
    [StoredCell(output=Decimal("-7.5E-10000000"), checks={"not": "a list"}, outcome=[1, 2])],
    [StoredCell(output=_deep(5_000), tags=_deep(100), checks=[{"metrics": _deep(70)}])],
    [StoredCell(output="\U000e0041" * 1_000_000, outcome={"error": "\u202e" * 50_000})],
    [
        StoredCell(
            outcome={
                "metadata": {"k": "\u202e<script>" * 50_000, "n": 10**5000},
                "attempts": [{"span_id": "<b>", "started_at": "\u202e" * 5_000, "error": 1}] * 200,
            }
        )
    ],
    [StoredCell(output={"k" * 10_000: list(range(50_000))}, checks=[{"offending": ["$"] * 999}])],
]


def _with_examples(test: Any) -> Any:
    for cells in STORED_EXAMPLES:
        test = example(cells=cells)(test)
    return test


# The long passes take minutes, not the default 120 s.
LONG = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.mark.parametrize("examples", [15, pytest.param(30, marks=LONG)])
def test_stored_values_render_in_every_format(hostile: HostileStore, examples: int) -> None:
    @_with_examples
    @given(cells=st.lists(stored_cells, min_size=1, max_size=10))
    @fuzz_settings(examples)
    def one(cells: list[StoredCell]) -> None:
        _stored_values(hostile, cells)

    one()


# -- agent text ---------------------------------------------------------------------------


def _no_surrogates(text: str) -> str:
    return "".join(c for c in text if not "\ud800" <= c <= "\udfff")


# Short enough never to be cut, and each holds at least one unsafe character.
texts = st.builds(
    lambda head, char, tail: head + char + tail,
    st.lists(pieces, max_size=4).map("".join),
    st.sampled_from(UNSAFE_CHARS.replace(SURROGATES, "")),
    st.lists(pieces, max_size=4).map("".join),
).filter(lambda t: len(t) <= 150)
text_cells = st.builds(
    lambda output, error, case_id, tag, name, detail: StoredCell(
        output={"label": output},
        checks=[{"name": name, "passed": False, "detail": detail, "status": "fail"}],
        outcome={"error": error},
        tags=[tag],
        case_id=_no_surrogates(case_id),
        passed=False,
    ),
    texts,
    texts,
    texts,
    texts,
    texts,
    texts,
)


def _shown_escaped(hostile: HostileStore, cells: list[StoredCell]) -> None:
    seen = _render_all(hostile, cells)
    page = seen["html operator"]
    escapes = "".join(page["escapes"])
    markdown = render_markdown(build_report(hostile.store, hostile.hostile, audience="operator"))
    for cell in cells:
        assert cell.case_id is not None
        slots = [cell.outcome["error"], cell.case_id, *cell.tags]
        slots += [part for check in cell.checks for part in (check["name"], check["detail"])]
        for written in slots:
            # As the store reads it back: JSON joins a high and a low surrogate
            # that follow each other into the one character they encode.
            slot = loads(stored_json(written))
            # In HTML each text shows as it is, its unsafe characters as escapes ...
            assert visible(slot) in page["text"], slot
            for run in UNSAFE.findall(slot):
                assert "".join(escape_char(c) for c in run) in escapes, slot
        # ... the output as the JSON text it is (JSON escapes C0 controls itself).
        assert visible(dumps(loads(stored_json(cell.output)))) in page["text"]
        # Markdown shows the case and the failed cell's error, escaped as text.
        assert md(cell.case_id) in markdown
        assert md(loads(stored_json(cell.outcome["error"]))) in markdown
    record(TEXT, "escaped")


# Distinct case ids, as in any real eval: a case's tags are the case's, shown once on its
# row, so two cells given one id would show one of their tag lists (hypothesis drew such
# a pair once the gateway's modules were loaded: it mixes the loaded code's constants in).
text_cell_lists = st.lists(text_cells, min_size=1, max_size=10, unique_by=lambda c: c.case_id)


@pytest.mark.parametrize("examples", [10, pytest.param(30, marks=LONG)])
def test_agent_text_shows_its_escapes(hostile: HostileStore, examples: int) -> None:
    @given(cells=text_cell_lists)
    @fuzz_settings(examples)
    def one(cells: list[StoredCell]) -> None:
        _shown_escaped(hostile, cells)

    one()


def test_the_hostile_store_is_what_the_campaign_says(hostile: HostileStore) -> None:
    """The fixture really is a 10-cell eval whose columns the campaign overwrites."""
    assert hostile.cells == 10
    hostile.write([ISSUE])
    (row,) = [c for c in hostile.store.evals.cells(hostile.hostile) if c.idx == 0]
    # The million digits are in the store as written, and read back whole (a Decimal).
    assert row.output == {"sum": MILLION}
    assert isinstance(row.output["sum"], Decimal)
