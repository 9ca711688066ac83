"""/metrics in the Prometheus text format: live calls and denials, eval cells, latencies.

Counters live in this process (each uvicorn worker has its own; Prometheus
sums them, as it expects of counters; a process that restarts starts at zero,
which `rate()` reads as a reset).

Calls and spend per mandate (and spend per caller) are fed from the ledger
rows this process commits (`LedgerWriter(observe=...)`): no store read per
call, and the spend is what the ledger charged, min(cost, cap). Their label
values are mandate ids and caller names, both made by an operator (a mandate
is granted, a token created), so their number is bounded by what operators
create, not by what callers send. A reservation left by a crashed process and
charged when it expires is in the ledger but in no process's counter.

Eval cell counts come from the store, so every process reports
the same, whole picture; counting them reads the whole cells table, so each
process does it at most once per `cells_ttl_s` (CachedCounts) and scrapes in
between get the last count. Live conformance (answers and contract
violations per agent and capability over the live window) comes from the
store's counters the same way (records._conformance).

Background loops (gateway._loops) are labelled by their name alone: which
agent or token failed is in the log, not here.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, Generic, TypeVar

from gateway._loops import LoopState
from gateway.live import CanaryResult
from records import LIVE_WINDOW_DAYS, LedgerEntry, LedgerStatus, LiveConformance

__all__ = ["CachedCounts", "Metrics", "render_live", "render_loops"]

V = TypeVar("V")

# How long a count of eval cells serves scrapes before the store is asked again.
CELLS_TTL_S = 30.0

BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def _usd(amount: Decimal) -> str:
    """A Prometheus sample value: plain decimal digits (never `1E+1`)."""
    return format(amount, "f")


class Histogram:
    def __init__(self) -> None:
        self.buckets = [0] * len(BUCKETS_MS)
        self.count = 0
        self.total = 0.0

    def observe(self, value_ms: float) -> None:
        self.count += 1
        self.total += value_ms
        for index, bound in enumerate(BUCKETS_MS):
            if value_ms <= bound:
                self.buckets[index] += 1

    def lines(self, name: str, labels: tuple[tuple[str, str], ...]) -> list[str]:
        out = []
        for bound, count in zip(BUCKETS_MS, self.buckets, strict=True):
            out.append(f"{name}_bucket{_labels((*labels, ('le', str(bound))))} {count}")
        out.append(f"{name}_bucket{_labels((*labels, ('le', '+Inf')))} {self.count}")
        out.append(f"{name}_sum{_labels(labels)} {self.total:.3f}")
        out.append(f"{name}_count{_labels(labels)} {self.count}")
        return out


class CachedCounts(Generic[V]):
    """A count from the store, computed at most once per `ttl_s` in this process.

    The first scrape after expiry counts again (on its worker thread, not the
    event loop). Only one thread counts at a time: while it does, other
    scrapes answer with the previous count instead of queueing a second
    full scan behind it (the very first count has none, so they wait for it).
    A failed count caches nothing; the scrape fails as the store does.
    """

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._refresh = threading.Lock()
        self._value: V | None = None
        self._at = -math.inf

    def _fresh(self) -> V | None:
        value = self._value
        if value is not None and self._clock() - self._at < self.ttl_s:
            return value
        return None

    def get(self, count: Callable[[], V]) -> V:
        fresh = self._fresh()
        if fresh is not None:
            return fresh
        previous = self._value
        if not self._refresh.acquire(blocking=previous is None):
            assert previous is not None
            return previous
        try:
            fresh = self._fresh()  # another thread counted while this one waited
            if fresh is not None:
                return fresh
            value = count()
            self._value, self._at = value, self._clock()
            return value
        finally:
            self._refresh.release()


class Metrics:
    def __init__(self, cells_ttl_s: float = CELLS_TTL_S) -> None:
        self._lock = threading.Lock()
        self.cells: CachedCounts[dict[str, int]] = CachedCounts(cells_ttl_s)  # from the store
        # Live conformance over the window, from the store (records._conformance).
        self.live: CachedCounts[list[LiveConformance]] = CachedCounts(cells_ttl_s)
        self.calls: Counter[tuple[str, str]] = Counter()  # (capability, outcome)
        self.denials: Counter[str] = Counter()  # reason
        self.requests: Counter[tuple[str, str, int]] = Counter()  # (method, route, status)
        self.call_latency: dict[str, Histogram] = {}  # by outcome
        self.request_latency: dict[str, Histogram] = {}  # by route
        self.probes: Counter[tuple[str, str]] = Counter()  # (agent, result)
        self.identity_mismatch: dict[str, int] = {}  # agent -> 1 if the last probe mismatched
        self.mandate_calls: Counter[tuple[str, str]] = Counter()  # (mandate, decision)
        self.mandate_spend: dict[str, Decimal] = {}  # mandate -> USD charged
        self.caller_spend: dict[str, Decimal] = {}  # caller -> USD charged
        # Canaries (gateway.live._canaries): (agent, capability, result) and spend by agent.
        self.canaries: Counter[tuple[str, str, str]] = Counter()
        self.canary_spend: dict[str, Decimal] = {}
        self.drifted: dict[tuple[str, str], int] = {}  # (agent, capability) -> 1 once drifted

    def ledger(self, entry: LedgerEntry) -> None:
        """A ledger row this process committed: a reservation is an allowed call, a
        denial a denied one, a settlement adds its charge."""
        mandate = entry.mandate_id
        if mandate is None:  # denied for holding no mandate: holon_live_denials_total
            return
        with self._lock:
            if entry.status == LedgerStatus.RESERVED:
                self.mandate_calls[(mandate, "allow")] += 1
            elif entry.status == LedgerStatus.DENIED:
                self.mandate_calls[(mandate, "deny")] += 1
            elif entry.status == LedgerStatus.SETTLED:
                cost = entry.cost_usd
                self.mandate_spend[mandate] = self.mandate_spend.get(mandate, Decimal(0)) + cost
                caller = entry.caller
                self.caller_spend[caller] = self.caller_spend.get(caller, Decimal(0)) + cost

    def live_call(self, capability: str, outcome: str, latency_ms: float) -> None:
        with self._lock:
            self.calls[(capability, outcome)] += 1
            self.call_latency.setdefault(outcome, Histogram()).observe(latency_ms)

    def denial(self, reason: str) -> None:
        with self._lock:
            self.denials[reason] += 1

    def probe(self, agent_id: str, result: str) -> None:
        with self._lock:
            self.probes[(agent_id, result)] += 1
            self.identity_mismatch[agent_id] = 1 if result == "mismatch" else 0

    def canary(self, result: CanaryResult) -> None:
        """One canary sent (passed or failed) or skipped (its reason), as this process saw it."""
        if result.sent:
            outcome = "passed" if result.passed else "failed"
        else:
            outcome = f"skipped_{result.reason}"
        key = (result.agent_id, result.capability)
        with self._lock:
            self.canaries[(*key, outcome)] += 1
            if result.sent:
                spent = self.canary_spend.get(result.agent_id, Decimal(0))
                self.canary_spend[result.agent_id] = spent + result.cost_usd
            if result.drift_decided:
                self.drifted[key] = 1

    def request(self, method: str, route: str, status: int, latency_ms: float) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1
            self.request_latency.setdefault(route, Histogram()).observe(latency_ms)

    def render(self, cells: dict[str, int]) -> str:
        """The exposition text; `cells` is the store's eval cell count by outcome."""
        with self._lock:
            lines = _family(
                "holon_live_calls_total",
                "counter",
                "Live calls that reached an agent, by outcome.",
                ("capability", "outcome"),
                self.calls,
            )
            lines += _family(
                "holon_live_denials_total",
                "counter",
                "Live calls denied, by reason.",
                ("reason",),
                self.denials,
            )
            lines += _histograms(
                "holon_live_call_latency_ms",
                "Latency of live calls at the agent, by outcome.",
                "outcome",
                self.call_latency,
            )
            lines += _family(
                "holon_http_requests_total",
                "counter",
                "API requests, by route and status.",
                ("method", "route", "status"),
                self.requests,
            )
            lines += _histograms(
                "holon_http_request_latency_ms",
                "API request latency, by route.",
                "route",
                self.request_latency,
            )
        with self._lock:
            lines += _family(
                "holon_agent_probes_total",
                "counter",
                "Identity probes of agents, by result.",
                ("agent", "result"),
                self.probes,
            )
            lines += _family(
                "holon_agent_identity_mismatch",
                "gauge",
                "1 when the agent's last probe answered another version than the registered one.",
                ("agent",),
                self.identity_mismatch,
            )
            lines += _family(
                "holon_canaries_total",
                "counter",
                "Canaries to agents, by result: passed, failed, or skipped_REASON (not sent).",
                ("agent", "capability", "result"),
                self.canaries,
            )
            lines += _family(
                "holon_canary_spend_usd_total",
                "counter",
                "USD canaries cost, by agent (the operator's, never a caller's).",
                ("agent",),
                self.canary_spend,
                _usd,
            )
            lines += _family(
                "holon_agent_drift",
                "gauge",
                "1 once this process's canaries decided that the agent drifted on the "
                "capability (the record says so for every process).",
                ("agent", "capability"),
                self.drifted,
            )
        with self._lock:
            lines += _family(
                "holon_mandate_calls_total",
                "counter",
                "Live calls decided under each mandate (allow: reserved against it; deny: it "
                "gave the reason).",
                ("mandate", "decision"),
                self.mandate_calls,
            )
            lines += _family(
                "holon_mandate_spend_usd_total",
                "counter",
                "USD charged to each mandate by settled calls.",
                ("mandate",),
                self.mandate_spend,
                _usd,
            )
            lines += _family(
                "holon_caller_spend_usd_total",
                "counter",
                "USD charged to each caller by settled calls.",
                ("caller",),
                self.caller_spend,
                _usd,
            )
        lines += _family(
            "holon_eval_cells",
            "gauge",
            "Eval cells in the store, by outcome (pending: not yet run), counted at most once "
            "per cache interval.",
            ("outcome",),
            cells,
        )
        return "\n".join(lines) + "\n"


