"""Rendered reports of finished evals, kept in memory and keyed by what they are made of.

A 2,000-cell report costs most of a second to build and render (docs/performance.md,
"Console"), and the console shows it in its eval page, its charts and its downloads.
A finished eval's report changes only when something it is made of changes, so each
text is kept under a digest of all of it that one can read cheaply, read again
from the store on every request (a few small reads, no cells): the eval's row (status,
finish, plan, result, origin), the holdout secret (author digests are keyed by it),
each planned suite version's title and digests (its files are those digests' content),
the agent version's manifest, and one aggregate over the cells (how many, how many
still hold an output: retention drops them, their fences, the last finish). Whatever
another gateway process changes in the store changes the key, so a text kept here is
never served for a report that reads differently; nothing needs invalidating.

Only a `done` eval is kept (a running one changes by the second, a cancelled one may
still have a cell in flight recorded); the texts are bounded in characters, least
recently used out first.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from evals.reports._model import REPORT_VERSION, build_report, check_audience
from records import EvalStatus, Store
from schema.errors import NotFound
from schema.jsontext import dumps

__all__ = ["DEFAULT_MAX_CHARACTERS", "ReportCache", "report_key"]

# About ten 2,000-cell operator reports in HTML (6 million characters each).
DEFAULT_MAX_CHARACTERS = 64_000_000


def report_key(store: Store, eval_id: str, audience: str, form: str) -> str | None:
    """The digest of everything the report of `eval_id` is made of, for a done eval;
    None for any other (NotFound for an unknown eval, as `build_report`)."""
    info = store.evals.get(eval_id)
    if info.status != EvalStatus.DONE:
        return None
    suites: list[Any] = []
    for entry in info.plan.get("suites", []):
        try:
            installed = store.suites.get(str(entry["id"]), int(entry["version"]))
            suites.append([installed.title, sorted(installed.digests.items())])
        except NotFound:  # uninstalled: the report reads without it
            suites.append(None)
    try:
        manifest: dict[str, Any] | None = store.agents.manifest(info.agent_id, info.agent_version)
    except NotFound:  # the agent is gone
        manifest = None
    n, outputs, fences, last = store.evals.cell_state(eval_id)
    parts = {
        "report_version": REPORT_VERSION,
        "audience": audience,
        "form": form,
        "eval": [
            info.id,
            info.agent_id,
            info.agent_version,
            info.status.value,
            info.plan_digest,
            info.full_plan,
            info.cells_total,
            str(info.finished_at),
        ],
        "plan": info.plan,
        "result": info.result,
        "origin": info.origin,
        "secret": hashlib.sha256(store.suites.holdout_secret()).hexdigest(),
        "suites": suites,
        "manifest": manifest,
        "cells": [n, outputs, fences, str(last)],
    }
    return hashlib.sha256(dumps(parts, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()


class ReportCache:
    """Rendered reports of done evals, at most `max_characters` of text in all.

    Safe to share between threads (the gateway renders in a thread pool); a text is
    built outside the lock, so two first requests for one report may both build it.
    """

    def __init__(self, max_characters: int = DEFAULT_MAX_CHARACTERS) -> None:
        self.max_characters = max_characters
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._characters = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._texts)

    def report(
        self,
        store: Store,
        eval_id: str,
        *,
        audience: str,
        form: str,
        render: Callable[[dict[str, Any]], str],
    ) -> str:
        """`render(build_report(store, eval_id, audience=audience))`, kept for a done eval."""
        chosen = check_audience(audience)
        key = report_key(store, eval_id, chosen, form)
        if key is not None:
            with self._lock:
                text = self._texts.get(key)
                if text is not None:
                    self._texts.move_to_end(key)
                    self.hits += 1
                    return text
                self.misses += 1
        text = render(build_report(store, eval_id, audience=chosen))
        # Kept only if nothing changed while it was built (read again: a few small reads).
        if key is None or len(text) > self.max_characters:
            return text
        if report_key(store, eval_id, chosen, form) != key:
            return text
        with self._lock:
            if key not in self._texts:
                self._texts[key] = text
                self._characters += len(text)
            while self._characters > self.max_characters:
                _, dropped = self._texts.popitem(last=False)
                self._characters -= len(dropped)
        return text
