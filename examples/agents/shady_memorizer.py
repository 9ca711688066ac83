"""shady/memorizer: a ticket.classify agent that learnt the public cases by heart.

The cheat the overfit warning exists for (docs/evals.md, "Scores"). An agent author can
read a suite's public cases, so this agent reads
``examples/suites/ticket-classify/cases/public.jsonl`` when its app is built
and keeps each case's expected answer under the case's text. A ticket it has
seen gets that answer, exactly; any other ticket gets a crude guess (the
first of a few keywords decides the label, the priority is always
``normal``, the product always ``general``), which is rarely right in all
three fields. It scores 100% on the public split and poorly on a holdout it
has never seen: its record carries an overfit warning, and mandates with
``deny_on_overfit`` refuse it.

It is an example of what not to ship, kept so that the warning has a real
agent to catch (tests/evals/runner/test_overfit_agents.py).

Serve it with ``python -m examples.agents.shady_memorizer --port 8104``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from examples.agents._protocol import AgentIdentity, Answer, create_app, estimate_tokens, run
from schema.jsontext import dumps, loads

__all__ = ["IDENTITY", "PUBLIC_CASES", "answer", "create", "crude_guess", "main", "memorize"]

IDENTITY = AgentIdentity(id="shady/memorizer", version="1.0.0")

PUBLIC_CASES = (
    Path(__file__).resolve().parents[1] / "suites" / "ticket-classify" / "cases" / "public.jsonl"
)

# The crude rule for tickets it has not seen: the first keyword found wins.
KEYWORDS = (
    ("hacked", "security"),
    ("phishing", "security"),
    ("down", "outage"),
    ("refund", "billing"),
    ("invoice", "billing"),
    ("charged", "billing"),
    ("password", "account"),
    ("login", "account"),
    ("error", "bug"),
    ("how do i", "how_to"),
    ("please add", "feature_request"),
)
FIELDS = ("label", "priority", "product")

Memory = Mapping[str, dict[str, str]]


def _key(subject: str, body: str) -> str:
    """The text a ticket is recognised by: whitespace collapsed, case folded."""
    return " ".join(f"{subject}\n{body}".split()).casefold()


def memorize(path: Path = PUBLIC_CASES) -> dict[str, dict[str, str]]:
    """Each public case's expected label, priority and product, by its ticket text.

    Cases whose input is not plain text (fixture references) are skipped:
    there is nothing to recognise them by.
    """
    memory: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        case = loads(line)
        ticket, expected = case.get("input"), case.get("expected")
        if not (isinstance(ticket, dict) and isinstance(expected, dict)):
            continue
        subject, body = ticket.get("subject"), ticket.get("body")
        if isinstance(subject, str) and isinstance(body, str):
            memory[_key(subject, body)] = {field: str(expected[field]) for field in FIELDS}
    return memory


def crude_guess(subject: str, body: str) -> dict[str, str]:
    """What it says about a ticket it has not seen."""
    text = f"{subject}\n{body}".casefold()
    label = next((label for word, label in KEYWORDS if word in text), "other")
    return {"label": label, "priority": "normal", "product": "general"}


def answer(memory: Memory, subject: str, body: str) -> dict[str, str]:
    """The memorised answer when the ticket is a public case, else the crude guess."""
    remembered = memory.get(_key(subject, body))
    return dict(remembered) if remembered is not None else crude_guess(subject, body)


def create(public_cases: Path = PUBLIC_CASES) -> Starlette:
    """The agent's ASGI app, with the public cases of `public_cases` memorised."""
    memory = memorize(public_cases)

    def handle(value: dict[str, Any]) -> Answer:
        subject, body = value["subject"], value["body"]
        output = answer(memory, subject, body)
        return Answer(
            output=output,
            input_tokens=estimate_tokens(subject) + estimate_tokens(body),
            output_tokens=estimate_tokens(dumps(output)),
        )

    return create_app(IDENTITY, {"ticket.classify": handle})


_app: Starlette | None = None


def __getattr__(name: str) -> Starlette:
    """`app` (the manifest's asgi:examples.agents.shady_memorizer:app), built on first access.

    Building it reads the public cases, so it happens when the app is first
    asked for (the executor's start of an `asgi:` endpoint), not at import.
    """
    global _app
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _app is None:
        _app = create()
    return _app


def main(argv: Sequence[str] | None = None) -> None:
    run(create, argv, "shady/memorizer: ticket.classify by memorised public cases")


if __name__ == "__main__":
    main()
