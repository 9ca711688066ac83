"""A stored row and the frozen dataclass a registry hands out: each made from the other
by the names they share, so a field shown as it is stored is named once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

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
    return cls(**_values(cls, _fields(cls), lambda name: getattr(row, name), given))


def from_mapping(cls: type[V], row: Mapping[str, Any], **given: object) -> V:
    """`from_row` for a row read as a mapping of its columns (a statement's, not the
    ORM's); its values are Any, so mypy never saw their types there either."""
    return cls(**_values(cls, _fields(cls), row.__getitem__, given))


def to_row(model: type[R], value: object, **given: object) -> R:
    """A new `model` row with each column read from `value`'s attribute of the same name,
    but for the columns in `given`: one named otherwise, or one the value does not hold.

    The model's columns are the one list of what a row holds (its constructor takes any
    keywords, so mypy never checked them there either); a column `value` lacks and
    `given` does not set is an AttributeError, not a row missing it.
    """
    columns = [c.key for c in inspect(model).column_attrs]
    return model(**_values(model, columns, lambda name: getattr(value, name), given))


def _fields(cls: type[DataclassInstance]) -> list[str]:
    return [f.name for f in fields(cls)]


def _values(
    made: type, names: list[str], read: Callable[[str], Any], given: dict[str, object]
) -> dict[str, object]:
    unknown = sorted(set(given) - set(names))
    if unknown:  # a misspelt one would otherwise be read from the row unnoticed
        raise TypeError(f"{made.__name__} has no field {', '.join(unknown)}")
    return {name: given[name] if name in given else read(name) for name in names}
