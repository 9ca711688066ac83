"""Bugs the campaign found outside its own files, now fixed: kept as regression tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.checks import compile_checks
from schema.errors import CheckError
from tests.gateway._cli import CLI


@pytest.mark.parametrize("name", [[], {"a": 1}])
def test_a_normalizer_that_is_not_a_name_is_a_check_error(name: object) -> None:
    with pytest.raises(CheckError, match="unknown normalizer"):
        compile_checks([{"path": "$.a", "equals": "x", "normalize": [name]}])


def test_a_key_file_that_is_not_text_is_a_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.key").write_bytes(b"\xff\xfe not a key")
    result = CLI(home)("agents", "list")
    assert result.code == 3
    assert "internal error" not in result.stderr, result.stderr
