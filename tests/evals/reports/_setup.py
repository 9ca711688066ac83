"""Small suites, the scripted echo agent, and real evals of it, in-process."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents import load_manifest
from evals import make_plan, start, work
from evals.reports import RENDERERS, ReportCache, build_report
from evals.reports._markdown import md
from evals.suites import install_suite
from records import Store
from schema import validator
from schema.jsontext import dumps, loads
from tests.evals.reports._agent import AGENT_ID
from tests.evals.suites._make import SUITE_YAML, case, make_suite

ROOT = Path(__file__).resolve().parents[3]
TRIAGE = ROOT / "examples" / "agents" / "acme-ticket-triage.yaml"
PAYLOAD = "<script>alert(1)</script>"

# Holdout strings no author-facing report may contain (ids, inputs echoed
# back as outputs, expected values), each free of Markdown punctuation.
SECRET_IDS = ("holdsecretid1", "holdsecretid2", "holdsecretid3")
SECRET_SUBJECTS = ("holdsubjectalpha", "holdsubjectbravo")
SECRET_EXPECTED = ("holdexpectedzulu",)

PUBLIC_CASES = [
    case("pub-pass-1", "account", "account"),
    case("pub-pass-2", "billing", "billing"),
    case("pub-fail", "billing", "account"),
    case("pub-xss", PAYLOAD, "other"),
    case("pub-error", "boom now", "other"),
    case("pub-garbage", "garbage please", "other"),
    case("pub-critical", "flip it", "flip it", tags=["critical", "flippy"]),
]
SECRET_CHECK = "holdcheckname"
SECRET_TAG = "holdtagsecret"
HOLDOUT_CASES = [
    case(
        SECRET_IDS[0],
        SECRET_SUBJECTS[0],
        SECRET_SUBJECTS[0],
        checks=[{"name": SECRET_CHECK, "path": "$.output.label", "equals": SECRET_SUBJECTS[0]}],
    ),
    case(SECRET_IDS[1], SECRET_SUBJECTS[1], SECRET_EXPECTED[0], tags=[SECRET_TAG]),
    case(SECRET_IDS[2], "flip holdout", "flip holdout", tags=["critical"]),
]

# The suite with a check that emits a metric (similarity) beside its own.
SIMILAR_YAML = SUITE_YAML.replace(
    "checks:\n",
    "checks:\n  - {name: near label, path: $.output.label, "
    "similar: {to: {path: $.expected.label}, min: 0.5}}\n",
)

GENERATED_YAML = SUITE_YAML.replace(
    "holdout: {file: cases/holdout.jsonl}\n",
    "fixtures:\n  ticket: {generator: ticket, params: {}}\n"
    "holdout:\n  generate:\n    count: 4\n"
    "    case: {input: {$fixture: ticket}, expected: {$truth: ticket}, tags: [generated]}\n",
)


def manifest(version: str = "1.0.0") -> dict[str, Any]:
    data = load_manifest(TRIAGE).to_json()
    data.update(
        id=AGENT_ID,
        version=version,
        endpoint=f"asgi:tests.evals.reports._agent:v{version[0]}",
        description="a scripted echo agent for report tests",
    )
    return data


def write_manifest(directory: Path, version: str = "1.0.0") -> Path:
    path = directory / f"echo-{version}.json"
    path.write_text(dumps(manifest(version)))
    return path


def suite_dir(
    root: Path,
    *,
    public: Sequence[dict[str, Any]] = PUBLIC_CASES,
    holdout: Sequence[dict[str, Any]] = HOLDOUT_CASES,
    suite_yaml: str = SUITE_YAML,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return make_suite(root, suite_yaml=suite_yaml, public=list(public), holdout=list(holdout))


def setup(store: Store, root: Path, **suite: Any) -> None:
    install_suite(store, suite_dir(root / "suite-src", **suite))
    store.agents.register(manifest())


def run_eval(store: Store, home: Path, **plan: Any) -> str:
    """A real eval of the echo agent's current version, to the end; its id."""
    made = make_plan(store, AGENT_ID, home=home, concurrency=4, **plan)
    info = work(store, made, start(store, made), home=home)
    assert info.status == "done"
    return info.id


def escaped_forms(secret: str) -> set[str]:
    """A string as every renderer could write it: raw, HTML-escaped, Markdown-escaped."""
    return {secret, html.escape(secret), md(secret)}


def fresh_report(store: Store, eval_id: str, audience: str, form: str) -> str:
    """The eval's report rendered now from the store, in `form` (what a kept one must equal)."""
    return RENDERERS[form](build_report(store, eval_id, audience=audience))


def kept_report(cache: ReportCache, store: Store, eval_id: str, audience: str, form: str) -> str:
    """The eval's report as `cache` serves it, rendered with the usual renderer if need be."""
    return cache.report(store, eval_id, audience=audience, form=form, render=RENDERERS[form])


def as_valid(schema: str, document: dict[str, Any]) -> dict[str, Any]:
    """`document` as its JSON text reads back, checked against schema/`schema`.schema.json."""
    read = loads(dumps(document))
    errors = sorted(validator(schema).iter_errors(read), key=lambda e: list(e.path))
    assert not errors, [(list(e.absolute_path), e.message) for e in errors[:5]]
    assert isinstance(read, dict)
    return read
