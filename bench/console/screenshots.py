"""The screenshots of docs/console.md: the console over the shipped examples, in Debian's
chromium (Playwright, never a downloaded browser), written to docs/console/*.png.

A fresh embedded store under a temporary HOLON_HOME gets the shipped suites and agents;
two agents are evaluated, the example support-triage mandate is granted and used a few
times, then each main page is shot as an operator (and the overview as an org).

    .venv/bin/python bench/console/screenshots.py [--out docs/console]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import uvicorn  # noqa: E402

from bench._support import free_port  # noqa: E402
from gateway.mandates import load_mandate  # noqa: E402
from gateway.server import SERVER_OPTIONS, create_app  # noqa: E402
from gateway.service import StoreService  # noqa: E402
from gateway.settings import Settings  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
AGENTS = ("acme/ticket-triage", "shady/memorizer")
# The triage agent is evaluated twice: its score history has two points.
EVALUATED = (AGENTS[0], AGENTS[1], AGENTS[0])


@contextmanager
def gateway(home: Path) -> Iterator[tuple[str, dict[str, str]]]:
    settings = Settings.from_env(
        {
            "HOLON_HOME": str(home),
            "HOLON_EXAMPLES": "on",
            "HOLON_PROBE_INTERVAL_S": "0",
            "HOLON_AGENT_NETWORKS": "any",
        }
    )
    store = StoreService.from_settings(settings).store
    tokens = {r: store.tokens.create(r)[1] for r in ("operator", "org:acme", "caller:helpdesk")}
    mandate = load_mandate(ROOT / "examples" / "mandates" / "support-triage.yaml")
    assert mandate.document is not None
    store.mandates.grant(mandate.document)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, store=store), port=port, log_level="warning", **SERVER_OPTIONS
        )  # type: ignore[arg-type]
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    while not server.started:
        time.sleep(0.05)
    try:
        yield url, tokens
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        store.close()


def prepare(url: str, tokens: dict[str, str]) -> list[str]:
    operator = {"Authorization": f"Bearer {tokens['operator']}"}
    evals = []
    with httpx.Client(base_url=url, timeout=60) as http:
        for agent in EVALUATED:
            started = http.post("/v1/evals", headers=operator, json={"agent": agent})
            started.raise_for_status()
            evals.append(started.json()["eval"]["id"])
            while (
                http.get(f"/v1/evals/{evals[-1]}", headers=operator).json()["status"] == "running"
            ):
                time.sleep(0.2)
        caller = {"Authorization": f"Bearer {tokens['caller:helpdesk']}"}
        subjects = ("Charged twice", "App crashes on login", "Please add dark mode", "Refund")
        for subject in subjects * 3:
            http.post(
                "/v1/capabilities/ticket.classify/invoke",
                headers=caller,
                json={"input": {"subject": subject, "body": subject + ". Thanks."}},
            )
    return evals


def shoot(url: str, tokens: dict[str, str], evals: list[str], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    shots = [
        ("overview", "/ui/"),
        ("agent", f"/ui/agents/{AGENTS[0]}"),
        ("eval", f"/ui/evals/{evals[2]}"),
        ("eval-charts", f"/ui/evals/{evals[2]}/charts"),
        ("compare", f"/ui/compare?base={evals[0]}&candidate={evals[2]}"),
        ("cell", f"/ui/evals/{evals[2]}/cells/0"),
        ("certificates", "/ui/certificates"),
        ("suite", "/ui/suites/ticket-classify"),
        ("mandate", "/ui/mandates/support-triage"),
        ("ledger", "/ui/ledger"),
        ("tokens", "/ui/tokens"),
    ]
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(url + "/ui/sign-in")
        written.append(out / "sign-in.png")
        page.screenshot(path=str(written[-1]))
        page.fill("#token", tokens["operator"])
        page.click("button[type=submit]")
        page.wait_for_load_state()
        for name, path in shots:
            page.goto(url + path)
            page.wait_for_load_state("networkidle")
            written.append(out / f"{name}.png")
            page.screenshot(path=str(written[-1]), full_page=name not in ("eval", "compare"))
        browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "console")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, gateway(Path(tmp) / "home") as (url, tokens):
        evals = prepare(url, tokens)
        for path in shoot(url, tokens, evals, args.out):
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
