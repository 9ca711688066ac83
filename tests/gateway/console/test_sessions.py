"""The console's trust boundaries over real HTTP: sessions, CSRF, policy headers, roles."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from gateway.console._web import COOKIE, CSP
from records import AgentRecord, Store
from records._models import ConsoleSessionRow
from tests.gateway.console._world import (
    EVIL,
    HOLDOUT_TEXT,
    TRIAGE,
    World,
    csrf_of,
)
from tests.gateway.server._gateway import install_tiny, register_triage, running_gateway

pytestmark = pytest.mark.slow


def test_a_session_is_a_hashed_cookie_that_survives_restarts_and_ends_with_its_token(
    store: Store, tmp_path: Path
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    with running_gateway(store, tmp_path / "home") as gw:
        with httpx.Client(base_url=gw.url) as anonymous:
            assert anonymous.get("/ui/").headers["location"] == "/ui/sign-in"
            here = {"origin": gw.url}
            refused = anonymous.post("/ui/sign-in", data={"token": "hol_not-a-token"}, headers=here)
            assert refused.status_code == 401 and COOKIE not in refused.cookies
            assert "unknown, revoked or expired token" in refused.text
            signed = anonymous.post(
                "/ui/sign-in", data={"token": gw.tokens["org:acme"]}, headers=here
            )
            assert signed.status_code == 303
            header = signed.headers["set-cookie"].lower()
            assert "httponly" in header and "samesite=strict" in header and "path=/ui" in header
            assert "max-age=43200" in header
            assert "secure" not in header  # plain http: no Secure flag
            cookie = anonymous.cookies[COOKIE]
            assert anonymous.get("/ui/").status_code == 200
        # Under https (here: a proxy on 127.0.0.1 saying so, which uvicorn trusts) the
        # cookie is Secure as well.
        https = httpx.post(
            gw.url + "/ui/sign-in",
            data={"token": gw.tokens["org:acme"]},
            headers={"x-forwarded-proto": "https", "origin": gw.url.replace("http:", "https:")},
        )
        assert https.status_code == 303 and "; secure" in https.headers["set-cookie"].lower()
        # Only the cookie's hash is stored.
        with store.read() as session:
            ids = list(session.scalars(select(ConsoleSessionRow.id)))
        assert hashlib.sha256(cookie.encode()).hexdigest() in ids and cookie not in ids
        token = gw.tokens["org:acme"]

    # Another gateway process on the same store: the session still works.
    with running_gateway(store, tmp_path / "home") as again:
        with httpx.Client(base_url=again.url, cookies={COOKIE: cookie}) as client:
            page = client.get("/ui/")
            assert page.status_code == 200 and "acme/ticket-triage" in page.text
            # Signing out ends it everywhere; the old cookie is a stranger from then on.
            out = client.post("/ui/sign-out", data={"csrf": csrf_of(page.text)})
            assert out.status_code == 303
        with httpx.Client(base_url=again.url, cookies={COOKIE: cookie}) as replay:
            assert replay.get("/ui/").headers["location"] == "/ui/sign-in"
        # A session of a token stops working when the token is revoked.
        with httpx.Client(base_url=again.url) as other:
            signed = other.post("/ui/sign-in", data={"token": token}, headers={"origin": again.url})
            assert signed.status_code == 303
            assert other.get("/ui/").status_code == 200
            info = store.tokens.authenticate(token)
            assert info is not None
            store.tokens.revoke(info.id)
            assert other.get("/ui/").headers["location"] == "/ui/sign-in"


def test_every_form_needs_its_csrf_token_and_this_origin(console: World) -> None:
    gw = console.gw
    client = console.sign_in("operator")
    page = client.get(f"/ui/agents/{TRIAGE}")
    token = csrf_of(page.text)
    path = f"/ui/agents/{TRIAGE}/disable"
    for data, headers in (
        ({}, {}),  # no token
        ({"csrf": "0" * 64}, {}),  # a wrong one
        ({"csrf": token}, {"origin": "https://evil.example"}),  # another site's page
    ):
        refused = client.post(path, data=data, headers=headers)
        assert refused.status_code == 403, (data, headers)
    assert gw.store.agents.get(TRIAGE).disabled is False
    # Another session's token does not do either: it is bound to its own cookie.
    other = console.sign_in("operator")
    assert other.post(path, data={"csrf": token}).status_code == 403
    done = client.post(path, data={"csrf": token}, headers={"origin": gw.url})
    assert done.status_code == 303 and gw.store.agents.get(TRIAGE).disabled is True
    assert client.post(f"/ui/agents/{TRIAGE}/enable", data={"csrf": token}).status_code == 303
    # Without a session a form is refused, never run.
    with httpx.Client(base_url=gw.url) as stranger:
        assert stranger.post(path, data={"csrf": token}).status_code == 401


def test_signing_in_is_only_from_this_gateways_page(console: World) -> None:
    """Login CSRF: another site's page posting the sign-in form with the attacker's
    token would sign the victim's browser in as the attacker. Without a session there
    is no CSRF token, so the form must name this gateway as its Origin or Referer."""
    gw = console.gw
    token = gw.tokens["operator"]
    for headers in (
        {},  # neither Origin nor Referer
        {"origin": "https://evil.example"},  # another site's page
        {"origin": "null"},  # a sandboxed frame, a data: page
        {"origin": gw.url.replace("127.0.0.1", "localhost")},  # not this origin exactly
        {"referer": "https://evil.example/ui/sign-in"},  # no Origin, another site's Referer
        {"origin": "https://evil.example", "referer": gw.url + "/ui/sign-in"},  # Origin wins
    ):
        with httpx.Client(base_url=gw.url) as browser:
            refused = browser.post("/ui/sign-in", data={"token": token}, headers=headers)
            assert refused.status_code == 403, headers
            assert COOKIE not in refused.cookies and "set-cookie" not in refused.headers
            assert "sign in from this gateway&#39;s own sign-in page" in refused.text
            assert refused.headers["content-security-policy"] == CSP
    # This gateway's page: by its Origin, or by its Referer when a browser sends no Origin.
    for headers in ({"origin": gw.url}, {"referer": gw.url + "/ui/sign-in"}):
        with httpx.Client(base_url=gw.url) as browser:
            signed = browser.post("/ui/sign-in", data={"token": token}, headers=headers)
            assert signed.status_code == 303 and COOKIE in signed.cookies, headers


def test_bare_ui_leads_to_the_console(console: World) -> None:
    with httpx.Client(base_url=console.gw.url) as browser:
        moved = browser.get("/ui")
        assert moved.status_code == 308 and moved.headers["location"] == "/ui/"
        assert moved.headers["content-security-policy"] == CSP
        followed = browser.get("/ui", follow_redirects=True)
        assert followed.url.path == "/ui/sign-in"  # not signed in: on to the sign-in page
        # Only GET: anything else at /ui is no route.
        assert browser.post("/ui").status_code in (404, 405)


def test_resuming_a_running_eval_goes_on_and_a_done_reports_page_is_kept(
    console: World,
) -> None:
    """Resume from the console is the API's check (the gateway's workers do the work):
    a running eval is resumed to its end. Its report in the page, once done, is the
    same bytes on every request, and an author's is never the operator's."""
    import time

    gw = console.gw
    client = console.sign_in("operator")
    started = gw.call("POST", "/v1/evals", "operator", json={"agent": TRIAGE, "pace_s": 0.3})
    eval_id = started.json()["eval"]["id"]
    page = client.get(f"/ui/evals/{eval_id}")
    assert gw.store.evals.get(eval_id).status == "running"  # paced: still running
    resumed = client.post(f"/ui/evals/{eval_id}/resume", data={"csrf": csrf_of(page.text)})
    assert resumed.status_code == 303 and resumed.headers["location"] == f"/ui/evals/{eval_id}"
    deadline = time.monotonic() + 60
    while gw.store.evals.get(eval_id).status == "running":
        assert time.monotonic() < deadline, "the resumed eval did not finish"
        time.sleep(0.05)
    assert gw.store.evals.get(eval_id).status == "done"
    frame = f"/ui/evals/{eval_id}/report?format=html&view=1"
    first = client.get(frame + "&audience=operator")
    assert first.status_code == 200 and "holdout" in first.text
    assert client.get(frame + "&audience=operator").text == first.text
    api = gw.call("GET", f"/v1/evals/{eval_id}/report?format=html&audience=operator", "operator")
    assert api.text == first.text
    author = client.get(frame + "&audience=author")
    assert author.status_code == 200 and author.text != first.text


PAGES = (
    "/ui/",
    f"/ui/agents/{TRIAGE}",
    f"/ui/agents/{EVIL}",
    "/ui/suites",
    "/ui/suites/tiny",
    "/ui/mandates",
    "/ui/mandates/finance-tickets",
    "/ui/ledger",
    "/ui/tokens",
    "/ui/evals/new",
    "/ui/evals",
    "/ui/compare",
    "/ui/suites/upload",
)


def test_every_page_is_under_the_policy_with_nothing_inline(console: World) -> None:
    client = console.sign_in("operator")
    pages = [
        *PAGES,
        *(f"/ui/evals/{e}" for e in (console.triage_eval, console.hostile_eval)),
        *(f"/ui/evals/{e}/charts" for e in (console.triage_eval, console.hostile_eval)),
        f"/ui/evals/{console.hostile_eval}?text=invoice",
        f"/ui/evals/{console.hostile_eval}/cells/0",
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, (path, response.text[:300])
        assert response.headers["content-security-policy"] == CSP
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["cache-control"] == "no-store"
        text = response.text
        # No inline script, no style attribute, no event handler attribute in the markup.
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), path
        assert not re.search(r"\sstyle=", text), path
        assert not re.search(r"<[^>]+\son[a-z]+=", text), path
        assert "<script>document" not in text and "\u202e" not in text and "\x00" not in text


def test_hostile_agent_text_is_escaped_and_bounded(console: World) -> None:
    client = console.sign_in("operator")
    page = client.get(f"/ui/agents/{EVIL}").text
    assert "&lt;script&gt;document.title=" in page
    assert "invoice\\u202etxt.exe\\u200b\\x00" in page  # shown as escapes, not obeyed
    assert "A" * 1000 not in page and "more characters)" in page
    assert len(page) < 50_000
    cell = client.get(f"/ui/evals/{console.hostile_eval}/cells/0").text
    assert "&lt;script&gt;document.title=" in cell and "\\u202e" in cell
    assert "A" * 20_000 not in cell and "more characters)" in cell
    assert len(cell) < 100_000


def test_roles_are_the_apis(console: World) -> None:
    gw = console.gw
    other = console.sign_in("org:other")
    assert TRIAGE not in other.get("/ui/").text
    for path in (f"/ui/agents/{TRIAGE}", f"/ui/evals/{console.triage_eval}"):
        assert other.get(path).status_code == 403, path
    author = console.sign_in("org:acme")
    for path in ("/ui/tokens", "/ui/ledger", "/ui/mandates", "/ui/evals/new"):
        assert author.get(path).status_code == 403, path
    refused = author.get(f"/ui/evals/{console.triage_eval}?audience=operator")
    assert refused.status_code == 403
    caller = console.sign_in("caller:finance-bot")
    # A caller reads an agent its mandates cover (its score, a call to try), no other.
    assert caller.get(f"/ui/agents/{TRIAGE}").status_code == 200
    assert console.sign_in("caller:nobody").get(f"/ui/agents/{TRIAGE}").status_code == 404
    assert caller.get("/ui/ledger?caller=someone-else").status_code == 400
    rows = caller.get("/ui/ledger.csv").text.splitlines()
    assert len(rows) == 4 and all("finance-bot" in r for r in rows[1:])
    assert caller.get("/ui/tokens").status_code == 403
    csrf = csrf_of(caller.get("/ui/mandates").text)
    assert (
        caller.post("/ui/mandates/finance-tickets/revoke", data={"csrf": csrf}).status_code == 403
    )
    assert gw.store.mandates.get("finance-tickets").revoked_at is None


def test_an_author_never_reaches_holdout_contents(console: World) -> None:
    author = console.sign_in("org:acme")
    eval_id = console.triage_eval
    paths = [
        "/ui/",
        f"/ui/agents/{TRIAGE}",
        f"/ui/evals/{eval_id}",
        f"/ui/evals/{eval_id}/progress",
        f"/ui/evals/{eval_id}/charts",
        *(f"/ui/evals/{eval_id}?{q}" for q in ("outcome=failures", "text=refund", "check=label")),
        f"/ui/evals/{eval_id}/cells/0?outcome=passes",
        "/ui/suites",
        "/ui/suites/tiny",
        f"/ui/compare?base={eval_id}&candidate={eval_id}",
        *(f"/ui/evals/{eval_id}/report?format={f}" for f in ("html", "json", "md")),
        f"/ui/evals/{eval_id}/report?format=html&view=1",
        *(
            f"/ui/compare/download?base={eval_id}&candidate={eval_id}&format={f}"
            for f in ("html", "json", "md")
        ),
    ]
    for path in paths:
        response = author.get(path)
        assert response.status_code == 200, (path, response.text[:300])
        assert HOLDOUT_TEXT not in response.text, path
        assert '"h0"' not in response.text, path
    # A holdout cell's page: the very answer an index past the eval's end gets.
    held = [c.idx for c in console.gw.store.evals.report_cells(eval_id) if c.split == "holdout"]
    past = f"/ui/evals/{eval_id}/cells/{len(held) * 2 + 1000}"
    assert all(
        author.get(f"/ui/evals/{eval_id}/cells/{i}").text == author.get(past).text for i in held
    )
    operator = console.sign_in("operator")
    full = operator.get(f"/ui/evals/{eval_id}/report?format=json&audience=operator")
    assert HOLDOUT_TEXT in full.text  # the test can fail: the operator's report has it
    assert HOLDOUT_TEXT in operator.get(f"/ui/evals/{eval_id}/cells/{held[0]}").text


def test_the_overview_reads_each_agents_record_as_the_api_does(console: World) -> None:
    store = console.gw.store
    register_triage(store, "acme/never-evaluated")
    # A new version of the hostile agent: its old record is no longer its current one.
    hostile = store.agents.get(EVIL).manifest
    store.agents.register({**hostile, "version": "2.0.0"})

    def one_by_one() -> dict[str, AgentRecord]:
        found = {}
        for info in store.agents.list(include_disabled=True, limit=1000).items:
            record = store.evals.current_record_with_staleness(
                info.id, info.version, holdout_evals=False
            )
            if record is not None:
                found[info.id] = record
        return found

    agents = [(a.id, a.version) for a in store.agents.list(limit=1000).items]
    batch = store.evals.current_records_with_staleness(agents)
    assert batch == one_by_one()
    assert set(batch) == {TRIAGE}  # the test can fail: one agent has a current record
    # An old version named explicitly still finds its records, as one by one does.
    old = store.evals.current_records_with_staleness([(EVIL, "1.0.0")])
    single = store.evals.current_record_with_staleness(EVIL, "1.0.0", holdout_evals=False)
    assert old.get(EVIL) == single and single is not None


def test_hostile_requests_get_an_error_page_never_a_traceback(console: World) -> None:
    client = console.sign_in("operator")
    csrf = csrf_of(client.get("/ui/mandates").text)
    answers = {
        "control in a query": client.get("/ui/ledger?agent=%00x"),
        "unknown eval": client.get("/ui/evals/ev_01NOTANEVAL0000000000000000"),
        "no such mandate": client.get("/ui/mandates/%E2%80%AEnope"),
        "a form that is not ASCII": client.post(
            "/ui/mandates",
            content="csrf=x&document=\xff".encode("latin-1"),
            headers={"content-type": "application/x-www-form-urlencoded"},
        ),
        "a form too large": client.post(
            "/ui/mandates", data={"csrf": csrf, "document": "x" * 70_000}
        ),
        "a mandate that is not JSON": client.post(
            "/ui/mandates", data={"csrf": csrf, "document": "{nope"}
        ),
        "a mandate that does not validate": client.post(
            "/ui/mandates", data={"csrf": csrf, "document": '{"id": "<b>x</b>"}'}
        ),
        "a plan over its cost cap": client.post(
            "/ui/evals/plan", data={"csrf": csrf, "agent": TRIAGE, "max_cost_usd": "0"}
        ),
        "a cost cap that is not money": client.post(
            "/ui/evals/plan", data={"csrf": csrf, "agent": TRIAGE, "max_cost_usd": "1E+99999"}
        ),
    }
    for what, response in answers.items():
        assert 400 <= response.status_code < 500, (what, response.status_code)
        assert response.headers["content-type"].startswith("text/html"), what
        assert "Traceback" not in response.text and "<b>x</b>" not in response.text, what
        assert 'role="alert"' in response.text, what
