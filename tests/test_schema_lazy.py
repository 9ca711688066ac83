"""The schema package's public face loads its names on first use (PEP 562), exporting
exactly what it did eagerly, and `import schema.errors` loads no validator."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import schema


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
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, schema.errors, schema.jsontext; "
            "print(json.dumps(sorted(m for m in ('jsonschema', 'ruamel.yaml', 'schema._registry') "
            "if m in sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(shown.stdout) == []
