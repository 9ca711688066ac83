"""Issue 13, classes 2 and 9: a hostile output can neither make its eval unreadable nor hide.

Regressions, as the issue reported them: an agent answered
`{"output": {"sum": 1e1000000}}`; the store kept 10^1000000 as a million
digits, and from then on every report and comparison of that eval failed
(`ValueError: Exceeds the limit (4300 digits)`: exit 3, HTTP 500). And a
bidi override (U+202E) or a `<script>` from an agent went raw into HTML and
Markdown reports. tests/campaign/test_report_values.py fuzzes both classes.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from evals import make_plan, start
from evals.reports import REPORT_FORMATS, build_report, render_html, render_json, render_markdown
from records import CellResultRow, Store, new_key, open_store
from schema.jsontext import dumps, loads
from tests._servers import serve
from tests.evals.reports._agent import AGENT_ID, v1
from tests.evals.reports._hostile import HostileStore, StoredCell, check_rendered, rendered
from tests.evals.reports._setup import manifest, setup, suite_dir
from tests.evals.suites._make import SUITE_YAML, case
from tests.gateway._cli import CLI
from tests.gateway.server._gateway import Gateway, running_gateway

ROOT = Path(__file__).resolve().parents[3]
HUGE = Decimal("1e1000000")  # what `loads` makes of the agent's `1e1000000`
FORMATS = tuple(REPORT_FORMATS)
AUDIENCES = ("author", "operator")


def _record_huge(store: Store, root: Path) -> str:
    """An eval whose every cell recorded the issue's output, through the registry."""
    setup(store, root)
    info = start(store, make_plan(store, AGENT_ID, home=root / "home"))
    claimed = store.evals.claim(info.id, "host:1:test", 100, 3600)
    check = {"name": "sum", "passed": False, "critical": False, "expected": "2"}
    rows = [
        CellResultRow(
            c.idx,
            c.fence,
            "ok",
            False,
            "0.0001",
            5.0,
            1,
            {"cost_source": "reported"},
            {"sum": HUGE},
            [{**check, "actual": dumps(HUGE)[:50], "metrics": {"sum": HUGE}}],
        )
        for c in claimed
    ]
    assert len(store.evals.record(info.id, rows)) == len(claimed) == 10
    # Today's `dumps` writes 1E+1000000; an older holon wrote the million digits, and
    # that is what an old store holds: put them back in the columns as it did.
    million = "1" + "0" * 1_000_000
    value = "CAST(:v AS json)" if store.dialect == "postgresql" else ":v"
    with store.engine.begin() as conn:
        conn.execute(
            text(f"UPDATE eval_cells SET output = {value} WHERE eval_id = :e"),
            {"v": f'{{"sum": {million}}}', "e": info.id},
        )
    return info.id


def _stored_chars(store: Store, eval_id: str) -> int:
    """How many characters of JSON the cells' outputs take in the database."""
    cast = "CAST(output AS TEXT)" if store.dialect == "postgresql" else "output"
    with store.engine.connect() as conn:
        total = conn.execute(
            text(f"SELECT SUM(LENGTH({cast})) FROM eval_cells WHERE eval_id = :e"), {"e": eval_id}
        ).scalar_one()
    return int(total)


def test_an_agents_1e1000000_leaves_its_eval_readable(store: Store, tmp_path: Path) -> None:
    eval_id = _record_huge(store, tmp_path)
    # The store holds what was written: ten million-digit numbers, none lost.
    assert _stored_chars(store, eval_id) > 10 * 1_000_000
    (cell, *_) = store.evals.cells(eval_id)
    assert cell.output == {"sum": HUGE}
    seen = {
        name: (check_rendered(name, document, output), output)
        for name, document, output in rendered(store, eval_id, None)
    }
    assert set(seen) == {f"{f} {a}" for f in FORMATS for a in AUDIENCES}
    for name, (_, output) in seen.items():
        assert len(output) < 200_000, name  # not a megabyte of zeros per cell
        # The number shows as what it is, exactly and short.
        assert "1E+1000000" in output, name
    report = loads(seen["json operator"][1])
    (first, *_) = report["suites"][0]["cases"]
    assert first["cells"][0]["output"] == {"sum": "[number 1E+1000000]"}
    assert first["cells"][0]["checks"][0]["metrics"] == {"sum": "[number 1E+1000000]"}


