"""`holon evals cancel` says what became of the holdout budget; `holon evals status` and
`holon suites exposure` show the refund."""

from __future__ import annotations

from pathlib import Path

from evals import make_plan, start
from records import Store
from tests.gateway._cli import CLI
from tests.gateway.server._gateway import install_tiny, register_triage

AGENT = "acme/ticket-triage"


def _world(store: Store, store_url: str, tmp_path: Path) -> tuple[CLI, str, str]:
    """The CLI on `store`, and two running evals of the triage agent's full plan."""
    install_tiny(store, tmp_path)
    register_triage(store)
    home = tmp_path / "home"
    runs = [start(store, make_plan(store, AGENT, home=home)).id for _ in range(2)]
    return CLI(home, HOLON_DATABASE_URL=store_url), runs[0], runs[1]


def test_cancel_says_the_budget_was_refunded_and_exposure_lists_it(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    cli, run, _ = _world(store, store_url, tmp_path)
    res = cli("evals", "cancel", run)
    assert res.code == 0, res.stderr
    assert res.stdout.splitlines() == [
        f"eval {run} cancelled; no record will be written",
        "holdout budget refunded: no holdout case was sent (tiny)",
    ]
    status = cli("evals", "status", run)
    assert "holdout budget: refunded: no holdout case was sent (tiny)" in status.stdout
    assert cli("evals", "status", run, "--json").json()["holdout_budget"] == {
        "refunded": ["tiny"],
        "spent": [],
    }
    exposure = cli("suites", "exposure", "tiny", "--json").json()
    ((entry,),) = [exposure["items"]]
    assert (entry["spent"], entry["revealed"]) == (1, 1)  # the other eval's unit
    (refund,) = exposure["refunds"]
    assert (refund["eval"], refund["org"]) == (run, "acme") and refund["refunded_at"]
    shown = cli("suites", "exposure", "tiny").stdout
    assert f"refunded {run}: acme, cancelled before any holdout case was sent" in shown
    again = cli("evals", "cancel", run, "--json")
    assert again.code == 2 and "is cancelled, not running" in again.json()["error"]["message"]


def test_cancel_after_a_holdout_claim_says_the_budget_stays_spent(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    cli, _, run = _world(store, store_url, tmp_path)
    assert "holdout" in {c.split for c in store.evals.claim(run, "test-owner", 100, lease_s=60)}
    res = cli("evals", "cancel", run, "--json")
    assert res.code == 0, res.stderr
    assert res.json()["holdout_budget"] == {"refunded": [], "spent": ["tiny"]}
    text = cli("evals", "status", run).stdout
    assert "holdout budget: stays spent: holdout cases were sent (tiny)" in text
    assert cli("suites", "exposure", "tiny", "--json").json()["refunds"] == []
