"""Planning an eval (docs/evals.md, "The run", step 1): which suites, cases and cells, at what
worst-case cost.

The plan names the agent version, each suite's version, digest and pinned
holdout epoch, and the repetitions; its digest identifies what the eval
measures. Resuming rebuilds the same cases from the plan: installed suite
versions are immutable (same id and version, same digest), a generated
holdout regenerates from the store's secret and the pinned epoch, and a
pool's subset is cut again from the same secret and epoch.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agents import Manifest, manifest_from_dict, request_id
from evals._integrity import Withheld, instance_set, withheld
from evals.suites import (
    Case,
    Suite,
    case_text,
    epoch_holdout,
    holdout_text_digest,
    load_installed,
    public_case_digest,
)
from records import CellSpec, ExposureSpend, Store
from schema.canonical import digest
from schema.errors import Refused, UsageError

__all__ = ["Plan", "PlannedSuite", "make_plan", "rebuild"]


def plan_digest(agent_id: str, version: str, suites: list[list[Any]]) -> str:
    """A plan's digest: of the agent version and each suite's [id, version, digest, holdout
    epoch, repetitions]; an imported report's is recomputed with it (evals._import)."""
    return digest({"agent": agent_id, "agent_version": version, "suites": suites})


@dataclass(frozen=True)
class PlannedSuite:
    suite: Suite
    epoch: int
    public: tuple[Case, ...]
    holdout: tuple[Case, ...]  # empty when withheld
    repetitions: int
    rotate_after_evals: int | None
    instance_set: str = ""  # the holdout instances graded (docs/integrity.md)
    instance_label: str = ""
    withheld: Withheld | None = None  # the org's exposure budget for them is spent

    @property
    def cells(self) -> int:
        return (len(self.public) + len(self.holdout)) * self.repetitions

    @property
    def worst_case_usd(self) -> Decimal:
        return self.suite.limits.max_cost_usd * self.cells

    @functools.cached_property
    def suite_digest(self) -> str:
        """The suite's digest (a hash over every case: computed once per plan)."""
        from evals.suites import suite_digests

        return suite_digests(self.suite).suite

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.suite.id,
            "version": self.suite.version,
            "capability": self.suite.capability,
            "suite_digest": self.suite_digest,
            "holdout_epoch": self.epoch,
            "cases": {"public": len(self.public), "holdout": len(self.holdout)},
            "instance_set": self.instance_set,
            "holdout_withheld": (None if self.withheld is None else self.withheld.to_json()),
            "repetitions": self.repetitions,
            "max_cost_usd": str(self.suite.limits.max_cost_usd),
            "timeout_s": str(self.suite.limits.timeout_s),
            "threshold": str(self.suite.threshold),
        }


@dataclass(frozen=True)
class Plan:
    agent: Manifest
    suites: tuple[PlannedSuite, ...]
    unverified: tuple[str, ...]
    full: bool
    concurrency: int
    retries: int
    pace_s: float

    @property
    def cells_total(self) -> int:
        return sum(s.cells for s in self.suites)

    @property
    def worst_case_usd(self) -> Decimal:
        return sum((s.worst_case_usd for s in self.suites), Decimal(0))

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent.id,
            "agent_version": self.agent.version,
            "full": self.full,
            "suites": [s.to_json() for s in self.suites],
            "unverified_capabilities": list(self.unverified),
            "claimed_capabilities": list(self.agent.capabilities),
            "concurrency": self.concurrency,
            "infrastructure_retries": self.retries,
            "pace_s": self.pace_s,
            "cells": self.cells_total,
            "worst_case_usd": str(self.worst_case_usd),
        }

    @property
    def digest(self) -> str:
        """What the eval measures: agent version, suite digests, epochs, repetitions."""
        return plan_digest(
            self.agent.id,
            self.agent.version,
            [
                [s.suite.id, s.suite.version, s.suite_digest, s.epoch, s.repetitions]
                for s in self.suites
            ],
        )

    def exposure(self) -> list[ExposureSpend]:
        """One unit of the org's budget, and one of the instance set's, for each suite whose
        holdout this plan grades."""
        return [
            ExposureSpend(
                org=self.agent.org,
                suite_id=planned.suite.id,
                instance_set=planned.instance_set,
                label=planned.instance_label,
                limit=planned.suite.limits.holdout_evals_per_epoch,
                instance_limit=planned.suite.limits.holdout_evals_per_instance_set,
            )
            for planned in self.suites
            if planned.holdout
        ]

    def cases(self) -> dict[tuple[str, str, str], Case]:
        """Every planned case by (suite id, split, case id)."""
        out: dict[tuple[str, str, str], Case] = {}
        for planned in self.suites:
            for case in (*planned.public, *planned.holdout):
                out[(planned.suite.id, case.split, case.id)] = case
        return out

    def cell_specs(self, secret: bytes) -> Iterator[CellSpec]:
        """The eval's cells in order, made one at a time: an eval of any size is written
        to the store in batches, never held whole (records._cell_sql.insert_cells)."""
        idx = 0
        for planned in self.suites:
            suite = planned.suite
            for case in (*planned.public, *planned.holdout):
                if case.split == "public":
                    case_digest = public_case_digest(case, suite)
                else:
                    case_digest = holdout_text_digest(secret, case_text(case, suite))
                tags = list(case.tags)
                for repetition in range(planned.repetitions):
                    yield CellSpec(
                        idx=idx,
                        suite_id=suite.id,
                        suite_version=suite.version,
                        split=case.split,
                        case_id=case.id,
                        case_digest=case_digest,
                        repetition=repetition,
                        tags=tags,
                        request_id=request_id(),
                    )
                    idx += 1


