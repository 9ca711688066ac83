"""An offline simulation of agent authors gaming the holdout, under holon's own release rules.

Every number an attacker learns goes through the product's rules, not a copy
of them: whether an eval may reveal the holdout (`evals._integrity.may_reveal`,
the exposure budget), what an author reads of a revealed split
(`author_split`), how a record is scored (`evals._scores.split_score`), and
whether a mandate's lower-bound gate admits it (`evals._evidence`). Only the
agent and the holdout are modelled: a holdout is `n` binary cases, an agent
version a vector of answers, so a simulated eval costs microseconds and
k = 200 adaptive submissions run in a test.

The attacker may hold several orgs (`orgs`), and knows the budgets: it learns
in all but one, moving to the next when an org's budget is spent and keeping
the instance set's last unit for its final submission, which it makes from a
fresh org, so the final is a revealing eval the gate must judge. The store
counts as the product does (`counting="holdout"`: every org's reveals of an
instance set against its budget, the gate's k over every org's reveals) or,
to show the attacks can fail the tests, per org alone (`counting="org"`: an
org's own reveals, no budget of the instance set's).

The attacker has no skill: its best fixed answer is right with probability
`truth` (0.535, the majority class) on fresh cases. Strategies, each given
up to `submissions` evals on one store:

- `probe`: version i flips case i of a base answer and reads the exact
  holdout count: each revealed count tells one case's label;
- `decode`: random versions, then the labels that best explain every count
  read (a least-squares vote over the revealed versions);
- `boost`: Blum and Hardt's boosting: keep the versions that scored above
  chance, submit their majority vote;
- `best_of_k`: honest evals of the same agent, keep the best record.

A fixed holdout is one instance set for its whole life; a generated one gets
new instances each epoch (`epochs` of them over the run: with the default of
one, all submissions fall into one epoch, as they would in the minutes an
attack takes; more epochs model weeks of patience).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from evals._evidence import admits_lower, eval_score_lower
from evals._integrity import author_split, may_reveal
from evals._scores import split_score
from evals._stats import rounded
from evals.suites._model import DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET
from records import AgentRecord
from tests.records._record import agent_record

Kind = Literal["fixed", "generated"]
Counting = Literal["holdout", "org"]
Strategy = Literal["probe", "decode", "boost", "best_of_k"]
STRATEGIES: tuple[Strategy, ...] = ("probe", "decode", "boost", "best_of_k")
TRUTH = 0.535  # the majority class: what a no-skill agent gets right on fresh cases


@dataclass
class Holdout:
    labels: list[int]  # 1: the majority class

    @classmethod
    def draw(cls, rng: random.Random, n: int) -> Holdout:
        return cls([1 if rng.random() < TRUTH else 0 for _ in range(n)])


@dataclass
class Run:
    """One attack's course: every record it got, what it learnt, what the gate says."""

    kind: Kind
    strategy: Strategy
    n: int
    limit: int
    truth: float = TRUTH  # the agent's accuracy on fresh cases
    counting: Counting = "holdout"
    records: list[dict[str, object]] = field(default_factory=list)
    record_orgs: list[int] = field(default_factory=list)  # the org each record is of
    reveals: dict[int, int] = field(default_factory=dict)  # holdout-revealing evals per org
    submitted: int = 0  # evals the attacker had run
    narrowed: int = 0  # submissions that ran the public split only
    final: dict[str, object] | None = None  # what the final submission read (None: narrowed)

    @property
    def revealed(self) -> int:
        """Every holdout-revealing eval of the attack, every org's."""
        return sum(self.reveals.values())

    def k(self, org: int) -> int:
        """The gate's k for a record of `org`, read after the attack."""
        return self.reveals.get(org, 0) if self.counting == "org" else self.revealed

    @property
    def best(self) -> float:
        rates = [float(r["rate"]) for r in self.records]  # type: ignore[arg-type]
        return max(rates) if rates else 0.0

    @property
    def inflation(self) -> float:
        return self.best - self.truth

    @property
    def final_inflation(self) -> float | None:
        if self.final is None:
            return None
        return float(self.final["rate"]) - self.truth  # type: ignore[arg-type]

    def gate_admits(self, minimum: Decimal) -> bool:
        """Whether a `min_eval_score_lower` mandate admits any record the attack held."""
        return any(
            admits_lower(_record(r), {"s": self.k(org)}, minimum)
            for r, org in zip(self.records, self.record_orgs, strict=True)
        )

    def best_lower(self) -> Decimal:
        bounds = [
            eval_score_lower(_record(r), {"s": self.k(org)})[0]
            for r, org in zip(self.records, self.record_orgs, strict=True)
        ]
        return max((b for b in bounds if b is not None), default=Decimal(0))


