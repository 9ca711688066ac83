"""Adaptive attacks end to end: an author with eleven org tokens against the real gateway.

Each attack registers versions of a no-skill agent over the API (under several names and
orgs, since both cost nothing), the gateway evaluates each on registration
(HOLON_EVAL_ON_REGISTER, as an operator's CI would), and the author reads back what an
org token may read. The author knows the budgets: it learns from one org until that
org's budget is spent, then the next, keeps the instance set's last unit, and registers
its final agent in a fresh org, so the final is a revealing eval a mandate must judge.
Probing, count decoding, boosting and best-of-k, on a stored and a generated holdout,
each on a suite of its own; then the author re-registers its best version; then a strict
mandate is asked to let the agents through. The offline simulation (test_simulation.py)
takes the same attacks to 200 submissions.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from evals.suites import TrustStore, extension_files, install_suite, suite_file
from evals.suites._model import (
    DEFAULT_HOLDOUT_EVALS_PER_EPOCH,
    DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET,
)
from records import Store, utcnow
from records._models import StoreSecret
from schema import load_document
from tests._servers import serve
from tests.gateway.server._gateway import Gateway, running_gateway
from tests.integrity._attacker import MAJORITY, P_MAJORITY, AttackerAgent, write_suite

pytestmark = pytest.mark.slow

ORGS = 11  # ten to learn from, one fresh for the final
STRATEGIES = ("probe", "decode", "boost", "best_of_k")
# The reveals a budget-aware author learns from: every learning org's budget, but the
# instance set's last unit is kept for the final.
LEARNING = min(
    (ORGS - 1) * DEFAULT_HOLDOUT_EVALS_PER_EPOCH, DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET - 1
)


class Author:
    def __init__(
        self,
        gw: Gateway,
        agent: AttackerAgent,
        url: str,
        name: str,
        capability: str,
        public: dict[str, str],
    ):
        self.gw, self.agent, self.url, self.name = gw, agent, url, name
        self.public = public
        self.capability = capability
        self.orgs = [f"{name}o{j}" for j in range(ORGS)]
        for org in self.orgs:
            gw.token(f"org:{org}")
        self.learning = 0  # the org it learns from now
        self.reveals: dict[str, int] = {}  # org -> holdout-revealing evals it had
        self.submitted = 0
        self.revealed: dict[str, dict[str, Any]] = {}  # version -> the holdout split read
        self.versions: dict[str, str] = {}  # version -> agent id
        self.final: str | None = None  # the final agent's id

    @property
    def final_org(self) -> str:
        return self.orgs[-1]

    def learn(self, answer: Any) -> dict[str, Any] | None:
        """A learning submission from the current learning org (the next once its budget
        is spent); None when it was narrowed."""
        if self.reveals.get(self.orgs[self.learning], 0) >= DEFAULT_HOLDOUT_EVALS_PER_EPOCH:
            self.learning = min(self.learning + 1, ORGS - 2)
        return self.submit(answer, self.orgs[self.learning])

    def submit(self, answer: Any, org: str, name: str | None = None) -> dict[str, Any] | None:
        """Register a new version answering `answer(text)` in `org`; once its eval is done,
        the holdout split the author may read (None when the eval was narrowed)."""
        version = f"{org}.{self.submitted}"
        agent_id = f"{org}/{name or f'coin-{self.submitted % 2}'}"
        self.submitted += 1
        # Every version answers the public cases right: the author has their labels.
        self.agent.plans[version] = lambda text: self.public.get(text) or answer(text)
        self.versions[version] = agent_id
        held = self.register(agent_id, version)
        if held is not None:
            self.reveals[org] = self.reveals.get(org, 0) + 1
        return held

    def submit_final(self, answer: Any) -> dict[str, Any] | None:
        held = self.submit(answer, self.final_org, "final")
        self.final = f"{self.final_org}/final"
        return held

    def register(self, agent_id: str, version: str) -> dict[str, Any] | None:
        role = f"org:{agent_id.split('/')[0]}"
        manifest = {
            "schema_version": 1,
            "id": agent_id,
            "version": version,
            "protocol": "holon-http",
            "endpoint": f"{self.url}/v/{version}",
            "capabilities": [self.capability],
            "limits": {"max_cost_usd": "0.01", "timeout_s": 5},
        }
        answer = self.gw.call("POST", "/v1/agents", role, json=manifest)
        assert answer.status_code in (200, 201), answer.text
        eval_id = answer.json()["queued_eval"]
        assert eval_id, answer.text
        deadline = time.monotonic() + 60
        while True:
            status = self.gw.call("GET", f"/v1/evals/{eval_id}", role).json()
            if status["status"] == "done":
                break
            assert time.monotonic() < deadline, status
            time.sleep(0.02)
        assert "plan_digest" not in status and status["progress_of"] == "public"
        if status.get("holdout_withheld"):
            # Public-only: no verdict, no score, the public rate and why.
            assert status["record"] is None and status["meets_thresholds"] is None
            assert not status["full_plan"] and "public cases only" in status["verdict_withheld"]
            assert len(status["public_rates"]) == 1
            return None
        (graded,) = status["record"]["suites"].values()
        held: dict[str, Any] = graded["holdout"]
        assert set(held) == {"passed", "total", "rate", "ci95"}  # one coarse fact
        self.revealed[version] = held
        return held

    def holdout_texts(self, public: set[str]) -> list[str]:
        """What the agent was sent that no public case says: the holdout's inputs."""
        texts: list[str] = []
        for version, seen in self.agent.seen.items():
            if version in self.versions:
                texts += [t for t in seen if t not in public and t not in texts]
        return texts