def _rotate_after(suite: Suite) -> int | None:
    rotation = suite.rotation
    return None if rotation is None else rotation.rotate_after_evals


def make_plan(
    store: Store,
    agent_id: str,
    *,
    home: Path,
    only_suites: list[str] | None = None,
    repetitions: int | None = None,
    concurrency: int = 16,
    retries: int = 2,
    pace_s: float = 0.0,
) -> Plan:
    """Resolve the agent's current version and, per claimed capability, the active suite."""
    if concurrency < 1 or (repetitions is not None and repetitions < 1) or retries < 0:
        raise UsageError("--concurrency and --repetitions are at least 1, retries at least 0")
    info = store.agents.get(agent_id)
    if info.disabled:
        raise Refused(f"{agent_id} is disabled", hint=f"holon agents enable {agent_id}")
    agent = manifest_from_dict(info.manifest, f"{agent_id} {info.version}")
    # Finishing signs the record with a key the secret key decrypts: without it
    # (or with another) the plan is refused before it is confirmed or paid for.
    store.keys.check_ready()
    secret = store.suites.holdout_secret()
    planned: list[PlannedSuite] = []
    unverified: list[str] = []
    for capability in agent.capabilities:
        installed = store.suites.for_capability(capability)
        if installed is None:
            unverified.append(capability)
            continue
        if only_suites and installed.id not in only_suites:
            continue
        suite = load_installed(store, installed.id, home, installed.version)
        rotation = suite.rotation
        if rotation is not None:
            installed = store.suites.rotate_if_due(
                installed.id,
                installed.version,
                rotation.rotate_after_days,
                after_evals=rotation.rotate_after_evals,
                min_hours=rotation.rotate_min_hours,
            )
        epoch = installed.holdout_epoch
        holdout = epoch_holdout(suite, secret, epoch)
        key, label = instance_set(suite, epoch, secret)
        blocked = None
        # A pool with no subset left has no holdout for the epoch, and says so.
        if holdout or suite.holdout_pool is not None:
            blocked = withheld(
                suite,
                org=agent.org,
                epoch=epoch,
                spent=store.exposure.spent(agent.org, suite.id, key),
                instance_revealed=store.exposure.instance_revealed(suite.id, key),
                epoch_started_at=installed.epoch_started_at,
                evals_in_epoch=installed.evals_in_epoch,
            )
        planned.append(
            PlannedSuite(
                suite=suite,
                epoch=epoch,
                public=suite.public,
                holdout=() if blocked else holdout,
                repetitions=repetitions or suite.repetitions,
                rotate_after_evals=_rotate_after(suite),
                instance_set=key,
                instance_label=label,
                withheld=blocked,
            )
        )
    if only_suites:
        known = {p.suite.id for p in planned}
        missing = [s for s in only_suites if s not in known]
        if missing:
            raise UsageError(
                f"--suite {missing[0]}: no active suite of {agent_id}'s capabilities has that id"
            )
    if not planned:
        raise Refused(
            f"nothing to evaluate: no installed suite certifies any capability of {agent_id} "
            f"({', '.join(agent.capabilities)})",
            hint="install one with `holon suites add PATH`",
        )
    return Plan(
        agent=agent,
        suites=tuple(planned),
        unverified=tuple(unverified),
        # A withheld holdout narrows the eval: it scores and reports, writes no record.
        full=not only_suites and repetitions is None and not any(p.withheld for p in planned),
        concurrency=concurrency,
        retries=retries,
        pace_s=pace_s,
    )


def rebuild(store: Store, plan_json: dict[str, Any], *, home: Path) -> Plan:
    """The plan of a started eval, from its stored JSON; refuses if anything it names changed."""
    agent_id = plan_json["agent"]
    info = store.agents.get(agent_id)
    if info.version != plan_json["agent_version"]:
        raise Refused(
            f"{agent_id} is now at version {info.version}; this eval measures "
            f"{plan_json['agent_version']}",
            hint="start a new eval: `holon eval " + agent_id + " --yes`",
        )
    agent = manifest_from_dict(info.manifest, f"{agent_id} {info.version}")
    secret = store.suites.holdout_secret()
    planned = []
    from evals.suites import suite_digests

    for entry in plan_json["suites"]:
        suite = load_installed(store, entry["id"], home, entry["version"])
        if suite_digests(suite).suite != entry["suite_digest"]:
            raise Refused(
                f"suite {entry['id']} v{entry['version']} changed since the eval started",
                details={"suite": entry["id"]},
            )
        epoch = entry["holdout_epoch"]
        key, label = instance_set(suite, epoch, secret)
        # A holdout the plan withheld stays withheld: the eval was started without it.
        graded = entry["cases"]["holdout"] > 0
        planned.append(
            PlannedSuite(
                suite=suite,
                epoch=epoch,
                public=suite.public,
                holdout=epoch_holdout(suite, secret, epoch) if graded else (),
                repetitions=entry["repetitions"],
                rotate_after_evals=_rotate_after(suite),
                instance_set=key,
                instance_label=label,
            )
        )
    return Plan(
        agent=agent,
        suites=tuple(planned),
        unverified=tuple(plan_json["unverified_capabilities"]),
        full=plan_json["full"],
        concurrency=plan_json["concurrency"],
        retries=plan_json["infrastructure_retries"],
        pace_s=float(plan_json.get("pace_s", 0)),
    )
