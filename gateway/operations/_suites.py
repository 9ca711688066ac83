"""The store's own operations on suites: install, activate, rotate the holdout, the holdout
budgets (see _declare.py).

They have no route: the CLI runs them on the store as operator (`holon suites add` reads a
directory on this machine, and the others are the store operator's; docs/gateway.md's
CLI table), and through a gateway they are refused by name. Declared here, they get their
flags and their output (`--json` or the rendering) from the table like any other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from gateway._roles import OPERATOR
from gateway.operations._declare import (
    Cli,
    Column,
    Fields,
    Lines,
    Operation,
    Schema,
    Sections,
    Table,
    entity,
    key,
    param,
    view,
)
from gateway.operations._narrow import doer
from gateway.operations._registry import SUITE_FIELDS
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService

log = logging.getLogger(__name__)
R = TypeVar("R")


@dataclass(frozen=True)
class SuiteId:
    """An installed suite, by its id: what each operation on one names first."""

    suite: str = param(required=True, help="an installed suite's id", where="path", metavar="ID")


def _on_store(
    name: str,
    request: type[R],
    run: Callable[[StoreService, R], JSONObject],
    response: Schema,
    cli: Cli,
) -> Operation[R]:
    """One of the store's own operations: no route, the operator's, run by its command,
    whose help says what it does (the summary docs/operations.md shows)."""
    return Operation(
        name=name,
        method="",
        path="",
        roles=OPERATOR,
        request=request,
        summary=cli.help,
        run=run,
        response=response,
        cli=cli,
    )


# -- suites.add ----------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteSource:
    path: str = param(required=True, help="a suite directory", where="path", metavar="PATH")
    activate: bool = param(False, help="make this version current")


def _add(service: StoreService, asked: SuiteSource) -> JSONObject:
    from evals.suites import TrustStore

    return installed_view(
        service, asked.path, activate=asked.activate, trusted=TrustStore(service.home).trusted
    )


def installed_view(
    service: StoreService, path: str | Path, *, activate: bool, trusted: Callable[[str], bool]
) -> JSONObject:
    """Validate and install the suite folder at `path`, with `trusted` saying which code
    files' sha256 may run (the CLI's: HOLON_HOME's trust list; an upload's: the digests
    its uploader confirmed, gateway/operations/_suite_upload.py)."""
    from evals import recut_warning, rotation_warning
    from evals.suites import install_suite, load_installed
    from gateway.service import suite_view

    status, installed = install_suite(service.store, Path(path), activate=activate, trusted=trusted)
    store, home = service.store, service.home
    suite = load_installed(store, installed.id, home, installed.version)
    versions = store.suites.versions(installed.id)
    # A pool is compared with the holdouts of the suite's other versions (loaded only then).
    earlier = [
        load_installed(store, installed.id, home, v.version)
        for v in versions
        if suite.holdout_pool is not None and v.version != installed.version
    ]
    warnings = [rotation_warning(suite), recut_warning(suite, earlier)]
    return {
        "status": status,
        "suite": suite_view(installed, versions),
        "warnings": [w for w in warnings if w is not None],
    }


def _installed(view: JSONObject) -> list[str]:
    suite = view["suite"]
    word = "installed" if view["status"] == "installed" else "already installed, unchanged:"
    return [f"{word} {suite['id']} v{suite['version']}" + (" (active)" if suite["active"] else "")]


SUITES_ADD = _on_store(
    "suites.add",
    SuiteSource,
    _add,
    view("suite-installation"),
    Cli(
        help="validate a suite directory and install it into the store",
        description="Validate the suite at PATH and install it. Versions install side by side; "
        "the first version of a suite is active at once, a later one with --activate or "
        "`holon suites activate`. Re-installing a version with other content is refused.",
        render=Sections(
            (
                Lines(_installed, warnings=lambda view: [w["message"] for w in view["warnings"]]),
                Fields(SUITE_FIELDS.fields, of="suite", extra=SUITE_FIELDS.extra),
            ),
            gap=False,
        ),
    ),
)


# -- suites.activate -------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteVersion(SuiteId):
    version: int = param(
        required=True, help="an installed version", where="path", metavar="VERSION", cli_type=int
    )


def _activate(service: StoreService, asked: SuiteVersion) -> JSONObject:
    service.store.suites.activate(asked.suite, asked.version)
    return service.get_suite(asked.suite, asked.version)


SUITES_ACTIVATE = _on_store(
    "suites.activate",
    SuiteVersion,
    _activate,
    entity("suite"),
    Cli(
        help="make a version current",
        render=Lines(lambda v: [f"{v['id']} v{v['version']} is active"]),
    ),
)


# -- suites.rotate_holdout -------------------------------------------------------------


def _rotate(service: StoreService, asked: SuiteId) -> JSONObject:
    installed = service.store.suites.rotate_holdout(asked.suite)
    return {"suite": installed.id, "version": installed.version, "epoch": installed.holdout_epoch}


SUITES_ROTATE_HOLDOUT = _on_store(
    "suites.rotate_holdout",
    SuiteId,
    _rotate,
    view("holdout-rotation"),
    Cli(
        help="start a new holdout epoch: a generated holdout's new instances, a pool's next subset",
        render=Lines(lambda v: [f"{v['suite']} v{v['version']}: a new holdout epoch begins"]),
    ),
)


# -- suites.exposure, suites.exposure_reset ----------------------------------------------


@dataclass(frozen=True)
class ExposureQuery(SuiteId):
    org: str | None = param(help="one org only")


def _exposure(service: StoreService, asked: ExposureQuery) -> JSONObject:
    """Each org's holdout budget on the suite per instance set, every org's together per
    instance set, and the resets."""
    from evals.suites import load_installed
    from gateway.service import reset_view, timestamp

    suite, org = asked.suite, asked.org
    service.store.suites.get(suite)  # NotFound for an unknown suite
    limits = load_installed(service.store, suite, service.home).limits
    return {
        "suite": suite,
        "limit": limits.holdout_evals_per_epoch,
        "instance_limit": limits.holdout_evals_per_instance_set,
        "instance_sets": [
            {
                "instance_set": i.instance_set,
                "label": i.label,
                "revealed": i.revealed,
                "updated_at": timestamp(i.updated_at),
            }
            for i in service.store.exposure.instance_sets(suite)
        ],
        "items": [
            {
                "org": e.org,
                "instance_set": e.instance_set,
                "label": e.label,
                "spent": e.spent,
                "revealed": e.revealed,
                "updated_at": timestamp(e.updated_at),
            }
            for e in service.store.exposure.list(suite_id=suite, org=org)
        ],
        "resets": [
            reset_view(r)
            for r in service.store.exposure.resets(suite_id=suite)
            if org is None or r.org == org
        ],
        "refunds": [
            {
                "eval": unit.eval_id,
                "org": unit.org,
                "instance_set": unit.instance_set,
                "refunded_at": timestamp(refunded_at),
            }
            for unit in service.store.exposure.refunds(suite_id=suite, org=org)
            if (refunded_at := unit.refunded_at) is not None  # every refund has its time
        ],
    }


SUITES_EXPOSURE = _on_store(
    "suites.exposure",
    ExposureQuery,
    _exposure,
    view("exposure"),
    Cli(
        help="each org's holdout budget on a suite: evals spent per instance set, resets, refunds",
        description="Each eval that grades a suite's holdout spends one unit of its agent's "
        "org's budget for that set of holdout instances, and one of the set's own, every "
        "org's together (docs/integrity.md). Lists each set's reveals by every org (never "
        "reset), what each org spent, what it revealed in all (never reset), every reset, "
        "and every eval refunded (cancelled before any holdout case was sent).",
        render=Sections(
            (
                Lines(
                    lambda v: [
                        f"{v['suite']}: {v['limit']} holdout-revealing evals per org per set, "
                        f"{v['instance_limit']} per set by every org together",
                        *(
                            f"{i['label']}: revealed {i['revealed']} of {v['instance_limit']} "
                            "by every org"
                            for i in v["instance_sets"]
                        ),
                    ]
                ),
                Table(
                    (
                        Column("org", key("org")),
                        Column("instance set", key("label")),
                        Column("spent", key("spent")),
                        Column("revealed", key("revealed")),
                        Column("updated", key("updated_at")),
                    )
                ),
                Lines(
                    lambda v: [
                        f"reset {r['id']}: {r['org']} from {r['spent_before']} by "
                        f"{r['reset_by']} at {r['at']}: {r['reason']}"
                        for r in v["resets"]
                    ]
                ),
                Lines(
                    lambda v: [
                        f"refunded {r['eval']}: {r['org']}, cancelled before any holdout "
                        f"case was sent, at {r['refunded_at']}"
                        for r in v["refunds"]
                    ]
                ),
            ),
            gap=False,
        ),
    ),
)


@dataclass(frozen=True)
class ExposureReset(SuiteId):
    org: str = param(required=True, help="the org whose budget is reset")
    reason: str = param(required=True, help="why (kept with the reset)")
    by: str | None = param(help="who resets it (on the store: cli:LOGIN)", where="bearer", flag="")


def _reset(service: StoreService, asked: ExposureReset) -> JSONObject:
    """Give the org its holdout budget on the suite back (logged and kept)."""
    from gateway.service import reset_view

    suite, org = asked.suite, asked.org
    by = doer(asked.by)
    done = service.store.exposure.reset(org=org, suite_id=suite, reset_by=by, reason=asked.reason)
    for entry in done:
        log.warning(
            "holdout budget of %s on %s (%s) reset by %s from %d: %s",
            org,
            suite,
            entry.instance_set[:12],
            by,
            entry.spent_before,
            asked.reason,
        )
    return {"suite": suite, "org": org, "resets": [reset_view(r) for r in done]}


SUITES_EXPOSURE_RESET = _on_store(
    "suites.exposure_reset",
    ExposureReset,
    _reset,
    view("exposure-resets"),
    Cli(
        help="give an org its holdout budget on a suite back (logged and kept)",
        description="Reset ORG's spent holdout budget on a suite to 0 on every instance set. "
        "The lower-bound gate still counts every eval the org had (a reset forgives the "
        "budget, not the evidence).",
        render=Lines(
            lambda v: [
                f"{v['org']}'s holdout budget on {v['suite']} is reset "
                f"({len(v['resets'])} instance set(s))"
            ]
        ),
    ),
)

__all__ = [
    "SUITES_ACTIVATE",
    "SUITES_ADD",
    "SUITES_EXPOSURE",
    "SUITES_EXPOSURE_RESET",
    "SUITES_ROTATE_HOLDOUT",
    "ExposureQuery",
    "ExposureReset",
    "SuiteId",
    "SuiteSource",
    "SuiteVersion",
    "installed_view",
]
