"""Check definitions (YAML or JSON values) compiled into `CompiledCheck`s, strictly.

Every fault in a check's shape is found here, when the suite loads, and
raised as a `CheckError` naming file:line:col and the key's path: an unknown
predicate (with the closest valid one and the full list), a bad operand, a
path or regex with a caret under the fault. A check that compiles cannot
fail for its shape while grading.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from evals.checks import _predicates as p
from evals.checks import _sizes as sizes
from evals.checks._normalize import NORMALIZERS, chain
from evals.checks._paths import CompiledPath, PathSyntaxError, caret_lines, parse_path
from evals.checks._regex import PatternError, compile_re2
from evals.checks._schemas import SchemaLoader
from evals.checks._scoring import F1, Extension, Similar
from evals.checks._signatures import (
    COMBINATOR_SIGNATURES,
    MODIFIER_SIGNATURES,
    PREDICATE_SIGNATURES,
    QUANTIFIER_SIGNATURES,
)
from evals.checks._structure import AllOf, AnyOf, CompiledCheck, NotOf, Quantifier
from evals.checks._subject import Operand
from evals.checks._values import is_number, kind_of, map_strings
from schema.documents import Document, PathKey, format_path
from schema.errors import CheckError, Location

# The words of the DSL, from their declarations (`_signatures`); sorted, so messages list
# them in a stable order.
PREDICATES = tuple(sorted(PREDICATE_SIGNATURES))
COMBINATORS = tuple(sorted(COMBINATOR_SIGNATURES))
QUANTIFIERS = tuple(sorted(QUANTIFIER_SIGNATURES))
MODIFIERS = tuple(sorted(MODIFIER_SIGNATURES))
COMMON = ("critical", "name", "path")

_SIGNATURES = {**PREDICATE_SIGNATURES, **COMBINATOR_SIGNATURES, **QUANTIFIER_SIGNATURES}
# Who takes each modifier, in declaration order (`each/some/none`).
_TAKERS = {
    key: tuple(word for word, signature in _SIGNATURES.items() if key in signature.modifiers)
    for key in MODIFIERS
}
_MAX_NAME = 200
DEFAULT_SIMILAR_MIN = Decimal("0.8")

Extensions = Mapping[str, Callable[[Any, Any], Any]]


def _suggest(word: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def _plain(value: Any) -> Any:
    """Check literals as holon JSON: floats become Decimals, tuples lists."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


@dataclass(slots=True, eq=False)
class _Spec:
    """What a predicate builder needs: the value under the predicate key and its context."""

    kind: str
    value: Any
    at: PathKey
    item: dict[str, Any]
    check_at: PathKey
    prepare: Callable[[Any], Any] | None
    normalize: Callable[[str], str] | None
    names: tuple[str, ...]


def _kind(value: Any) -> str:
    return kind_of(value) if value is not None else "null"


