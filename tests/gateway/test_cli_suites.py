"""`holon suites …` on the embedded store, and the first-use install of the examples."""

from __future__ import annotations

from pathlib import Path

from agents import load_manifest
from tests.evals.suites._make import SUITE_YAML, case, make_suite
from tests.gateway._cli import CLI

ROOT = Path(__file__).resolve().parents[2]


def test_add_show_list_activate(cli: CLI, tmp_path: Path) -> None:
    directory = make_suite(tmp_path / "v1")
    added = cli("suites", "add", str(directory), "--json")
    assert added.code == 0, added.stderr
    view = added.json()["suite"]
    assert (view["id"], view["version"], view["active"]) == ("tiny", 1, True)
    assert view["public"] == {"cases": 2} and view["holdout"] == {"cases": 2, "kind": "file"}
    assert cli("suites", "add", str(directory), "--json").json()["status"] == "unchanged"

    v2 = make_suite(
        tmp_path / "v2", suite_yaml=SUITE_YAML.replace("\nversion: 1\n", "\nversion: 2\n")
    )
    assert cli("suites", "add", str(v2), "--json").json()["suite"]["active"] is False
    assert cli("suites", "show", "tiny", "--json").json()["version"] == 1
    assert cli("suites", "activate", "tiny", "2", "--json").json()["active"] is True
    listed = cli("suites", "list", "--json").json()["items"]
    assert [(s["id"], s["version"]) for s in listed] == [("tiny", 2)]
    human = cli("suites", "show", "tiny")
    assert "tiny v2 (active)" in human.stdout and "holdout cases: 2 (file)" in human.stdout


def test_a_changed_version_is_refused(cli: CLI, tmp_path: Path) -> None:
    cli("suites", "add", str(make_suite(tmp_path / "a")))
    changed = make_suite(tmp_path / "b", public=[case("p1"), case("p2", "other words")])
    res = cli("suites", "add", str(changed), "--json")
    assert res.code == 2 and res.json()["error"]["code"] == "conflict"


def test_an_invalid_suite_is_not_installed(cli: CLI, tmp_path: Path) -> None:
    bad = make_suite(tmp_path, suite_yaml=SUITE_YAML.replace("threshold:", "threshhold:"))
    res = cli("suites", "add", str(bad))
    assert res.code == 2 and "did you mean 'threshold'" in res.stderr
    assert cli("suites", "list", "--json").json()["items"] == []


def test_registering_an_agent_warns_only_for_unverifiable_claims(cli: CLI, tmp_path: Path) -> None:
    cli("suites", "add", str(make_suite(tmp_path)))
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "schema_version: 1\nid: acme/triage\nversion: 1.0.0\nprotocol: asgi\n"
        "endpoint: asgi:examples.agents.ticket_triage:app\n"
        "capabilities: [ticket.classify, invoice.extract]\n"
    )
    warnings = cli("agents", "register", str(manifest), "--json").json()["warnings"]
    assert [w["capability"] for w in warnings] == ["invoice.extract"]


def test_validate_prints_counts_and_digests_only(cli: CLI, tmp_path: Path) -> None:
    directory = make_suite(tmp_path, holdout=[case("secret-holdout-id", "secret words")])
    res = cli("suites", "validate", str(directory), "--json")
    assert res.code == 0
    body = res.json()
    assert body["public"] == {"cases": 2} and body["holdout"] == {"cases": 1}
    assert set(body["digests"]) == {
        "spec_digest",
        "dataset_digest",
        "checks_digest",
        "suite_digest",
    }
    assert "secret" not in res.stdout
    cli("suites", "add", str(directory))
    assert cli("suites", "validate", "tiny", "--json").json()["digests"] == body["digests"]


def test_pull_writes_the_public_parts_only(cli: CLI, tmp_path: Path) -> None:
    directory = make_suite(tmp_path / "src", holdout=[case("secret-holdout-id", "secret words")])
    cli("suites", "add", str(directory))
    target = tmp_path / "pulled"
    res = cli("suites", "pull", "tiny", "-o", str(target), "--json")
    assert res.code == 0, res.stderr
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert files == [
        "cases/public.jsonl",
        "schemas/input.json",
        "schemas/output.json",
        "suite.yaml",
    ]
    everything = "".join(p.read_text() for p in target.rglob("*") if p.is_file())
    assert "secret" not in everything and "holdout" not in everything
    # The pulled suite is a working suite for practice.
    assert cli("suites", "validate", str(target), "--json").json()["holdout"] == {"cases": 0}
    again = cli("suites", "pull", "tiny", "-o", str(target))
    assert again.code == 2 and "not empty" in again.stderr


