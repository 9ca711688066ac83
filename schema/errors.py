"""The one exception tree of holon, with exit codes and HTTP statuses.

Every layer raises these, so they live in the bottom layer (``schema``): the
error body ``{"error": {"code", "message", "details"}}`` is part of the wire
contract, like the JSON Schemas beside this module::

    HolonError                  exit 1  HTTP 500  internal
    ├── GeneratorBug                              internal: a fixture generator's own bug
    ├── UsageError              exit 2  HTTP 400  usage: bad command-line or request use
    │   ├── InvalidInput                          invalid_input: a live input breaks its schema
    │   ├── PayloadTooLarge             413       payload_too_large: a body over its cap
    │   └── BodyTimeout                 408       request_timeout: a body too slow to arrive
    ├── InputError              exit 2  HTTP 422  invalid_input: names file:line:col and path
    │   ├── ManifestError                         invalid_manifest
    │   ├── SuiteError                            invalid_suite
    │   │   └── CheckError                        invalid_check
    │   └── MandateError                          invalid_mandate
    ├── NotFound                exit 2  HTTP 404  not_found
    ├── Conflict                exit 2  HTTP 409  conflict: same (id, version), other content
    │   └── StaleRevision               412       stale_revision: --if-revision/If-Match moved on
    ├── Refused                 exit 2  HTTP 409  refused: e.g. resume after a change
    │   └── IdentityMismatch              identity_mismatch: another agent answers the probe
    ├── Unauthorized            exit 2  HTTP 401  unauthorized: no or bad token
    ├── Forbidden               exit 2  HTTP 403  forbidden: the token's role may not do this
    ├── Denied                  exit 1  HTTP 403  <deny reason>: a mandate said no
    │   ├── BudgetExhausted     exit 1  HTTP 402  budget_exhausted (and budget_too_small)
    │   └── RateLimited         exit 1  HTTP 429  rate_limited: Retry-After from retry_after_s
    ├── CheckFailed             exit 1  HTTP 200  check_failed: the thing checked failed
    │   └── CertificateRejected         422       certificate_rejected: details.reason says why
    └── EnvironmentFault        exit 3  HTTP 503  environment: something around us is broken
        ├── StoreError                            store_error
        │   ├── StoreUnavailable                  store_unavailable
        │   └── SchemaMismatch                    schema_mismatch: another revision
        │       └── SchemaBehind                  schema_mismatch: "run holon db upgrade"
        ├── GatewayUnreachable                    gateway_unreachable: --gateway did not answer
        ├── GradingTimeout                        grading_timeout: the grader's clock guard
        ├── AgentUnreachable    exit 3  HTTP 502  agent_unreachable
        ├── AgentCallFailed     exit 3  HTTP 502  <outcome code>: a live call not ok
        │   ├── InvalidOutput                     invalid_output: breaks the output schema
        │   └── AgentTimedOut           504       timeout
        └── AgentProtocolError  exit 3  HTTP 502  agent_protocol: answered outside the protocol

Every holon error class is here, and only here (tests/test_errors_tree.py):
the API rebuilds an error from its body by code, so a class defined in a
module that was not imported could not be rebuilt.
`CheckFailed.exit_code` is the one declaration of exit 1 for a failed check:
commands that print their result and then exit 1 return it.
Exit codes (docs/cli.md): 0 ok; 1 the thing checked failed; 2 usage or
input error, or a refusal; 3 environment error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "AgentCallFailed",
    "AgentProtocolError",
    "AgentTimedOut",
    "AgentUnreachable",
    "BodyTimeout",
    "BudgetExhausted",
    "CertificateRejected",
    "CheckError",
    "CheckFailed",
    "Conflict",
    "Denied",
    "EnvironmentFault",
    "Forbidden",
    "GatewayUnreachable",
    "GeneratorBug",
    "GradingTimeout",
    "HolonError",
    "IdentityMismatch",
    "InputError",
    "InvalidInput",
    "InvalidOutput",
    "Location",
    "MandateError",
    "ManifestError",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "Refused",
    "SchemaBehind",
    "SchemaMismatch",
    "StaleRevision",
    "StoreError",
    "StoreUnavailable",
    "SuiteError",
    "Unauthorized",
    "UsageError",
    "checked",
    "error_from_body",
]


@dataclass(frozen=True)
class Location:
    """Where in a document a problem is: file, 1-based line and column, JSON path."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    path: str | None = None

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.path:
            where += f": {self.path}"
        return where

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


