"""Installed suites: versions side by side, one active, the holdout secret and epochs.

Suites arrive already loaded and validated (evals.suites); this layer keeps
their files and digests and never imports evals.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from records._models import StoreSecret, SuiteRow, SuiteVersionRow
from records._registry import Registry
from records._rows import from_row, to_row
from records._types import utc_text, utc_text_or_none, utcnow
from schema.errors import Conflict, NotFound

__all__ = ["InstalledSuite", "SuiteInstall", "SuiteRegistry", "count_due", "new_epoch"]

HOLDOUT_SECRET = "holdout"

InstallStatus = Literal["installed", "unchanged"]


@dataclass(frozen=True)
class SuiteInstall:
    """What the caller installs: a validated suite's identity, counts and files."""

    id: str
    version: int
    capability: str
    title: str
    suite_digest: str
    digests: dict[str, str]
    files: dict[str, str]
    public_cases: int
    holdout_cases: int
    holdout_kind: str
    grace_days: int = 14
    holdout_pool_cases: int | None = None  # a pool's size; holdout_cases is its subset
    holdout_pool_epochs: int | None = None  # the epochs the pool holds


@dataclass(frozen=True)
class InstalledSuite:
    id: str
    version: int
    capability: str
    title: str
    suite_digest: str
    digests: dict[str, Any]
    public_cases: int
    holdout_cases: int
    holdout_kind: str
    grace_days: int
    holdout_epoch: int
    evals_in_epoch: int
    epoch_started_at: datetime
    installed_at: datetime
    activated_at: datetime | None
    active: bool
    holdout_pool_cases: int | None = None  # a pool's size; holdout_cases is its subset
    holdout_pool_epochs: int | None = None  # the epochs the pool holds

    def pool_json(self) -> dict[str, int] | None:
        """A pool's size, the epochs it holds and how many of them are left, the current
        one included; None: the holdout is no pool."""
        if self.holdout_pool_cases is None or self.holdout_pool_epochs is None:
            return None
        return {
            "cases": self.holdout_pool_cases,
            "epochs": self.holdout_pool_epochs,
            "remaining": max(0, self.holdout_pool_epochs - self.holdout_epoch),
        }

    def to_json(self, versions: list[InstalledSuite] | None = None) -> dict[str, Any]:
        """Schema `entities/suite`: what anyone may see of an installed suite, counts and
        digests, never the holdout itself (its epochs, seeds and case ids are the
        operator's, docs/integrity.md). Its digests are the operator's view; an author reads them
        keyed (the gateway's `author_suite_view`)."""
        view: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "capability": self.capability,
            "title": self.title,
            "active": self.active,
            "suite_digest": self.suite_digest,
            "digests": self.digests,
            "public": {"cases": self.public_cases},
            "holdout": {"cases": self.holdout_cases, "kind": self.holdout_kind},
            "installed_at": utc_text(self.installed_at),
            "activated_at": utc_text_or_none(self.activated_at),
        }
        pool = self.pool_json()
        if pool is not None:
            view["holdout"]["pool"] = pool
        if versions is not None:
            view["versions"] = [
                {
                    "version": v.version,
                    "suite_digest": v.suite_digest,
                    "active": v.active,
                    "installed_at": utc_text(v.installed_at),
                }
                for v in versions
            ]
        return view


def _installed(row: SuiteVersionRow, active_version: int | None) -> InstalledSuite:
    return from_row(
        InstalledSuite,
        row,
        id=row.suite_id,
        epoch_started_at=row.epoch_started_at or row.installed_at,
        active=row.version == active_version,
    )


def count_due(
    evals: int, after_evals: int | None, started: datetime | None, min_hours: int, now: datetime
) -> bool:
    """Whether an epoch ends by count: `after_evals` reached, and the epoch at least
    `min_hours` old, so that renewing an org's holdout budget takes time, not just evals."""
    if after_evals is None or evals < after_evals:
        return False
    return started is None or now >= started + timedelta(hours=min_hours)


