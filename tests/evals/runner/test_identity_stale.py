"""What identity probes found, kept in the store: a mismatch makes the record stale at
once, a later right answer does not clear it, an eval started after it does."""

from __future__ import annotations

from pathlib import Path

from agents import load_manifest
from evals import make_plan, start, work
from evals.suites import install_suite
from records import Store
from tests.evals.suites._make import tiny_suite

ROOT = Path(__file__).resolve().parents[3]
TRIAGE = ROOT / "examples" / "agents" / "acme-ticket-triage.yaml"


def _evaluated(store: Store, tmp_path: Path) -> tuple[str, str]:
    install_suite(store, tiny_suite(tmp_path, 3))
    data = load_manifest(TRIAGE).to_json()
    store.agents.register(data)
    _evaluate(store, data["id"], tmp_path / "home")
    return str(data["id"]), str(data["version"])


def _evaluate(store: Store, agent: str, home: Path) -> None:
    plan = make_plan(store, agent, home=home)
    work(store, plan, start(store, plan), home=home)


def _observe(store: Store, agent: str, version: str, mismatch: str | None, **kw: object) -> None:
    store.identities.observe(
        agent,
        version,
        answered_id=str(kw.get("answered_id", agent)),
        answered_version=str(kw.get("answered_version", version)),
        not_advertised=list(kw.get("not_advertised", ())),  # type: ignore[call-overload]
        mismatch=mismatch,
    )


def test_a_mismatch_stales_the_record_until_a_new_eval(store: Store, tmp_path: Path) -> None:
    agent, version = _evaluated(store, tmp_path)
    assert store.evals.current_record_with_staleness(agent, version).stale is False  # type: ignore[union-attr]

    _observe(store, agent, version, "answered as version '6.6.6'", answered_version="6.6.6")
    stale = store.evals.current_record_with_staleness(agent, version)
    assert stale is not None and stale.stale is True
    (reason,) = stale.stale_reasons
    assert "identity probe at " in reason and "answered as version '6.6.6'" in reason

    # The agent answers right again: a liar that alternates is not believed back.
    _observe(store, agent, version, None)
    again = store.evals.current_record_with_staleness(agent, version)
    assert again is not None and again.stale is True

    _evaluate(store, agent, tmp_path / "home")  # an eval started after the mismatch
    fresh = store.evals.current_record_with_staleness(agent, version)
    assert fresh is not None and fresh.stale is False and fresh.stale_reasons == ()


def test_a_mismatch_of_another_version_leaves_this_record(store: Store, tmp_path: Path) -> None:
    agent, version = _evaluated(store, tmp_path)
    _observe(store, agent, "0.0.1", "answered as version '6.6.6'")
    assert store.evals.current_record_with_staleness(agent, version).stale is False  # type: ignore[union-attr]


def test_the_last_probe_decides_what_is_not_advertised(store: Store, tmp_path: Path) -> None:
    agent, version = _evaluated(store, tmp_path)
    assert store.identities.get(agent, version) is None  # never probed
    _observe(store, agent, version, None, not_advertised=["ticket.classify", "ticket.classify"])
    found = store.identities.get(agent, version)
    assert found is not None and found.not_advertised == ("ticket.classify",)
    assert found.mismatch_at is None
    _observe(store, agent, version, None)
    found = store.identities.get(agent, version)
    assert found is not None and found.not_advertised == ()
    # Not advertising a capability is not another agent: the record stays.
    assert store.evals.current_record_with_staleness(agent, version).stale is False  # type: ignore[union-attr]


def test_a_hostile_answer_is_kept_bounded(store: Store, tmp_path: Path) -> None:
    agent, version = _evaluated(store, tmp_path)
    huge = "x" * 100_000
    _observe(store, agent, version, "y" * 10_000, answered_id=huge, answered_version=huge)
    found = store.identities.get(agent, version)
    assert found is not None
    assert len(found.answered_id) == len(found.answered_version) == 120
    assert found.mismatch_reason is not None and len(found.mismatch_reason) == 500
