"""Holdout integrity: what an agent author may learn of a holdout, how often, and what a
score then proves (docs/integrity.md).

An author wants a higher `eval_score` than the agent deserves and learns from
every number it is shown. These are the release rules every view, the plan
and the lower-bound gate call, kept pure so the offline simulation
(tests/integrity/) runs the very rules the product runs:

- **Instance sets.** A generated holdout is a new set of instances at each
  epoch; a stored holdout file is one set for its whole life (whatever suite
  version carries it); a pool's subsets are one set each, an epoch each, all
  disjoint (`evals.suites.epoch_holdout`). `instance_set` names the set a plan
  grades.
- **The exposure budgets.** Each eval that grades a holdout spends one unit of
  the agent's org's budget for that instance set, across every agent name
  and version of the org (an author can register any number of them;
  `limits.holdout_evals_per_epoch`, default 3), and one of the instance
  set's own, every org's reveals together (an author can hold any number of
  orgs; `limits.holdout_evals_per_instance_set`, default 6). Once either is
  spent, an eval of that org's agents runs the public split only
  (`withheld`).
- **One coarse fact per split, for complete evals only.** An author sees a
  holdout split as its rate with its Wilson interval (`passed`, `total`,
  `rate`, `ci95`) once the eval is complete; nothing per case, check, tag or
  cell, nothing while it runs (`author_split`, `author_record`).
- **Keyed digests.** A digest an author can read that covers holdout content
  is an HMAC under the store's holdout secret (`keyed_digest`), so a guess
  at the holdout cannot be confirmed by hashing it.
- **The lower bound, paid for selection**, is `evals._evidence`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, overload

from schema.canonical import canonical_json, digest

if TYPE_CHECKING:
    # Views (the CLI's, the gateway's) import the release rules; suites and the
    # store are loaded only by the functions that need them.
    from evals.suites import HoldoutPool, Suite
    from records import AgentRecord

__all__ = [
    "AUTHOR_SPLIT_KEYS",
    "REVEALS_PER_WEEK_WARNING",
    "Withheld",
    "author_record",
    "author_digests",
    "author_split",
    "instance_set",
    "keyed_digest",
    "may_reveal",
    "recut_warning",
    "reveals_per_week",
    "rotation_warning",
    "shown_splits",
    "withheld",
]

# What an author sees of a holdout split (the record's split keys; no stability:
# it is a second number about the same cases, measured per case).
AUTHOR_SPLIT_KEYS = ("passed", "total", "rate", "ci95")


# -- instance sets and the exposure budget ------------------------------------------------


def instance_set(suite: Suite, epoch: int, secret: bytes) -> tuple[str, str]:
    """(key, label) of the holdout instances a plan of `suite` at `epoch` grades.

    A stored file is keyed by its cases, not by the suite version: a new
    version that keeps the same holdout file keeps the same, spent, budget.
    A pool's subset is keyed alike, by its own cases. The key is an HMAC
    under the holdout secret, so it tells nothing of the epoch or the cases
    to anyone who sees it; the label is for operators (it names the epoch).
    """
    from evals.suites import cases_text, epoch_holdout

    if suite.holdout_file is not None:
        # The canonical text of {"holdout_file": [cases], "suite": id}, keys in order.
        text = '{"holdout_file":' + cases_text(epoch_holdout(suite, secret, epoch), suite)
        text += ',"suite":' + canonical_json(suite.id) + "}"
        key = _keyed_hex(secret, hashlib.sha256(text.encode("utf-8")).hexdigest())
        if suite.holdout_pool is not None:
            return key, f"pool epoch {epoch} {key[:12]}"
        return key, f"stored holdout {key[:12]}"
    key = _keyed_hex(secret, digest({"suite": suite.id, "version": suite.version, "epoch": epoch}))
    return key, f"v{suite.version} epoch {epoch}"


@dataclass(frozen=True)
class Withheld:
    """Why a plan runs a suite's public split only, and when that can change."""

    org: str
    suite_id: str
    spent: int
    limit: int
    renews_at: datetime | None  # None: a stored holdout's budget never renews by time
    renews_after_evals: int | None  # or after this many more evals of the suite
    renews_by_count_from: datetime | None = None  # but not before this time
    # The instance set's budget (every org's reveals together) is spent, not the org's:
    # `spent` and `limit` are then the instance set's.
    exposed: bool = False
    # The holdout is a pool whose every subset has had its epoch: `spent` and `limit` are
    # then the subsets it held, and nothing renews it but a new holdout file.
    exhausted: HoldoutPool | None = None

    def message(self) -> str:
        if self.exhausted is not None:
            pool = self.exhausted
            # No epoch in it: an author may read it, and epochs are the operator's.
            return (
                f"{self.suite_id}'s holdout pool is used up: its {pool.cases} cases held "
                f"{pool.epochs} disjoint subsets of {pool.subset}, and each has been the "
                "holdout in its turn, so this eval runs the public split only and writes no "
                "record; an operator installs a new holdout file (new cases) as a new suite "
                "version: holon suites add DIR --activate"
            )
        if self.exposed:
            head = (
                f"{self.suite_id}'s current holdout instances had {self.spent} of their "
                f"{self.limit} holdout-revealing evals, every org's together: this eval runs the "
                "public split only and writes no record"
            )
            if self.renews_at is None:
                return (
                    head + "; a stored holdout is refreshed by a new suite version with a new "
                    "holdout file"
                )
            return (
                f"{head}; {self._when()}; an operator can start new instances at once: "
                f"holon suites rotate-holdout {self.suite_id}"
            )
        head = (
            f"{self.org} has had {self.spent} of its {self.limit} holdout-revealing evals on "
            f"{self.suite_id}'s current holdout instances: this eval runs the public split only "
            "and writes no record"
        )
        # What an operator can do, whichever holdout it is: the reset is logged and kept.
        reset = (
            f"an operator can give the budget back: holon suites exposure-reset "
            f"{self.suite_id} --org {self.org} --reason TEXT"
        )
        if self.renews_at is None:
            return (
                head + "; a stored holdout never renews by time (a new suite version with a new "
                f"holdout file does); {reset}"
            )
        return f"{head}; {self._when()}; {reset}"

    def _when(self) -> str:
        from records import utc_text

        assert self.renews_at is not None
        when = f"new instances come at {utc_text(self.renews_at)}"
        if self.renews_after_evals is not None:
            when += f" or after {self.renews_after_evals} more evals of the suite"
            if self.renews_by_count_from is not None:
                when += f", no sooner than {utc_text(self.renews_by_count_from)}"
        return when

    @property
    def reason(self) -> str:
        if self.exhausted is not None:
            return "holdout_pool_exhausted"
        return "holdout_instances_exposed" if self.exposed else "holdout_budget_spent"

    def to_json(self) -> dict[str, Any]:
        from records import utc_text

        return {
            "reason": self.reason,
            "spent": self.spent,
            "limit": self.limit,
            "renews_at": None if self.renews_at is None else utc_text(self.renews_at),
            "renews_after_evals": self.renews_after_evals,
            "renews_by_count_from": (
                None if self.renews_by_count_from is None else utc_text(self.renews_by_count_from)
            ),
            "message": self.message(),
        }


