"""A stored row as the frozen dataclass a registry hands out."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

V = TypeVar("V", bound="DataclassInstance")


def from_row(cls: type[V], row: object, **given: object) -> V:
    """`cls` with each field read from the row's column of the same name, but for the
    fields in `given`: a column named otherwise, or one its value converts.

    The dataclass's field list is the one place that says which columns it shows, so a
    field is not named again in a mapping. mypy cannot see that a column's type is its
    field's: tests/records/test_rows.py holds every such pair of types equal.
    """
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(given) - set(names))
    if unknown:  # a misspelt override would otherwise be read from the row unnoticed
        raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}")
    return cls(**{name: given[name] if name in given else getattr(row, name) for name in names})