def new_epoch(row: SuiteVersionRow, now: datetime) -> None:
    """A new holdout epoch: new instances, so every org's exposure budget renews."""
    row.holdout_epoch += 1
    row.evals_in_epoch = 0
    row.epoch_started_at = now


class SuiteRegistry(Registry):
    def install(
        self, suite: SuiteInstall, *, activate: bool = False
    ) -> tuple[InstallStatus, InstalledSuite]:
        """Install a version; the first version of a suite is active at once.

        Re-installing an (id, version) with the same digest changes nothing;
        with another digest it is refused: a version names fixed content.
        """
        now = utcnow()
        try:
            with self._store.write() as session:
                row = session.get(SuiteRow, suite.id, with_for_update=True)
                if row is None:
                    row = SuiteRow(id=suite.id, active_version=None, created_at=now, updated_at=now)
                    session.add(row)
                    session.flush()
                existing = session.get(SuiteVersionRow, (suite.id, suite.version))
                status: InstallStatus = "unchanged"
                if existing is not None:
                    if existing.suite_digest != suite.suite_digest:
                        raise Conflict(
                            f"{suite.id} version {suite.version} is installed with another digest "
                            f"({existing.suite_digest[:12]}…, this one {suite.suite_digest[:12]}…)",
                            hint="any change of cases, checks or limits bumps the suite's version",
                            details={
                                "suite": suite.id,
                                "version": suite.version,
                                "installed_digest": existing.suite_digest,
                                "digest": suite.suite_digest,
                            },
                        )
                    version_row = existing
                else:
                    status = "installed"
                    version_row = to_row(
                        SuiteVersionRow,
                        suite,
                        suite_id=suite.id,
                        holdout_epoch=0,
                        evals_in_epoch=0,
                        epoch_started_at=now,
                        installed_at=now,
                        activated_at=None,
                    )
                    session.add(version_row)
                if row.active_version is None or activate:
                    self._activate(session, row, version_row, now)
                session.flush()
                return status, _installed(version_row, row.active_version)
        except IntegrityError:
            # Another process installed the same suite at the same moment: its
            # row is there now, so installing again compares digests.
            return self.install(suite, activate=activate)

    @staticmethod
    def _activate(session: Session, row: SuiteRow, version: SuiteVersionRow, now: datetime) -> None:
        if row.active_version != version.version:
            row.active_version = version.version
            row.updated_at = now
            version.activated_at = now

    def activate(self, suite_id: str, version: int) -> InstalledSuite:
        with self._store.write() as session:
            row = self._suite(session, suite_id)
            version_row = self._version(session, suite_id, version)
            self._activate(session, row, version_row, utcnow())
            return _installed(version_row, row.active_version)

    # -- reads --------------------------------------------------------------

    def get(self, suite_id: str, version: int | None = None) -> InstalledSuite:
        """The active version, or the one asked for."""
        with self._store.read() as session:
            row, version_row = self._chosen(session, suite_id, version)
            return _installed(version_row, row.active_version)

    def files(self, suite_id: str, version: int) -> dict[str, str]:
        """Every file of the version as installed (the holdout included: operator only)."""
        with self._store.read() as session:
            files: dict[str, str] = self._version(session, suite_id, version).files
            return files

    def versions(self, suite_id: str) -> list[InstalledSuite]:
        with self._store.read() as session:
            row = self._suite(session, suite_id)
            rows = session.scalars(
                select(SuiteVersionRow)
                .where(SuiteVersionRow.suite_id == suite_id)
                .order_by(SuiteVersionRow.version)
            )
            return [_installed(r, row.active_version) for r in rows]

    def list(self) -> list[InstalledSuite]:
        """The active version of every suite, by id."""
        with self._store.read() as session:
            query = (
                select(SuiteVersionRow, SuiteRow.active_version)
                .join(SuiteRow, SuiteRow.id == SuiteVersionRow.suite_id)
                .where(SuiteVersionRow.version == SuiteRow.active_version)
                .order_by(SuiteVersionRow.suite_id)
            )
            return [_installed(r, active) for r, active in session.execute(query)]

    def for_capability(self, capability: str) -> InstalledSuite | None:
        """The active suite certifying `capability` (one suite per capability)."""
        for suite in self.list():
            if suite.capability == capability:
                return suite
        return None

    def certified_capabilities(self) -> set[str]:
        return {s.capability for s in self.list()}

    # -- holdout ------------------------------------------------------------

    def holdout_secret(self) -> bytes:
        """The store's holdout secret, created on first use (32 random bytes)."""
        with self._store.read() as session:
            row = session.get(StoreSecret, HOLDOUT_SECRET)
            if row is not None:
                return bytes(row.value)
        try:
            with self._store.write() as session:
                if session.get(StoreSecret, HOLDOUT_SECRET) is None:
                    session.add(
                        StoreSecret(
                            name=HOLDOUT_SECRET, value=secrets.token_bytes(32), created_at=utcnow()
                        )
                    )
        except IntegrityError:
            pass  # created by another process meanwhile: read theirs
        with self._store.read() as session:
            row = session.get(StoreSecret, HOLDOUT_SECRET)
            assert row is not None
            return bytes(row.value)

    def rotate_holdout(self, suite_id: str, version: int | None = None) -> InstalledSuite:
        """Start a new holdout epoch: whatever an agent logged of the last is worthless."""
        with self._store.write() as session:
            row, version_row = self._chosen(session, suite_id, version)
            new_epoch(version_row, utcnow())
            return _installed(version_row, row.active_version)

    def rotate_if_due(
        self,
        suite_id: str,
        version: int,
        after_days: int,
        *,
        after_evals: int | None = None,
        min_hours: int = 24,
        now: datetime | None = None,
    ) -> InstalledSuite:
        """Start a new epoch when the current one is `after_days` old, or has had
        `after_evals` evals and is `min_hours` old (a count reached sooner waits for it);
        the version as it is afterwards."""
        now = now or utcnow()
        current = self.get(suite_id, version)
        by_time = now >= current.epoch_started_at + timedelta(days=after_days)
        by_count = count_due(
            current.evals_in_epoch, after_evals, current.epoch_started_at, min_hours, now
        )
        if not (by_time or by_count):
            return current
        with self._store.write() as session:
            row = self._suite(session, suite_id)
            version_row = session.get(SuiteVersionRow, (suite_id, version), with_for_update=True)
            if version_row is None:
                raise NotFound(f"suite {suite_id!r} has no version {version} installed")
            # Another process may have rotated it meanwhile: rotate only once.
            if version_row.holdout_epoch == current.holdout_epoch:
                new_epoch(version_row, now)
            return _installed(version_row, row.active_version)

    @staticmethod
    def _suite(session: Session, suite_id: str) -> SuiteRow:
        row = session.get(SuiteRow, suite_id)
        if row is None:
            raise NotFound(f"no suite {suite_id!r} is installed", details={"suite": suite_id})
        return row

    @classmethod
    def _chosen(
        cls, session: Session, suite_id: str, version: int | None
    ) -> tuple[SuiteRow, SuiteVersionRow]:
        """The suite and the version asked for, or its active one."""
        row = cls._suite(session, suite_id)
        chosen = version if version is not None else row.active_version
        if chosen is None:
            raise NotFound(f"suite {suite_id!r} has no active version")
        return row, cls._version(session, suite_id, chosen)

    @staticmethod
    def _version(session: Session, suite_id: str, version: int) -> SuiteVersionRow:
        row = session.get(SuiteVersionRow, (suite_id, version))
        if row is None:
            raise NotFound(
                f"suite {suite_id!r} has no version {version} installed",
                details={"suite": suite_id, "version": version},
            )
        return row
