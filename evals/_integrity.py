"""Holdout integrity: what an agent author may learn of a holdout, how often, and what a
score then proves (docs/integrity.md).

An author wants a higher `eval_score` than the agent deserves and learns from
every number it is shown. These are the release rules every view, the plan
and the lower-bound gate call, kept pure so the offline simulation
(tests/integrity/) runs the very rules the product runs:

- **Instance sets.** A generated holdout is a new set of instances at each
  epoch; a stored holdout file is one set for its whole life (whatever suite
  version carries it). `instance_set` names the set a plan grades.
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
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, overload

from schema.canonical import canonical_json, digest

if TYPE_CHECKING:
    # Views (the CLI's, the gateway's) import the release rules; suites and the
    # store are loaded only by the functions that need them.
    from evals.suites import Suite
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
    The key is an HMAC under the holdout secret, so it tells nothing of the
    epoch or the cases to anyone who sees it; the label is for operators (it
    names the epoch).
    """
    from evals.suites import cases_text

    if suite.holdout_file is not None:
        # The canonical text of {"holdout_file": [cases], "suite": id}, keys in order.
        text = '{"holdout_file":' + cases_text(suite.holdout_file, suite)
        text += ',"suite":' + canonical_json(suite.id) + "}"
        key = _keyed_hex(secret, hashlib.sha256(text.encode("utf-8")).hexdigest())
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

    def message(self) -> str:

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

    def to_json(self) -> dict[str, Any]:
        from records import utc_text

        return {
            "reason": "holdout_instances_exposed" if self.exposed else "holdout_budget_spent",
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
    spent: int,
    instance_revealed: int,
    epoch_started_at: datetime,
    evals_in_epoch: int,
) -> Withheld | None:
    """None when the org may have one more holdout-revealing eval of `suite`, else why not:
    its own budget (`spent` of the org) or the instance set's (`instance_revealed`, every
    org's), whichever is spent (the instance set's first: no reset gives it back)."""
    exposed = not may_reveal(instance_revealed, suite.limits.holdout_evals_per_instance_set)
    if exposed:
        spent, limit = instance_revealed, suite.limits.holdout_evals_per_instance_set
    else:
        limit = suite.limits.holdout_evals_per_epoch
        if may_reveal(spent, limit):
            return None
    generator = suite.holdout_generator
    if generator is None:
        return Withheld(org, suite.id, spent, limit, None, None, exposed=exposed)
    after_evals = (
        None
        if generator.rotate_after_evals is None
        else max(1, generator.rotate_after_evals - evals_in_epoch)
    )
    by_count_from = epoch_started_at + timedelta(hours=generator.rotate_min_hours)
    return Withheld(
        org,
        suite.id,
        spent,
        limit,
        epoch_started_at + timedelta(days=generator.rotate_after_days),
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
    by count no sooner than every `rotate_min_hours`). None: a stored holdout, whose
    budget never renews by time."""
    generator = suite.holdout_generator
    if generator is None:
        return None
    epochs = Decimal(7) / generator.rotate_after_days
    if generator.rotate_after_evals is not None:
        epochs = max(epochs, Decimal(_HOURS_A_WEEK) / generator.rotate_min_hours)
    return (suite.limits.holdout_evals_per_epoch * epochs).quantize(Decimal("0.1"))


def rotation_warning(suite: Suite) -> dict[str, Any] | None:
    """What `suites add` says of a suite whose rotation lets an org reveal its holdout more
    than REVEALS_PER_WEEK_WARNING times a week, with the numbers; None when it does not."""
    rate = reveals_per_week(suite)
    if rate is None or rate <= REVEALS_PER_WEEK_WARNING:
        return None
    generator = suite.holdout_generator
    assert generator is not None
    return {
        "code": "fast_rotation",
        "reveals_per_week": str(rate),
        "limit": REVEALS_PER_WEEK_WARNING,
        "message": (
            f"suite {suite.id}: an org may reveal its holdout up to {rate} times a week "
            f"(holdout_evals_per_epoch {suite.limits.holdout_evals_per_epoch}, an epoch every "
            f"{generator.rotate_after_days} days"
            + (
                f" or every {generator.rotate_after_evals} evals, no sooner than "
                f"{generator.rotate_min_hours} hours"
                if generator.rotate_after_evals is not None
                else ""
            )
            + f"), over {REVEALS_PER_WEEK_WARNING}: every reveal lets an author tune to the "
            "holdout; raise rotate_min_hours or rotate_after_days, or lower "
            "holdout_evals_per_epoch"
        ),
    }


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