class _Compiler:
    def __init__(
        self, document: Document | None, base_dir: Path | None, extensions: Extensions
    ) -> None:
        self.document = document
        self.extensions = dict(extensions)
        self.schemas = SchemaLoader(base_dir, self.error)
        reserved = set(PREDICATES) | set(COMBINATORS) | set(QUANTIFIERS) | set(MODIFIERS)
        for name in self.extensions:
            if name in reserved or name in COMMON or not name.isidentifier():
                raise ValueError(f"extension name {name!r} is reserved or not an identifier")
        self.kinds = sorted(set(PREDICATES) | set(self.extensions))
        self.known = sorted({*self.kinds, *COMBINATORS, *QUANTIFIERS, *MODIFIERS, *COMMON})

    # --- errors ---------------------------------------------------------------

    def location(self, at: PathKey) -> Location:
        if self.document is not None:
            return self.document.location(at)
        return Location(path=format_path(at))

    def error(self, message: str, at: PathKey, **details: Any) -> CheckError:
        return CheckError(message, location=self.location(at), details=details or None)

    # --- checks ---------------------------------------------------------------

    def check(
        self, item: Any, at: PathKey, *, inherited: CompiledPath | None, in_node: bool
    ) -> CompiledCheck:
        if not isinstance(item, dict):
            raise self.error(
                f"a check is a mapping like {{path: $.output.total, equals: 1}}, got {_kind(item)}",
                at,
            )
        kinds = []
        for key in item:
            if (
                key in self.extensions
                or key in PREDICATES
                or key in COMBINATORS
                or key in QUANTIFIERS
            ):
                kinds.append(key)
            elif key not in MODIFIERS and key not in COMMON:
                raise self.error(
                    f"unknown key {key!r}; {_suggest(key, self.known)}"
                    f"predicates: {', '.join(self.kinds)}; "
                    f"combinators: {', '.join(COMBINATORS)}; "
                    f"quantifiers: {', '.join(QUANTIFIERS)}; "
                    f"other keys: {', '.join(sorted(COMMON + MODIFIERS))}",
                    (*at, key),
                )
        if not kinds:
            raise self.error(
                f"a check needs one predicate: {', '.join(self.kinds)} "
                f"(or all/any/not, or each/some/none)",
                at,
            )
        if len(kinds) > 1:
            raise self.error(
                f"one predicate per check, found {kinds[0]!r} and {kinds[1]!r} "
                "(combine them with all: [...])",
                (*at, kinds[1]),
            )
        kind = kinds[0]
        path = self.own_path(item, at, in_node=in_node)
        effective = path or inherited
        if effective is None and not in_node and kind not in COMBINATORS:
            raise self.error(f"missing key 'path' (the JSONPath {kind} applies to)", at)
        self.modifiers(item, at, kind)
        critical = item.get("critical", False)
        if not isinstance(critical, bool):
            raise self.error(f"critical is true or false, got {_kind(critical)}", (*at, "critical"))
        body, label = self.body(kind, item, at, effective, in_node)
        name = self.name(item, at, label, path or inherited, body)
        return CompiledCheck(
            name,
            label,
            path,
            body,
            critical=critical,
            source=self.location(at),
            definition=item,
        )

    def name(
        self, item: dict[str, Any], at: PathKey, label: str, path: CompiledPath | None, body: p.Body
    ) -> str:
        if "name" not in item:
            if path is not None:
                return f"{label} {path.text}"
            children = getattr(body, "children", ())
            inner = ", ".join(child.name for child in children)
            text = f"{label} [{inner}]"
            return text if len(text) <= _MAX_NAME else text[: _MAX_NAME - 1] + "…"
        name = item["name"]
        if not isinstance(name, str) or not name.strip() or len(name) > _MAX_NAME:
            raise self.error(
                f"name is a non-empty string of at most {_MAX_NAME} characters", (*at, "name")
            )
        return name

    def own_path(self, item: dict[str, Any], at: PathKey, *, in_node: bool) -> CompiledPath | None:
        if "path" not in item:
            return None
        if in_node:
            raise self.error(
                "inside each/some/none a check applies to each node: it takes no path",
                (*at, "path"),
            )
        return self.path(item["path"], (*at, "path"))

    def path(self, text: Any, at: PathKey) -> CompiledPath:
        if not isinstance(text, str):
            raise self.error(
                f"a path is a JSONPath string like $.output.total, got {_kind(text)}", at
            )
        try:
            return parse_path(text)
        except PathSyntaxError as exc:
            raise self.error(
                f"invalid path: {exc.reason}{caret_lines(text, exc.index)}",
                at,
                query=text,
                index=exc.index,
            ) from None

    def modifiers(self, item: dict[str, Any], at: PathKey, kind: str) -> None:
        signature = _SIGNATURES.get(kind)
        allowed = signature.modifiers if signature is not None else ()
        for key, takers in _TAKERS.items():
            if key in item and key not in allowed:
                if key == "normalize":
                    owners = f"string predicates ({', '.join(sorted(takers))})"
                else:
                    owners = "/".join(takers)
                raise self.error(f"{key} applies to {owners}, not to {kind}", (*at, key))

    # --- bodies ---------------------------------------------------------------

    def body(
        self,
        kind: str,
        item: dict[str, Any],
        at: PathKey,
        path: CompiledPath | None,
        in_node: bool,
    ) -> tuple[p.Body, str]:
        here = (*at, kind)
        value = _plain(item[kind])
        if kind in COMBINATORS:
            return self.combinator(kind, value, here, path, in_node), kind
        if kind in QUANTIFIERS:
            return self.quantifier(kind, value, item, at, path, in_node)
        if kind in self.extensions:
            operand = self.operand(value, here, kind, "any")
            return Extension(kind, self.extensions[kind], operand), kind
        normalize, names = self.normalize(item, at)
        prepare = (lambda v: map_strings(v, normalize)) if normalize is not None else None
        spec = _Spec(kind, value, here, item, at, prepare, normalize, names)
        built: p.Body = getattr(self, f"_{kind}")(spec)
        return built, kind

    def combinator(
        self, kind: str, value: Any, at: PathKey, path: CompiledPath | None, in_node: bool
    ) -> p.Body:
        if kind == "not":
            child = self.check(value, at, inherited=path, in_node=in_node)
            return NotOf([child])
        if not isinstance(value, list) or not value:
            raise self.error(f"{kind} takes a non-empty list of checks", at)
        children = [
            self.check(child, (*at, index), inherited=path, in_node=in_node)
            for index, child in enumerate(value)
        ]
        return AllOf(children) if kind == "all" else AnyOf(children)

    def quantifier(
        self,
        kind: str,
        value: Any,
        item: dict[str, Any],
        at: PathKey,
        path: CompiledPath | None,
        in_node: bool,
    ) -> tuple[p.Body, str]:
        here = (*at, kind)
        if in_node or path is None or path.singular:
            where = "inside each/some/none there is none" if in_node else "this path is singular"
            raise self.error(
                f"{kind} needs a non-singular path "
                f"(a wildcard, slice, filter or descendant); {where}",
                (*at, "path") if path is not None and not in_node else here,
            )
        inner = self.check(value, here, inherited=None, in_node=True)
        allow_empty = item.get("allow_empty", False)
        if not isinstance(allow_empty, bool):
            raise self.error("allow_empty is true or false", (*at, "allow_empty"))
        mostly = None
        if "mostly" in item:
            raw = _plain(item["mostly"])
            if not is_number(raw) or not 0 < raw <= 1:
                raise self.error("mostly is a fraction of nodes, 0 < mostly ≤ 1", (*at, "mostly"))
            mostly = Fraction(raw)
        body = Quantifier(kind, inner.body, allow_empty=allow_empty, mostly=mostly)
        return body, f"{kind} {inner.predicate}"

    def normalize(
        self, item: dict[str, Any], at: PathKey
    ) -> tuple[Callable[[str], str] | None, tuple[str, ...]]:
        if "normalize" not in item:
            return None, ()
        names = item["normalize"]
        here = (*at, "normalize")
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not names:
            raise self.error(f"normalize is a list of: {', '.join(sorted(NORMALIZERS))}", here)
        for index, name in enumerate(names):
            if not isinstance(name, str) or name not in NORMALIZERS:
                raise self.error(
                    f"unknown normalizer {name!r}; {_suggest(str(name), sorted(NORMALIZERS))}"
                    f"normalizers: {', '.join(sorted(NORMALIZERS))}",
                    (*here, index),
                )
        return chain(names), tuple(names)

    def operand(
        self,
        value: Any,
        at: PathKey,
        kind: str,
        wants: str,
        prepare: Callable[[Any], Any] | None = None,
    ) -> Operand:
        if isinstance(value, dict) and "path" in value:
            if set(value) != {"path"}:
                extra = sorted(set(value) - {"path"})
                raise self.error(
                    f"an operand {{path: …}} has no other keys, found {extra[0]!r}", (*at, extra[0])
                )
            return Operand(path=self.path(value["path"], (*at, "path")), prepare=prepare)
        checks: dict[str, tuple[Callable[[Any], bool], str]] = {
            "any": (lambda v: True, "a value"),
            "number": (is_number, "a number"),
            "string": (lambda v: isinstance(v, str), "a string"),
            "array": (lambda v: isinstance(v, list), "an array"),
        }
        test, what = checks[wants]
        if not test(value):
            raise self.error(f"{kind} needs {what} or {{path: …}}, got {_kind(value)}", at)
        return Operand(literal=value, prepare=prepare)

    def size_spec(self, value: Any, at: PathKey, kind: str) -> sizes.SizeSpec:
        def count(number: Any, where: PathKey) -> int:
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise self.error(
                    f"{kind} takes a whole number ≥ 0, {{path: …}} or {{min, max}}", where
                )
            return number

        if isinstance(value, dict) and "path" in value:
            return sizes.SizeSpec(self.operand(value, at, kind, "any"), None, None)
        if not isinstance(value, dict):
            literal = count(value, at)
            return sizes.SizeSpec(Operand(literal=literal), None, None)
        unknown = sorted(set(value) - {"min", "max"})
        if unknown:
            raise self.error(
                f"{kind} takes {{min, max}} or {{path: …}}, not {unknown[0]!r}", (*at, unknown[0])
            )
        if not value:
            raise self.error(f"{kind} needs min, max or both", at)
        low = count(value["min"], (*at, "min")) if "min" in value else None
        high = count(value["max"], (*at, "max")) if "max" in value else None
        if low is not None and high is not None and low > high:
            raise self.error(f"{kind}: min {low} is more than max {high}", at)
        return sizes.SizeSpec(None, low, high)

    def fraction(self, value: Any, at: PathKey, what: str) -> Fraction:
        if not is_number(value) or not 0 <= value <= 1:
            raise self.error(f"{what} is a number from 0 to 1, got {_kind(value)}", at)
        return Fraction(Decimal(value) if not isinstance(value, Decimal) else value)

    def options(
        self, value: Any, at: PathKey, kind: str, required: Sequence[str], optional: Sequence[str]
    ) -> dict[str, Any]:
        allowed = (*required, *optional)
        if not isinstance(value, dict):
            raise self.error(f"{kind} takes a mapping with {', '.join(allowed)}", at)
        for key in value:
            if key not in allowed:
                raise self.error(
                    f"unknown key {key!r} in {kind}; {_suggest(key, allowed)}"
                    f"{kind} takes {', '.join(allowed)}",
                    (*at, key),
                )
        for key in required:
            if key not in value:
                raise self.error(f"{kind} needs {key!r}", at)
        return value

    # --- one builder per predicate (named `_<predicate>`) ------------------------

    def _exists(self, s: _Spec) -> p.Body:
        if not isinstance(s.value, bool):
            raise self.error(f"exists is true or false, got {_kind(s.value)}", s.at)
        return sizes.Exists(s.value)

    def _count(self, s: _Spec) -> p.Body:
        return sizes.Count(self.size_spec(s.value, s.at, "count"))

    def _length(self, s: _Spec) -> p.Body:
        return sizes.Length(self.size_spec(s.value, s.at, "length"), s.normalize, s.names)

    def _value(self, s: _Spec, cls: Any, wants: str) -> p.Body:
        operand = self.operand(s.value, s.at, s.kind, wants, s.prepare)
        built: p.Body = cls(operand, s.normalize, s.names)
        return built

    def _equals(self, s: _Spec) -> p.Body:
        return self._value(s, p.Equals, "any")

    def _not_equals(self, s: _Spec) -> p.Body:
        return self._value(s, p.NotEquals, "any")

    def _one_of(self, s: _Spec) -> p.Body:
        return self._value(s, p.OneOf, "array")

    def _not_one_of(self, s: _Spec) -> p.Body:
        return self._value(s, p.NotOneOf, "array")

    def _contains(self, s: _Spec) -> p.Body:
        return self._value(s, p.Contains, "any")

    def _icontains(self, s: _Spec) -> p.Body:
        return self._value(s, p.IContains, "any")

    def _contains_all(self, s: _Spec) -> p.Body:
        return self._value(s, p.ContainsAll, "array")

    def _contains_any(self, s: _Spec) -> p.Body:
        return self._value(s, p.ContainsAny, "array")

    def _contains_only(self, s: _Spec) -> p.Body:
        return self._value(s, p.ContainsOnly, "array")

    def _starts_with(self, s: _Spec) -> p.Body:
        return self._value(s, p.StartsWith, "string")

    def _ends_with(self, s: _Spec) -> p.Body:
        return self._value(s, p.EndsWith, "string")

    def _compare(self, s: _Spec) -> p.Body:
        return p.Compare(s.kind, self.operand(s.value, s.at, s.kind, "number"))

    _gt = _gte = _lt = _lte = _compare

    def _between(self, s: _Spec) -> p.Body:
        value, at = s.value, s.at
        if not isinstance(value, list) or len(value) != 2:
            raise self.error("between takes [low, high] (numbers or {path: …})", at)
        low = self.operand(value[0], (*at, 0), "between", "number")
        high = self.operand(value[1], (*at, 1), "between", "number")
        if low.path is None and high.path is None and low.literal > high.literal:
            raise self.error(f"between: low {low.literal} is more than high {high.literal}", at)
        return p.Between(low, high)

    def _approx(self, s: _Spec) -> p.Body:
        operand = self.operand(s.value, s.at, "approx", "number")
        tolerances: dict[str, Decimal | None] = {"abs": None, "rel": None}
        for key in tolerances:
            if key in s.item:
                raw = _plain(s.item[key])
                if not is_number(raw) or raw < 0:
                    raise self.error(f"{key} is a number ≥ 0, got {_kind(raw)}", (*s.check_at, key))
                tolerances[key] = Decimal(raw) if not isinstance(raw, Decimal) else raw
        if tolerances["abs"] is None and tolerances["rel"] is None:
            raise self.error("approx needs a tolerance: abs, rel or both", s.at)
        return p.Approx(operand, tolerances["abs"], tolerances["rel"])

    def _matches(self, s: _Spec) -> p.Body:
        if not isinstance(s.value, str):
            raise self.error(
                f"{s.kind} takes a pattern string (patterns compile when the suite loads, "
                f"so a pattern is never a path), got {_kind(s.value)}",
                s.at,
            )
        try:
            program = compile_re2(s.value)
        except PatternError as exc:
            raise self.error(
                f"invalid regex: {exc.reason}{caret_lines(s.value, exc.index)}",
                s.at,
                pattern=s.value,
                index=exc.index,
            ) from None
        return p.Matches(s.kind, s.value, program, s.normalize, s.names)

    _full_match = _matches

    def _type(self, s: _Spec) -> p.Body:
        names = s.value if isinstance(s.value, list) else [s.value]
        if not names:
            raise self.error(
                f"type is one of {', '.join(sizes.TYPE_NAMES)}, or a list of them", s.at
            )
        for index, name in enumerate(names):
            if name not in sizes.TYPE_NAMES:
                where = (*s.at, index) if isinstance(s.value, list) else s.at
                raise self.error(
                    f"unknown type {name!r}; {_suggest(str(name), sizes.TYPE_NAMES)}"
                    f"types: {', '.join(sizes.TYPE_NAMES)}",
                    where,
                )
        return sizes.Type(names)

    def _schema(self, s: _Spec) -> p.Body:
        return self.schemas.predicate(s.value, s.at)

    def _similar(self, s: _Spec) -> p.Body:
        spec = self.options(s.value, s.at, "similar", ("to",), ("min",))
        to = spec["to"]
        if not (isinstance(to, dict) and "path" in to) and not (
            isinstance(to, str)
            or (isinstance(to, list) and to and all(isinstance(answer, str) for answer in to))
        ):
            raise self.error(
                f"similar: to is a string, a list of strings or {{path: …}}, got {_kind(to)}",
                (*s.at, "to"),
            )
        operand = self.operand(to, (*s.at, "to"), "similar", "any", s.prepare)
        minimum = self.fraction(
            spec.get("min", DEFAULT_SIMILAR_MIN), (*s.at, "min"), "similar: min"
        )
        return Similar(operand, minimum, s.normalize, s.names)

    def _f1(self, s: _Spec) -> p.Body:
        spec = self.options(s.value, s.at, "f1", ("to", "key"), ("fields", "min"))
        operand = self.operand(spec["to"], (*s.at, "to"), "f1", "array", s.prepare)
        key = spec["key"]
        if not isinstance(key, str) or not key:
            raise self.error("f1: key is the name of the field that matches items", (*s.at, "key"))
        fields = spec.get("fields", [key])
        if (
            not isinstance(fields, list)
            or not fields
            or not all(isinstance(field, str) and field for field in fields)
            or len(set(fields)) != len(fields)
        ):
            raise self.error("f1: fields is a list of distinct field names", (*s.at, "fields"))
        minimum = self.fraction(spec.get("min", 1), (*s.at, "min"), "f1: min")
        return F1(operand, key, fields, minimum, s.normalize, s.names)