@contextmanager
def _home_store(tmp_path: Path) -> Iterator[tuple[Path, Store]]:
    """A fresh HOLON_HOME and its embedded store (the CLI's own), closed afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    store = open_store(f"sqlite:///{home / 'holon.db'}", secret_key=new_key(), auto_upgrade=True)
    try:
        yield home, store
    finally:
        store.close()


def test_cli_and_api_render_an_eval_with_a_huge_number(tmp_path: Path) -> None:
    with _home_store(tmp_path) as (home, store):
        base = _record_huge(store, tmp_path)
        other = _record_huge_again(store, tmp_path)
        cli = CLI(home)
        for form in FORMATS:
            for audience in AUDIENCES:
                res = cli("evals", "report", base, "--format", form, "--audience", audience)
                assert res.code == 0, (form, audience, res.stderr)
                assert "1E+1000000" in res.stdout and "Traceback" not in res.stderr
        for form in ("json", "md", "html"):
            res = cli("evals", "compare", base, other, "--format", form, "--audience", "operator")
            assert res.code == 0, (form, res.stderr)
        with running_gateway(store, home, eval_workers=0) as gw:
            for shown, text in _api_reports(gw, base).items():
                assert "1E+1000000" in text, shown
            for form in ("json", "md", "html"):
                path = f"/v1/evals/{base}/compare/{other}"
                got = gw.call("GET", path, "operator", params={"format": form})
                assert got.status_code == 200, (form, got.text[:300])


def _api_reports(gw: Gateway, eval_id: str) -> dict[str, str]:
    """Every report of the eval the API serves the operator: "form audience" -> its text."""
    texts = {}
    for form in FORMATS:
        for audience in AUDIENCES:
            params = {"format": form, "audience": audience}
            got = gw.call("GET", f"/v1/evals/{eval_id}/report", "operator", params=params)
            assert got.status_code == 200, (form, audience, got.text[:300])
            texts[f"{form} {audience}"] = got.text
    return texts


def _record_huge_again(store: Store, root: Path) -> str:
    """A second eval of the same plan, every cell the issue's output too."""
    info = start(store, make_plan(store, AGENT_ID, home=root / "home"))
    claimed = store.evals.claim(info.id, "host:1:test", 100, 3600)
    rows = [
        CellResultRow(
            c.idx, c.fence, "ok", True, "0.0001", 5.0, 1, {}, {"sum": HUGE}, [{"name": "sum"}]
        )
        for c in claimed
    ]
    store.evals.record(info.id, rows)
    return info.id


# -- what an old store may hold that this holon would not write -------------------------------

SURROGATE = "\ud800"


