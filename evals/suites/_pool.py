"""A stored holdout as a pool (docs/integrity.md, "Instance sets that end"): disjoint
subsets, one an epoch, cut by a secret permutation.

The permutation ranks every pool case by an HMAC, under the store's holdout
secret, of the suite's id and the case's id; subset e is the cases ranked
e·N to (e+1)·N - 1. So the subsets are disjoint and together hold every
whole subset's worth of the pool, the same secret and suite always cut the
same subsets (a resumed eval, a re-graded import and a new suite version
that keeps the pool all see the cases they saw), and without the secret
nothing tells which cases share a subset: what an author learns of one
epoch's cases says nothing of the next's.

A subset keeps the pool's file order, so the order of an epoch's cells
follows the file and not the secret ranks.
"""

from __future__ import annotations

import functools

from evals.suites._identity import generated_holdout, holdout_text_digest
from evals.suites._model import Case, Suite
from schema.canonical import canonical_json

__all__ = ["epoch_holdout", "pool_exhausted"]

# What the rank's HMAC covers besides the suite and case ids: never a case's identity
# (a holdout case digest is the HMAC of that, a JSON object), so no digest shown to an
# operator is a rank.
_RANK_LABEL = "holon holdout pool v1"


@functools.lru_cache(maxsize=32)
def _ranked(secret: bytes, suite_id: str, case_ids: tuple[str, ...]) -> tuple[int, ...]:
    """The pool's indices in the secret order (kept: a plan, its instance set and each
    canary cut the same pool, and ranking 5,000 cases takes a tenth of a second). Ties
    between 256-bit ranks are broken by the file's order (they never happen)."""
    ranks = [
        holdout_text_digest(secret, canonical_json([_RANK_LABEL, suite_id, case_id]))
        for case_id in case_ids
    ]
    return tuple(sorted(range(len(case_ids)), key=lambda i: (ranks[i], i)))


def pool_exhausted(suite: Suite, epoch: int) -> bool:
    """Whether `suite`'s holdout is a pool with no subset left for `epoch`."""
    pool = suite.holdout_pool
    return pool is not None and epoch >= pool.epochs


def _subset(suite: Suite, cases: tuple[Case, ...], secret: bytes, epoch: int) -> tuple[Case, ...]:
    pool = suite.holdout_pool
    assert pool is not None
    if epoch < 0 or pool_exhausted(suite, epoch):
        return ()
    ranked = _ranked(secret, suite.id, tuple(case.id for case in cases))
    chosen = sorted(ranked[epoch * pool.subset : (epoch + 1) * pool.subset])
    return tuple(cases[i] for i in chosen)


def epoch_holdout(suite: Suite, secret: bytes, epoch: int) -> tuple[Case, ...]:
    """The holdout cases a plan of `suite` at `epoch` grades: a pool's subset for the epoch
    (none once the pool is used up), a stored holdout whole, or a generated epoch."""
    if suite.holdout_file is not None:
        if suite.holdout_pool is None:
            return suite.holdout_file
        return _subset(suite, suite.holdout_file, secret, epoch)
    return generated_holdout(suite, secret, epoch)
