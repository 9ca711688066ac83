"""The holdout exposure tables: every org's and each org's reveals of an instance set, the
resets of an org's budget, and the units each eval spent (records._exposure's).

Beside records._models, whose `Base` they share, so that neither passes ~600 lines;
importing `records` (as anything importing a module of it does) declares them.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from records._models import Base

__all__ = ["EvalExposure", "ExposureReset", "HoldoutExposure", "InstanceSetExposure"]


class HoldoutExposure(Base):
    """How many holdout-revealing evals an org had on one instance set of a suite's holdout.

    `spent` counts against the suite's `limits.holdout_evals_per_epoch` and an
    operator may reset it; `revealed` never goes down (the lower-bound gate's
    k counts it). `instance_set` is a digest naming the set of holdout cases
    (docs/integrity.md); `label` says which to an operator.
    """

    __tablename__ = "holdout_exposure"

    org: Mapped[str] = mapped_column(String(39), primary_key=True)
    suite_id: Mapped[str] = mapped_column(String(63), primary_key=True)
    instance_set: Mapped[str] = mapped_column(String(64), primary_key=True)
    label: Mapped[str] = mapped_column(String(120))
    spent: Mapped[int] = mapped_column(Integer)
    revealed: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime]


class InstanceSetExposure(Base):
    """How many holdout-revealing evals one instance set of a suite's holdout had, every
    org's together (docs/integrity.md, "Exposure is the holdout's").

    Every org's eval teaches whoever holds those orgs the same cases, so this
    count, not an org's, is what the instance set's budget
    (`limits.holdout_evals_per_instance_set`) limits; it never goes down. Its
    sum over a suite's instance sets is the lower-bound gate's k.
    """

    __tablename__ = "instance_set_exposure"

    suite_id: Mapped[str] = mapped_column(String(63), primary_key=True)
    instance_set: Mapped[str] = mapped_column(String(64), primary_key=True)
    label: Mapped[str] = mapped_column(String(120))
    revealed: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime]


class ExposureReset(Base):
    """An operator's reset of an exposure budget: kept, never deleted."""

    __tablename__ = "exposure_resets"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # xr_ + ULID
    org: Mapped[str] = mapped_column(String(39))
    suite_id: Mapped[str] = mapped_column(String(63))
    instance_set: Mapped[str] = mapped_column(String(64))
    spent_before: Mapped[int] = mapped_column(Integer)
    reset_by: Mapped[str] = mapped_column(String(120))
    reason: Mapped[str] = mapped_column(String(500))
    at: Mapped[datetime]


class EvalExposure(Base):
    """One unit of holdout exposure an eval spent on a suite, kept so that it can be given
    back: an eval cancelled before any holdout cell of the suite was claimed revealed
    nothing of it (docs/integrity.md, "The exposure budget").

    `forgiven`: an operator's reset gave the org its budget back since, so a refund
    takes nothing more from the org's `spent` (only from the `revealed` counts).
    `refunded_at`: when the unit was given back, once; None while it stays spent.
    """

    __tablename__ = "eval_exposure"
    # A reset finds the units it forgives, `holon suites exposure` a suite's refunds.
    __table_args__ = (Index("ix_eval_exposure_spend", "suite_id", "instance_set", "org"),)

    eval_id: Mapped[str] = mapped_column(ForeignKey("evals.id"), primary_key=True)
    suite_id: Mapped[str] = mapped_column(String(63), primary_key=True)
    instance_set: Mapped[str] = mapped_column(String(64), primary_key=True)
    org: Mapped[str] = mapped_column(String(39))
    forgiven: Mapped[bool] = mapped_column(Boolean, default=False)
    refunded_at: Mapped[datetime | None] = mapped_column(nullable=True)
