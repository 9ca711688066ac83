"""Adaptive attacks end to end: an author with an org token against the real gateway.

Each attack registers versions of a no-skill agent over the API (under several names,
since names cost nothing), the gateway evaluates each on registration
(HOLON_EVAL_ON_REGISTER, as an operator's CI would), and the author reads back what an
org token may read. Probing, count decoding, boosting and best-of-k, on a stored and a
generated holdout; then the author re-registers its best version; then a lower-bound
mandate is asked to let the agent through. The offline simulation (test_simulation.py)
takes the same attacks to 200 submissions.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from evals.suites import TrustStore, extension_files, install_suite, suite_file
from records import Store, utcnow
from records._models import StoreSecret
from schema import load_document
from tests._servers import serve
from tests.gateway.server._gateway import Gateway, running_gateway
from tests.integrity._attacker import MAJORITY, P_MAJORITY, AttackerAgent, write_suite

pytestmark = pytest.mark.slow

SUBMISSIONS = 5  # 3 reveal the holdout, 2 are narrowed to the public split
STRATEGIES = ("probe", "decode", "boost", "best_of_k")


class Author:
    def __init__(
        self, gw: Gateway, agent: AttackerAgent, url: str, org: str, capability: str
    ) -> None:
        self.gw, self.agent, self.url, self.org = gw, agent, url, org
        self.capability = capability
        self.role = f"org:{org}"
        gw.token(self.role)
        self.submitted = 0
        self.revealed: dict[str, dict[str, Any]] = {}  # version -> the holdout split read
        self.versions: dict[str, str] = {}  # version -> agent id

    def submit(self, answer: Any, name: str | None = None) -> dict[str, Any] | None:
        """Register a new version answering `answer(text)`; once its eval is done, the
        holdout split the author may read (None when the eval was narrowed)."""
        version = f"{self.org}.{self.submitted}"
        agent_id = f"{self.org}/{name or f'coin-{self.submitted % 2}'}"
        self.submitted += 1
        self.agent.plans[version] = answer
        self.versions[version] = agent_id
        return self.register(agent_id, version)

    def register(self, agent_id: str, version: str) -> dict[str, Any] | None:
        manifest = {
            "schema_version": 1,
            "id": agent_id,
            "version": version,
            "protocol": "holon-http",
            "endpoint": f"{self.url}/v/{version}",
            "capabilities": [self.capability],
            "limits": {"max_cost_usd": "0.01", "timeout_s": 5},
        }
        answer = self.gw.call("POST", "/v1/agents", self.role, json=manifest)
        assert answer.status_code in (200, 201), answer.text
        eval_id = answer.json()["queued_eval"]
        assert eval_id, answer.text
        deadline = time.monotonic() + 60
        while True:
            status = self.gw.call("GET", f"/v1/evals/{eval_id}", self.role).json()
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

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every holdout split the author read, in the order it read them."""
        return list(self.revealed.values())

    def holdout_texts(self, public: set[str]) -> list[str]:
        """What the agent was sent that no public case says: the holdout's inputs."""
        texts: list[str] = []
        for seen in self.agent.seen.values():
            texts += [t for t in seen if t not in public and t not in texts]
        return texts


def _coin(seed: str, text: str) -> str:
    """One fair coin per (seed, text): the same answer whatever order the executor sends
    the cases in, so every run of this test sees the same scores."""
    return random.Random(f"{seed}\x00{text}").choice("ab")