def test_test_command_takes_an_installed_id(cli: CLI, tmp_path: Path) -> None:
    cli("suites", "add", str(make_suite(tmp_path)))
    res = cli("test", "tiny", "--endpoint", "asgi:examples.agents.ticket_triage:app", "--json")
    assert res.code in (0, 1), res.stderr
    assert [c["id"] for c in res.json()["cases"]] == ["p1", "p2"]
    missing = cli("test", "nope", "--endpoint", "asgi:examples.agents.ticket_triage:app")
    assert missing.code == 2 and "no suite 'nope'" in missing.stderr


def test_rotate_holdout(cli: CLI, tmp_path: Path) -> None:
    cli("suites", "add", str(make_suite(tmp_path)))
    assert cli("suites", "rotate-holdout", "tiny", "--json").json()["epoch"] == 1
    assert cli("suites", "rotate-holdout", "tiny", "--json").json()["epoch"] == 2


def test_a_pool_shows_the_epochs_it_holds_and_those_left(cli: CLI, tmp_path: Path) -> None:
    from tests.integrity.test_pool import POOL, pool_yaml

    directory = make_suite(tmp_path / "src", suite_yaml=pool_yaml(3), holdout=POOL)
    added = cli("suites", "add", str(directory), "--json")
    assert added.code == 0, added.stderr
    pool = {"cases": 11, "epochs": 3}
    shown = {"cases": 3, "kind": "pool", "pool": {**pool, "remaining": 3}}
    assert added.json()["suite"]["holdout"] == shown
    text = " ".join(cli("suites", "add", str(directory)).stdout.split())
    assert "holdout cases: 3 (pool)" in text
    assert "holdout pool: 11 cases, 3 epochs of 3, 3 remaining" in text
    cli("suites", "rotate-holdout", "tiny")
    assert cli("suites", "show", "tiny", "--json").json()["holdout"]["pool"]["remaining"] == 2
    for _ in range(3):
        cli("suites", "rotate-holdout", "tiny")
    assert "3 epochs of 3, 0 remaining" in " ".join(cli("suites", "show", "tiny").stdout.split())
    validated = cli("suites", "validate", str(directory), "--json").json()
    assert validated["holdout"] == {"cases": 3, "pool": pool}
    # A practice run (`holon test`), of the installed suite or of its directory, is the
    # public split's: no case of any subset, whatever the epoch.
    for suite in ("tiny", str(directory)):
        practice = cli(
            "test", suite, "--endpoint", "asgi:examples.agents.ticket_triage:app", "--json"
        )
        assert practice.code in (0, 1), practice.stderr
        assert [c["id"] for c in practice.json()["cases"]] == ["p1", "p2"]
        assert "poolcase" not in practice.stdout + practice.stderr
        assert "poolsubject" not in practice.stdout + practice.stderr
    # What an author pulls is the public split: no holdout file, no pool.
    target = tmp_path / "pulled"
    assert cli("suites", "pull", "tiny", "-o", str(target)).code == 0
    everything = "".join(p.read_text() for p in target.rglob("*") if p.is_file())
    assert "pool" not in everything and "holdout" not in everything


def test_first_use_installs_the_shipped_examples(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home", HOLON_EXAMPLES="on")
    res = cli("suites", "list", "--json")
    assert res.code == 0
    assert "first use of this store" in res.stderr
    ids = {s["id"] for s in res.json()["items"]}
    assert ids == {"invoice-extract", "ticket-classify", "report-render"}
    agents = {a["id"] for a in cli("agents", "list", "--json").json()["items"]}
    shipped = {load_manifest(path).id for path in (ROOT / "examples" / "agents").glob("*.yaml")}
    assert agents == shipped
    assert {"acme/invoice-reader", "acme/ticket-triage", "acme/report-writer"} <= agents
    # Only once.
    assert "first use" not in cli("suites", "list").stderr
