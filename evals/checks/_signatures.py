"""What each key of the check DSL takes: the compiler's registry of its words.

The compiler accepts exactly the predicates, combinators and quantifiers
declared here (`PREDICATES`, `COMBINATORS` and `QUANTIFIERS` are their sorted
names), and a modifier only beside a word that lists it; `holon catalog`
prints the same table. A new predicate is one entry here and its builder
(`_Compiler._<name>` in `_compile.py`); a test fails when either is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "COMBINATOR_SIGNATURES",
    "MODIFIER_SIGNATURES",
    "PREDICATE_SIGNATURES",
    "QUANTIFIER_SIGNATURES",
    "Signature",
]


@dataclass(frozen=True)
class Signature:
    """`takes`: what the key's value is; `holds`: when the check passes; `modifiers`: the
    keys it admits beside it (beyond `path`, `name` and `critical`)."""

    takes: str
    holds: str
    modifiers: tuple[str, ...] = ()


_VALUE = "a value or {path: …}"
_ARRAY = "an array or {path: …}"
_STRING = "a string or {path: …}"
_NUMBER = "a number or {path: …}"
_SIZE = "a whole number ≥ 0, {min, max} or {path: …}"
_PATTERN = "an RE2 pattern (a literal string, never {path: …})"
_NORMALIZE = ("normalize",)

PREDICATE_SIGNATURES: dict[str, Signature] = {
    "approx": Signature(
        _NUMBER, "|actual − X| ≤ abs, or ≤ rel × |X|, in exact decimals", ("abs", "rel")
    ),
    "between": Signature("[low, high], each a number or {path: …}", "low ≤ actual ≤ high"),
    "contains": Signature(
        _VALUE, "a string holds it as a substring; an array holds an item equal to it", _NORMALIZE
    ),
    "contains_all": Signature(_ARRAY, "the array holds every item", _NORMALIZE),
    "contains_any": Signature(_ARRAY, "the array holds at least one of the items", _NORMALIZE),
    "contains_only": Signature(
        _ARRAY, "the array holds the same items, order ignored, nothing else", _NORMALIZE
    ),
    "count": Signature(_SIZE, "the number of nodes the path matches"),
    "ends_with": Signature(_STRING, "the string ends with it", _NORMALIZE),
    "equals": Signature(_VALUE, "deep JSON equality (numbers by value)", _NORMALIZE),
    "exists": Signature("true or false", "the path matches a node (true) or none (false)"),
    "f1": Signature(
        "{to, key, fields, min}: to an array or {path: …}",
        "micro-F1 over `fields` of items matched by `key` ≥ min (default 1)",
        _NORMALIZE,
    ),
    "full_match": Signature(_PATTERN, "the pattern matches the whole string", _NORMALIZE),
    "gt": Signature(_NUMBER, "actual > X"),
    "gte": Signature(_NUMBER, "actual ≥ X"),
    "icontains": Signature(_VALUE, "contains, ignoring case", _NORMALIZE),
    "length": Signature(_SIZE, "the size of a string, array or object", _NORMALIZE),
    "lt": Signature(_NUMBER, "actual < X"),
    "lte": Signature(_NUMBER, "actual ≤ X"),
    "matches": Signature(_PATTERN, "the pattern matches somewhere in the string", _NORMALIZE),
    "not_equals": Signature(_VALUE, "not deep-equal", _NORMALIZE),
    "not_one_of": Signature(_ARRAY, "equal to none of the items", _NORMALIZE),
    "one_of": Signature(_ARRAY, "equal to one of the items", _NORMALIZE),
    "schema": Signature(
        "an inline JSON Schema or {$ref: file} in the suite", "valid against the schema"
    ),
    "similar": Signature(
        "{to, min}: to a string, a list of strings or {path: …}",
        "ANLS similarity ≥ min (default 0.8)",
        _NORMALIZE,
    ),
    "starts_with": Signature(_STRING, "the string starts with it", _NORMALIZE),
    "type": Signature(
        "a type name or a list of them (string integer number boolean array object null)",
        "the value is of one of the types, as JSON Schema means them",
    ),
}

COMBINATOR_SIGNATURES: dict[str, Signature] = {
    "all": Signature("a non-empty list of checks", "every check passes"),
    "any": Signature("a non-empty list of checks", "one check passes"),
    "not": Signature("a check", "the check does not pass"),
}

# Declared in the order the compiler's messages name them (each/some/none).
QUANTIFIER_SIGNATURES: dict[str, Signature] = {
    "each": Signature(
        "a check without path", "every node the path matches passes", ("allow_empty", "mostly")
    ),
    "some": Signature("a check without path", "at least one node passes", ("allow_empty",)),
    "none": Signature("a check without path", "no node passes", ("allow_empty",)),
}

MODIFIER_SIGNATURES: dict[str, str] = {
    "abs": "a number ≥ 0: the absolute tolerance",
    "allow_empty": "true or false: no node at all passes",
    "mostly": "a fraction 0 < f ≤ 1: the share of nodes that must pass",
    "normalize": "a normaliser's name or a list of them, applied in order to both sides",
    "rel": "a number ≥ 0: the tolerance relative to |X|",
}
