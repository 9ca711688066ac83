"""The overfit rule (docs/evals.md): its reference table, named points, Holm, exactness."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals._fisher import TailP, fisher_one_sided
from evals._overfit import ALPHA, OverfitVerdict, SuiteSplits, overfit_verdicts
from evals._stats import round_half_up, rounded
from schema.jsontext import dumps


def splits(
    suite_id: str,
    public: tuple[Fraction | int, int],
    holdout: tuple[Fraction | int, int],
    delta: str = "0.15",
) -> SuiteSplits:
    return SuiteSplits(
        suite_id=suite_id,
        public_x=Fraction(public[0]),
        public_n=public[1],
        holdout_x=Fraction(holdout[0]),
        holdout_n=holdout[1],
        delta=Decimal(delta),
    )


def alone(
    public: tuple[Fraction | int, int], holdout: tuple[Fraction | int, int]
) -> OverfitVerdict:
    return overfit_verdicts([splits("s", public, holdout)])["s"]


# (public passed, public n, holdout n, largest holdout count that warns), δ = 0.15, S = 1.
REFERENCE = [
    (18, 20, 20, 11),
    (45, 50, 50, 36),
    (90, 100, 100, 75),
    (20, 20, 20, 15),
    (18, 20, 50, 31),
    (45, 50, 20, 13),
    (90, 100, 50, 37),
]


@pytest.mark.parametrize(("x1", "n1", "n2", "largest"), REFERENCE)
def test_reference_table(x1: int, n1: int, n2: int, largest: int) -> None:
    for x2 in range(largest + 1):
        assert alone((x1, n1), (x2, n2)).verdict == "warn", x2
    assert alone((x1, n1), (largest + 1, n2)).verdict != "warn"


def test_18_of_20_against_12_of_20_is_inconclusive() -> None:
    v = alone((18, 20), (12, 20))
    assert v.verdict == "inconclusive"
    assert v.gap == Fraction(3, 10)
    assert v.newcombe_positive is True
    assert v.newcombe_ci95 is not None
    assert rounded(v.newcombe_ci95[0], 3) == Decimal("0.029")
    assert v.p_value is not None
    assert rounded(v.p_value.exact(), 3) == Decimal("0.032")
    assert not v.p_value.below(ALPHA)
    assert not v.significant


def test_18_of_20_against_17_of_20_is_none() -> None:
    v = alone((18, 20), (17, 20))
    assert v.verdict == "none"
    assert v.gap == Fraction(1, 20)
    assert v.p_value is not None  # still tested and reported


def test_newcombe_alone_can_block_a_warning() -> None:
    # 20/20 vs 16/20: gap 0.20, Fisher p = 0.053 and Newcombe's lower bound -0.0005.
    v = alone((20, 20), (16, 20))
    assert v.verdict == "inconclusive"
    assert v.newcombe_positive is False


def test_a_gap_of_exactly_delta_counts() -> None:
    # 0.95 - 0.80 is 0.1499999... in floats; exactly 3/20 here.
    assert 0.95 - 0.80 < 0.15
    v = alone((95, 100), (80, 100))
    assert v.gap == Fraction(3, 20) == v.delta
    assert v.verdict == "warn"
    assert alone((19, 20), (16, 20)).verdict == "inconclusive"  # exactly δ, tests fail
    # A δ a hair above the gap: nothing.
    raised = overfit_verdicts([splits("s", (95, 100), (80, 100), "0.1500000000000000000001")])
    assert raised["s"].verdict == "none"


def test_suite_delta() -> None:
    assert overfit_verdicts([splits("s", (18, 20), (11, 20), "0.4")])["s"].verdict == "none"
    assert overfit_verdicts([splits("s", (20, 20), (14, 20), "0.3")])["s"].verdict == "warn"


def test_fractional_counts_round_half_up_for_fisher() -> None:
    # Holdout x = 2.5 (a case passing 1 of 2 runs): Fisher sees 3, not 2 (banker's rounding).
    v = alone((10, 10), (Fraction(5, 2), 10))
    assert v.p_value is not None
    assert v.p_value.exact() == fisher_one_sided(10, 10, 3, 10)
    assert v.p_value.exact() != fisher_one_sided(10, 10, 2, 10)
    # ...while the gap stays exact.
    assert v.gap == Fraction(3, 4)
    w = alone((Fraction(35, 2), 20), (10, 20))  # public 17.5 -> 18
    assert w.p_value is not None and w.p_value.exact() == fisher_one_sided(18, 20, 10, 20)
    assert w.public_rate == Fraction(7, 8)


def test_empty_split_is_none() -> None:
    for public, holdout in [((0, 0), (5, 10)), ((9, 10), (0, 0)), ((0, 0), (0, 0))]:
        v = alone(public, holdout)
        assert v.verdict == "none"
        assert v.gap is None and v.p_value is None and v.tests == 0
        assert v.to_json()["gap"] is None
    assert alone((9, 10), (0, 0)).public_rate == Fraction(9, 10)


def test_holdout_better_than_public_is_none() -> None:
    v = alone((5, 20), (19, 20))
    assert v.verdict == "none"
    assert v.gap is not None and v.gap < 0


# Fisher p-values of the suites used below (one-sided, S = 1):
# 18/20 vs 11/20: 0.0155 (warns alone)      20/20 vs 14/20: 0.0101
# 48/50 vs 40/50: 0.0139                    16/20 vs 3/20: 0.00004
# 18/20 vs 17/20: large (gap < δ)           950/1000 vs 850/1000: 3e-14 (gap 0.10 < δ)
A = ((18, 20), (11, 20))
C = ((20, 20), (14, 20))
D = ((48, 50), (40, 50))
E = ((16, 20), (3, 20))
QUIET = ((18, 20), (17, 20))
BIG = ((950, 1000), (850, 1000))


def family(*suites: tuple[tuple[int, int], tuple[int, int]]) -> list[OverfitVerdict]:
    given = [splits(f"s{i}", public, holdout) for i, (public, holdout) in enumerate(suites)]
    verdicts = overfit_verdicts(given)
    return [verdicts[s.suite_id] for s in given]


def test_holm_two_suites_a_p_that_passes_alone_fails() -> None:
    assert family(A)[0].verdict == "warn"
    a, quiet = family(A, QUIET)
    # Smallest p (0.0155) now meets 0.025 / 2.
    assert a.verdict == "inconclusive"
    assert a.alpha == ALPHA / 2 and a.tests == 2
    assert a.p_holm is not None and a.p_holm.exact() == 2 * fisher_one_sided(18, 20, 11, 20)
    assert quiet.verdict == "none" and quiet.alpha == ALPHA


def test_holm_two_suites_both_pass() -> None:
    a, c = family(A, C)
    # 0.0101 < 0.0125, then 0.0155 < 0.025.
    assert (c.verdict, c.alpha) == ("warn", ALPHA / 2)
    assert (a.verdict, a.alpha) == ("warn", ALPHA)


def test_holm_stops_at_the_first_non_rejection() -> None:
    a, d = family(A, D)
    # 0.0139 >= 0.0125 stops the procedure: A's 0.0155 < 0.025 is not rejected.
    assert d.verdict == "inconclusive"
    assert a.verdict == "inconclusive"
    assert a.p_value is not None and a.p_value.below(ALPHA)
    assert a.p_holm is not None and not a.p_holm.below(ALPHA)  # the adjusted p says so


def test_holm_three_suites() -> None:
    assert family(C, QUIET)[0].verdict == "warn"  # 0.0101 < 0.0125
    c, _, _ = family(C, QUIET, QUIET)
    assert c.verdict == "inconclusive"  # 0.0101 >= 0.025 / 3
    assert c.alpha == ALPHA / 3 and c.tests == 3
    # All three pass the step-down: 0.00004 < 0.0083, 0.0101 < 0.0125, 0.0155 < 0.025.
    assert [v.verdict for v in family(E, C, A)] == ["warn", "warn", "warn"]


def test_holm_family_counts_suites_below_delta_but_not_empty_ones() -> None:
    # BIG's gap is 0.10 (< δ) but its p takes the first, strictest step for C and A.
    big, c, a = family(BIG, C, A)
    assert big.verdict == "none" and big.alpha == ALPHA / 3
    assert (c.verdict, a.verdict) == ("warn", "warn")
    verdicts = overfit_verdicts(
        [splits("a", *A), splits("empty", (10, 10), (0, 0)), splits("b", (9, 10), (0, 0))]
    )
    assert verdicts["a"].verdict == "warn" and verdicts["a"].tests == 1


def test_holm_ties_are_ordered_by_suite_id() -> None:
    verdicts = overfit_verdicts([splits("b", *A), splits("a", *A)])
    assert verdicts["a"].alpha == ALPHA / 2 and verdicts["b"].alpha == ALPHA
    # Both: 2p = 0.031 >= 0.025, so neither warns, whatever the order.
    assert {v.verdict for v in verdicts.values()} == {"inconclusive"}


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        splits("s", (21, 20), (1, 20))
    with pytest.raises(ValueError):
        splits("s", (1, 20), (-1, 20))
    with pytest.raises(ValueError):
        splits("s", (1, 20), (1, 20), "0")
    with pytest.raises(ValueError):
        overfit_verdicts([splits("s", *A), splits("s", *C)])


def test_to_json_and_detail() -> None:
    v = alone((18, 20), (10, 20))
    assert v.verdict == "warn"
    body = v.to_json()
    assert list(body)[:3] == ["verdict", "gap", "p_value"]
    assert body["gap"] == Decimal("0.4000")
    assert body["p_value"] == Decimal("0.006907")  # 4 significant digits
    assert body["alpha"] == Decimal("0.02500")
    assert body["public"] == {"rate": Decimal("0.9000"), "total": 20}
    assert body["holdout"] == {"rate": Decimal("0.5000"), "total": 20}
    assert body["tests"] == 1
    dumps(body)  # JSON-ready
    detail = v.detail()
    assert "gap 40.0%" in detail and "p = 0.006907" in detail and "1 suite," in detail
    tiny = alone((20, 20), (0, 20)).to_json()["p_value"]
    assert isinstance(tiny, Decimal) and 0 < tiny < Decimal("1e-10")


# The overfit rule as it was when each p was an exact Fraction: the reference the
# intervals' verdicts, steps and digits are held to.


def _old_significant(value: Fraction, digits: int = 4) -> Decimal:
    if value == 0:
        return Decimal(0)
    exponent = len(str(value.numerator)) - len(str(value.denominator))
    if Fraction(10) ** exponent > value:
        exponent -= 1
    return rounded(value, max(0, digits - 1 - exponent))


def _old_holm(suites: list[SuiteSplits]) -> dict[str, tuple[Fraction, Fraction, Fraction]]:
    tested = sorted(
        (
            fisher_one_sided(
                round_half_up(s.public_x), s.public_n, round_half_up(s.holdout_x), s.holdout_n
            ),
            s.suite_id,
        )
        for s in suites
        if s.compared
    )
    holm, running = {}, Fraction(0)
    for rank, (p, suite_id) in enumerate(tested):
        running = max(running, min(Fraction(1), (len(tested) - rank) * p))
        holm[suite_id] = (p, running, ALPHA / (len(tested) - rank))
    return holm


def _same_as_before(suites: list[SuiteSplits]) -> None:
    verdicts = overfit_verdicts(suites)
    holm = _old_holm(suites)
    for s in suites:
        v = verdicts[s.suite_id]
        if s.suite_id not in holm:
            assert v.p_value is None and v.p_holm is None and v.verdict == "none"
            continue
        p, p_holm, alpha = holm[s.suite_id]
        assert v.alpha == alpha and v.tests == len(holm)
        expected = "none"
        if v.gap is not None and v.gap >= v.delta:
            expected = "warn" if v.newcombe_positive and p_holm < ALPHA else "inconclusive"
        assert v.verdict == expected, s
        body = v.to_json()
        shown = [str(_old_significant(x)) for x in (p, p_holm, alpha)]
        assert [str(body[key]) for key in ("p_value", "p_holm", "alpha")] == shown, s
        assert f"p = {shown[0]} (Holm-adjusted {shown[1]} over" in v.detail()


def _wide(x1: int, n1: int, x2: int, n2: int) -> TailP:
    # An interval 5% to 65% wide each side, by table (still holding p), so that neither
    # end is in the order of the p-values: every order, max, side and digit falls back.
    exact = fisher_one_sided(x1, n1, x2, n2)
    below, above = (
        Fraction(5 + 10 * ((x1 + 2 * n1 + 3 * x2 + 5 * n2 + k) % 7), 100) for k in (0, 3)
    )
    return TailP(exact * (1 - below), min(Fraction(1), exact * (1 + above)), (x1, n1, x2, n2))


_counts = st.integers(0, 12).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@st.composite
def _families(draw: st.DrawFn) -> list[SuiteSplits]:
    tables: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for _ in range(draw(st.integers(1, 4))):
        # Often a suite repeats another's counts: equal p-values, ordered by suite id.
        if tables and draw(st.booleans()):
            tables.append(draw(st.sampled_from(tables)))
        else:
            tables.append((draw(_counts), draw(_counts)))
    ids = draw(st.permutations([f"s{i}" for i in range(len(tables))]))
    return [
        splits(i, public, holdout, "0.1") for i, (public, holdout) in zip(ids, tables, strict=True)
    ]


@settings(max_examples=200, deadline=None)
@given(suites=_families(), wide=st.booleans())
def test_verdicts_steps_and_digits_are_the_exact_ones(
    suites: list[SuiteSplits], wide: bool
) -> None:
    """Families of 1 to 4 suites of up to 12 cases a split, their p-values as computed
    and (`wide`) as intervals too wide to decide anything."""
    if wide:
        with mock.patch("evals._overfit.fisher_tail", _wide):
            _same_as_before(suites)
    else:
        _same_as_before(suites)


@pytest.mark.parametrize("wide", [False, True])
def test_families_on_the_boundaries(wide: bool) -> None:
    """p-values equal to ALPHA/k, Holm-adjusted onto ALPHA, tied, mirrored and displayed
    on a rounding tie: the exact p decides, as it did."""
    families = [
        [((1, 1), (0, 39))],  # p = ALPHA
        [((1, 1), (0, 79)), ((1, 1), (0, 39))],  # 2·(1/80) = ALPHA, then 1/40
        [((3, 3), (0, 7)), ((1, 1), (0, 79)), ((1, 1), (0, 39))],  # 3/120, 2/80, 1/40
        [((1, 1), (0, 39)), ((39, 39), (0, 1))],  # different tables, p = 1/40 both
        [((1, 1), (0, 63)), ((1, 1), (0, 127)), ((1, 1), (0, 9))],  # display ties
        [A, A, C, QUIET, BIG],
    ]
    for tables in families:
        suites = [splits(f"s{i}", *table) for i, table in enumerate(tables)]
        if wide:
            with mock.patch("evals._overfit.fisher_tail", _wide):
                _same_as_before(suites)
        else:
            _same_as_before(suites)