def _record(split: dict[str, object]) -> AgentRecord:
    """An agent record of one suite whose only split is this holdout split."""
    return agent_record(eval_score=split["rate"], suites={"s": {"holdout": split}})


class Store:
    """The parts of a store an attack meets: the holdout, the budgets, the records."""

    def __init__(
        self,
        kind: Kind,
        n: int,
        limit: int,
        epochs: int,
        submissions: int,
        seed: int,
        *,
        orgs: int = 1,
        instance_limit: int = DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET,
        counting: Counting = "holdout",
    ):
        self.kind, self.n, self.limit = kind, n, limit
        self.orgs, self.counting = orgs, counting
        # Counted per org, an instance set has no budget of its own.
        self.instance_limit = instance_limit if counting == "holdout" else 10**9
        self.rng = random.Random(seed)
        self.holdout = Holdout.draw(self.rng, n)
        self.spent: dict[int, int] = {}  # per org, of the current instance set
        self.exposed = 0  # every org's reveals of the current instance set
        self.org = 0  # the org the attacker learns from
        # A generated holdout rotates every `per_epoch` submissions (time passing).
        self.per_epoch = max(1, -(-submissions // max(1, epochs)))
        self.submitted = 0

    def _org(self, final: bool) -> int | None:
        """The org a budget-aware attacker submits from; None when it would learn nothing."""
        if final and self.orgs > 1:
            return self.orgs - 1  # a fresh org, never used to learn
        learning = max(1, self.orgs - 1)
        while not may_reveal(self.spent.get(self.org, 0), self.limit) and self.org + 1 < learning:
            self.org += 1
        if not final and self.orgs > 1 and not may_reveal(self.exposed + 1, self.instance_limit):
            return None  # the instance set's last unit is kept for the final
        return self.org

    def evaluate(
        self, run: Run, answers: Callable[[Holdout], list[int]], *, final: bool = False
    ) -> int | None:
        """One submission: the exact holdout count an author may read, or None (narrowed)."""
        if self.kind == "generated" and self.submitted and self.submitted % self.per_epoch == 0:
            self.holdout = Holdout.draw(self.rng, self.n)  # a new epoch: new instances
            self.spent, self.exposed, self.org = {}, 0, 0  # every budget renews
        self.submitted += 1
        run.submitted += 1
        org = self._org(final)
        if (
            org is None
            or not may_reveal(self.spent.get(org, 0), self.limit)
            or not may_reveal(self.exposed, self.instance_limit)
        ):
            run.narrowed += 1
            return None
        self.spent[org] = self.spent.get(org, 0) + 1
        self.exposed += 1
        run.reveals[org] = run.reveals.get(org, 0) + 1
        given = answers(self.holdout)
        passed = sum(1 for a, b in zip(given, self.holdout.labels, strict=True) if a == b)
        score = split_score([(1, 1)] * passed + [(0, 1)] * (self.n - passed))
        assert score is not None
        shown = author_split(
            {**score.to_json(), "stability": None}, complete=True
        )  # what the author reads
        assert shown is not None
        run.records.append(shown)
        run.record_orgs.append(org)
        if final:
            run.final = shown
        return int(shown["passed"])


def attack(
    strategy: Strategy,
    *,
    kind: Kind,
    n: int = 150,
    submissions: int = 200,
    limit: int = 3,
    epochs: int = 1,
    seed: int = 0,
    orgs: int = 1,
    instance_limit: int = DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET,
    counting: Counting = "holdout",
) -> Run:
    """Run one attack with up to `submissions` evals from `orgs` orgs (the last
    submission, the final, from a fresh one when there are several); its records and
    counts."""
    store = Store(
        kind,
        n,
        limit,
        epochs,
        submissions,
        seed,
        orgs=orgs,
        instance_limit=instance_limit,
        counting=counting,
    )
    run = Run(kind, strategy, n, limit, counting=counting)
    rng = random.Random(seed * 7919 + 1)
    base = [1] * n  # the no-skill answer: the majority class everywhere
    if strategy == "best_of_k":
        # An honest agent that guesses: each answer a fair coin (0.5 on fresh cases),
        # so its evals differ by chance alone, and the author keeps the best.
        run.truth = 0.5
        for i in range(submissions):
            store.evaluate(
                run, lambda h: [rng.randint(0, 1) for _ in range(n)], final=i == submissions - 1
            )
    elif strategy == "probe":
        reference = store.evaluate(run, lambda h: base)
        learnt: dict[int, int] = {}
        for j in range(submissions - 2):
            i = j % n  # a case probed twice only confirms what one probe told
            flipped = base.copy()
            flipped[i] = 0
            count = store.evaluate(run, lambda h, v=flipped: v)
            if count is not None and reference is not None:
                learnt[i] = 0 if count > reference else 1
        final = [learnt.get(i, 1) for i in range(n)]
        store.evaluate(run, lambda h: final, final=True)
    elif strategy == "decode":
        votes = [0.0] * n
        for _ in range(submissions - 1):
            version = [rng.randint(0, 1) for _ in range(n)]
            count = store.evaluate(run, lambda h, v=version: v)
            if count is not None:
                weight = count - n / 2
                for i, a in enumerate(version):
                    votes[i] += weight if a == 1 else -weight
        store.evaluate(run, lambda h: [1 if v >= 0 else 0 for v in votes], final=True)
    elif strategy == "boost":
        kept: list[list[int]] = []
        for _ in range(submissions - 1):
            version = [rng.randint(0, 1) for _ in range(n)]
            count = store.evaluate(run, lambda h, v=version: v)
            if count is not None and count > n / 2:
                kept.append(version)
        if kept:
            vote = [1 if 2 * sum(v[i] for v in kept) > len(kept) else 0 for i in range(n)]
        else:
            vote = base
        store.evaluate(run, lambda h: vote, final=True)
    else:  # pragma: no cover - Literal exhausted
        raise ValueError(strategy)
    return run


def false_overfit_rate(
    *, trials: int, public_n: int, holdout_n: int, repetitions: int, seed: int
) -> Fraction:
    """How often an honest agent (same skill on public and holdout, case difficulty
    clustered, runs of one case correlated) gets an overfit `warn`, under the product's
    own verdict (`evals._scores.score_suites`)."""
    from evals._scores import SuiteCounts, score_suites

    rng = random.Random(seed)
    warned = 0
    for _ in range(trials):
        skill = rng.uniform(0.55, 0.95)

        def split(n: int, skill: float = skill) -> list[tuple[int, int]]:
            cases = []
            for _ in range(n):
                # A case is easy or hard for this agent; its runs agree mostly.
                p = min(1.0, max(0.0, rng.gauss(skill, 0.25)))
                cases.append((sum(1 for _ in range(repetitions) if rng.random() < p), repetitions))
            return cases

        counts = SuiteCounts(
            suite_id="s",
            version=1,
            capability="c",
            threshold=Decimal("0.5"),
            public=split(public_n),
            holdout=split(holdout_n),
        )
        if score_suites([counts])["s"].overfit.verdict == "warn":
            warned += 1
    return Fraction(warned, trials)


def table(runs: Sequence[Run]) -> list[tuple[str, str, int, str, str]]:
    """(kind, strategy, revealed, best record, inflation) rows for the docs."""
    return [
        (
            r.kind,
            r.strategy,
            r.revealed,
            str(rounded(Fraction(r.best).limit_denominator(10_000))),
            f"{r.inflation:+.3f}",
        )
        for r in runs
    ]
