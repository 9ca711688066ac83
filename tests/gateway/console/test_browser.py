"""The console in a real browser (Debian's chromium through Playwright) against a real
uvicorn gateway: signing in, every page of every role, operator actions end to end, a
hostile agent's output inert, no holdout for an author, a suite with code added in two
steps (its file chosen in the form's file field, sent as the browser sends it), and the
keyboard alone."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from evals.suites import install_suite
from tests.evals.suites._make import SUITE_YAML, case, make_suite
from tests.gateway.console._browser import Watched, watched_page
from tests.gateway.console._world import EVIL, HOLDOUT_TEXT, TRIAGE, World
from tests.gateway.console.test_suite_upload import _with_a_grader

pytestmark = pytest.mark.slow


def sign_in(watched: Watched, console: World, role: str) -> None:
    page = watched.page
    page.goto(console.gw.url + "/ui/")
    assert page.url.endswith("/ui/sign-in")
    page.fill("#token", console.gw.token(role))
    page.click("button[type=submit]")
    page.wait_for_load_state()
    assert f"signed in as {role}" in page.inner_text("header")


def visit(watched: Watched, console: World, path: str, status: int = 200) -> str:
    response = watched.page.goto(console.gw.url + path)
    assert response is not None and response.status == status, (path, response and response.status)
    if status >= 400:
        watched.refused(status)
    watched.page.wait_for_load_state("load")
    text: str = watched.page.content()
    # Nothing of the hostile agent ran: no script changed the title, no dialog opened.
    assert "pwned" not in watched.page.title()
    return text


def frames_text(watched: Watched) -> str:
    return "".join(frame.content() for frame in watched.page.frames)


ROLE_PAGES = {
    "operator": {
        "/ui/": 200,
        f"/ui/agents/{TRIAGE}": 200,
        f"/ui/agents/{EVIL}": 200,
        "/ui/suites": 200,
        "/ui/suites/tiny": 200,
        "/ui/mandates": 200,
        "/ui/mandates/finance-tickets": 200,
        "/ui/ledger": 200,
        "/ui/tokens": 200,
        "/ui/evals/new": 200,
        "/ui/evals": 200,
        "/ui/compare": 200,
        "/ui/agents/register": 200,
        f"/ui/agents/{TRIAGE}/eval": 200,
        "/ui/certificates": 200,
        "/ui/certificates/verify": 200,
        "/ui/suites/upload": 200,
        "/ui/no-such-page": 404,
    },
    "org:acme": {
        "/ui/": 200,
        f"/ui/agents/{TRIAGE}": 200,
        f"/ui/agents/{EVIL}": 200,
        "/ui/suites": 200,
        "/ui/suites/tiny": 200,
        "/ui/compare": 200,
        "/ui/evals": 200,
        "/ui/mandates": 403,
        "/ui/ledger": 403,
        "/ui/tokens": 403,
        "/ui/agents/register": 200,
        f"/ui/agents/{TRIAGE}/eval": 200,
        "/ui/certificates": 403,
        "/ui/certificates/verify": 200,
        "/ui/suites/upload": 403,
    },
    "caller:finance-bot": {
        "/ui/mandates": 200,
        "/ui/mandates/finance-tickets": 200,
        "/ui/ledger": 200,
        "/ui/suites": 200,
        "/ui/": 200,  # the agents its mandate covers
        f"/ui/agents/{TRIAGE}": 200,
        f"/ui/agents/{EVIL}": 200,  # covered too: a hostile agent's text, inert
        "/ui/agents/nobody/nothing": 404,
        "/ui/evals": 403,
        "/ui/tokens": 403,
        "/ui/certificates": 403,
        "/ui/certificates/verify": 200,
        "/ui/suites/upload": 403,
        "/ui/no-such-page": 404,
    },
}


@pytest.mark.parametrize("role", list(ROLE_PAGES))
def test_every_page_of_every_role_renders_inert_and_clean(
    console: World, chromium: Any, role: str
) -> None:
    pages = dict(ROLE_PAGES[role])
    if role != "caller:finance-bot":
        for eval_id in (console.triage_eval, console.hostile_eval):
            pages[f"/ui/evals/{eval_id}"] = 200
            pages[f"/ui/evals/{eval_id}/cells/0"] = 200  # a public cell's page
        pages[f"/ui/compare?base={console.triage_eval}&candidate={console.triage_eval}"] = 200
    with watched_page(chromium) as watched:
        sign_in(watched, console, role)
        for path, status in pages.items():
            visit(watched, console, path, status)
            if path.startswith("/ui/evals/ev_") and "/cells/" not in path:
                watched.page.wait_for_selector("iframe.report")
                frame = watched.page.frame_locator("iframe.report")
                frame.locator("body").wait_for()
            watched.clean()
        if role != "caller:finance-bot":
            # The hostile agent's text is on the page as text, its controls as escapes.
            visit(watched, console, f"/ui/agents/{EVIL}")
            shown = watched.page.inner_text("main")
            assert "<script>document.title='pwned'</script>" in shown
            assert "invoice\\u202etxt.exe" in shown and "\u202e" not in shown
            visit(watched, console, f"/ui/evals/{console.hostile_eval}")
            report = watched.page.frame_locator("iframe.report").locator("body").inner_text()
            assert f"Eval report: {EVIL}" in report  # rendered, and nothing in it ran
        watched.clean()


def test_an_author_in_the_browser_never_reaches_holdout_contents(
    console: World, chromium: Any
) -> None:
    with watched_page(chromium) as watched:
        sign_in(watched, console, "org:acme")
        eval_id = console.triage_eval
        for path in (
            f"/ui/evals/{eval_id}",
            f"/ui/evals/{eval_id}/charts",
            f"/ui/evals/{eval_id}?text=refund",
            f"/ui/evals/{eval_id}/cells/0",
            "/ui/suites/tiny",
            f"/ui/agents/{TRIAGE}",
        ):
            visit(watched, console, path)
            watched.page.wait_for_load_state("networkidle")
            assert HOLDOUT_TEXT not in frames_text(watched), path
        for form in ("html", "json", "md"):
            response = watched.page.request.get(
                console.gw.url + f"/ui/evals/{eval_id}/report?format={form}"
            )
            assert response.status == 200 and HOLDOUT_TEXT not in response.text()
        visit(watched, console, f"/ui/evals/{eval_id}?audience=operator", 403)
        watched.clean()


def test_operator_actions_end_to_end(console: World, chromium: Any, tmp_path: Path) -> None:
    gw = console.gw
    with watched_page(chromium) as watched:
        page = watched.page
        sign_in(watched, console, "operator")

        # Start an eval: the plan with its worst case first, then confirm.
        visit(watched, console, f"/ui/evals/new?agent={TRIAGE}")
        page.click("text=Plan it")
        page.wait_for_selector("text=worst case")
        assert "cells, worst case $" in page.inner_text("main")
        page.click("text=Confirm: start this eval")
        page.wait_for_url("**/ui/evals/ev_*")
        eval_id = page.url.rsplit("/", 1)[1]
        # The page follows the eval (polling) until its report shows.
        page.wait_for_selector("iframe.report", timeout=60_000)
        assert gw.store.evals.get(eval_id).status == "done"
        watched.clean()

        # Cancel a running eval (paced, so it is still running), then resume is refused.
        started = gw.call("POST", "/v1/evals", "operator", json={"agent": TRIAGE, "pace_s": 30})
        running = started.json()["eval"]["id"]
        visit(watched, console, f"/ui/evals/{running}")
        page.click("text=Cancel this eval")
        page.wait_for_selector("text=Status: cancelled")
        assert gw.store.evals.get(running).status == "cancelled"
        # A cancelled eval offers no resume (the API refuses one), but a new eval.
        assert page.locator("text=Resume this eval").count() == 0
        assert "start a new eval" in page.inner_text("main")

        # Disable and enable an agent.
        visit(watched, console, f"/ui/agents/{TRIAGE}")
        page.click("text=Disable this agent")
        page.wait_for_selector("text=Enable this agent")
        assert gw.store.agents.get(TRIAGE).disabled is True
        page.click("text=Enable this agent")
        page.wait_for_selector("text=Disable this agent")
        assert gw.store.agents.get(TRIAGE).disabled is False

        # Grant a mandate, then revoke it.
        visit(watched, console, "/ui/mandates")
        document = {
            "schema_version": 1,
            "id": "ops-console",
            "holder": "ops-bot",
            "capabilities": ["ticket.classify"],
            "max_cost_per_call_usd": "0.01",
            "budget": {"amount_usd": "5", "period": "month"},
        }
        page.fill("#document", json.dumps(document))
        page.click("form[action='/ui/mandates'] button")
        page.wait_for_url("**/ui/mandates/ops-console")
        assert gw.store.mandates.get("ops-console").revoked_at is None
        page.click("text=Revoke this mandate")
        page.wait_for_selector("text=revoked")
        assert gw.store.mandates.get("ops-console").revoked_at is not None

        # Create a token (shown once), then revoke it.
        visit(watched, console, "/ui/tokens")
        page.fill("#t-role", "caller:console-made")
        page.fill("#t-note", "made in the console")
        page.click("form[action='/ui/tokens'] button")
        token = page.inner_text("#new-token")
        info = gw.store.tokens.authenticate(token)
        assert info is not None and info.role == "caller:console-made"
        visit(watched, console, "/ui/tokens")
        assert token not in page.content()  # shown that once
        page.click(f"button[aria-label='Revoke {info.id}']")
        page.wait_for_load_state()
        assert gw.store.tokens.authenticate(token) is None

        # Activate a newly installed suite version (installed, not active).
        v2 = SUITE_YAML.replace("\nversion: 1\n", "\nversion: 2\n")
        install_suite(
            gw.store,
            make_suite(tmp_path, suite_yaml=v2, public=[case("p0", "Cannot log in", "account")]),
        )
        newest = max(v.version for v in gw.store.suites.versions("tiny"))
        assert gw.store.suites.get("tiny").version != newest
        visit(watched, console, "/ui/suites/tiny")
        page.click(f"text=Activate v{newest}")
        page.wait_for_selector(f"text=v{newest}")
        assert gw.store.suites.get("tiny").version == newest

        # Ledger: filters, then the CSV download.
        visit(watched, console, "/ui/ledger")
        page.select_option("#l-decision", "allow")
        page.click("text=Filter")
        page.wait_for_url("**decision=allow**")
        with page.expect_download() as download:
            page.click("text=Download as CSV")
        path = download.value.path()
        rows = Path(path).read_text().splitlines()
        assert rows[0].startswith("at,request_id,caller") and len(rows) == 4
        watched.clean()

        # Signing out ends the session.
        page.click("text=Sign out")
        page.wait_for_url("**/ui/sign-in")
        visit(watched, console, "/ui/tokens")
        assert page.url.endswith("/ui/sign-in")


def test_an_operator_adds_a_suite_with_code_in_two_steps(
    console: World, chromium: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    folder = _with_a_grader(tmp_path / "graded", marker)
    suite_yaml = folder / "suite.yaml"
    suite_yaml.write_text(
        suite_yaml.read_text()
        .replace("id: tiny", "id: graded")
        .replace("capability: ticket.classify", "capability: ticket.graded")
    )
    archive = tmp_path / "graded.tar.gz"
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as packed:
        packed.add(folder, arcname="graded")
    archive.write_bytes(out.getvalue())
    digest = hashlib.sha256((folder / "ext" / "grader.py").read_bytes()).hexdigest()
    with watched_page(chromium) as watched:
        page = watched.page
        sign_in(watched, console, "operator")
        visit(watched, console, "/ui/suites")
        page.click("text=Add a suite")
        page.wait_for_url("**/ui/suites/upload")
        page.set_input_files("#u-archive", str(archive))
        page.click("text=Upload and install")
        page.wait_for_selector("text=This suite carries code")
        assert digest in page.inner_text("main") and not marker.exists()
        page.set_input_files("#t-archive", str(archive))
        page.check("#t-confirm")
        page.click("text=Install with this code")
        page.wait_for_selector("text=Installed")
        assert marker.exists()
        assert console.gw.store.suites.get("graded").version == 1
        watched.clean()


def test_the_keyboard_alone_signs_in_and_moves_around(console: World, chromium: Any) -> None:
    with watched_page(chromium) as watched:
        page = watched.page
        page.goto(console.gw.url + "/ui/sign-in")
        # The token field has the focus; typing and Enter sign in.
        assert page.evaluate("document.activeElement.id") == "token"
        page.keyboard.type(console.gw.token("operator"))
        page.keyboard.press("Enter")
        page.wait_for_url("**/ui/")
        # First Tab: the skip link; Enter moves the focus to the content.
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
        # Tabbing on from there reaches the first agent's link; Enter opens it.
        for _ in range(10):
            page.keyboard.press("Tab")
            href = page.evaluate("document.activeElement.getAttribute('href') || ''")
            if href.startswith("/ui/agents/"):
                break
        else:
            raise AssertionError("no agent link reached with Tab")
        page.keyboard.press("Enter")
        page.wait_for_url("**/ui/agents/**")
        # A focused control shows where it is (the focus ring of console.css).
        page.keyboard.press("Tab")
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline != "none"
        watched.clean()


def test_a_running_eval_is_followed_with_public_progress_only_for_an_author(
    console: World, chromium: Any
) -> None:
    gw = console.gw
    started = gw.call("POST", "/v1/evals", "operator", json={"agent": TRIAGE, "pace_s": 2})
    eval_id = started.json()["eval"]["id"]
    public_cells = started.json()["eval"]["cells_by_split"]["public"]
    with watched_page(chromium) as watched:
        page = watched.page
        sign_in(watched, console, "org:acme")
        visit(watched, console, f"/ui/evals/{eval_id}")
        assert "(public split only)" in page.inner_text("#progress")
        first = int(page.inner_text("[data-field=done]"))
        # The script polls and updates the counts in place (no reload: the same document).
        page.evaluate("window.__same_document = true")
        deadline = time.monotonic() + 30
        while int(page.inner_text("[data-field=done]")) <= first:
            assert time.monotonic() < deadline, "the counts did not move"
            time.sleep(0.2)
        assert page.evaluate("window.__same_document") is True
        done = int(page.inner_text("[data-field=done]"))
        assert done <= public_cells  # never a holdout cell in an author's counts
        cancelled = gw.call("POST", f"/v1/evals/{eval_id}/cancel", "operator")
        assert cancelled.status_code == 200, cancelled.text
        # Once it stops, the page reloads itself to show where it ended.
        page.wait_for_selector("text=Status: cancelled", timeout=30_000)
        watched.clean()
