"""Suite identity (docs/integrity.md, "Keyed digests") and holdout epochs.

- `spec_digest`: the suite document with its `$ref`'d schemas inlined;
- `dataset_digest`: the public cases plus the holdout (the stored file or
  loaded cases with a pool's subset size, or the generator spec and count,
  not the epoch), and the loaders' names and sources. A fixture case is
  hashed as its reference (generator name and version, params, seed), never
  as bytes;
- `checks_digest`: every check definition plus GRADING_RULES_VERSION;
- `suite_digest`: the three together.

A public case's digest is sha256 of its canonical JSON; a holdout case's is
an HMAC under the store's secret, so it cannot be matched against guesses.
Seed i of epoch e is the first 8 bytes (big-endian) of
HMAC-SHA256(secret, canonical JSON of [suite_id, version, e, i]).
"""

from __future__ import annotations

import hashlib
import hmac
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from evals.checks import GRADING_RULES_VERSION
from evals.fixtures import find_references
from evals.suites._model import Case, Suite
from schema.canonical import canonical_json, digest


@dataclass(frozen=True)
class SuiteDigests:
    spec: str
    dataset: str
    checks: str
    suite: str

    def to_json(self) -> dict[str, str]:
        """Each digest under its field's name and `_digest` (`spec_digest`, ...), in field order."""
        return {f"{field.name}_digest": getattr(self, field.name) for field in fields(self)}


def _inline_refs(node: Any, schemas: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in schemas and len(node) == 1:
            return schemas[ref]
        return {k: _inline_refs(v, schemas) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, schemas) for v in node]
    return node


def _with_generators(node: Any, suite: Suite) -> Any:
    """Fixture references hash as their generator's name, version, params and seed."""
    if isinstance(node, dict):
        if "$fixture" in node or "$truth" in node:
            seeded = {**node, "seed": node.get("seed", 0)}
            (ref,) = find_references(seeded, suite.fixtures)
            identity = ref.identity()
            if "seed" not in node:  # a generated holdout's template: no seed yet
                del identity["seed"]
            else:
                # As text: canonical JSON numbers are doubles, and seeds go up
                # to 2**64, where two seeds could share one double.
                identity["seed"] = str(identity["seed"])
            marker = "$fixture" if "$fixture" in node else "$truth"
            out = {marker: node[marker], **identity}
            if "pick" in node:
                out["pick"] = node["pick"]
            return out
        return {k: _with_generators(v, suite) for k, v in node.items()}
    if isinstance(node, list):
        return [_with_generators(v, suite) for v in node]
    return node


def case_identity(case: Case, suite: Suite) -> dict[str, Any]:
    identity: dict[str, Any] = _with_generators(case.raw, suite)
    return identity


# A case's canonical identity text is needed by the suite digest, the holdout
# instance set and every cell's case digest of a plan: written once per case
# object. Weak references (a kept text never keeps its case or suite alive),
# bounded in entries and characters.
_TEXTS: dict[int, tuple[weakref.ref[Case], weakref.ref[Suite], str]] = {}
_TEXTS_MAX = 20_000
_TEXT_CHARS_MAX = 16 * 1024 * 1024
_text_chars = 0


def case_text(case: Case, suite: Suite) -> str:
    """The canonical JSON of `case_identity(case, suite)`."""
    global _text_chars
    known = _TEXTS.get(id(case))
    if known is not None and known[0]() is case and known[1]() is suite:
        return known[2]
    text = canonical_json(case_identity(case, suite))
    if len(_TEXTS) >= _TEXTS_MAX or _text_chars + len(text) > _TEXT_CHARS_MAX:
        _TEXTS.clear()
        _text_chars = 0
    _TEXTS[id(case)] = (weakref.ref(case), weakref.ref(suite), text)
    _text_chars += len(text)
    return text


def cases_text(cases: Iterable[Case], suite: Suite) -> str:
    """The canonical JSON of the list of `cases`' identities (a list's text is its
    items' texts, comma-separated, in brackets)."""
    return "[" + ",".join(case_text(case, suite) for case in cases) + "]"


def public_case_digest(case: Case, suite: Suite) -> str:
    return hashlib.sha256(case_text(case, suite).encode("utf-8")).hexdigest()


def holdout_case_digest(secret: bytes, identity: Any) -> str:
    """HMAC-SHA256 of a holdout case's canonical identity under the store's secret."""
    return holdout_text_digest(secret, canonical_json(identity))