def _coin(seed: str, text: str) -> str:
    """One fair coin per (seed, text): the same answer whatever order the executor sends
    the cases in, so every run of this test sees the same scores."""
    return random.Random(f"{seed}\x00{text}").choice("ab")


def _attack(author: Author, strategy: str, public: set[str], seed: int) -> dict[str, Any] | None:
    """The attack's learning submissions, then its final; what the final read."""
    if strategy == "best_of_k":
        for n in range(LEARNING):
            author.learn(lambda text, n=n: _coin(f"{seed}.{n}", text))
        return author.submit_final(lambda text: _coin(f"{seed}.final", text))
    first = author.learn(lambda text: "a")
    texts = sorted(author.holdout_texts(public))
    reference = None if first is None else first["passed"]
    if strategy == "probe":
        learnt: dict[str, str] = {}
        for text in texts[: LEARNING - 1]:
            shown = author.learn(lambda t, probe=text: "b" if t == probe else "a")
            if shown is not None and reference is not None:
                learnt[text] = "b" if shown["passed"] > reference else "a"
        return author.submit_final(lambda t: learnt.get(t, "a"))
    votes: dict[str, float] = {}
    kept: list[dict[str, str]] = []
    for n in range(LEARNING - 1):
        table = {t: _coin(f"{seed}.{n}", t) for t in texts}
        shown = author.learn(lambda t, table=table: table.get(t, "a"))
        if shown is None:
            continue
        weight = shown["passed"] - shown["total"] / 2
        for text, label in table.items():
            votes[text] = votes.get(text, 0.0) + (weight if label == "a" else -weight)
        if weight > 0:
            kept.append(table)
    if strategy == "decode":
        return author.submit_final(lambda t: "a" if votes.get(t, 1.0) >= 0 else "b")
    # boost: the majority of the versions that scored above chance
    return author.submit_final(
        lambda t: "a" if 2 * sum(1 for k in kept if k.get(t, "a") == "a") >= len(kept) else "b"
    )


def _truth(kind: str, strategy: str) -> float:
    if strategy == "best_of_k":
        return 0.5  # a coin
    return MAJORITY / 150 if kind == "fixed" else P_MAJORITY


STRICT = {
    "schema_version": 1,
    "id": "coin-gate",
    "holder": "gate-bot",
    "max_cost_per_call_usd": "0.01",
    "min_eval_score": 0.55,
    "min_eval_score_lower": 0.55,
    "deny_on_overfit": True,
}