def _family(
    name: str,
    kind: str,
    help: str,
    label_names: tuple[str, ...],
    samples: Mapping[Any, Any],
    value: Callable[[Any], str] = str,
) -> list[str]:
    """One metric family: its HELP and TYPE lines, then a sample for each key (a label
    value, or a tuple of them in `label_names`' order), sorted."""
    lines = [f"# HELP {name} {help}", f"# TYPE {name} {kind}"]
    for key, sample in sorted(samples.items()):
        values = key if isinstance(key, tuple) else (key,)
        labels = _labels(zip(label_names, (str(v) for v in values), strict=True))
        lines.append(f"{name}{labels} {value(sample)}")
    return lines


def _histograms(name: str, help: str, label: str, by: Mapping[str, Histogram]) -> list[str]:
    lines = [f"# HELP {name} {help}", f"# TYPE {name} histogram"]
    for key, hist in sorted(by.items()):
        lines += hist.lines(name, ((label, key),))
    return lines


def render_live(counts: Iterable[LiveConformance]) -> str:
    """The live conformance gauges: per agent and capability, over the live window."""
    window = f"the last {LIVE_WINDOW_DAYS} UTC days"
    families = (
        ("calls", f"Live answers checked against the capability's contract over {window}."),
        (
            "violations",
            f"Live answers that broke the capability's output schema over {window} (the agent's).",
        ),
        (
            "check_failures",
            f"Live answers that failed a check of the suite's reading only input and output, "
            f"over {window} (passed on, counted against the agent).",
        ),
        (
            "violation_rate",
            f"(violations + check_failures) / calls over {window} (absent before the first call).",
        ),
        (
            "input_violations",
            f"Live calls refused for an input outside the input schema over {window} (the "
            'caller\'s; agent="" for routed calls).',
        ),
    )
    rows = list(counts)
    lines: list[str] = []
    for field, text in families:
        name = f"holon_live_window_{field}"
        lines += [f"# HELP {name} {text}", f"# TYPE {name} gauge"]
        for row in rows:
            value = row.rate if field == "violation_rate" else getattr(row, field)
            if value is None:
                continue
            labels = _labels((("agent", row.agent_id), ("capability", row.capability)))
            lines.append(f"{name}{labels} {value}")
    return "\n".join(lines) + "\n"


