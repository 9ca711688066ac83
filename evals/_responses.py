"""`holon test --cache`: an author's agent answers, kept on the author's disk.

An agent author re-running a suite while changing checks or the suite's
cases should not pay (in time, tokens or money) for answers the agent has
already given. With `--cache`, every `ok` outcome is kept under
`HOLON_HOME/cache/responses`, keyed by the sha256 of the canonical JSON
(RFC 8785) of what decides the answer:

- the agent's identity: its whole manifest (id, version, protocol, endpoint,
  capabilities, declared limits, pricing; a practice manifest has no secret),
  so another endpoint, version or limit is another key;
- the capability and the exact input the agent receives (fixtures expanded);
- the repetition, so a suite with repetitions keeps as many samples as it
  asks for instead of grading one answer N times.

Only `ok` outcomes are kept: a timeout or an unreachable agent is asked again.
An entry holds the outcome and a checksum; one that fails to parse or to
match is a miss (and is overwritten). Writes go through `write_file`
(temporary file and rename), so a crash leaves a whole entry or none. A
cache that cannot be written still runs the suite: the failure is logged.

This is opt-in and local: it serves only `holon test` (public cases, the
author's own machine); an eval never reads it.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from agents import Manifest, Outcome
from evals._cache_files import check_entry, entry_path, read_entry
from schema import jsontext
from schema.canonical import canonical_json
from schema.documents import write_file
from schema.errors import HolonError

__all__ = ["ResponseCache", "agent_identity_digest"]

log = logging.getLogger(__name__)

_FORMAT = 1


def agent_identity_digest(agent: Manifest) -> str:
    """The sha256 of the agent's canonical manifest: which agent, wherever it answers."""
    return hashlib.sha256(canonical_json(agent.to_json()).encode("utf-8")).hexdigest()


def _checksum(outcome: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(outcome).encode("utf-8")).hexdigest()


class ResponseCache:
    """Outcomes by request digest, one JSON file each: `<key[:2]>/<key>.json`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def key(agent: Manifest, capability: str, input: Any, repetition: int) -> str:
        request = {
            "format": _FORMAT,
            "agent": agent_identity_digest(agent),
            "capability": capability,
            "input": input,
            "repetition": repetition,
        }
        return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return entry_path(self.directory, key)

    def get(self, key: str) -> Outcome | None:
        path = self._path(key)
        data = read_entry(path, log, "response cache")
        if data is None:
            return None
        try:
            entry = jsontext.loads(data)
            check_entry(entry, key, _FORMAT, lambda: _checksum(entry["outcome"]))
            outcome = Outcome.from_json(entry["outcome"])
            if not outcome.ok:
                raise ValueError("not an ok outcome")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            log.warning("response cache: ignoring corrupt entry %s (%s)", path, exc)
            return None
        return outcome

    def put(self, key: str, outcome: Outcome) -> None:
        if not outcome.ok:
            return  # a failure is asked again next time
        document = outcome.to_json()
        entry = {
            "format": _FORMAT,
            "key": key,
            "checksum": _checksum(document),
            "outcome": document,
        }
        try:
            write_file(self._path(key), jsontext.dumps(entry).encode("utf-8"), make_parents=True)
        except HolonError as exc:
            log.warning("response cache: cannot write %s: %s", self._path(key), exc)
