"""Holdout exposure: how many holdout-revealing evals each instance set had, and each org.

An agent author learns something about a holdout from every eval that
grades it, whatever name, version or org the agent is registered under, and
one author may hold many org tokens (docs/integrity.md). So exposure is
counted twice, in the transaction that creates the eval: against the org's
budget (`spent`, which bounds one org's spend and an operator may reset) and
against the instance set's (every org's reveals together, never reset).
Conditional updates take each unit, so two evals started at once cannot
both take the last one. The lower-bound gate's k is every org's reveals of
the suite (`revealed`): m orgs learn no more than one could.

Each unit is kept beside its eval (`EvalExposure`), so that an eval stopped
before any holdout cell of a suite was claimed gives that suite's unit back,
once, in the transaction that stops it (`refund_unclaimed`): a claim is the
only way a holdout input reaches the agent, and a cell never claimed kept its
fence at 0.

This layer stores counts; which instance set a plan grades and what the
limit is are decided by `evals` and arrive as plain values.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, exists, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from records._exposure_models import (
    EvalExposure,
    ExposureReset,
    HoldoutExposure,
    InstanceSetExposure,
)
from records._ids import ulid
from records._models import EvalCell
from records._registry import Registry
from records._rows import from_row
from records._types import utc_text, utcnow
from schema.errors import NotFound, Refused

__all__ = [
    "ExposureInfo",
    "ExposureRegistry",
    "ExposureResetInfo",
    "ExposureSpend",
    "InstanceSetInfo",
    "SpentUnit",
]


@dataclass(frozen=True)
class ExposureSpend:
    """One unit an eval about to be created spends: checked and taken in its transaction."""

    org: str
    suite_id: str
    instance_set: str
    label: str
    limit: int  # of the org's reveals of the instance set
    instance_limit: int  # of every org's reveals of the instance set together


@dataclass(frozen=True)
class ExposureInfo:
    org: str
    suite_id: str
    instance_set: str
    label: str
    spent: int
    revealed: int
    updated_at: datetime


@dataclass(frozen=True)
class InstanceSetInfo:
    """Every org's holdout-revealing evals of one instance set together."""

    suite_id: str
    instance_set: str
    label: str
    revealed: int
    updated_at: datetime


@dataclass(frozen=True)
class ExposureResetInfo:
    id: str
    org: str
    suite_id: str
    instance_set: str
    spent_before: int
    reset_by: str
    reason: str
    at: datetime

    def to_json(self) -> dict[str, Any]:
        """Schema `entities/exposure-reset`."""
        return {
            "id": self.id,
            "org": self.org,
            "instance_set": self.instance_set,
            "spent_before": self.spent_before,
            "reset_by": self.reset_by,
            "reason": self.reason,
            "at": utc_text(self.at),
        }


@dataclass(frozen=True)
class SpentUnit:
    """One unit an eval spent on a suite's holdout, and whether it was given back."""

    eval_id: str
    org: str
    suite_id: str
    instance_set: str
    refunded_at: datetime | None


def _unit(row: EvalExposure) -> SpentUnit:
    return from_row(SpentUnit, row)


def _info(row: HoldoutExposure) -> ExposureInfo:
    return from_row(ExposureInfo, row)


def _reset_info(row: ExposureReset) -> ExposureResetInfo:
    return from_row(ExposureResetInfo, row)


def _in_lock_order(spends: Iterable[ExposureSpend]) -> builtins.list[ExposureSpend]:
    """The order every transaction takes exposure rows in (a spend, a refund), so that
    two of them over the same suites never wait on each other in a circle."""
    return sorted(spends, key=lambda s: (s.suite_id, s.instance_set))


