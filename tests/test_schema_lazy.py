"""The schema package's public face loads its names on first use (PEP 562), exporting
exactly what it did eagerly, and `import schema.errors` loads no validator."""

from __future__ import annotations

import importlib

import pytest

import schema
from tests._fresh import loaded_after


def test_every_name_resolves_to_its_home() -> None:
    assert set(schema._HOMES) == set(schema.__all__) - {"__version__", "lazy_names"}
    for name, home in schema._HOMES.items():
        assert getattr(schema, name) is getattr(importlib.import_module(home), name), name
        assert name in dir(schema)


def test_an_unknown_name_is_still_an_error() -> None:
    with pytest.raises(AttributeError):
        schema.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from schema import no_such_name", {})


def test_the_error_tree_loads_no_validator() -> None:
    watched = ("jsonschema", "ruamel.yaml", "schema._registry")
    assert loaded_after("import schema.errors, schema.jsontext", watched) == []