@pytest.mark.slow
def test_bin_holon_writes_every_report_of_a_stored_lone_surrogate(tmp_path: Path) -> None:
    """The real CLI prints to a UTF-8 pipe: a lone surrogate, raw, would not encode."""
    with _home_store(tmp_path) as (home, store):
        hostile = HostileStore(store, tmp_path)
        cell = StoredCell(
            output={"label": f"a{SURROGATE}b\u202e"},
            outcome={"error": f"bad {SURROGATE}"},
            tags=[f"t{SURROGATE}"],
            checks=[{"name": f"n{SURROGATE}", "passed": False, "actual": SURROGATE}],
        )
        hostile.write([cell] * 3)
    env = {**os.environ, "HOLON_HOME": str(home), "HOLON_EXAMPLES": "off"}
    env.pop("HOLON_DATABASE_URL", None)
    for form in FORMATS:
        run = subprocess.run(
            [str(ROOT / "bin" / "holon"), "evals", "report", hostile.hostile, "--format", form]
            + ["--audience", "operator"],
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr.decode("utf-8", "replace")
        out = run.stdout.decode("utf-8")  # strict: the bytes are UTF-8
        assert "\\ud800" in out and SURROGATE not in out, form
        if form == "json":
            # JSON keeps the data: the escape reads back as the very string stored.
            labels = [
                c["cells"][0]["output"]["label"] for c in loads(out)["suites"][0]["cases"][:3]
            ]
            assert labels == [f"a{SURROGATE}b\u202e"] * 3


# -- end to end: an agent over HTTP returns bidi controls and markup --------------------------

HOSTILE = "\u202eexe.txt <script>alert(1)</script> | `x` [a](javascript:alert(1)) \u200b\x1b end"
TITLE = "A \\u202esuite <b>x</b> | `y`"  # YAML's double-quoted escape: the real U+202E


def _hostile_suite(root: Path) -> Path:
    suite_yaml = SUITE_YAML.replace("title: A tiny suite", f'title: "{TITLE}"')
    public = [
        case("pub-ok", "account", "account"),
        case("pub-hostile", HOSTILE, "other", tags=["critical", "t\u202egat"]),
    ]
    return suite_dir(
        root, public=public, holdout=[case("hold-1", HOSTILE, "other")], suite_yaml=suite_yaml
    )


@pytest.mark.slow
def test_an_agents_bidi_and_script_output_over_http_is_escaped_everywhere(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli = CLI(home)
    assert cli("suites", "add", str(_hostile_suite(tmp_path / "src"))).code == 0
    with serve(v1) as url:
        data = {**manifest(), "protocol": "holon-http", "endpoint": url + "/"}
        path = tmp_path / "echo.json"
        path.write_text(dumps(data))
        assert cli("agents", "register", str(path)).code == 0, "register"
        evals = []
        for _ in range(2):
            res = cli("eval", AGENT_ID, "--yes", "--json")
            assert res.code in (0, 1), res.stderr
            evals.append(res.json()["eval"]["id"])
    first = evals[0]
    store = open_store(f"sqlite:///{home / 'holon.db'}", secret_key=new_key(), auto_upgrade=False)
    try:
        # The agent's answer came back over HTTP and is stored as it was.
        outputs = [c.output for c in store.evals.cells(first) if c.case_id == "pub-hostile"]
        assert outputs == [{"label": HOSTILE, "echo": f"{HOSTILE}. Thanks."}]
        shown: dict[str, str] = {}
        for form in FORMATS:
            for audience in AUDIENCES:
                res = cli("evals", "report", first, "--format", form, "--audience", audience)
                assert res.code == 0, (form, audience, res.stderr)
                document = build_report(store, first, audience=audience)
                check_rendered(f"{form} {audience}", document, res.stdout)
                shown[f"{form} {audience}"] = res.stdout
        _assert_escaped(shown)
        for form in ("json", "md", "html"):
            res = cli("evals", "compare", first, evals[1], "--format", form)
            assert res.code == 0, (form, res.stderr)
            assert "\u202e" not in res.stdout
        with running_gateway(store, home, eval_workers=0) as gw:
            assert _api_reports(gw, first) == shown
            got = gw.call("GET", f"/v1/evals/{first}/compare/{evals[1]}", "operator")
            assert got.status_code == 200 and "\u202e" not in got.text
    finally:
        store.close()


def _assert_escaped(shown: dict[str, str]) -> None:
    page, markdown, as_json = shown["html operator"], shown["md operator"], shown["json operator"]
    # HTML: the override shows as a marked escape, the script as text.
    assert '<span class="esc">\\u202e</span>exe.txt &lt;script&gt;alert(1)&lt;/script&gt;' in page
    # JSON escapes ESC itself (`\u001b`, shown as it is); the zero-width space is ours.
    assert '<span class="esc">\\u200b</span>\\u001b end' in page
    assert '<span class="esc">\\u202e</span>suite &lt;b&gt;x&lt;/b&gt; | `y`' in page  # title
    assert 't<span class="esc">\\u202e</span>gat' in page  # a tag
    assert "<script" not in page.lower()
    # Markdown: the same escape, plain; markup as escaped text.
    assert "\\u202eexe.txt &lt;script&gt;alert(1)&lt;/script&gt; \\| \\`x\\` \\[a\\]" in markdown
    assert "\\u202esuite &lt;b&gt;x&lt;/b&gt; \\| \\`y\\`" in markdown
    # JSON: the data as it was, the escape in the text only.
    assert "\\u202eexe.txt" in as_json
    labels = {
        c["case_id"]: c["cells"][0]["output"]["label"] for c in loads(as_json)["suites"][0]["cases"]
    }
    assert labels["pub-hostile"] == labels["hold-1"] == HOSTILE
    for output in shown.values():
        assert "\u202e" not in output and "\u200b" not in output


def test_a_page_with_a_bidi_override_reads_as_it_was_written() -> None:
    """The report's renderers on the issue's own example: `exe.txt` reversed by U+202E."""
    report = _tiny_report_with("invoice\u202etxt.exe")
    page, markdown = render_html(report), render_markdown(report)
    assert 'invoice<span class="esc">\\u202e</span>txt.exe' in page
    assert "invoice\\u202etxt.exe" in markdown
    assert "invoice\\u202etxt.exe" in render_json(report)  # as a JSON escape
    assert loads(render_json(report))["eval"]["id"] == "invoice\u202etxt.exe"


def _tiny_report_with(value: str) -> dict[str, Any]:
    """A minimal report document whose eval id is `value` (renderers need nothing else)."""
    outcomes = {"n": 0, "missing": 0, "counts": {}}
    empty = {"n": 0, "missing": 0, "p50": None, "p95": None, "max": None}
    cost = {"n": 0, "missing": 0, "usd": "0", "source": None, "sources": {}}
    cost["sources"] = {"priced": 0, "reported": 0, "none": 0}
    outcomes["counts"] = dict.fromkeys(
        ("ok", "agent_error", "timeout", "invalid_response", "cost_exceeded", "unreachable"), 0
    )
    return {
        "audience": "author",
        "eval": {"id": value, "status": "done", "complete": True, "full_plan": False}
        | {"created_at": None, "finished_at": None},
        "agent": {"id": "a/b", "version": "1", "claimed_capabilities": []},
        "settings": {"concurrency": 1, "infrastructure_retries": 0, "pace_s": "0"}
        | {"cells": 0, "worst_case_usd": "0"},
        "summary": {
            "eval_score": None,
            "eval_score_ci95": None,
            "weakest_suite": None,
            "unverified_capabilities": [],
            "meets_thresholds": True,
            "cells": {"n": 0, "missing": 0},
            "passed_cells": 0,
            "errors": 0,
            "outcomes": outcomes,
            "latency_ms": empty,
            "grading_ms": empty,
            "usage": {"n": 0, "reported": 0, "coverage": None}
            | {"input_tokens": 0, "output_tokens": 0},
            "cost": cost,
        },
        "warnings": [],
        "suites": [],
        "record": None,
    }