def spend_all(session: Session, eval_id: str, spends: Iterable[ExposureSpend]) -> None:
    """Take one unit of each budget for the eval `eval_id` (its row already added) and
    keep it beside the eval, or raise Refused and take none (the caller's transaction
    rolls back)."""
    now = utcnow()
    dialect = session.get_bind().dialect.name
    for spend in _in_lock_order(spends):
        values = {
            "org": spend.org,
            "suite_id": spend.suite_id,
            "instance_set": spend.instance_set,
            "label": spend.label,
            "spent": 0,
            "revealed": 0,
            "updated_at": now,
        }
        # Insert-if-absent, then one conditional UPDATE: atomic on both stores
        # (the row lock on PostgreSQL, BEGIN IMMEDIATE on SQLite), so the last
        # unit goes to exactly one of two evals created at the same moment.
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        session.execute(insert(HoldoutExposure).values(values).on_conflict_do_nothing())
        taken = session.execute(
            update(HoldoutExposure)
            .where(
                HoldoutExposure.org == spend.org,
                HoldoutExposure.suite_id == spend.suite_id,
                HoldoutExposure.instance_set == spend.instance_set,
                HoldoutExposure.spent < spend.limit,
            )
            .values(
                spent=HoldoutExposure.spent + 1,
                revealed=HoldoutExposure.revealed + 1,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        if taken.rowcount != 1:  # type: ignore[attr-defined]
            # Not the label: it names the epoch, and an author may read this (the
            # error of an eval queued on registration).
            raise Refused(
                f"{spend.org}'s holdout budget for {spend.suite_id} was spent "
                "since the eval was planned",
                hint="plan the eval again: it will run the public split only, or an operator "
                "resets the budget (`holon suites exposure reset`)",
                details={"org": spend.org, "suite": spend.suite_id, "limit": spend.limit},
            )
        _spend_instance_set(session, spend, insert, now)
        session.add(
            EvalExposure(
                eval_id=eval_id,
                suite_id=spend.suite_id,
                instance_set=spend.instance_set,
                org=spend.org,
                forgiven=False,
                refunded_at=None,
            )
        )


def _spend_instance_set(session: Session, spend: ExposureSpend, insert: Any, now: Any) -> None:
    """The instance set's unit: every org's reveals together, never reset."""
    session.execute(
        insert(InstanceSetExposure)
        .values(
            suite_id=spend.suite_id,
            instance_set=spend.instance_set,
            label=spend.label,
            revealed=0,
            updated_at=now,
        )
        .on_conflict_do_nothing()
    )
    taken = session.execute(
        update(InstanceSetExposure)
        .where(
            InstanceSetExposure.suite_id == spend.suite_id,
            InstanceSetExposure.instance_set == spend.instance_set,
            InstanceSetExposure.revealed < spend.instance_limit,
        )
        .values(revealed=InstanceSetExposure.revealed + 1, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        raise Refused(
            f"{spend.suite_id}'s current holdout instances were revealed "
            f"{spend.instance_limit} times, by every org together, since the eval was planned",
            hint="plan the eval again: it will run the public split only until new "
            "instances come (a new epoch, or a new holdout file)",
            details={"suite": spend.suite_id, "instance_limit": spend.instance_limit},
        )


def refund_unclaimed(session: Session, eval_id: str) -> builtins.list[SpentUnit]:
    """Give back each unit the eval spent on a suite none of whose holdout cells was
    ever claimed; every unit of the eval, refunded or not, in lock order.

    The caller holds the eval's row locked and moves it out of `running` in this
    transaction: a claim reads that status under a lock of its own
    (records._cell_sql.STATUS_FOR_CLAIM), so no holdout cell is claimed after this
    looked, and the transition happens once, so no unit is given back twice.
    A counter never goes below 0, and `spent` is not touched when a reset has
    forgiven the unit already: what other evals spent stays spent.
    """
    now = utcnow()
    units = session.scalars(_units_of(eval_id)).all()
    for unit in units:
        if unit.refunded_at is not None or _claimed(session, eval_id, unit.suite_id):
            continue
        org_row = session.get(
            HoldoutExposure, (unit.org, unit.suite_id, unit.instance_set), with_for_update=True
        )
        set_row = session.get(
            InstanceSetExposure, (unit.suite_id, unit.instance_set), with_for_update=True
        )
        # Read again under the org row's lock: a reset marks the units it forgives
        # while it holds that lock.
        forgiven = session.scalar(
            select(EvalExposure.forgiven).where(
                EvalExposure.eval_id == eval_id,
                EvalExposure.suite_id == unit.suite_id,
                EvalExposure.instance_set == unit.instance_set,
            )
        )
        if org_row is not None:
            if not forgiven:
                org_row.spent = max(org_row.spent - 1, 0)
            org_row.revealed = max(org_row.revealed - 1, 0)
            org_row.updated_at = now
        if set_row is not None:
            set_row.revealed = max(set_row.revealed - 1, 0)
            set_row.updated_at = now
        unit.refunded_at = now
    return [_unit(u) for u in units]


def _units_of(eval_id: str) -> Select[EvalExposure]:
    """The units an eval spent, in lock order (`_in_lock_order`'s)."""
    return (
        select(EvalExposure)
        .where(EvalExposure.eval_id == eval_id)
        .order_by(EvalExposure.suite_id, EvalExposure.instance_set)
    )


def _claimed(session: Session, eval_id: str, suite_id: str) -> bool:
    """Whether any holdout cell of the suite in the eval was ever claimed: its input may
    have reached the agent (a claim raises the fence; nothing lowers it)."""
    return bool(
        session.scalar(
            select(
                exists().where(
                    EvalCell.eval_id == eval_id,
                    EvalCell.suite_id == suite_id,
                    EvalCell.split != "public",
                    EvalCell.fence > 0,
                )
            )
        )
    )


class ExposureRegistry(Registry):
    def spent(self, org: str, suite_id: str, instance_set: str) -> int:
        with self._store.read() as session:
            row = session.get(HoldoutExposure, (org, suite_id, instance_set))
            return 0 if row is None else row.spent

    def instance_revealed(self, suite_id: str, instance_set: str) -> int:
        """Every org's holdout-revealing evals of one instance set (its budget's count)."""
        with self._store.read() as session:
            row = session.get(InstanceSetExposure, (suite_id, instance_set))
            return 0 if row is None else row.revealed

    def revealed(self, suite_ids: Iterable[str]) -> dict[str, int]:
        """Holdout-revealing evals per suite id, of every org, over every instance set and
        version (the k of the lower-bound gate); 0 for a suite never graded.

        Every org's, not the record's org's: an author with m org tokens has had every
        one of those evals, and which orgs are one author no store can tell."""
        wanted = sorted(set(suite_ids))
        out = dict.fromkeys(wanted, 0)
        if not wanted:
            return out
        with self._store.read() as session:
            rows = session.execute(
                select(InstanceSetExposure.suite_id, func.sum(InstanceSetExposure.revealed))
                .where(InstanceSetExposure.suite_id.in_(wanted))
                .group_by(InstanceSetExposure.suite_id)
            )
            out.update({suite_id: int(total or 0) for suite_id, total in rows})
        return out

    def instance_sets(self, suite_id: str) -> builtins.list[InstanceSetInfo]:
        """Each instance set of the suite that was revealed, with every org's count."""
        with self._store.read() as session:
            rows = session.scalars(
                select(InstanceSetExposure)
                .where(InstanceSetExposure.suite_id == suite_id)
                .order_by(InstanceSetExposure.updated_at, InstanceSetExposure.instance_set)
            )
            return [from_row(InstanceSetInfo, r) for r in rows]

    def list(self, *, suite_id: str | None = None, org: str | None = None) -> list[ExposureInfo]:
        with self._store.read() as session:
            query = select(HoldoutExposure).order_by(
                HoldoutExposure.suite_id, HoldoutExposure.org, HoldoutExposure.updated_at
            )
            if suite_id is not None:
                query = query.where(HoldoutExposure.suite_id == suite_id)
            if org is not None:
                query = query.where(HoldoutExposure.org == org)
            return [_info(r) for r in session.scalars(query)]

    def reset(
        self,
        *,
        org: str,
        suite_id: str,
        reset_by: str,
        reason: str,
        instance_set: str | None = None,
    ) -> builtins.list[ExposureResetInfo]:
        """Give `org` its budget back on `suite_id` (every instance set, or one); logged.

        `revealed` stays: a reset forgives the budget, not the evidence."""
        now = utcnow()
        done: builtins.list[ExposureResetInfo] = []
        with self._store.write() as session:
            query = select(HoldoutExposure).where(
                HoldoutExposure.org == org, HoldoutExposure.suite_id == suite_id
            )
            if instance_set is not None:
                query = query.where(HoldoutExposure.instance_set == instance_set)
            rows = list(session.scalars(query.with_for_update()))
            if not rows:
                raise NotFound(
                    f"{org} has spent no holdout budget on {suite_id}",
                    details={"org": org, "suite": suite_id},
                )
            for row in rows:
                if row.spent == 0:
                    continue
                entry = ExposureReset(
                    id="xr_" + ulid(),
                    org=org,
                    suite_id=suite_id,
                    instance_set=row.instance_set,
                    spent_before=row.spent,
                    reset_by=reset_by,
                    reason=reason,
                    at=now,
                )
                session.add(entry)
                # The units it forgives: an eval of them refunded later gives back
                # `revealed` only, never a unit of `spent` another eval took since.
                session.execute(
                    update(EvalExposure)
                    .where(
                        EvalExposure.org == org,
                        EvalExposure.suite_id == suite_id,
                        EvalExposure.instance_set == row.instance_set,
                        EvalExposure.refunded_at.is_(None),
                    )
                    .values(forgiven=True)
                    .execution_options(synchronize_session=False)
                )
                row.spent = 0
                row.updated_at = now
                done.append(_reset_info(entry))
        return done

    def resets(self, *, suite_id: str | None = None) -> builtins.list[ExposureResetInfo]:
        with self._store.read() as session:
            query = select(ExposureReset).order_by(ExposureReset.id)
            if suite_id is not None:
                query = query.where(ExposureReset.suite_id == suite_id)
            return [_reset_info(r) for r in session.scalars(query)]

    def units(self, eval_id: str) -> builtins.list[SpentUnit]:
        """The units the eval spent, refunded or not (none for a public-only eval)."""
        with self._store.read() as session:
            return [_unit(r) for r in session.scalars(_units_of(eval_id))]

    def refunds(self, *, suite_id: str, org: str | None = None) -> builtins.list[SpentUnit]:
        """The units given back on the suite (of one org, when given), oldest first."""
        with self._store.read() as session:
            query = select(EvalExposure).where(
                EvalExposure.suite_id == suite_id, EvalExposure.refunded_at.is_not(None)
            )
            if org is not None:
                query = query.where(EvalExposure.org == org)
            rows = session.scalars(query.order_by(EvalExposure.refunded_at, EvalExposure.eval_id))
            return [_unit(r) for r in rows]
