"""An offline simulation of agent authors gaming the holdout, under holon's own release rules.

Every number an attacker learns goes through the product's rules, not a copy
of them: whether an eval may reveal the holdout (`evals._integrity.may_reveal`,
the exposure budget), what an author reads of a revealed split
(`author_split`), how a record is scored (`evals._scores.split_score`), and
whether a mandate's lower-bound gate admits it (`evals._evidence`). Only the
agent and the holdout are modelled: a holdout is `n` binary cases, an agent
version a vector of answers, so a simulated eval costs microseconds and
k = 200 adaptive submissions run in a test.

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
from records import AgentRecord
from tests.records._record import agent_record

Kind = Literal["fixed", "generated"]
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
    records: list[dict[str, object]] = field(default_factory=list)
    submitted: int = 0  # evals the attacker had run
    revealed: int = 0  # holdout-revealing evals (the gate's k)
    narrowed: int = 0  # submissions that ran the public split only

    @property
    def best(self) -> float:
        rates = [float(r["rate"]) for r in self.records]  # type: ignore[arg-type]
        return max(rates) if rates else 0.0

    @property
    def inflation(self) -> float:
        return self.best - self.truth

    def gate_admits(self, minimum: Decimal) -> bool:
        """Whether a `min_eval_score_lower` mandate admits any record the attack held."""
        return any(admits_lower(_record(r), {"s": self.revealed}, minimum) for r in self.records)

    def best_lower(self) -> Decimal:
        bounds = [eval_score_lower(_record(r), {"s": self.revealed})[0] for r in self.records]
        return max((b for b in bounds if b is not None), default=Decimal(0))


def _record(split: dict[str, object]) -> AgentRecord:
    """An agent record of one suite whose only split is this holdout split."""
    return agent_record(eval_score=split["rate"], suites={"s": {"holdout": split}})


class Store:
    """The parts of a store an attack meets: the holdout, the budget, the records."""

    def __init__(self, kind: Kind, n: int, limit: int, epochs: int, submissions: int, seed: int):
        self.kind, self.n, self.limit = kind, n, limit
        self.rng = random.Random(seed)
        self.holdout = Holdout.draw(self.rng, n)
        self.spent = 0
        # A generated holdout rotates every `per_epoch` submissions (time passing).
        self.per_epoch = max(1, -(-submissions // max(1, epochs)))
        self.submitted = 0

    def evaluate(self, run: Run, answers: Callable[[Holdout], list[int]]) -> int | None:
        """One submission: the exact holdout count an author may read, or None (narrowed)."""
        if self.kind == "generated" and self.submitted and self.submitted % self.per_epoch == 0:
            self.holdout = Holdout.draw(self.rng, self.n)  # a new epoch: new instances
            self.spent = 0  # every budget renews
        self.submitted += 1
        run.submitted += 1
        if not may_reveal(self.spent, self.limit):
            run.narrowed += 1
            return None
        self.spent += 1
        run.revealed += 1
        given = answers(self.holdout)
        passed = sum(1 for a, b in zip(given, self.holdout.labels, strict=True) if a == b)
        score = split_score([(1, 1)] * passed + [(0, 1)] * (self.n - passed))
        assert score is not None
        shown = author_split(
            {**score.to_json(), "stability": None}, complete=True
        )  # what the author reads
        assert shown is not None
        run.records.append(shown)
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
) -> Run:
    """Run one attack with up to `submissions` evals; its records and counts."""
    store = Store(kind, n, limit, epochs, submissions, seed)
    run = Run(kind, strategy, n, limit)
    rng = random.Random(seed * 7919 + 1)
    base = [1] * n  # the no-skill answer: the majority class everywhere
    if strategy == "best_of_k":
        # An honest agent that guesses: each answer a fair coin (0.5 on fresh cases),
        # so its evals differ by chance alone, and the author keeps the best.
        run.truth = 0.5
        for _ in range(submissions):
            store.evaluate(run, lambda h: [rng.randint(0, 1) for _ in range(n)])
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
        store.evaluate(run, lambda h: final)
    elif strategy == "decode":
        votes = [0.0] * n
        for _ in range(submissions - 1):
            version = [rng.randint(0, 1) for _ in range(n)]
            count = store.evaluate(run, lambda h, v=version: v)
            if count is not None:
                weight = count - n / 2
                for i, a in enumerate(version):
                    votes[i] += weight if a == 1 else -weight
        store.evaluate(run, lambda h: [1 if v >= 0 else 0 for v in votes])
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
        store.evaluate(run, lambda h: vote)
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
