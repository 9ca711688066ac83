"""Graded comparisons: `similar` (ANLS), `f1` (keyed items, micro-F1), `schema`, extensions.

These emit metrics and compare them to a minimum with exact fractions, so a
0.8 threshold is 4/5, never 0.8000000000000000444.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from evals.checks._limits import MAX_SIMILAR_CHARS
from evals.checks._metrics import Metric
from evals.checks._paths import NodePath
from evals.checks._predicates import ValuePredicate, location_text, noted, self_offending
from evals.checks._render import short
from evals.checks._results import FAIL, HIDDEN, PASS, CheckOutcome, metric
from evals.checks._similar import anls
from evals.checks._subject import Operand, Subject
from evals.checks._values import MISSING, freeze, json_equal
from schema import quick_validity
from schema.documents import explain

MAX_SCHEMA_ERRORS = 100


def _number_text(value: Fraction) -> str:
    return short(metric(value))


SIMILARITY = Metric(
    "similarity", "ratio", "maximize", "ANLS of the answer against the closest expected one"
)


class Similar(ValuePredicate):
    """ANLS of the actual string against the answer (or the best of several answers)."""

    key = "similar"
    wants = "a string"
    metrics = (SIMILARITY,)

    def __init__(
        self,
        operand: Operand,
        minimum: Fraction,
        normalize: Callable[[str], str] | None = None,
        normalize_names: Sequence[str] = (),
    ) -> None:
        super().__init__(operand, normalize, normalize_names)
        self.minimum = minimum

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if not isinstance(actual, str):
            return self.mismatch(subject, actual, expected)
        answers = expected if isinstance(expected, list) else [expected]
        if not answers or not all(isinstance(answer, str) for answer in answers):
            return self.bad_operand(actual, expected, "a string or an array of strings")
        for text in (actual, *answers):
            if len(text) > MAX_SIMILAR_CHARS:
                return CheckOutcome(
                    FAIL,
                    self,
                    actual,
                    expected,
                    detail=f"similar compares at most {MAX_SIMILAR_CHARS} characters, "
                    f"got a string of {len(text)}",
                )
        score = max(anls(actual, answer) for answer in answers)
        ok = score >= self.minimum
        return CheckOutcome(
            PASS if ok else FAIL,
            self,
            actual,
            expected,
            metrics={SIMILARITY.name: metric(score)},
            offending=() if ok else self_offending(subject),
        )

    def sentence(self, actual: Any, expected: Any) -> str:
        answers = expected if isinstance(expected, list) else [expected]
        score = max(anls(actual, answer) for answer in answers)
        sign = "≥" if score >= self.minimum else "<"
        return (
            f"similarity {_number_text(score)} {sign} {_number_text(self.minimum)} "
            f"to {short(expected)}, got {short(actual)}"
        )


F1_SCORE = Metric("f1", "ratio", "maximize", "harmonic mean of precision and recall")
PRECISION = Metric("precision", "ratio", "maximize", "share of the predicted fields that are right")
RECALL = Metric("recall", "ratio", "maximize", "share of the expected fields found")


class F1(ValuePredicate):
    """Items matched by `key`; micro-F1 over the named fields (SROIE/CORD style).

    A field counts when present and not null. A predicted item whose key has
    no unused gold item is extra (its fields are false positives); a gold
    item no prediction claims is missing (its fields are false negatives).
    Two empty lists score 1.
    """

    key = "f1"
    wants = "an array of objects"
    metrics = (F1_SCORE, PRECISION, RECALL)

    def __init__(
        self,
        operand: Operand,
        key_name: str,
        fields: Sequence[str],
        minimum: Fraction,
        normalize: Callable[[str], str] | None = None,
        normalize_names: Sequence[str] = (),
    ) -> None:
        super().__init__(operand, normalize, normalize_names)
        self.key_name = key_name
        self.fields = tuple(fields)
        self.minimum = minimum

    def _count(self, item: Any) -> int:
        if not isinstance(item, dict):
            return len(self.fields)
        return sum(1 for name in self.fields if item.get(name) is not None)

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        refused = self.not_arrays(subject, actual, expected, "an array of objects")
        if refused is not None:
            return refused
        gold_by_key: dict[Any, list[int]] = {}
        for index, gold in enumerate(expected):
            if isinstance(gold, dict) and gold.get(self.key_name) is not None:
                gold_by_key.setdefault(freeze(gold[self.key_name]), []).append(index)
        gold_total = sum(self._count(gold) for gold in expected if isinstance(gold, dict))
        predicted = sum(self._count(item) for item in actual)
        locations = subject.item_locations()
        used: set[int] = set()
        hits = 0
        wrong: list[str] = []
        extra: list[str] = []
        offending: list[NodePath | str] = []
        for index, item in enumerate(actual):
            where: NodePath | str = locations[index] if index < len(locations) else "?"
            key = item.get(self.key_name) if isinstance(item, dict) else None
            candidates = gold_by_key.get(freeze(key), []) if key is not None else []
            match = next((g for g in candidates if g not in used), None)
            if match is None:
                extra.append(f"{location_text(where)} = {short(item)}")
                offending.append(where)
                continue
            used.add(match)
            gold = expected[match]
            for name in self.fields:
                mine, theirs = item.get(name), gold.get(name)
                if mine is not None and theirs is not None and json_equal(mine, theirs):
                    hits += 1
                elif mine is not None or theirs is not None:
                    at = where if isinstance(where, str) else (*where, name)
                    wrong.append(f"{location_text(at)} = {short(mine)}, expected {short(theirs)}")
                    offending.append(at)
        missing = [
            f"{self.key_name} {short(gold.get(self.key_name, MISSING))}"
            if isinstance(gold, dict)
            else short(gold)
            for index, gold in enumerate(expected)
            if index not in used
        ]
        precision = Fraction(hits, predicted) if predicted else Fraction(int(gold_total == 0))
        recall = Fraction(hits, gold_total) if gold_total else Fraction(int(predicted == 0))
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else Fraction(0)
        ok = f1 >= self.minimum
        metrics = {
            F1_SCORE.name: metric(f1),
            PRECISION.name: metric(precision),
            RECALL.name: metric(recall),
        }
        notes = (
            [] if ok else noted("wrong", wrong) + noted("extra", extra) + noted("missing", missing)
        )
        return CheckOutcome(
            PASS if ok else FAIL,
            self,
            actual,
            expected,
            detail=(
                f"f1 {_number_text(f1)} {'≥' if ok else '<'} {_number_text(self.minimum)} "
                f"(precision {_number_text(precision)}, recall {_number_text(recall)}; "
                f"{hits} of {gold_total} fields)"
            ),
            offending=() if ok else offending,
            notes=notes,
            metrics=metrics,
        )


def _error_location(subject: Subject, path: Sequence[str | int]) -> NodePath | str:
    if subject.locations is not None:
        if not path or not isinstance(path[0], int) or path[0] >= len(subject.locations):
            return subject.location
        return (*subject.locations[path[0]], *path[1:])
    base = subject.location
    return base if isinstance(base, str) else (*base, *path)


class SchemaPredicate(ValuePredicate):
    """JSON Schema 2020-12 validation (numbers as int/Decimal; `1.0` is an integer)."""

    key = "schema"

    def __init__(self, validator: Any, label: str) -> None:
        super().__init__()
        self.validator = validator
        self.label = label
        # Most documents are valid: a fast yes skips the jsonschema machinery;
        # anything else (and every failure's explanation) goes through it.
        self.quick = quick_validity(validator.schema)

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if self.quick is not None and self.quick(actual):
            return CheckOutcome(
                PASS, self, actual, self.label, detail=f"valid against {self.label}"
            )
        problems = []
        for error in self.validator.iter_errors(actual):
            message, path = explain(error)
            problems.append((tuple(str(part) for part in path), message, path))
            if len(problems) >= MAX_SCHEMA_ERRORS:
                break
        if not problems:
            return CheckOutcome(
                PASS, self, actual, self.label, detail=f"valid against {self.label}"
            )
        problems.sort(key=lambda problem: (problem[0], problem[1]))
        located = [(_error_location(subject, path), message) for _, message, path in problems]
        lines = [f"{location_text(where)}: {message}" for where, message in located]
        count = f"{len(problems)}+" if len(problems) >= MAX_SCHEMA_ERRORS else str(len(problems))
        noun = "error" if len(problems) == 1 else "errors"
        return CheckOutcome(
            FAIL,
            self,
            actual,
            self.label,
            detail=f"{count} schema {noun} against {self.label}; first: {lines[0]}",
            notes=noted("error", lines),
            offending=[where for where, _ in located],
        )


class Extension(ValuePredicate):
    """A trusted grader registered by name: `fn(actual, operand) -> bool | (bool, detail)`."""

    def __init__(self, key: str, fn: Callable[[Any, Any], Any], operand: Operand | None) -> None:
        super().__init__(operand)
        self.key = key  # type: ignore[misc]
        self.fn = fn

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        answer = self.fn(actual, None if expected is MISSING else expected)
        shown = expected if self.operand is not None else HIDDEN
        if isinstance(answer, bool):
            return self.outcome_of(answer, subject, actual, shown)
        if (
            isinstance(answer, tuple)
            and len(answer) == 2
            and isinstance(answer[0], bool)
            and isinstance(answer[1], str)
        ):
            outcome = self.outcome_of(answer[0], subject, actual, shown)
            outcome.detail = " ".join(answer[1].split())[:200] or outcome.status
            return outcome
        return CheckOutcome(
            FAIL,
            self,
            actual,
            shown,
            detail=f"extension {self.key} returned {type(answer).__name__}, not a bool",
        )

    def sentence(self, actual: Any, expected: Any) -> str:
        if expected is HIDDEN:
            return f"{self.key} on {short(actual)}"
        return f"{self.key} {short(expected)} on {short(actual)}"
