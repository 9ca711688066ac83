"""The agent's record: an agent version's standing, as a typed entity.

What a complete full-plan eval wrote (evals._finish: the eval score and its
interval, the weakest suite, each suite's grades and overfit verdict, the
warnings, the holdout epochs it graded, its certificate) as the store keeps it
in `agent_records.record`, and what a read adds: staleness (records._current)
and, when asked, the lower-bound gate's k per suite (`holdout_evals`). One
`to_json` writes it as the API, the CLI and the console show it
(schema/entities/record.json); `from_json` reads what the store keeps, and a
stored record reads back to the very JSON it was written as.

Numbers are what the record writes: Decimals rounded for display (4 places;
p-values to 4 significant digits), never floats, and int counts. A number
stored as an integer (a threshold of 1) reads as its Decimal, which is written
as the same text.

Records imported from other issuers' certificates are this type too: a
certificate carries the record as an author may read it (no holdout epochs,
each holdout split its rate and interval: what the author's view of a local
record is too), and a mandate reads both alike. `issuer` labels one; what
else its certificate says (its identity, its expiry, each suite's keyed digest
and repetitions) stays with the certificate (records._certificate_registry).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal, TypeVar, get_args

from records._types import utc_text

__all__ = [
    "OVERFIT_VERDICT_CODES",
    "AgentRecord",
    "OverfitVerdictCode",
    "RecordCanaries",
    "RecordOverfit",
    "RecordSplit",
    "RecordSuite",
    "RecordWarning",
]

# A suite's overfit verdict (evals._overfit decides it; docs/evals.md, "Scores").
OverfitVerdictCode = Literal["none", "inconclusive", "warn"]
OVERFIT_VERDICT_CODES: tuple[OverfitVerdictCode, ...] = get_args(OverfitVerdictCode)

Interval = tuple[Decimal, Decimal]
T = TypeVar("T")


# -- reading stored JSON: each value checked, and named by its path when it is not one --


def _unchecked(value: Any, where: str) -> Literal["unchecked"]:
    if value != "unchecked":
        raise ValueError(f"{where}: expected 'unchecked', got {value!r}")
    return "unchecked"


def _need(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise ValueError(f"{where}: no {key!r}")
    return data[key]


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: an object, not {type(value).__name__}")
    return value


def _keys(data: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    extra = sorted(set(data) - known)
    if extra:
        raise ValueError(f"{where}: unknown keys {', '.join(extra)}")


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: a string, not {type(value).__name__}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where}: a boolean, not {type(value).__name__}")
    return value


def _int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{where}: an integer, not {type(value).__name__}")
    return value


def _number(value: Any, where: str) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    # A float is no exact number: holon reads JSON numbers as ints and Decimals.
    raise ValueError(f"{where}: an exact number (int or Decimal), not {type(value).__name__}")


def _number_or_none(value: Any, where: str) -> Decimal | None:
    return None if value is None else _number(value, where)


def _interval(value: Any, where: str) -> Interval:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"{where}: a [low, high] pair")
    return _number(value[0], f"{where}[0]"), _number(value[1], f"{where}[1]")


def _interval_or_none(value: Any, where: str) -> Interval | None:
    return None if value is None else _interval(value, where)


def _str_or_none(value: Any, where: str) -> str | None:
    return None if value is None else _str(value, where)


def _array(value: Any, where: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where}: an array, not {type(value).__name__}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    return tuple(_str(v, f"{where}[{i}]") for i, v in enumerate(_array(value, where)))


def _counts(value: Any, where: str) -> dict[str, int]:
    return {str(k): _int(v, f"{where}.{k}") for k, v in _object(value, where).items()}


def _time(value: Any, where: str) -> datetime:
    text = _str(value, where)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{where}: not a date-time: {text[:40]!r}") from None
    # A time with no offset is UTC, as every time holon writes is.
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _fields(part: type) -> frozenset[str]:
    """The JSON keys of a part whose keys are its fields' names."""
    return frozenset(f.name for f in dataclasses.fields(part))


# -- the record's parts --------------------------------------------------------------------


