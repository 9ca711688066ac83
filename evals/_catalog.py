"""The catalog: the names suites and manifests may use, read from the code's own registries.

`holon catalog` prints it. Nothing here restates a list: the check DSL's
words come from the declarations its compiler accepts
(`evals.checks._signatures`), the normalisers from theirs, the fixture
generators from their registry, the agent protocols from the manifest's, and
the trusted extensions from the `extensions:` block of each installed suite's
own `suite.yaml`, as the store keeps it.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from schema.errors import HolonError

if TYPE_CHECKING:
    from evals.checks._signatures import Signature
    from records import Store

__all__ = ["catalog", "fixture_generators"]


def _words(signatures: dict[str, Signature]) -> list[dict[str, Any]]:
    return [
        {"name": name, "takes": s.takes, "holds": s.holds, "modifiers": list(s.modifiers)}
        for name, s in sorted(signatures.items())
    ]


def check_words() -> dict[str, Any]:
    """The check DSL: predicates, combinators and quantifiers with what each takes, its
    modifiers, and the normalisers `normalize:` names."""
    from evals.checks._normalize import NORMALIZERS
    from evals.checks._signatures import (
        COMBINATOR_SIGNATURES,
        MODIFIER_SIGNATURES,
        PREDICATE_SIGNATURES,
        QUANTIFIER_SIGNATURES,
    )

    return {
        "predicates": _words(PREDICATE_SIGNATURES),
        "combinators": _words(COMBINATOR_SIGNATURES),
        "quantifiers": _words(QUANTIFIER_SIGNATURES),
        "modifiers": [
            {"name": name, "takes": takes} for name, takes in sorted(MODIFIER_SIGNATURES.items())
        ],
        "normalizers": sorted(NORMALIZERS),
    }


def fixture_generators() -> list[dict[str, Any]]:
    """The registered fixture generators (the built-in ones, and any a trusted suite
    registered in this process)."""
    from evals.fixtures import generators

    return [
        {
            "name": g.name,
            "version": g.version,
            "media_type": g.media_type or "application/json",
            "description": g.description,
            "params_schema": dict(g.params_schema),
        }
        for g in generators().values()
    ]


def agent_protocols() -> list[dict[str, Any]]:
    """The protocols a manifest may name: the section each reads, and whether the agent
    describes itself by a card a certificate binds."""
    from agents import CARD_PROTOCOLS, PROTOCOL_SECTIONS, PROTOCOLS

    return [
        {"name": name, "section": PROTOCOL_SECTIONS.get(name), "card": name in CARD_PROTOCOLS}
        for name in PROTOCOLS
    ]


def installed_extensions(store: Store) -> list[dict[str, Any]]:
    """The trusted graders, generators and loaders the active version of each installed suite
    names, with the sha256 of the file as installed."""
    from evals.suites import EXTENSION_KINDS
    from evals.suites._load import SUITE_FILE
    from schema import parse_document

    rows: list[dict[str, Any]] = []
    for suite in store.suites.list():
        files = store.suites.files(suite.id, suite.version)
        where = f"{suite.id} v{suite.version} {SUITE_FILE}"
        try:
            block = parse_document(files.get(SUITE_FILE, ""), where).value.get("extensions")
        except (HolonError, AttributeError):  # installed suites were valid; say so if not
            raise HolonError(f"installed suite {where} cannot be read") from None
        for kind in EXTENSION_KINDS:
            for name, relative in sorted(((block or {}).get(kind) or {}).items()):
                text = files.get(relative)
                rows.append(
                    {
                        "suite": suite.id,
                        "version": suite.version,
                        "kind": kind,
                        "name": name,
                        "file": relative,
                        "sha256": None
                        if text is None
                        else hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    }
                )
    return rows


def catalog(store: Store | None) -> dict[str, Any]:
    """The whole catalog; `store` None (none exists) lists no installed extensions."""
    return {
        "checks": check_words(),
        "extensions": {
            "store": store is not None,
            "items": [] if store is None else installed_extensions(store),
        },
        "fixtures": fixture_generators(),
        "protocols": agent_protocols(),
    }
