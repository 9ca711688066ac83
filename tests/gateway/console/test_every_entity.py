"""Every console page renders every valid entity, for every role that may see it.

Manifests, mandates, tokens and evals are drawn from their JSON Schemas
(schema/, through tests/gateway/console/_drawn.py) with optional fields
present and absent, stored as the API stores them, and every page that shows
them is asked for by each role: none may answer 5xx, and a role that may see
the entity finds its id on the page. In-process (the ASGI app through
TestClient), so thousands of pages take seconds. `RENDERED` counts the pages
rendered per page and role; the last test prints it (`pytest -s`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from agents import manifest_from_dict
from gateway.console._render import render
from gateway.service import StoreService
from gateway.web import Bearer
from records import CellSpec, EvalStatus, eval_id, new_key, open_store
from schema.errors import HolonError
from tests.gateway.console._drawn import documents, schema
from tests.gateway.console._inproc import Console, console

pytestmark = pytest.mark.slow

EXAMPLES = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
RENDERED: Counter[tuple[str, str]] = Counter()
STRANGER_ORG = "org:someone-else"
STRANGER_CALLER = "caller:someone-else"
_serial = iter(range(1, 10**9))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    root = tmp_path_factory.mktemp("every-entity")
    store = open_store(f"sqlite:///{root / 'holon.db'}", secret_key=new_key(), auto_upgrade=True)
    try:
        with console(store, root / "home") as built:
            yield built
    finally:
        store.close()


def _see(live: Console, page: str, path: str, role: str, shows: str | None) -> None:
    """GET `path` as `role`: never a 5xx; when `shows` is given, a 200 showing it."""
    response = live.get(path, role)
    assert response.status_code < 500, (path, role, response.text[:2000])
    if shows is not None:
        assert response.status_code == 200, (path, role, response.status_code, response.text[:500])
        assert shows in response.text, (path, role)
        RENDERED[(page, role.split(":")[0])] += 1
    else:
        assert response.status_code in (200, 303, 403, 404), (path, role, response.status_code)


def _unique(document: dict[str, Any], key: str) -> dict[str, Any]:
    """The drawn document with its id made unique in the store (still valid)."""
    return {**document, key: f"{document[key]}-u{next(_serial)}"}


def _one_price_unit_a_side(manifest: dict[str, Any]) -> dict[str, Any]:
    """Per-1k and per-1m prices for one side are refused (not a schema rule): keep per-1k."""
    pricing = dict(manifest.get("pricing") or {})
    for side in ("input", "output"):
        if f"per_1k_{side}_tokens_usd" in pricing:
            pricing.pop(f"per_1m_{side}_tokens_usd", None)
    return {**manifest, "pricing": pricing} if "pricing" in manifest else manifest


AGENT_ID = {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,9}/[a-z0-9][a-z0-9-]{0,29}$"}
MANDATE_ID = {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,49}$"}


@EXAMPLES
@given(documents("agent.schema.json", id=AGENT_ID))
def test_every_manifest_renders(live: Console, drawn: dict[str, Any]) -> None:
    document = _one_price_unit_a_side(_unique(drawn, "id"))
    try:
        manifest = manifest_from_dict(document, "<drawn>")  # as the API registers one
    except HolonError:
        reject()
    live.store.agents.register(manifest.to_json())
    agent_id, org = manifest.id, f"org:{manifest.id.split('/')[0]}"
    for role in ("operator", org):
        _see(live, "overview", "/ui/", role, agent_id)
        _see(live, "agent", f"/ui/agents/{agent_id}", role, agent_id)
        _see(live, "evals", f"/ui/evals?agent={quote(agent_id)}", role, agent_id)
    _see(live, "eval-new", f"/ui/evals/new?agent={quote(agent_id)}", "operator", agent_id)
    for role in (STRANGER_ORG, STRANGER_CALLER):
        _see(live, "agent", f"/ui/agents/{agent_id}", role, None)
        assert agent_id not in live.get("/ui/", role).text


@EXAMPLES
@given(documents("mandate.schema.json", id=MANDATE_ID))
def test_every_mandate_renders(live: Console, drawn: dict[str, Any]) -> None:
    document = _unique(drawn, "id")
    service = StoreService(live.store, Path("/nonexistent"))
    try:
        service.mandates.grant(document, source="<drawn>")  # as POST /v1/mandates
    except HolonError:
        reject()
    mandate_id, holder = document["id"], f"caller:{document['holder']}"
    for role in ("operator", holder):
        _see(live, "mandates", "/ui/mandates", role, mandate_id)
        _see(live, "mandate", f"/ui/mandates/{quote(mandate_id)}", role, mandate_id)
        _see(live, "ledger", f"/ui/ledger?mandate={quote(mandate_id)}", role, mandate_id)
    for role in (STRANGER_CALLER, STRANGER_ORG):
        _see(live, "mandate", f"/ui/mandates/{quote(mandate_id)}", role, None)
        assert f">{mandate_id}<" not in live.get("/ui/mandates", role).text


ROLES = st.one_of(
    st.just("operator"),
    st.from_regex(r"org:[a-z0-9][a-z0-9-]{0,20}", fullmatch=True),
    st.from_regex(r"caller:[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True),
)


@EXAMPLES
@given(
    ROLES,
    st.none() | st.text(max_size=200),
    st.sampled_from([None, "2000-01-01T00:00:00+00:00", "2999-01-01T00:00:00+00:00"]),
)
def test_every_token_renders(live: Console, role: str, note: str | None, expires: Any) -> None:
    from datetime import datetime

    at = None if expires is None else datetime.fromisoformat(expires)
    info, _ = live.store.tokens.create(role, note, expires_at=at)
    _see(live, "tokens", "/ui/tokens", "operator", info.id)
    for other in ("org:acme", "caller:finance-bot"):
        _see(live, "tokens", "/ui/tokens", other, None)


SUITE_ID = schema("suite.schema.json")["properties"]["id"]["pattern"]
CAPABILITY = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"
PLANNED = st.fixed_dictionaries(
    {
        "id": st.from_regex(SUITE_ID, fullmatch=True).filter(lambda s: len(s) <= 63),
        "version": st.integers(1, 99),
        "capability": st.from_regex(CAPABILITY, fullmatch=True).filter(lambda s: len(s) <= 100),
        "cases": st.fixed_dictionaries({"public": st.integers(0, 3), "holdout": st.integers(0, 3)}),
        "repetitions": st.integers(1, 2),
    }
)


@EXAMPLES
@given(
    st.from_regex(r"[a-z0-9][a-z0-9-]{0,12}", fullmatch=True),
    st.lists(PLANNED, min_size=0, max_size=3, unique_by=lambda s: s["id"]),
    st.sampled_from([EvalStatus.RUNNING, EvalStatus.CANCELLED]),
    st.integers(0, 4),
)
def test_every_eval_renders(
    live: Console, org: str, suites: list[dict[str, Any]], status: EvalStatus, claimed: int
) -> None:
    """Evals of every shape the store holds while they run or once cancelled (a done
    eval has a result: tests/gateway/console/test_eval_list.py runs real ones)."""
    agent_id = f"{org}/agent-{next(_serial)}"
    live.store.agents.register(
        {
            "schema_version": 1,
            "id": agent_id,
            "version": "1",
            "protocol": "holon-http",
            "endpoint": "http://127.0.0.1:9/agent",
            "capabilities": sorted({s["capability"] for s in suites}) or ["ticket.classify"],
        }
    )
    run = eval_id()
    cells = [
        CellSpec(0, s["id"], s["version"], split, f"c{i}", "", 0, [], "")
        for s in suites
        for split in ("public", "holdout")
        for i in range(s["cases"][split] * s["repetitions"])
    ]
    cells = [
        CellSpec(n, c.suite_id, c.suite_version, c.split, c.case_id, "0" * 64, 0, [], f"r-{n}")
        for n, c in enumerate(cells)
    ]
    live.store.evals.create(
        eval_id=run,
        agent_id=agent_id,
        agent_version="1",
        plan={"agent": agent_id, "agent_version": "1", "suites": suites},
        plan_digest="0" * 64,
        full_plan=False,
        cells=cells,
    )
    if cells and claimed:
        live.store.evals.claim(run, "test-owner", claimed, lease_s=60)
    if status != EvalStatus.RUNNING:
        live.store.evals.cancel(run)
    owner = f"org:{org}"
    for role in ("operator", owner):
        _see(live, "eval", f"/ui/evals/{run}", role, run)
        _see(live, "eval-progress", f"/ui/evals/{run}/progress", role, str(status))
        _see(live, "evals", f"/ui/evals?agent={quote(agent_id)}", role, run)
        if suites:
            wanted = f"/ui/evals?suite={quote(suites[0]['id'])}&status={status}"
            _see(live, "evals-by-suite", wanted, role, run)
        # The case explorer on the eval's page, filtered, and the first cell the role sees.
        _see(live, "eval-cells", f"/ui/evals/{run}?outcome=failures&text=c0", role, run)
        seen = [c for c in cells if role == "operator" or c.split == "public"]
        if seen:
            _see(live, "cell", f"/ui/evals/{run}/cells/{seen[0].idx}", role, seen[0].case_id)
    for held in (c for c in cells if c.split == "holdout"):
        # An author's answer for a holdout cell is that for an index that does not exist.
        hidden = live.get(f"/ui/evals/{run}/cells/{held.idx}", owner)
        assert hidden.status_code == 404
        assert hidden.text == live.get(f"/ui/evals/{run}/cells/{len(cells)}", owner).text
    for role in (STRANGER_ORG, STRANGER_CALLER):
        _see(live, "eval", f"/ui/evals/{run}", role, None)
        _see(live, "cell", f"/ui/evals/{run}/cells/0", role, None)
        assert run not in live.get("/ui/evals", role).text


# Suites: a suite.yaml with only what is required, and one with every optional field
# of its own that needs no files beside it (a hostile title and description too).
SUITE_MINIMAL = """\
schema_version: 1
id: {id}
version: 1
capability: console.{capability}
title: "{title}"
input_schema: {{$ref: schemas/input.json}}
output_schema: {{$ref: schemas/output.json}}
limits: {{max_cost_usd: "0.01", timeout_s: 5}}
threshold: 0.8
public: {{file: cases/public.jsonl}}
"""
SUITE_EVERYTHING = (
    SUITE_MINIMAL
    + """\