@dataclass(frozen=True)
class RecordSplit:
    """One split of a suite as the record grades it (evals._scores.SplitScore): x passed of
    n cases, the rate x / n and its Wilson interval, and the stability when some case ran
    twice (never in an author's view of a holdout split)."""

    passed: Decimal  # x = the sum of case scores: whole, or to 4 places
    total: int  # n, the cases with a recorded run
    rate: Decimal
    ci95: Interval
    stability: Decimal | None = None

    @classmethod
    def from_json(cls, data: Any, where: str, *, strict: bool = True) -> RecordSplit:
        data = _object(data, where)
        if strict:
            _keys(data, _fields(cls), where)
        return cls(
            passed=_number(_need(data, "passed", where), f"{where}.passed"),
            total=_int(_need(data, "total", where), f"{where}.total"),
            rate=_number(_need(data, "rate", where), f"{where}.rate"),
            ci95=_interval(_need(data, "ci95", where), f"{where}.ci95"),
            stability=_number_or_none(data.get("stability"), f"{where}.stability"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "passed": self.passed,
            "total": self.total,
            "rate": self.rate,
            "ci95": list(self.ci95),
        }
        if self.stability is not None:
            out["stability"] = self.stability
        return out


@dataclass(frozen=True)
class RecordOverfit:
    """A suite's overfit verdict as the record keeps it (evals._overfit.OverfitVerdict), with
    the numbers that made it; None where a split is empty and nothing was compared."""

    verdict: OverfitVerdictCode
    gap: Decimal | None
    p_value: Decimal | None  # the one-sided Fisher p
    p_holm: Decimal | None  # Holm-adjusted over the eval's suites
    alpha: Decimal | None  # the step threshold this suite's p met
    tests: int  # Holm's family: the eval's suites with both splits
    delta: Decimal
    newcombe_ci95: Interval | None
    public_rate: Decimal | None
    public_total: int
    holdout_rate: Decimal | None
    holdout_total: int

    _KEYS = frozenset(
        {
            "verdict",
            "gap",
            "p_value",
            "p_holm",
            "alpha",
            "tests",
            "delta",
            "newcombe_ci95",
            "public",
            "holdout",
        }
    )
    _SIDE = frozenset({"rate", "total"})

    @classmethod
    def from_json(cls, data: Any, where: str, *, strict: bool = True) -> RecordOverfit:
        data = _object(data, where)
        verdict = _need(data, "verdict", where)
        if verdict not in OVERFIT_VERDICT_CODES:
            raise ValueError(f"{where}.verdict: one of {', '.join(OVERFIT_VERDICT_CODES)}")
        sides = {}
        for name in ("public", "holdout"):
            side = _object(_need(data, name, where), f"{where}.{name}")
            if strict:
                _keys(side, cls._SIDE, f"{where}.{name}")
            sides[name] = (
                _number_or_none(_need(side, "rate", f"{where}.{name}"), f"{where}.{name}.rate"),
                _int(_need(side, "total", f"{where}.{name}"), f"{where}.{name}.total"),
            )
        if strict:
            _keys(data, cls._KEYS, where)
        return cls(
            verdict=verdict,
            gap=_number_or_none(_need(data, "gap", where), f"{where}.gap"),
            p_value=_number_or_none(_need(data, "p_value", where), f"{where}.p_value"),
            p_holm=_number_or_none(_need(data, "p_holm", where), f"{where}.p_holm"),
            alpha=_number_or_none(_need(data, "alpha", where), f"{where}.alpha"),
            tests=_int(_need(data, "tests", where), f"{where}.tests"),
            delta=_number(_need(data, "delta", where), f"{where}.delta"),
            newcombe_ci95=_interval_or_none(
                _need(data, "newcombe_ci95", where), f"{where}.newcombe_ci95"
            ),
            public_rate=sides["public"][0],
            public_total=sides["public"][1],
            holdout_rate=sides["holdout"][0],
            holdout_total=sides["holdout"][1],
        )

    def to_json(self) -> dict[str, Any]:
        """Verdict, gap and p_value first (docs/evals.md), as evals._overfit writes it."""
        return {
            "verdict": self.verdict,
            "gap": self.gap,
            "p_value": self.p_value,
            "p_holm": self.p_holm,
            "alpha": self.alpha,
            "tests": self.tests,
            "delta": self.delta,
            "newcombe_ci95": None if self.newcombe_ci95 is None else list(self.newcombe_ci95),
            "public": {"rate": self.public_rate, "total": self.public_total},
            "holdout": {"rate": self.holdout_rate, "total": self.holdout_total},
        }


@dataclass(frozen=True)
class RecordSuite:
    """One suite as the record grades it (evals._scores.SuiteScore): its version and
    capability, the score (the lower split rate; None when both splits are empty), the
    threshold and whether the score meets it, each split, and the overfit verdict."""

    version: int
    capability: str
    score: Decimal | None
    threshold: Decimal
    meets_threshold: bool
    public: RecordSplit | None
    holdout: RecordSplit | None
    overfit: RecordOverfit

    @classmethod
    def from_json(cls, data: Any, where: str, *, strict: bool = True) -> RecordSuite:
        data = _object(data, where)
        if strict:
            _keys(data, _fields(cls), where)
        splits = {
            name: (
                None
                if (value := _need(data, name, where)) is None
                else RecordSplit.from_json(value, f"{where}.{name}", strict=strict)
            )
            for name in ("public", "holdout")
        }
        return cls(
            version=_int(_need(data, "version", where), f"{where}.version"),
            capability=_str(_need(data, "capability", where), f"{where}.capability"),
            score=_number_or_none(_need(data, "score", where), f"{where}.score"),
            threshold=_number(_need(data, "threshold", where), f"{where}.threshold"),
            meets_threshold=_bool(
                _need(data, "meets_threshold", where), f"{where}.meets_threshold"
            ),
            public=splits["public"],
            holdout=splits["holdout"],
            overfit=RecordOverfit.from_json(
                _need(data, "overfit", where), f"{where}.overfit", strict=strict
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """Its keys in the order docs/evals.md ("The record") lists them: the one
        declaration for the record the store keeps and for the scores an eval writes into it
        (evals._scores.SuiteScore.record)."""
        return {
            "version": self.version,
            "capability": self.capability,
            "score": self.score,
            "threshold": self.threshold,
            "meets_threshold": self.meets_threshold,
            "public": None if self.public is None else self.public.to_json(),
            "holdout": None if self.holdout is None else self.holdout.to_json(),
            "overfit": self.overfit.to_json(),
        }


@dataclass(frozen=True)
class RecordWarning:
    """A warning on the record: today `overfit`, one per suite whose verdict is `warn`."""

    code: str
    suite: str
    detail: str  # the numbers that made it, in a line

    @classmethod
    def from_json(cls, data: Any, where: str, *, strict: bool = True) -> RecordWarning:
        data = _object(data, where)
        if strict:
            _keys(data, frozenset({"code", "suite", "detail"}), where)
        return cls(
            code=_str(_need(data, "code", where), f"{where}.code"),
            suite=_str(_need(data, "suite", where), f"{where}.suite"),
            detail=_str(_need(data, "detail", where), f"{where}.detail"),
        )

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "suite": self.suite, "detail": self.detail}


@dataclass(frozen=True)
class RecordCanaries:
    """One capability's canaries since the record's eval (records._canaries): how many
    were graded and passed, and the drift the test decided, with its evidence.

    An author reads `drifted` alone (evals.author_record): the one coarse fact
    canaries tell it; the counts and the evidence are the operator's.
    """

    drifted: bool
    graded: int | None = None
    passed: int | None = None
    drifted_at: datetime | None = None
    drift: Mapping[str, Any] | None = None

    @classmethod
    def from_json(cls, data: Any, where: str, *, strict: bool = True) -> RecordCanaries:
        data = _object(data, where)
        if strict:
            _keys(data, _fields(cls), where)

        def optional(key: str, read: Callable[[Any, str], T]) -> T | None:
            value = data.get(key)
            return None if value is None else read(value, f"{where}.{key}")

        return cls(
            drifted=_bool(_need(data, "drifted", where), f"{where}.drifted"),
            graded=optional("graded", _int),
            passed=optional("passed", _int),
            drifted_at=optional("drifted_at", _time),
            drift=optional("drift", lambda v, w: dict(_object(v, w))),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"drifted": self.drifted}
        if self.graded is not None:
            out["graded"] = self.graded
        if self.passed is not None:
            out["passed"] = self.passed
        if self.drifted_at is not None:
            out["drifted_at"] = utc_text(self.drifted_at)
        if self.drift is not None:
            out["drift"] = dict(self.drift)
        return out


# -- the record ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentRecord:
    """An agent version's standing (schema `entities/record`): the scores of its latest
    complete full-plan eval, with staleness as of the read.

    The optional parts are absent from the JSON when None: `eval_started_at` in an
    imported certificate's record (a certificate carries no start time),
    `holdout_epochs` in an author's view and an imported record (the operator's only),
    `certificate_id` in a record written before certificates were issued,
    `stale_reasons` in a record read without its staleness (`current_record`,
    `record_history`: `stale` is then as written, false), `holdout_evals` unless the
    read asked for it, `issuer` in this store's own records.
    """

    agent: str
    agent_version: str
    eval_id: str
    evaluated_at: datetime
    eval_started_at: datetime | None
    stale: bool
    eval_score: Decimal | None  # the lowest suite score; None: a capability is unverified
    eval_score_ci95: Interval | None  # the deciding split's Wilson interval
    weakest_suite: str | None
    unverified_capabilities: tuple[str, ...]
    suites: Mapping[str, RecordSuite]  # by suite id, in id order
    warnings: tuple[RecordWarning, ...]
    holdout_epochs: Mapping[str, int] | None  # the epoch each holdout graded
    certificate_id: str | None
    stale_reasons: tuple[str, ...] | None = None
    # The lower-bound gate's k: every org's holdout-revealing evals on each suite, now.
    holdout_evals: Mapping[str, int] | None = None
    issuer: str | None = None  # whose certificate carried it; None: this store's
    # "unchecked": an imported record whose issuer's revocation list was never read
    # (records._issuers); None otherwise.
    revocation: Literal["unchecked"] | None = None
    # Per capability, the canaries graded since the eval (a read adds it; None: none yet).
    canaries: Mapping[str, RecordCanaries] | None = None

    @property
    def revocation_unchecked(self) -> bool:
        return self.revocation == "unchecked"

    @property
    def drifted(self) -> bool:
        """Whether canaries found any capability drifting from what this record certified."""
        return any(c.drifted for c in (self.canaries or {}).values())

    @classmethod
    def from_json(cls, data: Any, *, strict: bool = True) -> AgentRecord:
        """The record a JSON object is (what the store keeps, or what `to_json` wrote);
        ValueError, naming the path, for one that is not.

        `strict=False` reads another issuer's record (an imported certificate's): keys
        this store does not know are left out, and the lists and the weakest suite a
        certificate may leave out read as empty.
        """
        where = "$"
        data = _object(data, where)
        if strict:
            _keys(data, _fields(cls), where)

        def given(key: str, default: Any = None) -> Any:
            # What a certificate may leave out (its schema's optional keys) reads as a
            # mandate read it before records were typed: empty, or None.
            return _need(data, key, where) if strict else data.get(key, default)

        def optional(key: str, read: Callable[[Any, str], T]) -> T | None:
            value = data.get(key)
            return None if value is None else read(value, f"$.{key}")

        suites = _object(_need(data, "suites", where), "$.suites")
        return cls(
            agent=_str(_need(data, "agent", where), "$.agent"),
            agent_version=_str(_need(data, "agent_version", where), "$.agent_version"),
            eval_id=_str(_need(data, "eval_id", where), "$.eval_id"),
            evaluated_at=_time(_need(data, "evaluated_at", where), "$.evaluated_at"),
            eval_started_at=optional("eval_started_at", _time),
            stale=_bool(given("stale", False), "$.stale"),
            eval_score=_number_or_none(_need(data, "eval_score", where), "$.eval_score"),
            eval_score_ci95=_interval_or_none(given("eval_score_ci95"), "$.eval_score_ci95"),
            weakest_suite=_str_or_none(given("weakest_suite"), "$.weakest_suite"),
            unverified_capabilities=_strings(
                given("unverified_capabilities", []), "$.unverified_capabilities"
            ),
            suites={
                str(suite_id): RecordSuite.from_json(graded, f"$.suites.{suite_id}", strict=strict)
                for suite_id, graded in suites.items()
            },
            warnings=tuple(
                RecordWarning.from_json(w, f"$.warnings[{i}]", strict=strict)
                for i, w in enumerate(_array(given("warnings", []), "$.warnings"))
            ),
            holdout_epochs=optional("holdout_epochs", _counts),
            certificate_id=optional("certificate_id", _str),
            stale_reasons=optional("stale_reasons", _strings),
            holdout_evals=optional("holdout_evals", _counts),
            issuer=optional("issuer", _str),
            revocation=optional("revocation", _unchecked),
            canaries=optional(
                "canaries",
                lambda v, w: {
                    str(capability): RecordCanaries.from_json(c, f"{w}.{capability}", strict=strict)
                    for capability, c in _object(v, w).items()
                },
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """Schema `entities/record`, its keys in the order the record was written in
        (evals._finish) and a read added to it (staleness, then holdout_evals)."""
        out: dict[str, Any] = {
            "agent": self.agent,
            "agent_version": self.agent_version,
            "eval_id": self.eval_id,
            "evaluated_at": utc_text(self.evaluated_at),
        }
        if self.eval_started_at is not None:
            out["eval_started_at"] = utc_text(self.eval_started_at)
        out.update(
            stale=self.stale,
            eval_score=self.eval_score,
            eval_score_ci95=None if self.eval_score_ci95 is None else list(self.eval_score_ci95),
            weakest_suite=self.weakest_suite,
            unverified_capabilities=list(self.unverified_capabilities),
            suites={suite_id: graded.to_json() for suite_id, graded in self.suites.items()},
            warnings=[w.to_json() for w in self.warnings],
        )
        if self.holdout_epochs is not None:
            out["holdout_epochs"] = dict(self.holdout_epochs)
        if self.certificate_id is not None:
            out["certificate_id"] = self.certificate_id
        if self.stale_reasons is not None:
            out["stale_reasons"] = list(self.stale_reasons)
        if self.holdout_evals is not None:
            out["holdout_evals"] = dict(self.holdout_evals)
        if self.issuer is not None:
            out["issuer"] = self.issuer
        if self.revocation is not None:
            out["revocation"] = self.revocation
        if self.canaries is not None:
            out["canaries"] = {cap: c.to_json() for cap, c in self.canaries.items()}
        return out
