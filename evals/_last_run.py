"""`holon test --failed`: which public cases failed the last time, per suite and agent.

After every `holon test` run, the ids of the cases it ran and failed are kept
in `HOLON_HOME/cache/practice/<digest>.json`, the digest being of the suite
id and the agent's identity (the same manifest digest `--cache` keys by), so
two agents practised on one suite keep their own lists. `--failed` runs
those cases (the ones still in the suite) again, and its own run replaces
the list: once they pass, the list is empty.

A file that cannot be read or parsed is as if there were none; the error
is logged, since `--failed` then says there is no earlier run.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

from agents import Manifest
from evals._responses import agent_identity_digest
from schema import jsontext
from schema.documents import write_file
from schema.errors import HolonError

__all__ = ["LastRun", "LastRuns"]

log = logging.getLogger(__name__)

_FORMAT = 1
_MAX_IDS = 100_000  # more than any suite has; a file claiming more is not ours


@dataclass(frozen=True)
class LastRun:
    suite_version: int
    ran: tuple[str, ...]
    failed: tuple[str, ...]


class LastRuns:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, suite_id: str, agent: Manifest) -> Path:
        key = f"{suite_id}\x00{agent_identity_digest(agent)}"
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        return self.directory / f"{digest}.json"

    def get(self, suite_id: str, agent: Manifest) -> LastRun | None:
        path = self._path(suite_id, agent)
        try:
            entry = jsontext.loads(path.read_bytes())
            if entry["format"] != _FORMAT or entry["suite"] != suite_id:
                raise ValueError("another format or suite")
            ran, failed = entry["ran"], entry["failed"]
            if not all(isinstance(x, list) and len(x) <= _MAX_IDS for x in (ran, failed)):
                raise ValueError("case lists expected")
            if not all(isinstance(i, str) for i in [*ran, *failed]):
                raise ValueError("case ids are strings")
            return LastRun(int(entry["version"]), tuple(ran), tuple(failed))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            log.warning("last run of %s: ignoring %s (%s)", suite_id, path, exc)
            return None

    def put(
        self, suite_id: str, suite_version: int, agent: Manifest, ran: list[str], failed: list[str]
    ) -> None:
        entry = {
            "format": _FORMAT,
            "suite": suite_id,
            "version": suite_version,
            "endpoint": agent.endpoint,
            "ran": ran,
            "failed": failed,
        }
        path = self._path(suite_id, agent)
        try:
            write_file(path, jsontext.dumps(entry).encode("utf-8"), make_parents=True)
        except HolonError as exc:  # the run itself stands; only --failed loses its list
            log.warning("last run of %s: cannot write %s: %s", suite_id, path, exc)