def _attack(author: Author, strategy: str, public: set[str], seed: int) -> None:
    if strategy == "best_of_k":
        for n in range(SUBMISSIONS):
            author.submit(lambda text, n=n: _coin(f"{seed}.{n}", text))
        return
    first = author.submit(lambda text: "a")
    texts = sorted(author.holdout_texts(public))
    reference = None if first is None else first["passed"]
    if strategy == "probe":
        learnt: dict[str, str] = {}
        for text in texts[: SUBMISSIONS - 2]:
            shown = author.submit(lambda t, probe=text: "b" if t == probe else "a")
            if shown is not None and reference is not None:
                learnt[text] = "b" if shown["passed"] > reference else "a"
        author.submit(lambda t: learnt.get(t, "a"))
        return
    votes: dict[str, float] = {}
    kept: list[dict[str, str]] = []
    for n in range(SUBMISSIONS - 2):
        table = {t: _coin(f"{seed}.{n}", t) for t in texts}
        shown = author.submit(lambda t, table=table: table.get(t, "a"))
        if shown is None:
            continue
        weight = shown["passed"] - shown["total"] / 2
        for text, label in table.items():
            votes[text] = votes.get(text, 0.0) + (weight if label == "a" else -weight)
        if weight > 0:
            kept.append(table)
    if strategy == "decode":
        author.submit(lambda t: "a" if votes.get(t, 1.0) >= 0 else "b")
    else:  # boost: the majority of the versions that scored above chance
        author.submit(
            lambda t: "a" if 2 * sum(1 for k in kept if k.get(t, "a") == "a") >= len(kept) else "b"
        )


def _truth(kind: str, strategy: str) -> float:
    if strategy == "best_of_k":
        return 0.5  # a coin
    return MAJORITY / 150 if kind == "fixed" else P_MAJORITY


def test_no_attack_manufactures_a_score(sqlite_store: Store, tmp_path: Path) -> None:
    # The embedded store only: the budget and the views are the same SQL on both.
    store = sqlite_store
    # A fixed holdout secret: the generated holdout's instances are the same every run.
    with store.write() as session:
        session.add(StoreSecret(name="holdout", value=bytes(range(32)), created_at=utcnow()))
    trust = TrustStore(tmp_path / "home")
    for kind in ("fixed", "generated"):
        directory = write_suite(tmp_path / "suites", kind)
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
        for index, (kind, strategy) in enumerate(
            (k, s) for k in ("fixed", "generated") for s in STRATEGIES
        ):
            author = Author(gw, agent, url, f"atk{index}", f"coin.{kind}")
            authors.append((kind, strategy, author))
            public = _public_texts(tmp_path / "suites" / f"coin-{kind}")
            _attack(author, strategy, public, index)
            assert author.submitted == SUBMISSIONS
            assert len(author.records) == 3  # the exposure budget: 3 revealing evals
            best = max(r["rate"] for r in author.records)
            inflation = best - _truth(kind, strategy)
            assert inflation <= 0.10, (kind, strategy, author.records)
            inflations.append(inflation)
            # Re-registering the best old version brings its record back? No: it is
            # evaluated again, on a spent budget, and has no record.
            best_version = max(author.revealed, key=lambda v: author.revealed[v]["rate"])
            assert author.register(author.versions[best_version], best_version) is None
            record = gw.call("GET", f"/v1/records/{author.versions[best_version]}", author.role)
            assert record.status_code == 404, record.text
        assert sum(inflations) / len(inflations) <= 0.05, inflations
        # A mandate asking for evidence above what the agent can do admits none of them.
        store.mandates.grant(
            {
                "schema_version": 1,
                "id": "coin-gate",
                "holder": "gate-bot",
                "capabilities": ["coin.fixed", "coin.generated"],
                "max_cost_per_call_usd": "0.01",
                "min_eval_score_lower": 0.55,
            }
        )
        gw.token("caller:gate-bot")
        for *_, author in authors:
            for agent_id in set(author.versions.values()):
                answer = gw.call(
                    "POST",
                    f"/v1/agents/{agent_id}/invoke",
                    "caller:gate-bot",
                    json={"capability": author.capability, "input": {"text": "0"}},
                )
                assert answer.status_code == 403, answer.text
                assert answer.json()["error"]["code"] in (
                    "not_evaluated",
                    "eval_score_lower_below_minimum",
                )


def _public_texts(directory: Path) -> set[str]:
    import json

    lines = (directory / "cases" / "public.jsonl").read_text().splitlines()
    return {json.loads(line)["input"]["text"] for line in lines}
