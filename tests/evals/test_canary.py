"""Canary cases (evals/_canary.py): from the holdout source, never an eval's instances."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from evals._canary import canary_case, has_canaries
from evals._cell import prepare
from evals.fixtures import FixtureCache
from evals.suites import generated_holdout, load_suite
from schema.canonical import canonical_json
from tests.evals.suites._make import SUITE_YAML, case, make_suite

ROOT = Path(__file__).resolve().parents[2]
SECRET = b"\x07" * 32


def test_generated_canaries_are_fresh_instances_never_an_evals(tmp_path: Path) -> None:
    suite = load_suite(ROOT / "examples" / "suites" / "ticket-classify")
    cache = FixtureCache(tmp_path / "fixtures")
    evals = {
        canonical_json(prepare(suite, c, cache).input)
        for epoch in range(4)
        for c in generated_holdout(suite, SECRET, epoch)
    }
    canaries = [canary_case(suite, SECRET, draw) for draw in range(200)]
    inputs = []
    for draw, canary in enumerate(canaries):
        assert canary is not None
        assert (canary.id, canary.split) == (f"canary-{draw}", "holdout")
        inputs.append(canonical_json(prepare(suite, canary, cache).input))
    assert not evals & set(inputs)
    assert len(set(inputs)) >= 195  # fresh draws (a phrase bank may repeat a short ticket)
    # The n-th canary is the same case for the same secret, another for another.
    again = canary_case(suite, SECRET, 17)
    assert again is not None and again.input == canaries[17].input  # type: ignore[union-attr]
    other = canary_case(suite, b"\x08" * 32, 17)
    assert other is not None
    assert prepare(suite, other, cache).input != prepare(suite, again, cache).input


def test_a_fixed_holdout_lends_its_cases_evenly(tmp_path: Path) -> None:
    holdout = [case(f"h{i}", f"Refund please {i}", "billing") for i in range(6)]
    suite = load_suite(make_suite(tmp_path, public=[case("p0")], holdout=holdout))
    assert has_canaries(suite)
    lent: Counter[str] = Counter()
    for draw in range(600):
        canary = canary_case(suite, SECRET, draw)
        assert canary is not None and canary in suite.holdout_file  # type: ignore[operator]
        lent[canary.id] += 1
    assert set(lent) == {f"h{i}" for i in range(6)}
    assert min(lent.values()) >= 70  # 100 each expected


def test_a_pool_lends_only_the_subset_its_record_was_measured_on(tmp_path: Path) -> None:
    """A later subset's case as a canary would show an author that epoch's inputs before
    any eval of it; a used-up pool lends nothing."""
    from evals.suites import epoch_holdout
    from tests.integrity.test_pool import POOL, pool_yaml

    suite = load_suite(make_suite(tmp_path, suite_yaml=pool_yaml(3), holdout=POOL))
    assert has_canaries(suite)
    for epoch in range(3):
        subset = {c.id for c in epoch_holdout(suite, SECRET, epoch)}
        lent = [canary_case(suite, SECRET, draw, epoch=epoch) for draw in range(60)]
        assert {c.id for c in lent if c is not None} == subset and None not in lent
    assert canary_case(suite, SECRET, 0, epoch=3) is None


def test_a_suite_without_a_holdout_has_no_canaries(tmp_path: Path) -> None:
    text = SUITE_YAML.replace("holdout: {file: cases/holdout.jsonl}\n", "")
    assert text != SUITE_YAML
    suite = load_suite(make_suite(tmp_path, suite_yaml=text, public=[case("p0")]))
    assert not has_canaries(suite)
    assert canary_case(suite, SECRET, 0) is None
