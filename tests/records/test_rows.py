"""records._rows: what mypy cannot check in from_row, held here, and what both read.

from_row reads a dataclass's fields from the row's columns of the same names, so mypy
sees neither the names nor the types. Each use is listed below with the fields it gives
itself; every other field must be a column of the row of the very same type.
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Mapped

import records
from records._agents import VersionInfo
from records._canaries import CanaryRun, CanaryStanding
from records._eval_values import EvalInfo
from records._exposure import ExposureInfo, ExposureResetInfo, InstanceSetInfo, SpentUnit
from records._exposure_models import (
    EvalExposure,
    ExposureReset,
    HoldoutExposure,
    InstanceSetExposure,
)
from records._identities import IdentityInfo
from records._keys import KeyInfo
from records._mandates import MandateInfo, MandateRevision
from records._models import (
    AgentIdentityRow,
    AgentVersion,
    CanaryRunRow,
    CanaryStateRow,
    EvalRun,
    MandateRevisionRow,
    MandateRow,
    SigningKeyRow,
    SuiteVersionRow,
    TokenRow,
)
from records._rows import from_mapping, from_row, to_row
from records._suites import InstalledSuite
from records._tokens import TokenInfo

# (dataclass, row, the fields its from_row call gives rather than reads)
USES: list[tuple[type[Any], type[Any], set[str]]] = [
    (CanaryRun, CanaryRunRow, {"request_id", "outcome", "cost_usd", "at"}),
    (CanaryStanding, CanaryStateRow, {"state", "drift"}),
    (EvalInfo, EvalRun, {"status"}),
    (VersionInfo, AgentVersion, set()),
    (SpentUnit, EvalExposure, set()),
    (ExposureInfo, HoldoutExposure, set()),
    (InstanceSetInfo, InstanceSetExposure, set()),
    (ExposureResetInfo, ExposureReset, set()),
    (IdentityInfo, AgentIdentityRow, {"not_advertised"}),
    (KeyInfo, SigningKeyRow, set()),
    (MandateInfo, MandateRow, set()),
    (MandateRevision, MandateRevisionRow, set()),
    (TokenInfo, TokenRow, set()),
    (InstalledSuite, SuiteVersionRow, {"id", "epoch_started_at", "active"}),
]


@pytest.mark.parametrize(("cls", "row", "given"), USES, ids=[u[0].__name__ for u in USES])
def test_every_field_read_is_a_column_of_its_type(
    cls: type[Any], row: type[Any], given: set[str]
) -> None:
    names = {f.name for f in fields(cls)}
    assert given <= names
    shown = typing.get_type_hints(cls)
    columns = typing.get_type_hints(row)
    for name in sorted(names - given):
        assert name in columns, f"{row.__name__} has no column {name} for {cls.__name__}"
        column = columns[name]
        assert typing.get_origin(column) is Mapped
        assert typing.get_args(column)[0] == shown[name], f"{cls.__name__}.{name}"


def test_every_use_is_listed() -> None:
    """A new from_row call joins USES, so its types are checked too."""
    used: set[str] = set()
    for path in Path(records.__file__).parent.glob("*.py"):
        used.update(re.findall(r"\bfrom_row\(\s*(\w+),", path.read_text(encoding="utf-8")))
    assert used == {u[0].__name__ for u in USES}


@dataclass(frozen=True)
class _Shown:
    id: str
    at: str


class _Row:
    id = "r1"
    at = "column"
    created_at = "created"


def test_given_fields_win_and_the_rest_are_read() -> None:
    assert from_row(_Shown, _Row()) == _Shown("r1", "column")
    assert from_row(_Shown, _Row(), at=_Row.created_at) == _Shown("r1", "created")


def test_a_mapping_is_read_by_key() -> None:
    row = {"id": "r1", "at": "column", "extra": "not read"}
    assert from_mapping(_Shown, row) == _Shown("r1", "column")
    assert from_mapping(_Shown, row, at="given") == _Shown("r1", "given")
    with pytest.raises(KeyError, match="at"):
        from_mapping(_Shown, {"id": "r1"})


def test_a_given_name_that_is_no_field_is_refused() -> None:
    with pytest.raises(TypeError, match="_Shown has no field a, created"):
        from_row(_Shown, _Row(), created="x", a=1)


def test_a_row_reads_each_column_but_the_given_ones() -> None:
    row = to_row(SigningKeyRow, _Key(), kid="given")
    assert (row.kid, row.public_jwk, row.private_key) == ("given", {"kty": "OKP"}, b"k")
    assert (row.created_at, row.retired_at) == ("then", None)


def test_a_row_lacking_a_column_or_given_a_stranger_is_refused() -> None:
    with pytest.raises(AttributeError, match="kid"):
        to_row(SigningKeyRow, _Shown("r1", "at"))
    with pytest.raises(TypeError, match="SigningKeyRow has no field key"):
        to_row(SigningKeyRow, _Key(), key="x")


class _Key:
    kid = "read"
    public_jwk = {"kty": "OKP"}
    private_key = b"k"
    created_at = "then"
    retired_at = None