def may_reveal(spent: int, limit: int) -> bool:
    """The exposure budgets' rule: an org (or every org together) that had `spent`
    holdout-revealing evals on an instance set may have one more while `spent < limit`."""
    return spent < limit


def withheld(
    suite: Suite,
    *,
    org: str,
    epoch: int,
    spent: int,
    instance_revealed: int,
    epoch_started_at: datetime,
    evals_in_epoch: int,
) -> Withheld | None:
    """None when the org may have one more holdout-revealing eval of `suite` at `epoch`,
    else why not: a pool with no subset left for the epoch, the instance set's budget
    (`instance_revealed`, every org's; no reset gives it back) or the org's own (`spent`)."""
    from evals.suites import pool_exhausted

    pool = suite.holdout_pool
    if pool is not None and pool_exhausted(suite, epoch):
        return Withheld(org, suite.id, pool.epochs, pool.epochs, None, None, exhausted=pool)
    exposed = not may_reveal(instance_revealed, suite.limits.holdout_evals_per_instance_set)
    if exposed:
        spent, limit = instance_revealed, suite.limits.holdout_evals_per_instance_set
    else:
        limit = suite.limits.holdout_evals_per_epoch
        if may_reveal(spent, limit):
            return None
    rotation = suite.rotation
    if rotation is None or pool_exhausted(suite, epoch + 1):
        # A stored holdout used whole, or a pool's last subset: no new instances by time.
        return Withheld(org, suite.id, spent, limit, None, None, exposed=exposed)
    after_evals = (
        None
        if rotation.rotate_after_evals is None
        else max(1, rotation.rotate_after_evals - evals_in_epoch)
    )
    by_count_from = epoch_started_at + timedelta(hours=rotation.rotate_min_hours)
    return Withheld(
        org,
        suite.id,
        spent,
        limit,
        epoch_started_at + timedelta(days=rotation.rotate_after_days),
        after_evals,
        None if after_evals is None else by_count_from,
        exposed=exposed,
    )


