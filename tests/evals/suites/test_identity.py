"""Suite identity: digests and holdout epochs, as docs/integrity.md and docs/suites.md say."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

from evals.suites import (
    generated_holdout,
    holdout_case_digest,
    holdout_seed,
    load_suite,
    public_case_digest,
    suite_digests,
)
from schema.canonical import canonical_json
from tests.evals.suites._make import SUITE_YAML, case, make_suite

ROOT = Path(__file__).resolve().parents[3]
INVOICES = ROOT / "examples" / "suites" / "invoice-extract"


def test_digests_are_stable_and_ignore_spelling(tmp_path: Path) -> None:
    a = suite_digests(load_suite(make_suite(tmp_path / "a")))
    # Same content, other key order and number spelling in the suite document.
    respelled = (
        SUITE_YAML.replace("threshold: 0.8", "threshold: 0.80")
        .replace("title: A tiny suite\n", "")
        .replace(
            "capability: ticket.classify\n", "capability: ticket.classify\ntitle: A tiny suite\n"
        )
    )
    b = suite_digests(load_suite(make_suite(tmp_path / "b", suite_yaml=respelled)))
    assert a == b


def test_each_part_changes_its_own_digest(tmp_path: Path) -> None:
    base = suite_digests(load_suite(make_suite(tmp_path / "a")))
    other_case = suite_digests(
        load_suite(make_suite(tmp_path / "b", public=[case("p1"), case("p3")]))
    )
    assert other_case.dataset != base.dataset and other_case.spec == base.spec
    assert other_case.checks == base.checks and other_case.suite != base.suite
    stricter = SUITE_YAML.replace("equals: {path: $.expected.label}", "equals: other")
    other_check = suite_digests(load_suite(make_suite(tmp_path / "c", suite_yaml=stricter)))
    assert other_check.checks != base.checks and other_check.dataset == base.dataset
    limits = SUITE_YAML.replace('max_cost_usd: "0.01"', 'max_cost_usd: "0.02"')
    other_spec = suite_digests(load_suite(make_suite(tmp_path / "d", suite_yaml=limits)))
    assert other_spec.spec != base.spec and other_spec.checks == base.checks


def test_public_case_digest_is_sha256_of_canonical_json(tmp_path: Path) -> None:
    suite = load_suite(make_suite(tmp_path))
    first = suite.public[0]
    expected = hashlib.sha256(canonical_json(first.raw).encode()).hexdigest()
    assert public_case_digest(first, suite) == expected


def test_holdout_case_digests_need_the_secret() -> None:
    identity = {"id": "h1", "input": {"subject": "x"}}
    one = holdout_case_digest(b"secret-1", identity)
    assert one == hmac.new(b"secret-1", canonical_json(identity).encode(), "sha256").hexdigest()
    assert holdout_case_digest(b"secret-2", identity) != one
    assert one != hashlib.sha256(canonical_json(identity).encode()).hexdigest()


def test_holdout_seeds_follow_the_formula() -> None:
    mac = hmac.new(b"k", json.dumps(["s", 3, 2, 7], separators=(",", ":")).encode(), "sha256")
    assert holdout_seed(b"k", "s", 3, 2, 7) == int.from_bytes(mac.digest()[:8], "big")
    assert holdout_seed(b"k", "s", 3, 2, 7) != holdout_seed(b"k", "s", 3, 3, 7)


def test_generated_holdouts_are_epochs_of_the_secret() -> None:
    suite = load_suite(INVOICES)
    assert suite.holdout_generator is not None
    epoch0 = generated_holdout(suite, b"secret", 0)
    assert len(epoch0) == suite.holdout_generator.count
    assert generated_holdout(suite, b"secret", 0) == epoch0  # resume regenerates identical cases
    seeds0 = {c.input["document"]["seed"] for c in epoch0}
    seeds1 = {c.input["document"]["seed"] for c in generated_holdout(suite, b"secret", 1)}
    other = {c.input["document"]["seed"] for c in generated_holdout(suite, b"other", 0)}
    assert len(seeds0) == len(epoch0) and not seeds0 & seeds1 and not seeds0 & other
    assert all(c.split == "holdout" for c in epoch0)


def test_fixture_cases_hash_as_references_not_bytes() -> None:
    from dataclasses import replace

    suite = load_suite(INVOICES)
    digests = suite_digests(suite)

    def with_generator(**changes: object) -> object:
        fixtures = {
            name: replace(spec, generator=replace(spec.generator, **changes))
            for name, spec in suite.fixtures.items()
        }
        return suite_digests(replace(suite, fixtures=fixtures))

    # Another renderer (a reportlab upgrade: other bytes) keeps every digest;
    # another generator version (other meaning) changes the dataset's.
    assert with_generator(renderer="reportlab 99.0") == digests
    bumped = with_generator(version=99)
    assert bumped.dataset != digests.dataset  # type: ignore[attr-defined]
    assert bumped.spec == digests.spec  # type: ignore[attr-defined]
    first = suite.public[0]
    assert "$fixture" in json.dumps(first.raw)
    assert len(canonical_json(first.raw)) < 2000  # no PDF in what is hashed