def render_loops(states: Iterable[LoopState]) -> str:
    """The background loops: whether each runs, its last success, its failed items."""
    rows = list(states)
    families: tuple[tuple[str, str, str, Callable[[LoopState], object]], ...] = (
        (
            "running",
            "gauge",
            "1 while the background loop's task or thread runs.",
            lambda state: int(state.running),
        ),
        (
            "last_success_timestamp_seconds",
            "gauge",
            "When the background loop last did its work, in Unix seconds (absent before).",
            lambda state: state.last_success,
        ),
        (
            "last_success_age_seconds",
            "gauge",
            "Seconds since the background loop last did its work (or since it started).",
            lambda state: round(state.age_s, 3),
        ),
        (
            "ready",
            "gauge",
            "1 while the background loop runs and has succeeded lately (/readyz).",
            lambda state: int(state.ready),
        ),
        (
            "failures_total",
            "counter",
            "Items of the background loop that raised (each logged with its item).",
            lambda state: state.failures,
        ),
    )
    lines: list[str] = []
    for field, kind, text, value_of in families:
        name = f"holon_loop_{field}"
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for state in rows:
            value = value_of(state)
            if value is not None:
                lines.append(f"{name}{_labels((('loop', state.name),))} {value}")
    return "\n".join(lines) + "\n"
