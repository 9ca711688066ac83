"""Rendered reports of finished evals, kept in memory and keyed by what they are made of.

A 2,000-cell report costs most of a second to build and render (docs/performance.md,
"Console"), and the console shows it in its eval page, its charts and its downloads.
A finished eval's report changes only when something it is made of changes, so each
text is kept under a digest of all of it that one can read cheaply, read again
from the store on every request (a few small reads, no cells): the eval's row (status,
finish, plan, result, origin), the holdout secret (author digests are keyed by it),
each planned suite version's title and digests (its files are those digests' content),
the agent version's manifest, and one aggregate over the cells (how many, how many
still hold an output: retention drops them, their fences, the last finish), and what the
report states besides (its policies, each metric's unit and direction). Whatever
another gateway process changes in the store changes the key, so a text kept here is
never served for a report that reads differently; nothing needs invalidating.

Only a `done` eval is kept (a running one changes by the second, a cancelled one may
still have a cell in flight recorded); the texts are bounded in characters, least
recently used out first.

Behind the process's texts, the store's (records.EvalReportRegistry, the
`eval_reports` table): a text rendered here is written through under its key, and a
text missing here is looked for there, under the same key, before it is rendered, so
a fresh process (a restart, another of the gateway's processes) serves a done eval's
report without building it. `prerender` fills the store's for an eval just finished
(the gateway's eval workers call it off the eval's path). A text over the store's
bound (`max_stored_bytes`) is not stored; it is rendered by each process that shows it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from agents import frozen_gc
from evals.checks import METRICS
from evals.reports._data import open_eval
from evals.reports._model import AUDIENCES, REPORT_VERSION, check_audience, report_of
from evals.reports._policies import policies_block
from evals.reports._renderers import CHUNKS, Chunks, Render, write_report
from records import MAX_STORED_REPORT_BYTES, EvalStatus, Store
from schema.errors import HolonError, NotFound
from schema.jsontext import dumps

__all__ = ["DEFAULT_MAX_CHARACTERS", "ReportCache", "report_key"]

log = logging.getLogger(__name__)

# About ten 2,000-cell operator reports in HTML (6 million characters each).
DEFAULT_MAX_CHARACTERS = 64_000_000
# What a report written as it is rendered (`ReportCache.write`: `holon evals report` on
# the store) keeps of its text to store it: one longer is not held for that, so writing
# a report never holds more than this (a gateway's prerender keeps up to the store's
# bound, in the background).
STREAM_KEPT_CHARACTERS = 8_000_000


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
        # What the report states besides the store's rows: the rules that judged it and
        # what each metric means. A text rendered under other ones is another report.
        "policies": policies_block(()),
        "metrics": {name: m.to_json() for name, m in METRICS.items()},
    }
    return hashlib.sha256(dumps(parts, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()


class ReportCache:
    """Rendered reports of done evals, at most `max_characters` of text in all, in front
    of the store's (`stored`: off for a cache of this process alone).

    Safe to share between threads (the gateway renders in a thread pool); a text is
    built outside the lock, so two first requests for one report may both build it.
    `renders`, `stored_hits` and `stored_writes` count what it did (for tests and
    benches: a report served from the store is one that was not rendered).
    """

    def __init__(
        self,
        max_characters: int = DEFAULT_MAX_CHARACTERS,
        *,
        stored: bool = True,
        max_stored_bytes: int = MAX_STORED_REPORT_BYTES,
    ) -> None:
        self.max_characters = max_characters
        self.stored = stored
        self.max_stored_bytes = max_stored_bytes
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._characters = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.renders = 0
        self.stored_hits = 0
        self.stored_writes = 0

    def __len__(self) -> int:
        return len(self._texts)

    def report(
        self,
        store: Store,
        eval_id: str,
        *,
        audience: str,
        form: str,
        render: Render,
    ) -> str:
        """`render(build_report(store, eval_id, audience=audience))`, kept for a done eval."""
        chosen = check_audience(audience)
        key = report_key(store, eval_id, chosen, form)
        text = self._served(store, eval_id, chosen, form, key)
        if text is not None:
            return text
        with self._lock:
            self.renders += 1
        with frozen_gc():  # as write_report says
            text = render(report_of(open_eval(store, eval_id), chosen))
        if key is not None:
            self._kept(store, eval_id, chosen, form, key, text)
        return text

    def write(
        self,
        store: Store,
        eval_id: str,
        *,
        audience: str,
        form: str,
        write: Callable[[str], object],
    ) -> None:
        """The report as `report` gives it, to `write` a piece at a time: one kept is
        written whole, one rendered is streamed (`write_report`) and kept if it fits
        `STREAM_KEPT_CHARACTERS` and where it would be kept (the store's bound; this
        process's without a store)."""
        chosen = check_audience(audience)
        key = report_key(store, eval_id, chosen, form)
        text = self._served(store, eval_id, chosen, form, key)
        if text is not None:
            write(text)
            return
        with self._lock:
            self.renders += 1
        kept = _Capped(
            min(
                STREAM_KEPT_CHARACTERS,
                self.max_stored_bytes if self.stored else self.max_characters,
            )
        )

        def both(chunk: str) -> None:
            write(chunk)
            if key is not None:
                kept.add(chunk)

        write_report(store, eval_id, audience=chosen, form=form, write=both)
        whole = kept.text()
        if key is not None and whole is not None:
            self._kept(store, eval_id, chosen, form, key, whole)

    def _served(
        self, store: Store, eval_id: str, audience: str, form: str, key: str | None
    ) -> str | None:
        """The text kept under `key`, here or in the store; None when none is."""
        if key is None:
            return None
        with self._lock:
            text = self._texts.get(key)
            if text is not None:
                self._texts.move_to_end(key)
                self.hits += 1
                return text
            self.misses += 1
        if not self.stored:
            return None
        text = store.eval_reports.get(eval_id, audience, form, key)
        if text is not None:
            with self._lock:
                self.stored_hits += 1
            self._keep(key, text)
        return text

    def prerender(self, store: Store, eval_id: str, forms: Mapping[str, Chunks] = CHUNKS) -> int:
        """Render the eval's report for every audience in each of `forms` into the store
        (and this process), unless the store holds it already; how many were rendered.
        Nothing for an eval that is not done. Each audience's cells are counted once,
        and a text past the store's bound is given up as soon as it passes it (it would
        not be kept: each process renders it when asked)."""
        wanted = []
        for audience in AUDIENCES:
            for form in forms:
                key = report_key(store, eval_id, audience, form)
                if key is None:
                    return 0  # not done (or no longer)
                if not self.stored or store.eval_reports.key(eval_id, audience, form) != key:
                    wanted.append((audience, form, key))
        if not wanted:
            return 0
        with frozen_gc():  # as write_report says
            source = open_eval(store, eval_id)
            for audience in AUDIENCES:
                chosen = [(form, key) for asked, form, key in wanted if asked == audience]
                if not chosen:
                    continue
                report = report_of(source, audience)
                for form, key in chosen:
                    with self._lock:
                        self.renders += 1
                    kept = _Capped(self.max_stored_bytes if self.stored else self.max_characters)
                    for chunk in forms[form](report):
                        if not kept.add(chunk):
                            break
                    text = kept.text()
                    if text is not None:
                        self._kept(store, eval_id, audience, form, key, text)
        return len(wanted)

    def _kept(
        self, store: Store, eval_id: str, audience: str, form: str, key: str, text: str
    ) -> None:
        """Keep `text`, rendered from `key`, here and in the store, if nothing it is made
        of changed while it was built (read again: a few small reads)."""
        if report_key(store, eval_id, audience, form) != key:
            return
        self._keep(key, text)
        if not self.stored:
            return
        try:
            written = store.eval_reports.put(
                eval_id, audience, form, key, text, max_bytes=self.max_stored_bytes
            )
        except HolonError as exc:  # served all the same; the next process renders it
            log.warning(
                "the report of eval %s (%s, %s) was not stored: %s", eval_id, audience, form, exc
            )
            return
        if not written:
            return
        # Changed while it was written (retention dropping the outputs it shows, say):
        # whichever came last, the row goes (drop_outputs deleted it, or this does).
        if report_key(store, eval_id, audience, form) != key:
            store.eval_reports.discard(eval_id, audience, form, key)
            return
        with self._lock:
            self.stored_writes += 1

    def _keep(self, key: str, text: str) -> None:
        if len(text) > self.max_characters:
            return
        with self._lock:
            if key not in self._texts:
                self._texts[key] = text
                self._characters += len(text)
            while self._characters > self.max_characters:
                _, dropped = self._texts.popitem(last=False)
                self._characters -= len(dropped)


class _Capped:
    """A text's pieces, kept while they come to at most `limit` characters in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.parts: list[str] | None = []

    def add(self, chunk: str) -> bool:
        """Keep `chunk`; False once the text is past the limit (nothing is kept then)."""
        if self.parts is None:
            return False
        self.size += len(chunk)
        if self.size > self.limit:
            self.parts = None
            return False
        self.parts.append(chunk)
        return True

    def text(self) -> str | None:
        return None if self.parts is None else "".join(self.parts)
