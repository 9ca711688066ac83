"""acme/ticket-triage: a rule-based support-ticket classifier (capability ticket.classify).

Scores the ticket against weighted phrase lists (`_ticket_lexicon`): one list
per label, per product, and cue lists for priority. Quoted replies, channel
stamps and mail disclaimers are dropped first; the subject counts 1.5 times
the body; a repeated phrase adds a quarter of its weight. A phrase right
after a negator in the same sentence ("this is not a bug", "no outage on our
side", "I wasn't charged") counts against its label instead of for it. The
best label wins unless nothing scores (then ``other``); the priority starts
from the label (an outage is urgent, a question is low), moves with urgency
and calm cues, and is then held to the impact the ticket states (blocked
with no workaround: at least high; a workaround: at most normal; money lost
now: urgent; a deadline: at least normal); the product is the best-scoring
product, or ``general`` when no product is named.

Deterministic and explainable, and as weak as keyword rules are: it does not
understand paraphrase, sarcasm or a ticket that mentions one topic to
dismiss it in other words (docs/capabilities.md lists its known misses).

Serve it with ``python -m examples.agents.ticket_triage --port 8102``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import re2
from starlette.applications import Starlette

from examples.agents._protocol import AgentIdentity, Answer, create_app, estimate_tokens, run
from examples.agents._ticket_lexicon import (
    BLOCKED,
    CALM,
    LABELS,
    LIMITED,
    NEGATORS,
    PRODUCTS,
    SECURITY_INCIDENT,
    SOFT_OUTAGE,
    STANDSTILL,
    TIME_BOUND,
    URGENCY,
)
from schema.jsontext import dumps

__all__ = ["IDENTITY", "Classification", "app", "classify", "create", "main"]

IDENTITY = AgentIdentity(id="acme/ticket-triage", version="1.1.0")

PRIORITIES = ("low", "normal", "high", "urgent")
SUBJECT_WEIGHT = 1.5
NEGATION_WEIGHT = -0.5
NEGATION_WINDOW = 3
REPEAT_WEIGHT = 0.25
MIN_LABEL_SCORE = 1.5
MIN_PRODUCT_SCORE = 2.0
MIN_OTHER_PRODUCT_SCORE = 5.0
# Ties go to the label that is costlier to miss.
LABEL_ORDER = (
    "security",
    "outage",
    "billing",
    "account",
    "bug",
    "feature_request",
    "how_to",
    "other",
)
BASE_PRIORITY = {
    "outage": 3,
    "security": 2,
    "bug": 1,
    "billing": 1,
    "account": 1,
    "how_to": 0,
    "feature_request": 0,
    "other": 0,
}
MAX_PRIORITY = {"feature_request": 1, "other": 1, "how_to": 2}
MIN_PRIORITY = {"outage": 2, "security": 1}
HARD_DOWN = ("is down", "are down", "completely down", "outage", "unavailable", "502", "503")

_NOT_OWN = re2.compile(
    r"(?i)^(?:on .{3,80} wrote:$|(?:created|submitted|sent|forwarded|received) "
    r"(?:through|via|from) |account id:|ticket opened\.?$|this (?:e-?mail|message) and any "
    r"attachments|sent from my )"
)
_SENTENCES = re2.compile(r"[^.!?;,:\n]+")  # clauses: negation does not cross them
_WORD = re2.compile(r"[a-z0-9]+(?:'[a-z]+)?")

Token = tuple[str, int]  # (word, clause number)


def _own_words(body: str) -> str:
    """The body without what the customer did not write for this ticket.

    Quoted replies ("> ..." and the "On Monday, X wrote:" line before them),
    channel stamps ("Created through the support API", "Forwarded from the
    in-app help widget", "Account ID: ..."), "Sent from my iPhone" and mail
    disclaimers. Signatures stay: they are hard to tell from the last line.
    """
    kept = []
    for line in body.splitlines():
        text = line.strip()
        if text.startswith(">") or _NOT_OWN.search(text):
            continue
        kept.append(line)
    return "\n".join(kept)


def _tokens(text: str) -> list[Token]:
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    out: list[Token] = []
    for number, sentence in enumerate(_SENTENCES.findall(text)):
        out.extend((word, number) for word in _WORD.findall(sentence))
    return out


@dataclass(frozen=True)
class _Phrase:
    words: tuple[str, ...]
    weight: float

    def matches(self, tokens: list[Token], start: int) -> bool:
        if start + len(self.words) > len(tokens):
            return False
        sentence = tokens[start][1]
        for offset, word in enumerate(self.words):
            token, number = tokens[start + offset]
            if number != sentence:
                return False
            if word.endswith("*"):
                if not token.startswith(word[:-1]):
                    return False
            elif token != word:
                return False
        return True


class _Matcher:
    """One lexicon, indexed by first word, scoring token lists with negation."""

    def __init__(self, lexicon: dict[str, float], *, negation: bool = True) -> None:
        self._negation = negation
        phrases: dict[tuple[str, ...], float] = {}
        for text, weight in lexicon.items():
            words = tuple(_WORD.findall(text.lower())) if not text.endswith("*") else None
            if words is None:
                head = tuple(_WORD.findall(text[:-1].lower()))
                words = (*head[:-1], head[-1] + "*")
            phrases[words] = max(weight, phrases.get(words, 0.0))
        self._exact: dict[str, list[_Phrase]] = {}
        self._prefix: list[_Phrase] = []
        for words, weight in phrases.items():
            phrase = _Phrase(words, weight)
            if words[0].endswith("*"):
                self._prefix.append(phrase)
            else:
                self._exact.setdefault(words[0], []).append(phrase)

    def score(self, tokens: list[Token]) -> float:
        total = 0.0
        seen: set[tuple[str, ...]] = set()
        for index, (word, _) in enumerate(tokens):
            candidates = self._exact.get(word, [])
            if self._prefix:
                candidates = candidates + [
                    p for p in self._prefix if word.startswith(p.words[0][:-1])
                ]
            for phrase in candidates:
                if phrase.matches(tokens, index):
                    # "not urgent" is itself a negation; it is not negated by itself
                    negated = (
                        self._negation
                        and phrase.words[0] not in NEGATORS
                        and _negated(tokens, index)
                    )
                    # a repeated phrase adds little: a ticket that says "refund" three
                    # times is not three times as much about billing
                    repeat = REPEAT_WEIGHT if phrase.words in seen else 1.0
                    seen.add(phrase.words)
                    total += phrase.weight * repeat * (NEGATION_WEIGHT if negated else 1.0)
        return total


def _negated(tokens: list[Token], index: int) -> bool:
    sentence = tokens[index][1]
    for back in range(max(0, index - NEGATION_WINDOW), index):
        word, number = tokens[back]
        if number != sentence or word not in NEGATORS:
            continue
        following = tokens[back + 1][0]
        if following in ("longer", "only", "matter"):  # "no longer works", "not only"
            continue
        return True
    return False


@dataclass(frozen=True)
class Classification:
    label: str
    priority: str
    product: str
    confidence: float
    scores: dict[str, float]

    def output(self) -> dict[str, Any]:
        """The capability's output: every field but the scores, by its name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "scores"}


class _Classifier:
    def __init__(self) -> None:
        self.labels = {name: _Matcher(lexicon) for name, lexicon in LABELS.items()}
        # A product is what the ticket is about, said or denied: "not deducted at
        # checkout" is still about the shop.
        self.products = {
            name: _Matcher(lexicon, negation=False) for name, lexicon in PRODUCTS.items()
        }
        self.urgency = _Matcher(URGENCY)
        self.calm = _Matcher(CALM)
        self.incident = _Matcher(SECURITY_INCIDENT)
        self.soft_outage = _Matcher(SOFT_OUTAGE)
        self.hard_down = _Matcher(dict.fromkeys(HARD_DOWN, 1.0))
        self.blocked = _Matcher(BLOCKED)
        self.standstill = _Matcher(STANDSTILL)
        self.time_bound = _Matcher(TIME_BOUND)
        self.limited = _Matcher(LIMITED)

    def classify(self, subject: str, body: str) -> Classification:
        parts = [(_tokens(subject), SUBJECT_WEIGHT), (_tokens(_own_words(body)), 1.0)]

        def score(matcher: _Matcher) -> float:
            return sum(matcher.score(tokens) * weight for tokens, weight in parts)

        scores = {name: round(score(m), 3) for name, m in self.labels.items()}
        ranked = sorted(LABEL_ORDER, key=lambda name: (-scores[name], LABEL_ORDER.index(name)))
        label = ranked[0] if scores[ranked[0]] >= MIN_LABEL_SCORE else "other"
        positive = sum(max(0.0, value) for value in scores.values())
        confidence = max(scores[label], 0.0) / (positive + 1.0)
        if label == "other" and scores["other"] < MIN_LABEL_SCORE:
            confidence = 0.3  # chosen for want of evidence, not because of it

        priority = self._priority(label, score)

        product_scores = {name: score(m) for name, m in self.products.items()}
        product = max(sorted(product_scores), key=lambda name: product_scores[name])
        # Sales, partnerships, praise and spam rarely concern one product: only a
        # product named outright ("Brightwave Books") counts for them.
        needed = MIN_OTHER_PRODUCT_SCORE if label == "other" else MIN_PRODUCT_SCORE
        if product_scores[product] < needed:
            product = "general"
        return Classification(
            label=label,
            priority=priority,
            product=product,
            confidence=round(min(0.99, max(0.05, confidence)), 2),
            scores=scores,
        )

    def _priority(self, label: str, score: Callable[[_Matcher], float]) -> str:
        """The label's base priority, moved by cue words, then held to what the impact says."""
        level = BASE_PRIORITY[label]
        if label == "security":
            level = 3 if score(self.incident) >= 1 else 2
        urgency, calm = score(self.urgency), score(self.calm)
        if urgency >= 1.5:
            level += 1
        if urgency >= 5:
            level += 1
        if calm >= 2:
            level -= 1
        # Impact (docs/capabilities.md's definitions) overrides how loud the words are.
        if score(self.blocked) >= 1:
            level = max(level, 2)  # a function blocked, many users, no workaround
        if score(self.limited) >= 1:
            level = min(level, 1)  # a workaround, limited impact
        if label == "outage" and score(self.soft_outage) >= 1 and score(self.hard_down) < 1:
            level = min(level, 2)  # degraded, not down
        if score(self.standstill) >= 1:
            level = 3  # down, an active incident, money or data lost now
        if score(self.time_bound) >= 1:
            level = max(level, 1)  # a deadline is time pressure
        level = max(MIN_PRIORITY.get(label, 0), min(MAX_PRIORITY.get(label, 3), level))
        return PRIORITIES[max(0, min(3, level))]


_classifier: _Classifier | None = None


def classify(subject: str, body: str) -> Classification:
    """Classify one ticket (the lexicons are compiled on first use)."""
    global _classifier
    if _classifier is None:
        _classifier = _Classifier()
    return _classifier.classify(subject, body)


def _handle(value: dict[str, Any]) -> Answer:
    subject, body = value["subject"], value["body"]
    output = classify(subject, body).output()
    return Answer(
        output=output,
        input_tokens=estimate_tokens(subject) + estimate_tokens(body),
        output_tokens=estimate_tokens(dumps(output)),
    )


def create() -> Starlette:
    """The agent's ASGI app."""
    return create_app(IDENTITY, {"ticket.classify": _handle})


# The manifest's endpoint names this attribute (asgi:examples.agents.ticket_triage:app).
# Building it does no I/O: it is routes and handlers only.
app = create()


def main(argv: Sequence[str] | None = None) -> None:
    run(create, argv, "acme/ticket-triage: ticket.classify over holon-http")


if __name__ == "__main__":
    main()