@pytest.mark.timeout(900)  # eight attacks of eight evals each, over real HTTP
def test_no_attack_manufactures_a_score(sqlite_store: Store, tmp_path: Path) -> None:
    # The embedded store only: the budgets and the views are the same SQL on both.
    store = sqlite_store
    # A fixed holdout secret: the generated holdout's instances are the same every run.
    with store.write() as session:
        session.add(StoreSecret(name="holdout", value=bytes(range(32)), created_at=utcnow()))
    trust = TrustStore(tmp_path / "home")
    attacks = [(k, s) for k in ("fixed", "generated") for s in STRATEGIES]
    for kind, strategy in attacks:
        # A suite per attack: each attack meets a holdout no other attack revealed.
        directory = write_suite(tmp_path / "suites", kind, strategy.replace("_", ""))
        if kind == "generated":
            file = suite_file(directory)
            trust.trust(extension_files(directory, load_document(file)))
        install_suite(store, directory, trusted=trust.trusted)
    agent = AttackerAgent()
    authors: list[tuple[str, str, Author]] = []
    env = {"HOLON_EVAL_ON_REGISTER": "on"}

    def identity_of(version: str) -> tuple[str, str]:
        author = next(a for *_, a in authors if version in a.versions)
        return author.versions[version], author.capability

    with (
        serve(agent.app(identity_of)) as url,
        running_gateway(store, tmp_path / "home", env=env, eval_poll_s=0.02) as gw,
    ):
        inflations = []
        for index, (kind, strategy) in enumerate(attacks):
            tag = strategy.replace("_", "")
            public = _public_labels(tmp_path / "suites" / f"coin-{kind}-{tag}")
            author = Author(gw, agent, url, f"atk{index}", f"coin.{kind}_{tag}", public)
            authors.append((kind, strategy, author))
            final = _attack(author, strategy, set(public), index)
            assert final is not None, (kind, strategy)  # the final revealed: it is judged
            inflation = max(r["rate"] for r in author.revealed.values()) - _truth(kind, strategy)
            assert inflation <= 0.11, (kind, strategy, list(author.revealed.values()))
            inflations.append(inflation)
            assert author.final is not None
            record = gw.call("GET", f"/v1/records/{author.final}", f"org:{author.final_org}")
            assert record.status_code == 200, record.text
            # The final's k counts every org's reveals: the learning orgs' and its own.
            (suite_id,) = record.json()["holdout_evals"]
            assert record.json()["holdout_evals"] == {suite_id: LEARNING + 1}  # not 1
            assert sum(author.reveals.values()) == DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET
            # A further org learns nothing: the instance set is exposed for every org.
            spare = author.orgs[author.learning + 1]
            assert author.submit(lambda t: "a", spare) is None
            # Re-registering the best old version brings its record back? No: it is
            # evaluated again, on a spent instance set, and has no record.
            latest = {agent_id: v for v, agent_id in author.versions.items()}
            old = [v for v in author.revealed if latest[author.versions[v]] != v]
            best = max(old, key=lambda v: author.revealed[v]["rate"])
            assert author.register(author.versions[best], best) is None
            gone = gw.call(
                "GET", f"/v1/records/{author.versions[best]}", f"org:{best.split('.')[0]}"
            )
            assert gone.status_code == 404, gone.text
        assert sum(inflations) / len(inflations) <= 0.05, inflations
        # A strict mandate (a point score and a lower bound above every agent's truth, no
        # overfit warning) admits no agent of any author, the finals included.
        capabilities = sorted({a.capability for *_, a in authors})
        store.mandates.grant({**STRICT, "capabilities": capabilities})
        gw.token("caller:gate-bot")
        for *_, author in authors:
            for agent_id in sorted(set(author.versions.values())):
                answer = gw.call(
                    "POST",
                    f"/v1/agents/{agent_id}/invoke",
                    "caller:gate-bot",
                    json={"capability": author.capability, "input": {"text": "0"}},
                )
                assert answer.status_code == 403, (agent_id, answer.text)
                assert answer.json()["error"]["code"] in (
                    "not_evaluated",
                    "eval_score_below_minimum",
                    "eval_score_lower_below_minimum",
                    "overfit_warning",
                ), answer.text


def _public_labels(directory: Path) -> dict[str, str]:
    """The public cases' labels: the author has them, and its agent answers them right."""
    import json

    lines = (directory / "cases" / "public.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines]
    return {case["input"]["text"]: case["expected"]["label"] for case in cases}