# The most holdout-revealing evals a week one org may have on one suite before `suites
# add` warns (docs/integrity.md, "Exposure"): one a day.
REVEALS_PER_WEEK_WARNING = 7
_HOURS_A_WEEK = 168


def reveals_per_week(suite: Suite) -> Decimal | None:
    """The most holdout-revealing evals one org can have on `suite` in a week: its budget
    per epoch times the most epochs a week can hold (by time every `rotate_after_days`;
    by count no sooner than every `rotate_min_hours`). None: a stored holdout used whole,
    whose budget never renews by time."""
    rotation = suite.rotation
    if rotation is None:
        return None
    epochs = Decimal(7) / rotation.rotate_after_days
    if rotation.rotate_after_evals is not None:
        epochs = max(epochs, Decimal(_HOURS_A_WEEK) / rotation.rotate_min_hours)
    return (suite.limits.holdout_evals_per_epoch * epochs).quantize(Decimal("0.1"))


def rotation_warning(suite: Suite) -> dict[str, Any] | None:
    """What `suites add` says of a suite whose rotation lets an org reveal its holdout more
    than REVEALS_PER_WEEK_WARNING times a week, with the numbers; None when it does not."""
    rate = reveals_per_week(suite)
    if rate is None or rate <= REVEALS_PER_WEEK_WARNING:
        return None
    rotation = suite.rotation
    assert rotation is not None
    return {
        "code": "fast_rotation",
        "reveals_per_week": str(rate),
        "limit": REVEALS_PER_WEEK_WARNING,
        "message": (
            f"suite {suite.id}: an org may reveal its holdout up to {rate} times a week "
            f"(holdout_evals_per_epoch {suite.limits.holdout_evals_per_epoch}, an epoch every "
            f"{rotation.rotate_after_days} days"
            + (
                f" or every {rotation.rotate_after_evals} evals, no sooner than "
                f"{rotation.rotate_min_hours} hours"
                if rotation.rotate_after_evals is not None
                else ""
            )
            + f"), over {REVEALS_PER_WEEK_WARNING}: every reveal lets an author tune to the "
            "holdout; raise rotate_min_hours or rotate_after_days, or lower "
            "holdout_evals_per_epoch"
        ),
    }


def recut_warning(suite: Suite, earlier: Sequence[Suite]) -> dict[str, Any] | None:
    """What `suites add` says of a pool whose cases an earlier version of the suite graded
    cut otherwise (another subset size, other cases, or the file used whole): its subsets
    overlap sets whose rates were shown, the overlapping design docs/integrity.md rejects
    ("Instance sets that end"); None when no earlier version shares a case with it."""
    pool = suite.holdout_pool
    if pool is None or suite.holdout_file is None:
        return None
    ids = {case.id for case in suite.holdout_file}
    for other in earlier:
        if other.version == suite.version or other.holdout_file is None:
            continue
        theirs = {case.id for case in other.holdout_file}
        shared = len(ids & theirs)
        same_cut = other.holdout_pool is not None and other.holdout_pool.subset == pool.subset
        if shared and not (same_cut and theirs == ids):
            return {
                "code": "pool_recut",
                "version": other.version,
                "shared_cases": shared,
                "message": (
                    f"suite {suite.id}: {shared} of this pool's cases were in version "
                    f"{other.version}'s holdout, cut otherwise: this pool's subsets overlap "
                    "holdouts whose rates were shown, and an author can decode overlapping "
                    "subsets; a pool changes only by a new file of new cases"
                ),
            }
    return None


