"""Each role's work in Debian's chromium, by following links as a person would: an operator
finds an eval in the list and reads a failing public case with its input; anyone reaches a
certificate from the overview; a caller opens the agent it calls and sees its score; an org
finds the form that starts an eval of its own agent, and cancels a running one; an agent
without a description and a mandate without a budget render. Each step counts the links clicked."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from agents import load_manifest
from tests.gateway.console._browser import Watched, watched_page
from tests.gateway.console._world import EVIL, TRIAGE, World
from tests.gateway.console.test_browser import sign_in, visit
from tests.gateway.server._gateway import TRIAGE as TRIAGE_MANIFEST

pytestmark = pytest.mark.slow


@contextmanager
def signed_in(chromium: Any, console: World, role: str, path: str) -> Iterator[Watched]:
    """A page signed in as `role` at `path`; clean at the end (no error on any page)."""
    with watched_page(chromium) as watched:
        sign_in(watched, console, role)
        visit(watched, console, path)
        yield watched
        watched.clean()


def click(watched: Watched, selector: str) -> None:
    """One link followed: the page it leads to answers 200."""
    with watched.page.expect_navigation() as navigation:
        watched.page.click(selector)
    response = navigation.value
    assert response is not None and response.status == 200, (selector, response)
    watched.page.wait_for_load_state("load")


def test_an_operator_reads_a_failing_public_case_within_two_links_of_its_eval(
    console: World, chromium: Any
) -> None:
    with signed_in(chromium, console, "operator", "/ui/evals") as watched:
        page = watched.page
        click(watched, f"a[href='/ui/evals/{console.hostile_eval}']")  # the eval, from the list
        # One link: a failing public cell of the explorer's table.
        row = page.locator("#cells tbody tr", has_text="public").filter(has_text="fail").first
        row.locator("a").first.click()
        page.wait_for_url("**/cells/**")
        main = page.inner_text("main")
        assert "Input" in main and "Checks" in main and "fail" in main


def test_a_certificate_is_two_links_from_the_overview(console: World, chromium: Any) -> None:
    with signed_in(chromium, console, "operator", "/ui/") as watched:
        page = watched.page
        click(watched, f"main a[href='/ui/agents/{TRIAGE}']")  # one
        click(watched, "main a[href^='/ui/certificates/']")  # two
        shown = page.inner_text("main")
        certificate = page.url.rsplit("/", 1)[1]
        assert certificate in shown and "signature" in shown.lower()


def test_a_caller_opens_the_agent_it_calls_with_its_score(console: World, chromium: Any) -> None:
    score = console.gw.call("GET", f"/v1/records/{TRIAGE}", "operator").json()["eval_score"]
    with signed_in(chromium, console, "caller:finance-bot", "/ui/") as watched:
        page = watched.page
        click(watched, f"main a[href='/ui/agents/{TRIAGE}']")
        assert str(score) in page.inner_text("main")


def test_an_org_finds_the_form_that_starts_an_eval_of_its_own_agent(
    console: World, chromium: Any
) -> None:
    with signed_in(chromium, console, "org:acme", "/ui/") as watched:
        page = watched.page
        click(watched, f"main a[href='/ui/agents/{TRIAGE}']")
        click(watched, "text=Start an eval")
        form = page.locator("main form[method='post']").first
        assert form.count() == 1 and "budget" in page.inner_text("main").lower()


def test_an_org_cancels_its_own_running_eval_from_the_list(console: World, chromium: Any) -> None:
    gw = console.gw
    started = gw.call("POST", "/v1/evals", "org:acme", json={"agent": TRIAGE, "pace_s": 30})
    running = started.json()["eval"]["id"]
    with signed_in(chromium, console, "org:acme", "/ui/evals") as watched:
        page = watched.page
        click(watched, f"main a[href='/ui/evals/{running}']")
        assert page.locator("text=Resume this eval").count() == 0  # the operator's
        click(watched, "text=Cancel this eval")
        page.wait_for_selector("text=Status: cancelled")
        assert gw.store.evals.get(running).status == "cancelled"


def test_an_agent_without_a_description_and_a_mandate_without_a_budget_render(
    console: World, chromium: Any
) -> None:
    manifest = load_manifest(TRIAGE_MANIFEST).to_json()
    manifest.pop("description", None)
    bare = "acme/bare"
    console.gw.store.agents.register({**manifest, "id": bare})
    assert "description" not in console.gw.store.agents.get(bare).manifest
    granted = console.gw.call("GET", "/v1/mandates/finance-tickets", "operator").json()
    assert "budget" not in granted
    with signed_in(chromium, console, "operator", f"/ui/agents/{bare}") as watched:
        visit(watched, console, "/ui/mandates")
        visit(watched, console, "/ui/mandates/finance-tickets")
        visit(watched, console, f"/ui/agents/{EVIL}")
