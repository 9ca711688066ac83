"""Build small suite directories for tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

INPUT_SCHEMA = {
    "type": "object",
    "required": ["subject"],
    "properties": {
        "subject": {"type": "string"},
        "body": {"type": "string"},
        "document": {"type": "object"},
    },
}
OUTPUT_SCHEMA = {
    "type": "object",
    "required": ["label"],
    "properties": {"label": {"type": "string"}},
}

SUITE_YAML = """\
schema_version: 1
id: tiny
version: 1
capability: ticket.classify
title: A tiny suite
input_schema: {$ref: schemas/input.json}
output_schema: {$ref: schemas/output.json}
limits: {max_cost_usd: "0.01", timeout_s: 5}
threshold: 0.8
checks:
  - {name: label, path: $.output.label, equals: {path: $.expected.label}}
public: {file: cases/public.jsonl}
holdout: {file: cases/holdout.jsonl}
"""


def case(
    case_id: str, subject: str = "hello", label: str = "other", **extra: Any
) -> dict[str, Any]:
    return {
        "id": case_id,
        "input": {"subject": subject, "body": f"{subject}. Thanks."},
        "expected": {"label": label},
        **extra,
    }


def make_suite(
    root: Path,
    *,
    suite_yaml: str = SUITE_YAML,
    public: list[Any] | None = None,
    holdout: list[Any] | None = None,
    public_text: str | None = None,
) -> Path:
    directory = root / "suite"
    (directory / "schemas").mkdir(parents=True, exist_ok=True)
    (directory / "cases").mkdir(exist_ok=True)
    (directory / "suite.yaml").write_text(suite_yaml)
    (directory / "schemas" / "input.json").write_text(json.dumps(INPUT_SCHEMA))
    (directory / "schemas" / "output.json").write_text(json.dumps(OUTPUT_SCHEMA))
    if public_text is None:
        cases = public if public is not None else [case("p1"), case("p2", "x", "billing")]
        public_text = "".join(json.dumps(c) + "\n" for c in cases)
    (directory / "cases" / "public.jsonl").write_text(public_text)
    hold = holdout if holdout is not None else [case("h1"), case("h2")]
    (directory / "cases" / "holdout.jsonl").write_text("".join(json.dumps(c) + "\n" for c in hold))
    return directory


def tiny_suite(
    root: Path, cases: int = 6, *, holdout_wrong: int = 0, suite_yaml: str = SUITE_YAML
) -> Path:
    """The tiny ticket.classify suite the triage example answers: `cases` public tickets
    ("Cannot log in": account) and as many holdout ones ("Refund please": billing), the
    first `holdout_wrong` of those expecting a label no one gives."""
    public = [case(f"p{i}", f"Cannot log in {i}", "account") for i in range(cases)]
    holdout = [
        case(f"h{i}", f"Refund please {i}", "nobody-says-this" if i < holdout_wrong else "billing")
        for i in range(cases)
    ]
    return make_suite(root, suite_yaml=suite_yaml, public=public, holdout=holdout)
