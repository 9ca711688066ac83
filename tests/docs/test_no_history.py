"""README.md and docs/ say what holds, not how it came to be.

Development history (issue numbers, sessions and rounds of work, what "we" did
earlier) belongs in CHANGELOG.md and the git log; a page that names it goes stale the
day it is written and sends the reader after threads they cannot see.
"""

from __future__ import annotations

from pathlib import Path

import re2

ROOT = Path(__file__).resolve().parents[2]

# Each a way history shows up in prose; case-insensitive.
HISTORY = {
    "an issue number": r"\bissues? #?\d+\b",
    "a #number": r"(?:^|[^\w&/#])#\d+\b",
    "a numbered session": r"\bsessions? \d+\b",
    "a session or round of work": (
        r"\b(?:this|that|last|previous|next|an earlier|a later) (?:session|round)\b"
        r"|\b(?:start|end) of (?:the |this )?session\b"
    ),
    "this week": r"(?:^|[^\"\w])(?:this|last|next) week\b",
    "what we did earlier": r"\bearlier we\b|\bwe (?:now|used to|then)\b",
    "the merge": r"\b(?:before|after) the merge\b|\bmerged tree\b",
    "the lead": r"\bthe lead\b",
    "design notes outside the repository": r"\bdesign (?:documents?|notes|docs?)\b",
}
_PATTERNS = {what: re2.compile("(?i)" + pattern) for what, pattern in HISTORY.items()}


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def history_in(text: str) -> list[tuple[int, str, str]]:
    """(line, what, the words) of every history-shaped phrase in `text`."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in _PATTERNS.items():
            match = pattern.search(line)
            if match:
                found.append((number, what, match.group(0).strip()))
    return found


def test_the_patterns_find_history_and_leave_the_rest() -> None:
    said = [
        "Fixed in issue 13, see #12.",
        "Measured in session 6; this round cut the passes.",
        "At the start of the session, before the merge, the lead re-ran it.",
        "Earlier we read the whole file. See the design notes.",
    ]
    assert [what for _, what, _ in history_in("\n".join(said))] == [
        "an issue number",
        "a #number",
        "a numbered session",
        "a session or round of work",
        "a session or round of work",
        "the merge",
        "the lead",
        "what we did earlier",
        "design notes outside the repository",
    ]
    fine = [
        "The session's role is its token's; a session cookie; `Mcp-Session-Id`.",
        'Interleaved round by round, 5 rounds; a round trip; ("this week", "month-end").',
        "[front doors](performance.md#front-doors-benchdoorsrunpy); `&#x202e;`; `[0]`.",
    ]
    assert history_in("\n".join(fine)) == []


def test_no_page_tells_development_history() -> None:
    found = [
        f"{page.relative_to(ROOT)}:{line}: {what}: {words!r}"
        for page in pages()
        for line, what, words in history_in(page.read_text())
    ]
    assert not found, "development history in the docs (it goes in CHANGELOG.md):\n" + (
        "\n".join(found)
    )