def compile_checks(
    items: Any,
    *,
    document: Document | None = None,
    base_path: PathKey = (),
    base_dir: Path | None = None,
    extensions: Extensions | None = None,
) -> list[CompiledCheck]:
    """Compile a list of check definitions, or raise `CheckError` at the first fault.

    `document` (when the checks were read from one) gives file:line:col;
    `base_path` is where the list sits in it (e.g. `("checks",)`); `base_dir`
    is what `schema: {$ref: file}` is relative to; `extensions` are trusted
    graders usable as predicates by name. Names must be unique in the list.
    """
    compiler = _Compiler(document, base_dir, extensions or {})
    if not isinstance(items, list):
        raise compiler.error(f"checks are a list, got {_kind(items)}", tuple(base_path))
    compiled = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        at = (*base_path, index)
        check = compiler.check(item, at, inherited=None, in_node=False)
        if check.name in seen:
            raise compiler.error(
                f"two checks are named {check.name!r} (the other is check {seen[check.name]}); "
                "give one a distinct name: per-check pass rates are kept by name",
                at,
            )
        seen[check.name] = index
        compiled.append(check)
    return compiled


def compile_path(text: str) -> CompiledPath:
    """Parse a JSONPath query, or raise `CheckError` with the query and a caret under the fault."""
    try:
        return parse_path(text)
    except PathSyntaxError as exc:
        raise CheckError(
            f"invalid path: {exc.reason}{caret_lines(exc.query, exc.index)}",
            details={"query": exc.query, "index": exc.index},
        ) from None


def compile_check(item: Any, **kwargs: Any) -> CompiledCheck:
    """Compile one check definition (see `compile_checks`)."""
    return compile_checks([item], **kwargs)[0]
