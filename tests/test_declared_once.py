"""Facts declared once: the role sets that admit a request, and the JSON object type.

A second declaration drifts (the role sets were written out twelve times in eight
modules): access and the kinds of role are `gateway._roles`,
and a JSON object is `schema.jsontext.JSONObject`.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("schema", "agents", "records", "evals", "gateway")
# Each rule: what a second declaration looks like, and the one module allowed it.
RULES = {
    "JSONObject": (re.compile(r"^JSONObject\b.*=", re.M), "schema/jsontext.py"),
    "a set of role kinds": (
        re.compile(r"frozenset\(\{\s*\"(operator|org|caller)\"", re.M),
        "gateway/_roles.py",
    ),
    "the kinds of role": (
        re.compile(r"Literal\[\"operator\", \"org\", \"caller\"\]"),
        "gateway/_roles.py",
    ),
}


def declarations(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {name: [] for name in RULES}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for name, (pattern, _) in RULES.items():
                if pattern.search(text):
                    found[name].append(path.relative_to(root).as_posix())
    return found


def test_each_is_declared_in_its_one_module() -> None:
    assert declarations(ROOT) == {name: [home] for name, (_, home) in RULES.items()}


def test_a_second_declaration_is_found(tmp_path: Path) -> None:
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "gateway" / "_x.py").write_text(
        'JSONObject = dict[str, Any]\nADMIN = frozenset({"operator"})\n'
    )
    assert declarations(tmp_path) == {
        "JSONObject": ["gateway/_x.py"],
        "a set of role kinds": ["gateway/_x.py"],
        "the kinds of role": [],
    }
