"""Debian's chromium driven by Playwright (never a downloaded browser), watching for
console errors, page errors, dialogs and Content-Security-Policy violations."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")

# Runs before any page script: every CSP violation the page (or a frame) reports is kept.
WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__violations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


def chromium_or_skip() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    message = f"{CHROMIUM} is not installed (Debian's `chromium` package)"
    if os.environ.get("HOLON_REQUIRE_CHROMIUM") == "1":
        pytest.fail(message + " and HOLON_REQUIRE_CHROMIUM=1: the browser test must run")
    pytest.skip(message)


@dataclass
class Watched:
    """A page, and every error it showed."""

    page: Any
    errors: list[str] = field(default_factory=list)

    def refused(self, status: int) -> None:
        """The page just loaded was refused with `status`, as expected: the one line the
        browser logs for it is no error of ours (any other line still is)."""
        expected = f"the server responded with a status of {status}"
        mine = [e for e in self.errors if expected in e]
        assert len(mine) == 1, self.errors
        self.errors.remove(mine[0])

    def clean(self) -> None:
        violations = [v for frame in self.page.frames for v in _violations(frame)]
        assert not self.errors, self.errors
        assert not violations, violations


def _violations(frame: Any) -> list[str]:
    try:
        return list(frame.evaluate("window.__violations || []"))
    except Exception:  # a sandboxed frame runs no script: nothing was recorded there
        return []


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(executable), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def watched_page(launched: Any) -> Iterator[Watched]:
    context = launched.new_context()
    context.add_init_script(WATCH)
    page = context.new_page()
    watched = Watched(page)
    page.on(
        "console",
        lambda message: (
            watched.errors.append(f"console: {message.text}") if message.type == "error" else None
        ),
    )
    page.on("pageerror", lambda error: watched.errors.append(f"page error: {error}"))

    def dialog(d: Any) -> None:
        watched.errors.append(f"dialog: {d.message}")
        d.dismiss()

    page.on("dialog", dialog)
    try:
        yield watched
    finally:
        context.close()