license: CC-BY-4.0
description: "{title} {title}"
repetitions: 2
expected_kind: output
grace_days: 0
overfit: {{delta: 0.5}}
checks:
  - {{name: label, path: $.output.label, equals: {{path: $.expected.label}}}}
holdout: {{file: cases/holdout.jsonl}}
"""
)
TITLE = "<script>alert(1)</script> \\u202e"


@pytest.mark.parametrize(
    ("suite_id", "text"),
    [("bare-suite", SUITE_MINIMAL), ("every-field-suite", SUITE_EVERYTHING)],
)
def test_every_suite_renders(live: Console, tmp_path: Path, suite_id: str, text: str) -> None:
    from evals.suites import install_suite
    from tests.evals.suites._make import case, make_suite

    checked = [{**case("p1"), "checks": [{"name": "l", "path": "$.output.label", "exists": True}]}]
    directory = make_suite(
        tmp_path,
        suite_yaml=text.format(id=suite_id, title=TITLE, capability=suite_id.replace("-", "_")),
        public=checked,
    )
    install_suite(live.store, directory)
    for role in ("operator", "org:acme", "caller:finance-bot"):
        _see(live, "suites", "/ui/suites", role, suite_id)
        _see(live, "suite", f"/ui/suites/{suite_id}", role, suite_id)
        assert "<script>alert" not in live.get(f"/ui/suites/{suite_id}", role).text


# The eval and compare pages render a view the service builds (an eval's status, a
# comparison): drawn from their schemas, each rendered as the page renders it, for an
# operator and for an org (an author: its views are the same shapes, cut).
RECORD = {"$ref": "https://holon.dev/schema/entities/record.json"}
VIEWERS = (Bearer("operator", "tok_operator"), Bearer("org:acme", "tok_org"))


# The case explorer's rows and a cell's page, with each optional field present or absent
# (a cell not yet run, one whose agent timed out, one without tags or checks).
TEXT = st.text(max_size=300)
NONE_OR_TEXT = st.none() | TEXT
PRETTY = st.none() | st.fixed_dictionaries({"text": TEXT, "more": st.integers(0, 10**7)})
ROW = {
    "idx": st.integers(0, 10**6),
    "suite": TEXT,
    "case_id": TEXT,
    "split": st.sampled_from(["public", "holdout"]),
    "repetition": st.integers(0, 99),
    "status": st.sampled_from(["pass", "fail", "error", "pending", "running"]),
    "outcome": st.none() | st.sampled_from(["ok", "timeout", "unreachable"]),
    "latency_ms": st.none() | st.decimals(0, 10**6, places=1),
    "cost_usd": NONE_OR_TEXT,
    "failed": st.lists(TEXT, max_size=6),
    "tags": st.lists(TEXT, max_size=3),
}
EXPLORED = st.fixed_dictionaries(
    {
        "rows": st.lists(st.fixed_dictionaries(ROW), max_size=3),
        "next_page": st.none() | st.just("after=3"),
        "first_page": st.none() | st.just("") | st.just("outcome=failures"),
        "query": st.sampled_from(["", "tag=x"]),
        "stopped_at": st.none() | st.integers(0, 10**6),
        "filters": st.dictionaries(st.sampled_from(["outcome", "tag", "text"]), TEXT),
        "splits": st.sampled_from([["public"], ["public", "holdout"]]),
        "outcomes": st.just(["failures", "errors", "passes"]),
        "limit": st.just(100),
    }
)
CHECK = st.fixed_dictionaries(
    {
        "name": TEXT,
        "status": st.sampled_from(["pass", "fail", "no-match", "type-mismatch", "error"]),
        "passed": st.booleans(),
        "critical": st.booleans(),
        "detail": NONE_OR_TEXT,
        "path": NONE_OR_TEXT,
        "expected": NONE_OR_TEXT,
        "actual": NONE_OR_TEXT,
        "offending": st.lists(TEXT, max_size=12),
    }
)
ATTEMPT = st.fixed_dictionaries(
    {
        k: st.none() | v
        for k, v in {
            "number": st.integers(1, 9),
            "started_at": TEXT,
            "outcome": TEXT,
            "http_status": st.integers(100, 599),
            "latency_ms": st.decimals(0, 10**6, places=1),
            "error": TEXT,
        }.items()
    }
)
CELL = st.fixed_dictionaries(
    {
        **ROW,
        "eval_id": st.just("ev_drawn"),
        "agent": st.just("acme/agent"),
        "request_id": TEXT,
        "case_digest": TEXT,
        "input": PRETTY,
        "output": PRETTY,
        "metadata": PRETTY,
        "checks": st.none() | st.lists(CHECK, max_size=3),
        "error": NONE_OR_TEXT,
        "http_status": st.none() | st.integers(100, 599),
        "attempts": st.integers(0, 9),
        "attempt_log": st.lists(ATTEMPT, max_size=3),
        "grade_ms": st.none() | st.decimals(0, 10**6, places=1),
        "input_tokens": st.none() | st.integers(0, 10**9),
        "output_tokens": st.none() | st.integers(0, 10**9),
        "prev": st.none() | st.integers(0, 10**6),
        "next": st.none() | st.integers(0, 10**6),
        "filters": st.dictionaries(st.sampled_from(["outcome", "tag", "text"]), TEXT),
    }
)


@EXAMPLES
@given(CELL, st.sampled_from(["", "outcome=failures"]))
def test_every_cell_view_renders(cell: dict[str, Any], query: str) -> None:
    for who in VIEWERS:
        page = render("cell.html", who=who, csrf="", cell=cell, query=query)
        assert f"Cell {cell['idx']} of eval" in page
        assert "<script>" not in page.replace('<script src="/ui/static/console.js"', "")
        RENDERED[("cell (view)", who.kind)] += 1


@EXAMPLES
@given(documents("entities/eval.json", record=RECORD), EXPLORED)
def test_every_eval_view_renders(view: dict[str, Any], cells: dict[str, Any]) -> None:
    for who in VIEWERS:
        for audience in ("author", "operator") if who.is_operator else ("author",):
            page = render(
                "eval.html",
                who=who,
                csrf="",
                view=view,
                audience=audience,
                done_share=0,
                status_word=view["status"],
                status_note="",
                cells=cells,
            )
            assert view["id"] in page
            RENDERED[("eval (view)", who.kind)] += 1


SIDE = st.fixed_dictionaries(
    {"idx": st.integers(0, 10**6), "status": st.sampled_from(["pass", "fail", "error"])}
)
CHANGED = st.none() | st.fixed_dictionaries(
    {
        "n": st.integers(0, 10**4),
        "cells": st.lists(
            st.fixed_dictionaries(
                {
                    "suite": TEXT,
                    "split": st.sampled_from(["public", "holdout"]),
                    "case_id": TEXT,
                    "repetition": st.integers(0, 99),
                    "base": SIDE,
                    "candidate": SIDE,
                }
            ),
            max_size=3,
        ),
    }
)


@settings(EXAMPLES, max_examples=15)
@given(documents("compare.schema.json", most=2), CHANGED)  # large: few items a list
def test_every_comparison_renders(comparison: dict[str, Any], changed: Any) -> None:
    """A suite in one eval only (allow_mismatch) has a null side: that answered 500."""
    for who in VIEWERS:
        page = render(
            "compare.html",
            who=who,
            csrf="",
            comparison=comparison,
            changed=changed,
            base="ev_base",
            candidate="ev_candidate",
            audience="author",
            allow=True,
        )
        assert "ev_candidate" in page
        RENDERED[("compare (view)", who.kind)] += 1


@EXAMPLES
@given(st.lists(documents("entities/ledger-row.json"), min_size=1, max_size=3))
def test_every_ledger_row_renders(rows: list[dict[str, Any]]) -> None:
    for who in (VIEWERS[0], Bearer("caller:finance-bot", "tok_caller")):
        page = render("ledger.html", who=who, csrf="", rows=rows, next_cursor="c", filters={})
        assert all(f"<td>{row['at']}</td>" in page for row in rows)
        RENDERED[("ledger (view)", who.kind)] += 1


@settings(EXAMPLES, max_examples=15)
@given(documents("agent.schema.json", id=AGENT_ID))
def test_every_certificate_renders(live: Console, drawn: dict[str, Any]) -> None:
    """A certificate of every manifest: the operator's list and its page, and the
    verifying form of every role given it (an agent with no record: no one else's)."""
    from records import Certify, utcnow
    from schema.jsontext import dumps

    try:
        manifest = manifest_from_dict(_one_price_unit_a_side(_unique(drawn, "id")), "<drawn>")
    except HolonError:
        reject()
    live.store.agents.register(manifest.to_json())
    with live.store.write() as session:
        cert_id = live.store.certificates.issue_in(
            session, Certify(manifest.to_json(), None, {"eval_id": eval_id()}), now=utcnow()
        )
    _see(live, "certificates", "/ui/certificates", "operator", cert_id)
    _see(live, "certificate", f"/ui/certificates/{cert_id}", "operator", cert_id)
    text = dumps(live.store.certificates.find(cert_id)["envelope"])
    for role in ("operator", f"org:{manifest.id.split('/')[0]}", STRANGER_ORG, STRANGER_CALLER):
        _see(live, "certificate-verify", "/ui/certificates/verify", role, "Verify")
        verified = live.post("/ui/certificates/verify", role, {"certificate": text})
        assert verified.status_code == 200 and cert_id in verified.text, role
        if role != "operator":
            _see(live, "certificates", "/ui/certificates", role, None)
            _see(live, "certificate", f"/ui/certificates/{cert_id}", role, None)


@settings(EXAMPLES, max_examples=15)
@given(documents("agent.schema.json", id=AGENT_ID))
def test_every_manifest_registers_through_the_form(live: Console, drawn: dict[str, Any]) -> None:
    """A drawn manifest pasted as JSON: registered (its id on the page) or refused with
    the API's 4xx, never a 5xx; the form's page for every role."""
    from schema.jsontext import dumps

    document = _one_price_unit_a_side(_unique(drawn, "id"))
    org = f"org:{document['id'].split('/')[0]}"
    for role in ("operator", org):
        _see(live, "agent-register", "/ui/agents/register", role, "Register")
    _see(live, "agent-register", "/ui/agents/register", STRANGER_CALLER, None)
    done = live.post("/ui/agents/register", org, {"manifest": dumps(document)})
    # 409: an asgi: agent, registered on the store only.
    assert done.status_code in (201, 400, 403, 409, 413, 422), (done.status_code, done.text[:500])
    if done.status_code == 201:
        assert document["id"] in done.text
        _see(live, "agent", f"/ui/agents/{document['id']}", org, "Bearer secret")
        _see(live, "agent-eval", f"/ui/agents/{document['id']}/eval", org, "Holdout budget")
        _see(live, "agent-eval", f"/ui/agents/{document['id']}/eval", STRANGER_ORG, None)


@settings(EXAMPLES, max_examples=15)
@given(documents("mandate.schema.json", id=MANDATE_ID))
def test_every_mandate_holder_sees_the_agents_it_covers(
    live: Console, drawn: dict[str, Any]
) -> None:
    """A caller's overview and agent pages under every mandate (the agents the other
    tests registered, covered or not): no 5xx, and each agent listed opens."""
    import re

    document = _unique(drawn, "id")
    try:
        StoreService(live.store, Path("/nonexistent")).mandates.grant(document, source="<drawn>")
    except HolonError:
        reject()
    holder = f"caller:{document['holder']}"
    _see(live, "caller-agents", "/ui/", holder, "Agents your mandates cover")
    listed = re.findall(r'href="/ui/agents/([^"]+)"', live.get("/ui/", holder).text)
    for agent_id in listed[:3]:
        _see(live, "caller-agent", f"/ui/agents/{agent_id}", holder, "Try a call")
    _see(live, "caller-agent", "/ui/agents/nobody/nothing", holder, None)


def test_rendered_every_page_for_every_role(live: Console) -> None:
    """Runs last in this file: every page and role above rendered entities."""
    if not RENDERED:
        pytest.skip("counts the pages of this file's other tests: run with them")
    print("\npages rendered with the entity on them, by page and role:")
    for (page, role), n in sorted(RENDERED.items()):
        print(f"  {page:16} {role:9} {n}")
    expected = {
        ("overview", "operator"),
        ("overview", "org"),
        ("agent", "operator"),
        ("agent", "org"),
        ("eval-new", "operator"),
        ("mandates", "operator"),
        ("mandates", "caller"),
        ("mandate", "operator"),
        ("mandate", "caller"),
        ("tokens", "operator"),
        ("eval", "operator"),
        ("eval", "org"),
        ("eval-cells", "operator"),
        ("eval-cells", "org"),
        ("cell", "operator"),
        ("cell", "org"),
        ("evals", "operator"),
        ("evals", "org"),
        ("eval (view)", "operator"),
        ("eval (view)", "org"),
        ("cell (view)", "operator"),
        ("cell (view)", "org"),
        ("compare (view)", "operator"),
        ("compare (view)", "org"),
        ("ledger (view)", "operator"),
        ("ledger (view)", "caller"),
        ("suite", "operator"),
        ("suite", "org"),
        ("suite", "caller"),
    }
    assert expected <= {key for key, n in RENDERED.items() if n > 0}
