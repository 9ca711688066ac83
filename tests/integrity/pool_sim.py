"""Count decoding across epochs of one stored file, cut two ways (docs/integrity.md,
"Instance sets that end"): disjoint subsets, one an epoch until they run out (holon's
pool), or a fresh random subset every epoch (the design a pool replaces).

The author has no skill and sees each epoch's inputs (its agent is sent them), so it
knows which file cases an epoch grades and keeps its evidence per case, across epochs:
each epoch's instance set is revealed `holdout_evals_per_instance_set` times (the
product's budget, `may_reveal`), every reveal but the last a random version whose count
(`author_split`, as an author reads it) votes on each case it answered, the last one
the votes' answer. What that final reads, minus the truth, is what decoding bought.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Literal

from evals._integrity import author_split, may_reveal
from evals._scores import split_score
from evals.suites._model import DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET
from tests.integrity.sim import TRUTH

Cut = Literal["disjoint", "resampled"]


def _read(answers: dict[int, int], labels: list[int], cases: list[int]) -> int:
    """The holdout count an author reads of one reveal."""
    passed = sum(answers[i] == labels[i] for i in cases)
    score = split_score([(1, 1)] * passed + [(0, 1)] * (len(cases) - passed))
    assert score is not None
    shown = author_split({**score.to_json(), "stability": None}, complete=True)
    assert shown is not None
    return int(shown["passed"])


def final_inflation(cut: Cut, *, file: int, subset: int, epochs: int, seed: int) -> float:
    """The last epoch's final record minus the truth, after decoding every epoch before
    it and the last one's own reveals. A disjoint cut has file // subset epochs at most."""
    rng = random.Random(seed)
    labels = [1 if rng.random() < TRUTH else 0 for _ in range(file)]
    order = rng.sample(range(file), file)  # the secret permutation
    if cut == "disjoint":
        epochs = min(epochs, file // subset)
    votes: dict[int, float] = defaultdict(float)
    for epoch in range(epochs):
        if cut == "disjoint":
            cases = order[epoch * subset : (epoch + 1) * subset]
        else:
            cases = rng.sample(range(file), subset)
        revealed = 0
        while may_reveal(revealed + 1, DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET):
            version = {i: rng.randint(0, 1) for i in cases}
            weight = _read(version, labels, cases) - subset / 2
            for i in cases:
                votes[i] += weight if version[i] == 1 else -weight
            revealed += 1
    final = {i: 1 if votes[i] >= 0 else 0 for i in cases}
    return _read(final, labels, cases) / subset - TRUTH


ROWS: tuple[tuple[Cut, int], ...] = (
    ("disjoint", 2),
    ("resampled", 2),
    ("resampled", 13),
    ("resampled", 52),
)


def table(seeds: int = 16) -> str:
    """The Markdown table of docs/integrity.md: a 300-case file, subsets of 150."""
    rows = ["| cut | epochs | mean final − truth | worst |", "|---|---|---|---|"]
    for cut, epochs in ROWS:
        runs = [
            final_inflation(cut, file=300, subset=150, epochs=epochs, seed=s) for s in range(seeds)
        ]
        rows.append(f"| {cut} | {epochs} | {sum(runs) / seeds:+.3f} | {max(runs):+.3f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
