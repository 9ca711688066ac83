"""The console's forms that write an agent or a holdout budget (docs/console.md, "Operator
actions"): registering a pasted manifest with the CLI's located errors, an agent's secret
set and cleared and never shown, a holdout budget reset with its reason kept; each refused
to another org, without its CSRF token, or over its bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from records import Store
from tests.gateway.console._inproc import Console
from tests.gateway.console._runs import run_triage, triage_console

TRIAGE = "acme/ticket-triage"
YAML = """\
schema_version: 1
id: {id}
version: "1.0.0"
protocol: holon-http
endpoint: https://agents.example/triage
capabilities: [ticket.classify]
"""


@pytest.fixture
def live(sqlite_store: Store, tmp_path: Path) -> Iterator[Console]:
    with triage_console(sqlite_store, tmp_path) as built:
        yield built


def test_a_pasted_manifest_registers_an_agent(live: Console) -> None:
    assert live.get("/ui/agents/register", "operator").status_code == 200
    done = live.post("/ui/agents/register", "operator", {"manifest": YAML.format(id="acme/new")})
    assert done.status_code == 201 and "created" in done.text and "acme/new" in done.text
    assert live.store.agents.get("acme/new").version == "1.0.0"
    # An org registers its own agents, as POST /v1/agents.
    own = live.post("/ui/agents/register", "org:beta", {"manifest": YAML.format(id="beta/one")})
    assert own.status_code == 201
    theirs = live.post("/ui/agents/register", "org:beta", {"manifest": YAML.format(id="acme/x")})
    assert theirs.status_code == 403
    assert live.get("/ui/agents/register", "caller:finance-bot").status_code == 403


def test_a_bad_manifest_is_named_by_line_and_path_as_the_cli_names_it(live: Console) -> None:
    bad = YAML.format(id="acme/bad").replace("holon-http", "carrier-pigeon")
    refused = live.post("/ui/agents/register", "operator", {"manifest": bad})
    assert refused.status_code == 422, refused.text
    assert "&lt;pasted manifest&gt;:4:" in refused.text and "protocol" in refused.text
    broken = live.post("/ui/agents/register", "operator", {"manifest": "id: [unclosed"})
    assert broken.status_code in (400, 422) and "&lt;pasted manifest&gt;:1" in broken.text
    assert live.post("/ui/agents/register", "operator", {"manifest": " "}).status_code == 400
    big = {"manifest": YAML.format(id="acme/big") + "#" + "a" * (61 * 1024)}
    assert live.post("/ui/agents/register", "operator", big).status_code == 400
    huge = {"manifest": "a" * (65 * 1024)}  # over the form's own bound
    assert live.post("/ui/agents/register", "operator", huge).status_code == 413
    no_csrf = {"manifest": YAML.format(id="acme/sneaky")}
    assert live.post("/ui/agents/register", "operator", no_csrf, csrf=False).status_code == 403
    assert "acme/sneaky" not in {a.id for a in live.store.agents.list().items}


def test_a_secret_is_set_and_cleared_and_never_shown(live: Console) -> None:
    path = f"/ui/agents/{TRIAGE}/secret"
    secret = "s3cr3t-value-XYZ"
    assert live.post(path, "operator", {"secret": secret}).status_code == 303
    page = live.get(f"/ui/agents/{TRIAGE}", "org:acme").text
    assert "A secret is set" in page and secret not in page
    assert live.store.agents.get(TRIAGE).has_secret
    bad = live.post(path, "org:acme", {"secret": "with space"})
    assert bad.status_code == 400 and "with space" not in bad.text
    for role in ("org:other", "caller:finance-bot"):
        assert live.post(path, role, {"secret": "x"}).status_code == 403, role
        assert live.post(f"{path}/clear", role, {}).status_code == 403, role
    assert live.post(path, "org:acme", {"secret": "x"}, csrf=False).status_code == 403
    assert live.post(f"{path}/clear", "org:acme", {}).status_code == 303
    assert not live.store.agents.get(TRIAGE).has_secret


def test_a_holdout_budget_is_reset_with_its_reason(live: Console, tmp_path: Path) -> None:
    run_triage(live.store, tmp_path / "home")
    suite = live.store.suites.list()[0].id
    page = live.get(f"/ui/suites/{suite}", "operator").text
    assert "Holdout budgets" in page and "acme" in page
    assert "Holdout budgets" not in live.get(f"/ui/suites/{suite}", "org:acme").text
    path = f"/ui/suites/{suite}/exposure/reset"
    assert live.post(path, "operator", {"org": "acme", "reason": ""}).status_code == 400
    assert live.post(path, "org:acme", {"org": "acme", "reason": "mine"}).status_code == 403
    no_csrf = {"org": "acme", "reason": "x"}
    assert live.post(path, "operator", no_csrf, csrf=False).status_code == 403
    done = live.post(path, "operator", {"org": "acme", "reason": "new <b>instance</b> set"})
    assert done.status_code == 303
    (reset,) = live.store.exposure.resets(suite_id=suite)
    assert reset.org == "acme" and reset.reason == "new <b>instance</b> set"
    after = live.get(f"/ui/suites/{suite}", "operator").text
    assert "new &lt;b&gt;instance&lt;/b&gt; set" in after
    assert live.post(path, "operator", {"org": "nobody", "reason": "x"}).status_code == 404
