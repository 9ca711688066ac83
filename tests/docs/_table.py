"""How to run every command README.md and docs/ show, and what "does what the page says" means.

One entry per shown command, keyed by (page, command as shown): the
command's text with continuations joined and its trailing comment dropped.
A command shown twice on one page (in a shell block and in a console
block) has one entry. test_commands.py fails on a shown command with no
entry here, and on an entry no page shows any more.

An entry (a `Step`, tests/docs/_steps.py, with the shared checks and runners) says:

- `before`: what the session needs first: an input file, a server, the
  value of a placeholder (`session.substitutions`: literal text of the
  command -> what runs instead, e.g. `EVAL_ID`, a port);
- `run`: how it runs: in-process (`holon`, the default), a process running
  until stopped (`background`), or a custom runner for a shell line;
- `code`: the exit codes the page allows (a console block's `$ echo $?` wins);
- `check`: the claim of the command's comment or its page, checked
  concretely. A console block's output is compared exactly as well (after
  `_session.normalise`), so its entry needs no check.
- `examples`: the block's store gets the shipped examples (HOLON_EXAMPLES=on),
  because the page relies on them (README.md says a fresh store has them);
- `slow`: the block's test is marked slow.

Input files are the page's own where it shows them (`page_file`), else
written here, with a comment saying so.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import secrets
import sqlite3
import subprocess
import sys

from tests.docs._blocks import ROOT, Shown, find_block, shell_words
from tests.docs._session import Session
from tests.docs._steps import (
    WORKED_CELLS,
    Check,
    Step,
    background,
    export_token,
    http_get,
    page_file,
    piped_secret,
    prints,
    python,
    remember,
    worker,
    writes_html,
    writes_pdf,
)
from tests.gateway._cli import Result

# -- the page's input files that the page describes but does not show ----------------------


def sample_document() -> str:
    # docs/checks.md's graded document: the ```json block after its sample-document marker.
    text = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    _, marker, rest = text.partition("<!-- sample-document")
    assert marker, "docs/checks.md has no sample-document marker"
    found = re.search(r"```json\n(.*?)\n```", rest, flags=re.DOTALL)
    assert found, "no ```json block after docs/checks.md's sample-document marker"
    return found.group(1) + "\n"


def _report_pdf() -> bytes:
    # Not on the page: the two-page report its `holon path … report.json` outputs describe.
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen.canvas import Canvas

    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=A4, invariant=1)
    canvas.setTitle("Q1 report")
    canvas.setAuthor("Finance")
    canvas.drawString(72, 800, "Q1 report")
    canvas.drawString(72, 780, "Revenue 1,284,310.55 EUR")
    canvas.acroForm.textfield(name="approved_by", value="Dana", x=72, y=700, width=200, height=20)
    canvas.showPage()
    canvas.drawString(72, 800, "Page two")
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def _report_document(pdf: bytes) -> str:
    node = {
        "media_type": "application/pdf",
        "filename": "report.pdf",
        "data_base64": base64.b64encode(pdf).decode(),
    }
    document = {"input": {}, "output": {"report": node}, "expected": {"title": "Q1 report"}}
    return json.dumps(document) + "\n"


def _report_json() -> str:
    return _report_document(_report_pdf())


def _broken_json() -> str:
    # Not on the page: "a truncated one" is the same report cut before its end-of-file marker.
    pdf = _report_pdf()
    return _report_document(pdf[: pdf.rindex(b"%%EOF")])


def _bad_manifest() -> str:
    # docs/agents.md's manifest with the mistake its error shows: the cap as a bare number.
    good = find_block("docs/agents.md", "yaml", "id: acme/invoice-reader").text
    bad = good.replace('max_cost_usd: "0.05"', "max_cost_usd: 0.05")
    assert bad != good and bad.splitlines()[6].startswith("limits:"), "the manifest moved"
    return bad


def _ticket() -> str:
    # Not on the page: the ticket.classify input schema's own example.
    schema = json.loads((ROOT / "schema/capabilities/ticket.classify.input.json").read_text())
    return json.dumps(schema["examples"][0]) + "\n"


# -- README.md -----------------------------------------------------------------------------


def _record_printed(agent: str) -> Check:
    return prints(
        rf"^agent:\s+{re.escape(agent)} \d+\.\d+\.\d+$",
        r"^eval_score:\s+[01]\.\d{4}$",
        r"^95% CI:\s+[01]\.\d{4}-[01]\.\d{4}$",
        r"^record:\s+written$",
    )


def _collects_the_fast_tier(session: Session, result: Result) -> None:
    # The fast tier: the file's slow tests (its slow blocks) are left out.
    found = re.search(r"^(\d+)/(\d+) tests collected \((\d+) deselected\)", result.stdout, re.M)
    assert found, result.stdout
    assert int(found[3]) > 0 and int(found[1]) + int(found[3]) == int(found[2]), result.stdout


def _collects_every_tier(session: Session, result: Result) -> None:
    assert re.search(r"^\d+ tests collected", result.stdout, re.MULTILINE), result.stdout
    assert "deselected" not in result.stdout, result.stdout


def _bin_test(session: Session, shown: Shown) -> Result:
    # Not the whole suite (this test is part of it): the same launcher and pytest run with
    # the page's arguments, collecting one file (which has slow tests) in one process.
    return session.run(
        [
            str(ROOT / "bin" / "test"),
            *shown.text.split()[1:],
            "-n",
            "0",
            "--collect-only",
            "-q",
            "tests/docs/test_commands.py",
        ],
        cwd=ROOT,
    )


def _suites_listed(session: Session, result: Result) -> None:
    for suite, capability in [
        ("invoice-extract", "invoice.extract"),
        ("report-render", "report.render"),
        ("ticket-classify", "ticket.classify"),
    ]:
        row = rf"^{suite}\s+\d+\s+{re.escape(capability)}\s+\d+\s+\d+\s+[0-9a-f]{{16}}\s*$"
        assert re.search(row, result.stdout, re.MULTILINE), result.stdout
    assert "first use of this store: installed the shipped examples" in result.stderr


def _registered(agent: str, version: str) -> Check:
    def check(session: Session, result: Result) -> None:
        shown = session.holon("agents", "show", agent, "--json")
        assert shown.code == 0, shown.stderr
        assert shown.json()["version"] == version, shown.stdout

    return check


def _evaluated(session: Session, result: Result) -> None:
    prints(r"^plan: acme/ticket-triage 1\.1\.0$", r"^ticket-classify\s+\d+/\d+ \(")(session, result)
    _record_printed("acme/ticket-triage")(session, result)
    remember("eval", r"^eval:\s+(ev_\w+)$", substitute="EVAL_ID")(session, result)


def _record_shown(session: Session, result: Result) -> None:
    # "eval_score, its interval, warnings", of the eval just run.
    prints(
        rf"^eval:\s+{session.values['eval']}$",
        r"^eval_score:\s+[01]\.\d{4}$",
        r"^95% CI:\s+[01]\.\d{4}-[01]\.\d{4}$",
        r"^warnings:\s+",
    )(session, result)


def _eval_listed(session: Session, result: Result) -> None:
    row = rf"^{session.values['eval']}\s+acme/ticket-triage\s+1\.1\.0\s+done\s+110\s"
    assert re.search(row, result.stdout, re.MULTILINE), result.stdout
    # "and: status, resume, cancel": of a finished eval, status shows it done.
    status = session.holon("evals", "status", session.values["eval"], "--json")
    assert status.code == 0 and status.json()["status"] == "done", status.stdout


def _author_report(session: Session, result: Result) -> None:
    writes_html("r.html", "EVAL_ID", "Audience: author")(session, result)
    # "--audience operator for all": the same command with it gives the operator's page.
    argv = [*session.argv("holon evals report EVAL_ID --format html -o all.html")]
    operator = session.holon(*argv, "--audience", "operator")
    assert operator.code == 0, operator.stderr
    writes_html("all.html", "EVAL_ID", "Audience: operator")(session, operator)


def _worked(session: Session, result: Result) -> None:
    # Stopped by Ctrl-C while it worked the eval: interrupted, no traceback.
    assert result.code == 130 and "Traceback" not in result.stderr, result.stderr
    assert f"working eval {session.values['worked']}" in result.stderr, result.stderr
    view = session.holon("evals", "status", session.values["worked"], "--json").json()
    assert view["progress"]["done"] >= WORKED_CELLS, view
    # The rest is nobody's work: the gateway the block starts next would pick it up.
    cancelled = session.holon("evals", "cancel", session.values["worked"])
    assert cancelled.code == 0, cancelled.stderr


def _practised_without_a_store(session: Session, shown: Shown) -> Result:
    """`holon test` against the example agent served on 127.0.0.1, with no store at all."""
    from examples.agents import ticket_triage

    url = session.serve(ticket_triage.app)
    session.substitutions["http://127.0.0.1:8080"] = url
    nowhere = session.tmp / "no-store"
    result = session.holon(*session.argv(shown.text), HOLON_HOME=str(nowhere))
    # It keeps its last run (for --failed) under HOLON_HOME/cache, but makes no store.
    made = sorted(p.name for p in nowhere.glob("*")) if nowhere.exists() else []
    assert made in ([], ["cache"]), f"holon test wrote {made} under HOLON_HOME"
    return result


def _ticket_cases_graded(session: Session, result: Result) -> None:
    prints(r"^ticket-classify v1 public: \d+/50 ")(session, result)


def _mandate_granted(session: Session, result: Result) -> None:
    prints(r"^granted mandate support-triage for helpdesk$")(session, result)
    assert session.holon("mandates", "show", "support-triage").code == 0


def _token_shown_once(session: Session, result: Result) -> None:
    remember("token", r"^(hol_[A-Za-z0-9_-]{43})$")(session, result)
    token = session.values["token"]
    assert result.stdout.count(token) == 1
    listed = session.holon("tokens", "list")
    assert listed.code == 0 and token not in listed.stdout, listed.stdout


def _token_hashed(session: Session, result: Result) -> None:
    _token_shown_once(session, result)
    token = session.values["token"]
    with sqlite3.connect(session.home / "holon.db") as db:
        hashes = {row[0] for row in db.execute("SELECT token_hash FROM tokens")}
    assert hashlib.sha256(token.encode()).hexdigest() in hashes
    for path in session.home.glob("holon.db*"):
        assert token.encode() not in path.read_bytes(), f"the token is in {path.name}"


def _api_served(session: Session, result: Result) -> None:
    import httpx

    base = session.values["url:8000"]
    assert httpx.get(f"{base}/healthz", timeout=10).json()["status"] == "ok"
    assert httpx.get(f"{base}/openapi.json", timeout=10).json()["paths"]


def _routed(session: Session, result: Result) -> None:
    output = json.loads(result.stdout)
    assert output["label"] in {
        "billing",
        "bug",
        "feature_request",
        "account",
        "outage",
        "how_to",
        "security",
        "other",
    }, output
    prints(
        r"^acme/ticket-triage 1\.1\.0 under mandate support-triage \(routed among 1\)",
        stream="stderr",
    )(session, result)


def _token_file(session: Session) -> None:
    path = session.tmp / ".holon-token"
    path.write_text(session.values["token"] + "\n", encoding="utf-8")
    session.substitutions["~/.holon-token"] = str(path)
    # Only the file holds the token for this one.
    session.env.pop("HOLON_TOKEN", None)


def _ledger_row(session: Session, result: Result) -> None:
    prints(r"acme/ticket-triage", r"support-triage", r"\bok\b")(session, result)


# -- docs/gateway.md -----------------------------------------------------------------------


def _register_triage(session: Session) -> None:
    result = session.holon("agents", "register", "examples/agents/acme-ticket-triage.yaml")
    assert result.code == 0, result.stderr


def _serving_with_workers(session: Session, result: Result) -> None:
    _api_served(session, result)
    from gateway.cli._reference import commands, usage

    (serve,) = [c for c in commands() if c.name == "holon gateway serve"]
    assert "[--workers N] [--eval-workers N]" in usage(serve), usage(serve)


GATEWAY_STARTED = (
    r"^holon gateway on http://127\.0\.0\.1:\d+ "
    r"\(1 worker process\(es\), 1 eval worker\(s\) each\)"
)


def _healthy(session: Session, result: Result) -> None:
    # The comment shows the body as JSON with spaces; it is the same JSON.
    assert json.loads(result.stdout) == {"status": "ok", "database": "ok"}, result.stdout


def _agents_over_http(session: Session, result: Result) -> None:
    prints(r"^acme/ticket-triage\s")(session, result)


# -- docs/agents.md ------------------------------------------------------------------------


def _register_invoice_reader(session: Session) -> None:
    # The page's agent: registered from the shipped manifest of that id.
    result = session.holon("agents", "register", "examples/agents/acme-invoice-reader.yaml")
    assert result.code == 0, result.stderr
    session.env["ACME_TOKEN"] = "env-s3cr3t"


def _secret(state: str) -> Check:
    def check(session: Session, result: Result) -> None:
        shown = session.holon("agents", "show", "acme/invoice-reader")
        assert re.search(rf"^secret:\s+{state}$", shown.stdout, re.MULTILINE), shown.stdout
        for secret in ("env-s3cr3t", "piped-s3cr3t"):
            assert secret not in shown.stdout + result.stdout + result.stderr

    return check


# -- docs/checks.md ------------------------------------------------------------------------

CHECKS_YAML = page_file("docs/checks.md", "yaml", "name: invoice number")
PDF_CHECKS_YAML = page_file("docs/checks.md", "yaml", "name: two pages")
DOCUMENT = {"document.json": sample_document}
GRADED = {"checks.yaml": CHECKS_YAML, "document.json": sample_document}


def _exit_codes_as_commented(session: Session, result: Result) -> None:
    # "exit 0 all pass, 1 some fail, 2 invalid checks": the page's checks give 1; the
    # first check alone passes; the page's own misspelling (docs/checks.md, errors) is invalid.
    assert result.code == 1 and "FAIL: 1 of 4 checks passed" in result.stdout
    first = CHECKS_YAML().split("- name: total")[0]
    session.write("pass.yaml", first)
    assert session.holon("checks", "grade", "pass.yaml", "document.json").code == 0
    session.write("invalid.yaml", "- {path: $.output.total, aprox: 1234.5, abs: 0.01}\n")
    invalid = session.holon("checks", "grade", "invalid.yaml", "document.json")
    assert invalid.code == 2 and "did you mean 'approx'?" in invalid.stderr, invalid.stderr


def _skus(session: Session, result: Result) -> None:
    assert result.stdout.splitlines() == [
        f"$['output']['line_items'][{i}]['sku'] = \"{sku}\""
        for i, sku in enumerate(["A-001", "A-002", "Z-999"])
    ], result.stdout


# -- docs/settings.md ----------------------------------------------------------------------


def _export_secret_key(session: Session, shown: Shown) -> Result:
    """`export HOLON_SECRET_KEY=$(python3 -c '…')`: the inner command, its key exported."""
    inner = shown.text.split("$(", 1)[1].rsplit(")", 1)[0]
    words = shell_words(inner)
    assert words[0] == "python3"
    done = session.run([sys.executable, *words[1:]], cwd=ROOT)
    session.env["HOLON_SECRET_KEY"] = done.stdout.strip()
    return done


def _export_password(session: Session, shown: Shown) -> Result:
    session.env["POSTGRES_PASSWORD"] = secrets.token_urlsafe(16)
    return Result(0, "", "")


def _images_built(session: Session, shown: Shown) -> Result:
    """`deploy/build`: the images it makes are there and are this checkout's. .ci/run runs
    the command itself before the tests (a build fetches Debian's packages; tests stay
    offline); tests/deploy runs what it made."""
    from tests.deploy._containers import IMAGES, require_images

    require_images()
    return Result(0, "\n".join(IMAGES), "")


def _compose_config(session: Session, shown: Shown) -> Result:
    """`podman-compose -f deploy/compose.yaml up -d`: the file resolved with the two exported
    settings and nothing else (`config`); tests/deploy/test_compose.py brings it up."""
    from tests.deploy._containers import require_images

    require_images()
    words = shell_words(shown.text)
    assert words[:3] == ["podman-compose", "-f", "deploy/compose.yaml"], words
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOLON_", "POSTGRES_"))}
    env |= {k: session.env[k] for k in ("HOLON_SECRET_KEY", "POSTGRES_PASSWORD")}
    argv = [sys.executable, "-m", "podman_compose", *words[1:3], "config"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    return Result(done.returncode, done.stdout, done.stderr)


def _compose_resolved(session: Session, result: Result) -> None:
    for service in ("postgres", "migrate", "gateway-1", "gateway-2", "worker-1", "worker-2"):
        assert f"  {service}:" in result.stdout, result.stdout
    assert session.env["POSTGRES_PASSWORD"] in result.stdout


def _fernet_key(session: Session, result: Result) -> None:
    from cryptography.fernet import Fernet

    key = result.stdout.strip()
    Fernet(key.encode())  # raises on anything but 32 url-safe base64 bytes
    configured = session.holon("config", HOLON_SECRET_KEY=key)
    assert configured.code == 0, configured.stderr


# -- docs/capabilities.md ------------------------------------------------------------------


def _answers_as(agent: str) -> Check:
    def check(session: Session, result: Result) -> None:
        import httpx

        port = {"acme/invoice-reader": 8101, "acme/ticket-triage": 8102}.get(agent, 8103)
        base = session.values[f"url:{port}"]
        card = httpx.get(f"{base}/.well-known/holon-agent", timeout=10).json()
        assert card["id"] == agent, card

    return check


EXAMPLE_AGENT = background("/.well-known/holon-agent", cwd=ROOT)


# -- the table -----------------------------------------------------------------------------

COMMANDS: dict[tuple[str, str], Step] = {
    # README.md, "Two commands"
    ("README.md", "bin/holon eval acme/invoice-reader --yes"): Step(
        # 0 or 1: the holdout is generated from the fresh store's random secret, so whether
        # the score meets the threshold can vary; what the page claims is the printed record.
        check=_record_printed("acme/invoice-reader"),
        code=(0, 1),
        examples=True,
        slow=True,
    ),
    ("README.md", "bin/test"): Step(run=_bin_test, check=_collects_the_fast_tier, slow=True),
    ("README.md", "bin/test --all"): Step(run=_bin_test, check=_collects_every_tier, slow=True),
    # README.md, "What a session looks like"
    ("README.md", "bin/holon suites list"): Step(check=_suites_listed, examples=True),
    ("README.md", "bin/holon agents register examples/agents/acme-ticket-triage.yaml"): Step(
        check=_registered("acme/ticket-triage", "1.1.0")
    ),
    ("README.md", "bin/holon eval acme/ticket-triage --yes"): Step(check=_evaluated, code=(0, 1)),
    ("README.md", "bin/holon records show acme/ticket-triage"): Step(check=_record_shown),
    ("README.md", "bin/holon evals list"): Step(check=_eval_listed),
    ("README.md", "bin/holon evals report EVAL_ID --format html -o r.html"): Step(
        check=_author_report
    ),
    ("README.md", "bin/holon worker"): Step(run=worker, check=_worked, code=(130,)),
    (
        "README.md",
        "bin/holon test examples/suites/ticket-classify --endpoint http://127.0.0.1:8080/",
    ): Step(run=_practised_without_a_store, check=_ticket_cases_graded, code=(0, 1)),
    ("README.md", "bin/holon fixtures render invoice --seed 7 -o inv.pdf"): Step(
        check=writes_pdf("inv.pdf", "invoice")
    ),
    ("README.md", "bin/holon checks grade checks.yaml doc.json"): Step(
        files={"checks.yaml": CHECKS_YAML, "doc.json": sample_document},
        check=prints(r"^PASS equals invoice number", r"^FAIL: 1 of 4 checks passed$"),
        code=(1,),
    ),
    ("README.md", "bin/holon mandates grant examples/mandates/support-triage.yaml"): Step(
        check=_mandate_granted
    ),
    ("README.md", "bin/holon tokens create --role caller:helpdesk"): Step(check=_token_shown_once),
    # A block that starts a real server (a `holon gateway serve` process, example agents)
    # is a slow test: the fast tier covers the same commands in-process
    # (tests/gateway/test_cli_*.py, tests/examples/).
    ("README.md", "bin/holon gateway serve --port 8000"): Step(
        run=background("/healthz", says=GATEWAY_STARTED), check=_api_served, slow=True
    ),
    ("README.md", "export HOLON_TOKEN=..."): Step(run=export_token),
    (
        "README.md",
        "bin/holon invoke --capability ticket.classify --input @ticket.json "
        "--gateway http://127.0.0.1:8000",
    ): Step(files={"ticket.json": _ticket}, check=_routed),
    (
        "README.md",
        "bin/holon ledger --gateway http://127.0.0.1:8000 --token-file ~/.holon-token",
    ): Step(before=_token_file, check=_ledger_row),
    # docs/agents.md
    ("docs/agents.md", "holon agents register bad.yaml"): Step(
        files={"bad.yaml": _bad_manifest}, code=(2,)
    ),
    ("docs/agents.md", "holon agents secret set acme/invoice-reader --from-env ACME_TOKEN"): Step(
        before=_register_invoice_reader, check=_secret("set")
    ),
    (
        "docs/agents.md",
        "printf '%s' \"$TOKEN\" | holon agents secret set acme/invoice-reader",
    ): Step(run=piped_secret, check=_secret("set")),
    ("docs/agents.md", "holon agents secret clear acme/invoice-reader"): Step(
        check=_secret("not set")
    ),
    # docs/capabilities.md
    ("docs/capabilities.md", "python -m examples.agents.invoice_reader --port 8101"): Step(
        run=EXAMPLE_AGENT, check=_answers_as("acme/invoice-reader"), slow=True
    ),
    ("docs/capabilities.md", "python -m examples.agents.ticket_triage  --port 8102"): Step(
        run=EXAMPLE_AGENT, check=_answers_as("acme/ticket-triage"), slow=True
    ),
    ("docs/capabilities.md", "python -m examples.agents.report_writer  --port 8103"): Step(
        run=EXAMPLE_AGENT, check=_answers_as("acme/report-writer"), slow=True
    ),
    # docs/checks.md
    ("docs/checks.md", "holon checks grade checks.yaml document.json"): Step(
        files=GRADED, check=_exit_codes_as_commented, code=(1,)
    ),
    ("docs/checks.md", "holon path '$.output.line_items[*].sku' document.json"): Step(
        files=DOCUMENT, check=_skus
    ),
    ("docs/checks.md", "holon catalog"): Step(
        check=prints(r"^check predicates$", r"^approx +a number or \{path: …\} .* abs, rel *$")
    ),
    ("docs/suites.md", "holon schema suite"): Step(
        check=prints(r'^  "\$id": "https://holon.dev/schema/suite.schema.json",$')
    ),
    ("docs/suites.md", "holon schema case --json"): Step(
        check=prints(r'^\{"\$schema":.*"\$id":"https://holon.dev/schema/case.schema.json"')
    ),
    ("docs/checks.md", "holon path '$.output.line_items[?@.amount > 100].sku' document.json"): Step(
        files=DOCUMENT
    ),
    ("docs/checks.md", "holon path '$.output.total' document.json --json"): Step(files=DOCUMENT),
    ("docs/checks.md", "holon path '$.output.due_date' document.json"): Step(files=DOCUMENT),
    ("docs/checks.md", "holon path '$.output.line_items[?@.x ==]' document.json"): Step(
        files=DOCUMENT, code=(2,)
    ),
    ("docs/checks.md", "holon path '$.output.report.pdf.page_count' report.json"): Step(
        files={"report.json": _report_json}
    ),
    ("docs/checks.md", "holon path '$.output.report.pdf.metadata' report.json"): Step(
        files={"report.json": _report_json}
    ),
    ("docs/checks.md", "holon path '$.output.report.pdf.pages[*].text' report.json"): Step(
        files={"report.json": _report_json}
    ),
    (
        "docs/checks.md",
        "holon path \"\\$.output.report.pdf.fields['approved_by']\" report.json",
    ): Step(files={"report.json": _report_json}),
    ("docs/checks.md", "holon checks grade checks.yaml broken.json"): Step(
        files={"checks.yaml": PDF_CHECKS_YAML, "broken.json": _broken_json}, code=(1,)
    ),
    # docs/gateway.md
    ("docs/gateway.md", "bin/holon tokens create --role operator"): Step(check=_token_hashed),
    ("docs/gateway.md", "bin/holon gateway serve --host 127.0.0.1 --port 8000"): Step(
        before=_register_triage,
        run=background("/healthz", says=GATEWAY_STARTED),
        check=_serving_with_workers,
        slow=True,
    ),
    ("docs/gateway.md", "curl -s http://127.0.0.1:8000/healthz"): Step(
        run=http_get, check=_healthy
    ),
    ("docs/gateway.md", "export HOLON_TOKEN=..."): Step(run=export_token),
    ("docs/gateway.md", "bin/holon --gateway http://127.0.0.1:8000 agents list"): Step(
        check=_agents_over_http
    ),
    # docs/deploy.md
    ("docs/deploy.md", "holon db upgrade"): Step(
        check=prints(r"(^upgraded \S+ from \S+ to \d{4}$|is up to date \(revision \d{4}\)$)")
    ),
    ("docs/deploy.md", "holon db status"): Step(check=prints(r"^up_to_date: +yes$")),
    ("docs/deploy.md", "deploy/build"): Step(run=_images_built, slow=True),
    (
        "docs/deploy.md",
        "export HOLON_SECRET_KEY=$(python3 -c 'from cryptography.fernet import Fernet; "
        "print(Fernet.generate_key().decode())')",
    ): Step(run=_export_secret_key, check=_fernet_key),
    ("docs/deploy.md", "export POSTGRES_PASSWORD=..."): Step(run=_export_password),
    ("docs/deploy.md", "podman-compose -f deploy/compose.yaml up -d"): Step(
        run=_compose_config, check=_compose_resolved, slow=True
    ),
    # docs/settings.md
    (
        "docs/settings.md",
        "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'",
    ): Step(run=python, check=_fernet_key),
}
