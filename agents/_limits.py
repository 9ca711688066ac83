"""The limits the gateway enforces on one call, on its own side, without announcing them.

The agent only ever sees its *own* declared limits (request headers); the
caps here come from the mandate (live calls) or the suite (eval calls) and
differ between the two modes, which is exactly why they never reach the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from agents._manifest import Manifest

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "DEFAULT_TIMEOUT_S", "MAX_REQUEST_BYTES", "CallLimits"]

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""The largest request body holon sends an agent, in every mode and protocol.

Twice the largest body the gateway reads (8 MiB), so a caller's input fits
unless writing its numbers back more than doubles it (`1e20,` written as
21 digits). Over it, the call is refused before anything is sent
(`schema.errors.PayloadTooLarge`, 413 for a live call).
"""
DEFAULT_MAX_JSON_DEPTH = 64
MAX_JSON_DEPTH_LIMIT = 512


@dataclass(frozen=True)
class CallLimits:
    """What the executor enforces on one call.

    - `max_cost_usd`: the enforced cap (the mandate's or the suite's); a priced
      cost above it is `cost_exceeded`, and a per-call price above it means the
      agent is not called at all. None: no cap.
    - `timeout_s`: the total deadline of one attempt (connect + read + body).
      None: the agent's declared `limits.timeout_s`, else 30 s.
    - `max_response_bytes`: the largest body read (decoded bytes); more is
      `invalid_response`, and nothing past the cap is buffered.
    - `max_output_bytes`: the largest output accepted as holon writes it
      (`schema.jsontext.dumps`, UTF-8 bytes), so a cap on what is read is
      one on what is passed on too; more is `invalid_response`. None: the
      same as `max_response_bytes`. Live calls leave room under the caller's
      response cap for the rest of the answer.
    - `max_json_depth`: deepest JSON nesting accepted in a response.
    - `unreachable_retries`: how many more attempts after an `unreachable` one
      (only that code is retried), `retry_backoff_s * 2**(n-1)` apart, all with
      the same request id.
    - `connect_timeout_s`: a connection not established within this (or the
      deadline, if shorter) is `unreachable`, which is retried, not `timeout`.
    - `stream_first_byte_s`, `stream_gap_s`: a streamed answer (an `openai-chat`
      agent with `stream: true`, agents._chat_stream) whose body's first byte,
      or next bytes, do not come within these (or the deadline, if shorter)
      is `timeout`.
    """

    max_cost_usd: Decimal | None = None
    timeout_s: float | Decimal | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    max_output_bytes: int | None = None
    unreachable_retries: int = 0
    retry_backoff_s: float = 0.5
    connect_timeout_s: float = 10.0
    stream_first_byte_s: float = 30.0
    stream_gap_s: float = 10.0

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None:
            if not isinstance(self.max_cost_usd, Decimal) or not self.max_cost_usd.is_finite():
                raise TypeError("max_cost_usd must be a finite Decimal (money is never float)")
            if self.max_cost_usd < 0:
                raise ValueError("max_cost_usd must be >= 0")
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ValueError("timeout_s must be > 0")
        if self.max_response_bytes < 0:
            raise ValueError("max_response_bytes must be >= 0")
        if self.max_output_bytes is not None and self.max_output_bytes < 0:
            raise ValueError("max_output_bytes must be >= 0")
        if not 1 <= self.max_json_depth <= MAX_JSON_DEPTH_LIMIT:
            # Python's own parser gives up near 1,000 levels; stay well inside it.
            raise ValueError(f"max_json_depth must be between 1 and {MAX_JSON_DEPTH_LIMIT}")
        if self.unreachable_retries < 0 or self.retry_backoff_s < 0:
            raise ValueError("unreachable_retries and retry_backoff_s must be >= 0")
        if not self.connect_timeout_s > 0:
            raise ValueError("connect_timeout_s must be > 0")
        if not (self.stream_first_byte_s > 0 and self.stream_gap_s > 0):
            raise ValueError("stream_first_byte_s and stream_gap_s must be > 0")

    @property
    def output_limit(self) -> int:
        """The enforced cap on an output as holon writes it, in bytes."""
        return self.max_response_bytes if self.max_output_bytes is None else self.max_output_bytes

    def deadline_s(self, agent: Manifest) -> float:
        """The enforced deadline of one attempt, in seconds."""
        if self.timeout_s is not None:
            return float(self.timeout_s)
        if agent.limits.timeout_s is not None and agent.limits.timeout_s > 0:
            return float(agent.limits.timeout_s)
        return DEFAULT_TIMEOUT_S

    def backoff_s(self, attempt: int) -> float:
        """Pause before attempt `attempt + 1`, after `attempt` failed unreachable."""
        return float(self.retry_backoff_s * 2 ** (attempt - 1))