class HolonError(Exception):
    """Base of every error holon raises on purpose."""

    code: ClassVar[str] = "internal"
    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 500

    def __init__(
        self,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
        hint: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.hint = hint
        if code is not None:
            self.code = code  # type: ignore[misc]  # an instance may narrow its class's code

    def to_body(self) -> dict[str, Any]:
        """The one JSON error shape of the API and of `--json` output."""
        details = dict(self.details)
        if self.hint:
            details.setdefault("hint", self.hint)
        return {"error": {"code": self.code, "message": str(self), "details": details}}


class UsageError(HolonError):
    code = "usage"
    exit_code = 2
    http_status = 400


class InvalidInput(UsageError):
    """A live call's input that breaks its capability's input schema (the caller's fault)."""

    code = "invalid_input"


class PayloadTooLarge(UsageError):
    """A body over its cap: one a caller sent, or one holon would send an agent for them."""

    code = "payload_too_large"
    http_status = 413


class BodyTimeout(UsageError):
    """A request body that did not arrive in time (slow bytes): the client's fault."""

    code = "request_timeout"
    http_status = 408


class InputError(HolonError):
    """A bad document. `str()` is ``file:line:col: path: message``."""

    code = "invalid_input"
    exit_code = 2
    http_status = 422

    def __init__(
        self,
        message: str,
        *,
        location: Location | None = None,
        details: Mapping[str, Any] | None = None,
        hint: str | None = None,
        code: str | None = None,
    ) -> None:
        self.location = location or Location()
        merged = {**self.location.as_dict(), **(details or {})}
        super().__init__(message, details=merged, hint=hint, code=code)

    def __str__(self) -> str:
        if self.location == Location():
            return self.message
        return f"{self.location}: {self.message}"


class ManifestError(InputError):
    code = "invalid_manifest"


class SuiteError(InputError):
    code = "invalid_suite"


class CheckError(SuiteError):
    code = "invalid_check"


class MandateError(InputError):
    code = "invalid_mandate"


class NotFound(HolonError):
    code = "not_found"
    exit_code = 2
    http_status = 404


class Conflict(HolonError):
    code = "conflict"
    exit_code = 2
    http_status = 409


class StaleRevision(Conflict):
    """An edit made against a revision that is no longer the current one: someone else
    changed the thing since it was read (`mandates grant --if-revision N`, If-Match)."""

    code = "stale_revision"
    http_status = 412


class Refused(HolonError):
    code = "refused"
    exit_code = 2
    http_status = 409


class IdentityMismatch(Refused):
    """The identity probe before an eval: another id or version answers, or the
    agent does not advertise a capability its manifest claims."""

    code = "identity_mismatch"


class Unauthorized(HolonError):
    code = "unauthorized"
    exit_code = 2
    http_status = 401


class Forbidden(HolonError):
    code = "forbidden"
    exit_code = 2
    http_status = 403


class Denied(HolonError):
    """A mandate decision said no; `code` is the deny reason."""

    code = "denied"
    exit_code = 1
    http_status = 403


class BudgetExhausted(Denied):
    """The mandates' budgets cannot pay the call: spent (`budget_exhausted`), or too small
    to pay one call's cap even when nothing is spent (code `budget_too_small`)."""

    code = "budget_exhausted"
    http_status = 402


class RateLimited(Denied):
    """Every mandate that would allow the call is over its rate limit: `details` says when
    the next call may go (`retry_after_s`, whole seconds; the API's `Retry-After`)."""

    code = "rate_limited"
    http_status = 429


class GeneratorBug(HolonError):
    """A generator produced an instance it cannot vouch for (e.g. a truth value
    that cannot be read back from its own PDF). Always a bug in the generator,
    never the suite's or the agent's fault."""

    code = "internal"


class CheckFailed(HolonError):
    code = "check_failed"
    exit_code = 1
    http_status = 200


class CertificateRejected(CheckFailed):
    """A certificate (or a revocation list) did not verify: the thing checked failed.

    `details.reason` is one of the reasons of `records.REJECT_REASONS`
    (docs/certificates.md), so a script tells tampering from expiry.
    """

    code = "certificate_rejected"
    http_status = 422


def checked(passed: bool) -> int:
    """The exit code of a command that printed what it checked: 0, or CheckFailed's."""
    return 0 if passed else CheckFailed.exit_code


class EnvironmentFault(HolonError):
    code = "environment"
    exit_code = 3
    http_status = 503


class StoreError(EnvironmentFault):
    code = "store_error"


class StoreUnavailable(StoreError):
    code = "store_unavailable"


class SchemaMismatch(StoreError):
    code = "schema_mismatch"


class SchemaBehind(SchemaMismatch):
    """The store is empty or on an older revision: `holon db upgrade` can bring it to
    this holon's, so a process started beside the upgrade may wait for it."""


class GatewayUnreachable(EnvironmentFault):
    """The gateway could not be reached or did not answer as a holon gateway."""

    code = "gateway_unreachable"


class GradingTimeout(EnvironmentFault):
    """Grading one case outlasted the wall-clock guard: our bug, never the agent's grade."""

    code = "grading_timeout"


class AgentUnreachable(EnvironmentFault):
    code = "agent_unreachable"
    http_status = 502


class AgentCallFailed(EnvironmentFault):
    """A live call whose outcome was not `ok`; the outcome code is the error code."""

    code = "agent_error"
    http_status = 502


class InvalidOutput(AgentCallFailed):
    """An agent's answer that breaks its capability's output schema: never passed on."""

    code = "invalid_output"


class AgentTimedOut(AgentCallFailed):
    code = "timeout"
    http_status = 504


class AgentProtocolError(EnvironmentFault):
    """An agent answered, but not as the protocol says (e.g. a bad identity document)."""

    code = "agent_protocol"
    http_status = 502


def _subclasses(cls: type[HolonError]) -> list[type[HolonError]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out += _subclasses(sub)
    return out


def error_from_body(status: int, body: Any) -> HolonError:
    """The error an API response carried, rebuilt (the HTTP client raises what the store would).

    The class is the one whose code and status match; a code no class owns
    (a deny reason, an outcome code) keeps its code on the class that owns
    its status, so exit codes match the store's.
    """
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return EnvironmentFault(f"the gateway answered {status} without an error body")
    code = str(error.get("code") or "internal")
    message = str(error.get("message") or code)
    raw = error.get("details")
    details: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
    hint = details.pop("hint", None)
    classes = _subclasses(HolonError)
    exact = [c for c in classes if c.code == code and c.http_status == status]
    if not exact:
        exact = [c for c in classes if c.code == code]
    if exact:
        cls = exact[-1]
        if issubclass(cls, InputError):
            return cls(message, location=Location(), details=details, hint=hint)
        return cls(message, details=details, hint=hint)
    by_status: dict[int, type[HolonError]] = {
        400: UsageError,
        401: Unauthorized,
        402: BudgetExhausted,
        403: Denied,
        404: NotFound,
        408: EnvironmentFault,  # the body was too slow: the network between us
        409: Refused,
        413: UsageError,
        422: InputError,
        429: RateLimited,
        502: AgentCallFailed,
        504: AgentTimedOut,
    }
    fallback = by_status.get(status, EnvironmentFault if status >= 500 else HolonError)
    return fallback(message, details=details, hint=hint, code=code)
