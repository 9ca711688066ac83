"""What a loaded suite is: fully valid, so nothing about its shape can fail at run time."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from evals.checks import CompiledCheck
from evals.fixtures import FixtureSpec
from schema.errors import Location

Split = Literal["public", "holdout"]

DEFAULT_OVERFIT_DELTA = Decimal("0.15")
# docs/integrity.md: each org's holdout-revealing evals per instance set, and how
# long a generated holdout's epoch lasts when evals alone do not rotate it.
DEFAULT_HOLDOUT_EVALS_PER_EPOCH = 3
# Every org's holdout-revealing evals of one instance set together: past it the set is
# exposed, whoever asks (docs/integrity.md, "Exposure is the holdout's": at 6 the best
# adaptive attack on a 150-case holdout gains +0.045 on average; at 10, +0.067).
DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET = 6
DEFAULT_ROTATE_AFTER_DAYS = 7
# The least age of an epoch before `rotate_after_evals` may end it: a count alone would
# renew an org's holdout budget as fast as it can run evals (docs/integrity.md).
DEFAULT_ROTATE_MIN_HOURS = 24


@dataclass(frozen=True)
class SuiteLimits:
    """Per case: the executor's enforced cap and deadline."""

    max_cost_usd: Decimal
    timeout_s: Decimal
    holdout_evals_per_epoch: int = DEFAULT_HOLDOUT_EVALS_PER_EPOCH
    holdout_evals_per_instance_set: int = DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET


@dataclass(frozen=True)
class Case:
    """One case: `input` and `expected` may still hold `$fixture`/`$truth` references."""

    id: str
    split: Split
    input: Any
    expected: Any
    tags: tuple[str, ...]
    checks: tuple[CompiledCheck, ...]  # the suite's default checks, then the case's own
    raw: dict[str, Any] = field(repr=False)  # as written, for digests
    source: Location = field(default_factory=Location, repr=False)


@dataclass(frozen=True)
class Rotation:
    """When a holdout's epoch ends (docs/integrity.md, "Instance sets that end"): once it is
    `rotate_after_days` old, or after `rotate_after_evals` evals but no sooner than
    `rotate_min_hours` after it began. A generated holdout and a pool rotate alike."""

    rotate_after_evals: int | None = None
    rotate_after_days: int = DEFAULT_ROTATE_AFTER_DAYS
    rotate_min_hours: int = DEFAULT_ROTATE_MIN_HOURS  # an epoch ends by count no sooner


@dataclass(frozen=True)
class HoldoutGenerator:
    """`holdout: {generate: …}`: `count` instances an epoch from secret seeds."""

    count: int
    rotation: Rotation
    template: dict[str, Any]  # {input, expected, tags?, checks?} with fixture references
    checks: tuple[CompiledCheck, ...]


@dataclass(frozen=True)
class HoldoutPool:
    """`holdout: {file: …, pool: …}`: the stored cases are a pool, cut by a secret
    permutation into disjoint subsets of `subset` cases; epoch e grades subset e
    (`evals.suites.epoch_holdout`), until the pool holds no more (`epochs`)."""

    subset: int
    cases: int  # the pool's size
    rotation: Rotation

    @property
    def epochs(self) -> int:
        """How many epochs the pool holds: its cases past the last whole subset go unused."""
        return self.cases // self.subset


@dataclass(frozen=True)
class Suite:
    id: str
    version: int
    capability: str
    title: str
    directory: Path
    document: dict[str, Any] = field(repr=False)  # suite.yaml as written
    input_schema: dict[str, Any] = field(repr=False)
    output_schema: dict[str, Any] = field(repr=False)
    limits: SuiteLimits
    repetitions: int
    threshold: Decimal
    grace_days: int
    overfit_delta: Decimal
    checks: tuple[CompiledCheck, ...]  # defaults, the output-schema check first
    check_definitions: tuple[dict[str, Any], ...] = field(repr=False)
    fixtures: dict[str, FixtureSpec]
    public: tuple[Case, ...]
    holdout_file: tuple[Case, ...] | None  # a stored holdout
    holdout_generator: HoldoutGenerator | None  # or a generated one
    schema_files: dict[str, Any] = field(repr=False)  # relative path -> JSON, as read
    extensions: dict[str, str] = field(default_factory=dict)  # "graders/name" -> sha256
    # split -> {name, sha256} of the trusted loader that made its cases, and their JSONL
    # text (what installing stores; a holdout's is as secret as a holdout file).
    loaders: dict[str, dict[str, str]] = field(default_factory=dict)
    loaded: dict[str, str] = field(default_factory=dict, repr=False)
    holdout_pool: HoldoutPool | None = None  # the stored holdout is a pool of subsets

    @property
    def key(self) -> str:
        return f"{self.id}@{self.version}"

    @property
    def rotation(self) -> Rotation | None:
        """When the holdout's epochs end: a generated holdout's or a pool's; None for a
        stored holdout used whole (one instance set for its whole life) or none."""
        if self.holdout_generator is not None:
            return self.holdout_generator.rotation
        return None if self.holdout_pool is None else self.holdout_pool.rotation

    @property
    def holdout_count(self) -> int:
        """The holdout cases one eval grades: a pool's subset, a file's cases, a generated
        epoch's count."""
        if self.holdout_pool is not None:
            return self.holdout_pool.subset
        if self.holdout_file is not None:
            return len(self.holdout_file)
        if self.holdout_generator is not None:
            return self.holdout_generator.count
        return 0