# -- what an author sees --------------------------------------------------------------------


def shown_splits(operator: bool) -> tuple[str, ...]:
    """The splits whose cells a reader's views are built from: an operator's every split,
    an author's the public split alone. An author's report, comparison and case explorer
    read no holdout cell (no id, input, output, check or count of one); what an author
    reads of a holdout is `author_split`, `author_record` and the plan's sizes."""
    return ("public", "holdout") if operator else ("public",)


def author_split(split: Mapping[str, Any] | None, *, complete: bool) -> dict[str, Any] | None:
    """A holdout split as an author may read it: its rate with its interval, and only
    once the eval is complete (None before, so nothing moves while it runs)."""
    if split is None or not complete:
        return None
    return {key: split[key] for key in AUTHOR_SPLIT_KEYS if key in split}


@overload
def author_record(record: AgentRecord) -> AgentRecord: ...


@overload
def author_record(record: Mapping[str, Any]) -> dict[str, Any]: ...


def author_record(record: AgentRecord | Mapping[str, Any]) -> AgentRecord | dict[str, Any]:
    """An agent record as an author (or any non-operator) may read it: no holdout epochs,
    each suite's holdout split reduced to its rate and interval, canaries to whether
    each capability drifted.

    A record read from the store (`records.AgentRecord`) gives one; the JSON of a record
    (an eval's result, a report's) gives JSON. One rule: the typed record's view is its
    JSON's, read back.
    """
    if not isinstance(record, Mapping):
        from records import AgentRecord

        return AgentRecord.from_json(author_record(record.to_json()))
    # Holdout epochs and the canaries' live score (records.show's) are the operator's.
    out = {k: v for k, v in record.items() if k not in ("holdout_epochs", "live_score")}
    canaries = record.get("canaries")
    if isinstance(canaries, Mapping):
        # One coarse fact per capability: its counts would tell an author how its
        # agent did on cases it never sees (docs/integrity.md, "Canaries").
        out["canaries"] = {
            capability: {"drifted": bool(c.get("drifted"))} if isinstance(c, Mapping) else c
            for capability, c in canaries.items()
        }
    suites = record.get("suites")
    if isinstance(suites, Mapping):
        out["suites"] = {
            suite_id: (
                {**graded, "holdout": author_split(graded.get("holdout"), complete=True)}
                if isinstance(graded, Mapping)
                else graded
            )
            for suite_id, graded in suites.items()
        }
    return out


def keyed_digest(secret: bytes, value: str) -> str:
    """A digest an author may read in place of `value`, a digest over holdout content:
    HMAC-SHA256 under the store's holdout secret, so hashing a guessed holdout confirms
    nothing. Stable for a store, so authors can still tell two suite versions apart."""
    return "hmac-sha256:" + _keyed_hex(secret, value)


def _keyed_hex(secret: bytes, value: str) -> str:
    mac = hmac.new(secret, b"holon keyed digest v1\x00" + value.encode("ascii"), hashlib.sha256)
    return mac.hexdigest()


# The digests of a suite (docs/integrity.md, "Keyed digests") that cover no holdout content.
_UNKEYED = frozenset({"spec_digest"})


def author_digests(secret: bytes, digests: Mapping[str, str] | None) -> dict[str, str] | None:
    """A suite's digests as an author may read them: the spec digest as it is, every other
    one (suite, dataset, checks: each covers holdout cases or their checks) keyed."""
    if digests is None:
        return None
    return {
        name: value if name in _UNKEYED else keyed_digest(secret, value)
        for name, value in sorted(digests.items())
    }
