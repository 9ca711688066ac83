"""`holon mandates …`, `holon invoke` and `holon ledger` on the store (the CLI as operator)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway._cli import CLI, DOWN, add_triage

TICKET = '{"subject": "Refund please", "body": "I was charged twice."}'
INVOKE_AS_CALLER = (
    "invoke",
    "acme/ticket-triage",
    "--capability",
    "ticket.classify",
    "--caller",
    "finance-bot",
)

MANDATE = """\
schema_version: 1
id: {id}
holder: finance-bot
capabilities: [ticket.classify]
max_cost_per_call_usd: "0.01"
"""


def _mandate(tmp_path: Path, extra: str = "", mandate_id: str = "finance-tickets") -> Path:
    path = tmp_path / f"mandate-{len(list(tmp_path.glob('mandate-*.yaml')))}.yaml"
    path.write_text(MANDATE.format(id=mandate_id) + extra)
    return path


@pytest.fixture
def world(cli: CLI, tmp_path: Path) -> CLI:
    """A tiny ticket.classify suite (half the holdout unanswerable) and the triage agent."""
    add_triage(cli, tmp_path, 4, holdout_wrong=2)
    return cli


def test_grant_list_show_revoke_and_reinstate(world: CLI, tmp_path: Path) -> None:
    cli = world
    path = _mandate(tmp_path)
    granted = cli("mandates", "grant", str(path), "--json")
    assert granted.code == 0, granted.stderr
    body = granted.json()
    assert body["status"] == "created"
    view = body["mandate"]
    assert (view["id"], view["holder"], view["revision"], view["active"]) == (
        "finance-tickets",
        "finance-bot",
        1,
        True,
    )
    assert cli("mandates", "grant", str(path), "--json").json()["status"] == "unchanged"
    changed = cli("mandates", "grant", str(_mandate(tmp_path, "min_eval_score: 0.4\n")), "--json")
    assert changed.json()["status"] == "updated" and changed.json()["mandate"]["revision"] == 2

    listed = cli("mandates", "list", "--json").json()
    assert [m["id"] for m in listed["items"]] == ["finance-tickets"]
    assert cli("mandates", "list", "--caller", "someone-else", "--json").json()["items"] == []
    shown = cli("mandates", "show", "finance-tickets", "--json").json()
    assert shown == changed.json()["mandate"]
    human = cli("mandates", "list")
    assert "finance-tickets" in human.stdout and "$0.01" in human.stdout
    lines = cli("mandates", "show", "finance-tickets").stdout.splitlines()
    assert "min_eval_score: 0.4" in [" ".join(line.split()) for line in lines]

    revoked = cli("mandates", "revoke", "finance-tickets", "--json")
    assert revoked.code == 0 and revoked.json()["active"] is False
    assert cli("mandates", "list", "--json").json()["items"] == []
    every = cli("mandates", "list", "--all", "--json").json()["items"]
    assert [(m["id"], m["active"]) for m in every] == [("finance-tickets", False)]
    again = cli("mandates", "grant", str(path), "--json").json()
    assert again["status"] == "reinstated" and again["mandate"]["active"] is True


def test_a_bad_mandate_file_names_its_line(world: CLI, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(MANDATE.format(id="x").replace("[ticket.classify]", "ticket.classify"))
    res = world("mandates", "grant", str(bad))
    assert res.code == 2
    assert f"{bad}:4" in res.stderr and "$.capabilities" in res.stderr
    error = world("mandates", "grant", str(bad), "--json").json()["error"]
    assert error["code"] == "invalid_mandate" and error["details"]["line"] == 4
    missing = world("mandates", "grant", str(tmp_path / "nope.yaml"))
    assert missing.code == 2 and "nope.yaml" in missing.stderr
    assert world("mandates", "list", "--json").json()["items"] == []


@pytest.mark.parametrize(
    "argv",
    [
        ("mandates", "show", "nope"),
        ("mandates", "revoke", "nope"),
        ("mandates", "check", "nope", "--agent", "acme/ticket-triage", "--capability", "x"),
    ],
)
def test_unknown_mandates_exit_2(world: CLI, argv: tuple[str, ...]) -> None:
    res = world(*argv, "--json")
    assert res.code == 2 and res.json()["error"]["code"] == "not_found"


def test_check_says_allow_or_deny_with_its_numbers(world: CLI, tmp_path: Path) -> None:
    cli = world
    strict = _mandate(tmp_path, "min_eval_score: 0.9\n")
    assert cli("mandates", "grant", str(strict)).code == 0
    args = ("--agent", "acme/ticket-triage", "--capability", "ticket.classify")
    unscored = cli("mandates", "check", "finance-tickets", *args, "--json")
    assert unscored.code == 1 and unscored.json()["reason"] == "not_evaluated"

    assert cli("eval", "acme/ticket-triage", "--yes").code == 1  # 0.5 is below the suite's 0.8
    denied = cli("mandates", "check", "finance-tickets", *args)
    assert denied.code == 1
    assert "deny (eval_score_below_minimum)" in denied.stdout
    assert "eval_score=0.5" in denied.stdout and "min_eval_score=0.9" in denied.stdout
    verdict = cli("mandates", "check", "finance-tickets", *args, "--json").json()
    assert (verdict["decision"], verdict["eval_score"], verdict["min_eval_score"]) == (
        "deny",
        0.5,
        0.9,
    )

    assert cli("mandates", "grant", str(_mandate(tmp_path, "min_eval_score: 0.4\n"))).code == 0
    allowed = cli("mandates", "check", "finance-tickets", *args)
    assert allowed.code == 0 and allowed.stdout.startswith("allow: mandate finance-tickets")
    # A dry run leaves no trace on the ledger.
    assert cli("ledger", "--json").json()["items"] == []


def test_invoke_exit_codes_on_the_store(world: CLI, tmp_path: Path) -> None:
    cli = world
    call = ("invoke", "acme/ticket-triage", "--capability", "ticket.classify", "--input", TICKET)
    no_caller = cli(*call)
    assert no_caller.code == 2 and "--caller NAME" in no_caller.stderr

    nothing = cli(*call, "--caller", "finance-bot", "--json")
    assert nothing.code == 1 and nothing.json()["error"]["code"] == "no_mandate"

    elsewhere = _mandate(tmp_path, 'agents: ["other/*"]\n')
    assert cli("mandates", "grant", str(elsewhere)).code == 0
    denied = cli(*call, "--caller", "finance-bot")
    assert denied.code == 1
    assert "agent_not_allowed" in denied.stderr and "mandate finance-tickets" in denied.stderr

    assert cli("mandates", "grant", str(_mandate(tmp_path))).code == 0
    ok = cli(*call, "--caller", "finance-bot")
    assert ok.code == 0, ok.stderr
    assert '"label":"billing"' in ok.stdout
    assert "acme/ticket-triage 1.1.0 under mandate finance-tickets" in ok.stderr
    answer = cli(*call, "--caller", "finance-bot", "--json").json()
    assert answer["agent"] == "acme/ticket-triage" and answer["mandate"] == "finance-tickets"
    assert answer["cost_source"] == "priced"

    routed = cli(
        "invoke", "--capability", "ticket.classify", "--input", TICKET, "--caller", "finance-bot",
        "--json",
    )  # fmt: skip
    assert routed.code == 0 and routed.json()["routing"]["candidates"] == 1

    down = tmp_path / "down.yaml"
    down.write_text(DOWN)
    assert cli("agents", "register", str(down)).code == 0
    failed = cli(
        "invoke", "acme/down", "--capability", "ticket.classify", "--input", TICKET,
        "--caller", "finance-bot", "--json",
    )  # fmt: skip
    assert failed.code == 3 and failed.json()["error"]["code"] == "unreachable"
    unknown = cli(
        "invoke", "acme/nobody", "--capability", "ticket.classify", "--input", TICKET,
        "--caller", "finance-bot",
    )  # fmt: skip
    assert unknown.code == 2


def test_invoke_holds_the_input_to_the_contract(world: CLI, tmp_path: Path) -> None:
    """An input outside the suite's input schema is refused (exit 2, located), and the record
    shows the live window: the answered call, and the refused input apart."""
    cli = world
    assert cli("mandates", "grant", str(_mandate(tmp_path))).code == 0
    call = INVOKE_AS_CALLER
    bad = cli(*call, "--input", '{"subject": 5}', "--json")
    assert bad.code == 2, bad.stderr
    error = bad.json()["error"]
    assert (error["code"], error["details"]["path"]) == ("invalid_input", "$.input.subject")
    assert cli(*call, "--input", TICKET).code == 0
    assert cli("eval", "acme/ticket-triage", "--yes").code in (0, 1)
    shown = cli("records", "show", "acme/ticket-triage")
    assert shown.code == 0, shown.stderr
    assert "answers 1, contract violations 0 (rate 0), inputs refused 1" in shown.stdout
    live = cli("records", "show", "acme/ticket-triage", "--json").json()["live"]
    assert (live["calls"], live["violations"], live["input_violations"]) == (1, 0, 1)


def test_invoke_reads_its_input_from_a_file_or_stdin(world: CLI, tmp_path: Path) -> None:
    cli = world
    assert cli("mandates", "grant", str(_mandate(tmp_path))).code == 0
    base = INVOKE_AS_CALLER
    source = tmp_path / "ticket.json"
    source.write_text(TICKET)
    from_file = cli(*base, "--input", f"@{source}", "--json")
    assert from_file.code == 0 and from_file.json()["output"]["label"] == "billing"
    from_stdin = cli(*base, "--input", "@-", "--json", stdin=TICKET)
    assert from_stdin.code == 0 and from_stdin.json()["output"] == from_file.json()["output"]

    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "subject": \n}')
    bad = cli(*base, "--input", f"@{broken}")
    assert bad.code == 2 and f"{broken}:3:1" in bad.stderr
    assert cli(*base, "--input", "{nope").code == 2
    assert cli(*base, "--input", f"@{tmp_path / 'missing.json'}").code == 2
    huge = cli(*base, "--input", '{"subject": "x", "n": [1, 1E+2147483648]}', "--json")
    assert huge.code == 2
    assert huge.json()["error"]["details"]["path"] == "$.n[1]"
    assert "out of range" in huge.json()["error"]["message"]
    # Nothing that failed to parse reached the ledger.
    assert len(cli("ledger", "--json").json()["items"]) == 2


def test_a_spent_budget_is_a_denial(world: CLI, tmp_path: Path) -> None:
    cli = world
    tight = _mandate(tmp_path, 'budget: {amount_usd: "0.01", period: month}\n')
    assert cli("mandates", "grant", str(tight)).code == 0
    call = ("invoke", "acme/ticket-triage", "--capability", "ticket.classify", "--input", TICKET)
    assert cli(*call, "--caller", "finance-bot").code == 0
    # The next call's worst case (the cap) no longer fits in what is left.
    spent = cli(*call, "--caller", "finance-bot", "--json")
    assert spent.code == 1 and spent.json()["error"]["code"] == "budget_exhausted"


def test_ledger_lists_calls_newest_first(world: CLI, tmp_path: Path) -> None:
    cli = world
    assert cli("mandates", "grant", str(_mandate(tmp_path))).code == 0
    call = ("invoke", "acme/ticket-triage", "--capability", "ticket.classify", "--input", TICKET)
    assert cli(*call, "--caller", "finance-bot").code == 0
    assert cli(*call, "--caller", "stranger").code == 1

    rows = cli("ledger", "--json").json()["items"]
    assert [(r["caller"], r["decision"], r["reason"]) for r in rows] == [
        ("stranger", "deny", "no_mandate"),
        ("finance-bot", "allow", None),
    ]
    assert rows[1]["outcome"] == "ok" and rows[1]["mandate"] == "finance-tickets"
    denials = cli("ledger", "--decision", "deny", "--json").json()["items"]
    assert [r["caller"] for r in denials] == ["stranger"]
    mine = cli("ledger", "--caller", "finance-bot", "--json").json()["items"]
    assert [r["id"] for r in mine] == [rows[1]["id"]]
    by_agent = cli("ledger", "--agent", "acme/ticket-triage", "--mandate", "finance-tickets")
    assert by_agent.code == 0
    assert by_agent.stdout.splitlines()[0].split() == [
        "time", "caller", "agent", "capability", "mandate", "decision", "record", "outcome",
        "cost",
    ]  # fmt: skip
    assert "finance-bot" in by_agent.stdout and "stranger" not in by_agent.stdout
    assert "finance-tickets r1" in by_agent.stdout
    first = cli("ledger", "--limit", "1", "--json").json()
    assert len(first["items"]) == 1 and first["next_cursor"]
    rest = cli("ledger", "--cursor", first["next_cursor"], "--json").json()["items"]
    assert [r["id"] for r in rest] == [rows[1]["id"]]
    assert cli("ledger", "--decision", "maybe").code == 2


def test_show_revisions_keeps_every_grant(world: CLI, tmp_path: Path) -> None:
    cli = world
    assert cli("mandates", "grant", str(_mandate(tmp_path))).code == 0
    call = ("invoke", "acme/ticket-triage", "--capability", "ticket.classify", "--input", TICKET)
    assert cli(*call, "--caller", "finance-bot").code == 0
    tighter = _mandate(tmp_path, 'budget: {amount_usd: "5", period: month}\n')
    assert cli("mandates", "grant", str(tighter)).code == 0
    assert cli(*call, "--caller", "finance-bot").code == 0

    shown = cli("mandates", "show", "finance-tickets", "--revisions", "--json")
    assert shown.code == 0
    items = shown.json()["items"]
    assert [(r["revision"], r["granted_by"]) for r in items] == [(1, "local"), (2, "local")]
    assert "budget" not in items[0]["mandate"] and items[1]["mandate"]["budget"]["amount_usd"]
    assert items[0]["granted_at"] <= items[1]["granted_at"]
    human = cli("mandates", "show", "finance-tickets", "--revisions")
    assert human.stdout.splitlines()[0].split()[:4] == ["revision", "granted", "by", "holder"]
    assert "$5/month" in human.stdout and "local" in human.stdout
    assert cli("mandates", "show", "nope", "--revisions").code == 2

    # Each call names the revision that allowed it.
    rows = cli("ledger", "--json").json()["items"]
    assert [r["mandate_revision"] for r in rows] == [2, 1]
    assert all(r["record_eval_id"] is None for r in rows)  # the mandate reads no record


def test_a_rate_limited_call_says_when_to_come_back(world: CLI, tmp_path: Path) -> None:
    cli = world
    limited = _mandate(tmp_path, "rate_limit: {calls: 1, per: hour, burst: 1}\n")
    assert cli("mandates", "grant", str(limited)).code == 0
    assert "1/hour, burst 1" in cli("mandates", "show", "finance-tickets").stdout
    args = ("--agent", "acme/ticket-triage", "--capability", "ticket.classify")
    before = cli("mandates", "check", "finance-tickets", *args)
    assert before.code == 0 and "rate limit: calls=1, per=hour, burst=1, available=1" in (
        before.stdout
    )
    call = ("invoke", "acme/ticket-triage", "--capability", "ticket.classify", "--input", TICKET)
    assert cli(*call, "--caller", "finance-bot").code == 0
    human = cli(*call, "--caller", "finance-bot")
    assert human.code == 1
    assert "denied (rate_limited) by mandate finance-tickets" in human.stderr
    assert "hint: the next call may go in 3" in human.stderr  # 3600 s, or a few less
    error = cli(*call, "--caller", "finance-bot", "--json").json()["error"]
    assert error["code"] == "rate_limited" and 3000 <= error["details"]["retry_after_s"] <= 3600
    after = cli("mandates", "check", "finance-tickets", *args, "--json").json()
    assert after["rate_limit"]["available"] == 0


def test_the_next_page_hint_keeps_the_flags_used(world: CLI, tmp_path: Path) -> None:
    cli = world
    assert cli("mandates", "grant", str(_mandate(tmp_path))).code == 0
    call = ("invoke", "acme/ticket-triage", "--capability", "ticket.classify", "--input", TICKET)
    for _ in range(3):
        assert cli(*call, "--caller", "finance-bot").code == 0
    first = cli("ledger", "--caller", "finance-bot", "--decision", "allow", "--limit", "2")
    (hint,) = [line for line in first.stderr.splitlines() if line.startswith("more: ")]
    cursor = hint.rsplit(" ", 1)[1]
    assert hint == (
        f"more: holon ledger --caller finance-bot --decision allow --limit 2 --cursor {cursor}"
    )
    # The hint runs as given and ends the listing; an old --cursor is replaced, not repeated.
    argv = hint.removeprefix("more: holon ").split()
    second = cli(*argv)
    assert second.code == 0 and "more: " not in second.stderr
    one = cli("ledger", "--limit", "1")
    (hint,) = [line for line in one.stderr.splitlines() if line.startswith("more: ")]
    cursor = hint.rsplit(" ", 1)[1]
    again = cli("ledger", "--limit", "1", "--cursor", cursor)
    (hint,) = [line for line in again.stderr.splitlines() if line.startswith("more: ")]
    assert hint.count("--cursor") == 1 and cursor not in hint


def test_check_denies_a_revoked_mandate_and_a_spent_budget(world: CLI, tmp_path: Path) -> None:
    """The red team's finding: the check said allow (exit 0) where the live call was denied."""
    cli = world
    args = ("--agent", "acme/ticket-triage", "--capability", "ticket.classify")
    # One call of 0.0002 leaves 0.0098: not the 0.01 cap of the next.
    spent = _mandate(tmp_path, 'budget: {amount_usd: "0.01", period: month}\n')
    assert cli("mandates", "grant", str(spent)).code == 0
    call = ("invoke", "acme/ticket-triage", "--capability", "ticket.classify", "--input", TICKET)
    assert cli(*call, "--caller", "finance-bot").code == 0
    assert cli(*call, "--caller", "finance-bot", "--json").json()["error"]["code"] == (
        "budget_exhausted"
    )
    exhausted = cli("mandates", "check", "finance-tickets", *args)
    assert exhausted.code == 1 and "deny (budget_exhausted)" in exhausted.stdout
    assert "spent_usd=0.0002" in exhausted.stdout

    assert cli("mandates", "grant", str(_mandate(tmp_path))).code == 0
    assert cli("mandates", "check", "finance-tickets", *args).code == 0
    assert cli("mandates", "revoke", "finance-tickets").code == 0
    revoked = cli("mandates", "check", "finance-tickets", *args, "--json")
    assert revoked.code == 1
    verdict = revoked.json()
    assert (verdict["decision"], verdict["reason"]) == ("deny", "no_mandate")
    assert verdict["revoked_at"]
    assert cli(*call, "--caller", "finance-bot", "--json").json()["error"]["code"] == "no_mandate"


def test_a_budget_under_one_calls_cap_is_granted_with_a_warning(world: CLI, tmp_path: Path) -> None:
    cli = world
    small = _mandate(tmp_path, 'budget: {amount_usd: "0.005", period: day}\n')
    granted = cli("mandates", "grant", str(small))
    assert granted.code == 0
    assert "cannot pay one call's cap" in granted.stderr and "budget_too_small" in granted.stderr
    (warning,) = cli("mandates", "grant", str(small), "--json").json()["warnings"]
    assert (warning["code"], warning["amount_usd"], warning["max_cost_per_call_usd"]) == (
        "budget_too_small",
        "0.005",
        "0.01",
    )
    args = ("--agent", "acme/ticket-triage", "--capability", "ticket.classify")
    check = cli("mandates", "check", "finance-tickets", *args, "--json")
    assert check.code == 1 and check.json()["reason"] == "budget_too_small"
    assert cli("mandates", "grant", str(_mandate(tmp_path)), "--json").json()["warnings"] == []
