"""A stored row and the frozen dataclass a registry hands out: each made from the other
by the names they share, so a field shown as it is stored is named once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import inspect

from records._models import Base

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

V = TypeVar("V", bound="DataclassInstance")
R = TypeVar("R", bound=Base)


def from_row(cls: type[V], row: object, **given: object) -> V:
    """`cls` with each field read from the row's column of the same name, but for the
    fields in `given`: a column named otherwise, or one its value converts.

    The dataclass's field list is the one place that says which columns it shows. mypy
    cannot see that a column's type is its field's: tests/records/test_rows.py holds
    every such pair of types equal.
    """
    return cls(**_read(cls.__name__, (f.name for f in fields(cls)), row, given))


def to_row(model: type[R], value: object, **given: object) -> R:
    """A new `model` row with each column read from `value`'s attribute of the same name,
    but for the columns in `given`: one named otherwise, or one the value does not hold.

    The model's columns are the one list of what a row holds (its constructor takes any
    keywords, so mypy never checked them there either); a column `value` lacks and
    `given` does not set is an AttributeError, not a row missing it.
    """
    columns = (c.key for c in inspect(model).column_attrs)
    return model(**_read(model.__name__, columns, value, given))


def _read(
    what: str, names: Iterable[str], source: object, given: dict[str, object]
) -> dict[str, object]:
    names = list(names)
    unknown = sorted(set(given) - set(names))
    if unknown:  # a misspelt one would otherwise be read from `source` unnoticed
        raise TypeError(f"{what} has no field {', '.join(unknown)}")
    return {name: given[name] if name in given else getattr(source, name) for name in names}