def holdout_text_digest(secret: bytes, text: str) -> str:
    """`holdout_case_digest` of the identity whose canonical JSON is `text`."""
    return hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()


def suite_digests(suite: Suite) -> SuiteDigests:
    spec_doc = {k: v for k, v in suite.document.items() if k not in ("checks", "public", "holdout")}
    spec = digest(_inline_refs(spec_doc, suite.schema_files))
    # The canonical text of {"holdout": …, "public": [cases]}, its keys in order,
    # composed from the cases' own texts.
    if suite.holdout_file is not None:
        # A pool's subset size decides which cases an epoch grades: it is data. Without a
        # pool the text (and digest) is a stored file's as it always was.
        pool = suite.holdout_pool
        cut = "" if pool is None else ',"pool":' + canonical_json({"subset": pool.subset})
        holdout = '{"file":' + cases_text(suite.holdout_file, suite) + cut + "}"
    elif suite.holdout_generator is not None:
        generated = suite.holdout_generator
        holdout = canonical_json(
            {
                "generate": {
                    "count": generated.count,
                    "case": _with_generators(generated.template, suite),
                }
            }
        )
    else:
        holdout = "null"
    # A loader's source is part of the dataset as well as its cases; suites without
    # loaders keep the text (and digest) they always had.
    loaders = ',"loaders":' + canonical_json(suite.loaders) if suite.loaders else ""
    dataset_text = (
        '{"holdout":' + holdout + loaders + ',"public":' + cases_text(suite.public, suite) + "}"
    )
    dataset = hashlib.sha256(dataset_text.encode("utf-8")).hexdigest()
    own_checks = {
        "public": [[c.id, c.raw["checks"]] for c in suite.public if "checks" in c.raw],
        "holdout": [[c.id, c.raw["checks"]] for c in suite.holdout_file or () if "checks" in c.raw],
        "generated": (
            suite.holdout_generator.template.get("checks", [])
            if suite.holdout_generator is not None
            else []
        ),
    }
    checks = digest(
        {
            "grading_rules_version": GRADING_RULES_VERSION,
            "checks": list(suite.check_definitions),
            "case_checks": own_checks,
            # Trusted extensions are part of what grades: their source.
            "extensions": suite.extensions,
            "output_schema": suite.output_schema,
        }
    )
    return SuiteDigests(spec, dataset, checks, combined_digest(spec, dataset, checks))


def combined_digest(spec: str, dataset: str, checks: str) -> str:
    """The suite digest of its three parts (an imported report's is recomputed with this)."""
    return digest({"spec": spec, "dataset": dataset, "checks": checks})


def holdout_seed(secret: bytes, suite_id: str, version: int, epoch: int, index: int) -> int:
    """Seed `index` of holdout `epoch`: never shown to agent authors."""
    mac = hmac.new(
        secret, canonical_json([suite_id, version, epoch, index]).encode("utf-8"), hashlib.sha256
    )
    return int.from_bytes(mac.digest()[:8], "big")


def _seeded(node: Any, seed: int) -> Any:
    if isinstance(node, dict):
        if "$fixture" in node or "$truth" in node:
            return {**node, "seed": seed}
        return {k: _seeded(v, seed) for k, v in node.items()}
    if isinstance(node, list):
        return [_seeded(v, seed) for v in node]
    return node


def generated_holdout(suite: Suite, secret: bytes, epoch: int) -> tuple[Case, ...]:
    """The holdout cases of `epoch`: the same secret and epoch give the same cases.

    Ids and seeds are the operator's: never shown to agent authors.
    """
    if suite.holdout_generator is None:
        return ()
    return tuple(
        generated_case(
            suite,
            holdout_seed(secret, suite.id, suite.version, epoch, index),
            f"e{epoch}-{index:04d}",
        )
        for index in range(suite.holdout_generator.count)
    )


def generated_case(suite: Suite, seed: int, case_id: str) -> Case:
    """One instance of the suite's holdout generator, from `seed` (a holdout case)."""
    spec = suite.holdout_generator
    if spec is None:
        raise ValueError(f"suite {suite.key} generates no holdout")
    raw = {
        "id": case_id,
        "input": _seeded(spec.template["input"], seed),
        "expected": _seeded(spec.template["expected"], seed),
        "tags": list(spec.template.get("tags", [])),
    }
    return Case(
        id=raw["id"],
        split="holdout",
        input=raw["input"],
        expected=raw["expected"],
        tags=tuple(raw["tags"]),
        checks=spec.checks,
        raw=raw,
    )
