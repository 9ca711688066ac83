"""The service layer over a running gateway's HTTP API (`--gateway URL`, a token).

Every method is one or a few API calls; the views it returns are the ones the
store's service returns (the gateway builds them with the same functions), and an
error response becomes the `HolonError` the store would have raised, so a
command's output and exit code do not depend on where it ran. What the token's
role may not do, the gateway refuses (401/403, exit 2).

An eval started here runs in the gateway's workers: `execute` and `resume`
poll its status and report progress until it ends. Interrupting the CLI does
not stop it (`holon evals cancel ID` does).
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from gateway.operations import (
    AGENTS_LIST,
    EVALS_CANCEL,
    EVALS_RESUME,
    EVALS_SHOW,
    EVALS_START,
    RECORDS_SHOW,
    AgentRef,
    AgentsQuery,
    EvalRef,
    EvalStart,
    Operation,
)
from gateway.service import EvalOptions, Progress, Proposal
from records import EvalStatus
from schema.errors import (
    EnvironmentFault,
    GatewayUnreachable,
    HolonError,
    InputError,
    Refused,
    UsageError,
    error_from_body,
)
from schema.jsontext import JSONObject, JSONValue, dumps, loads

log = logging.getLogger(__name__)

__all__ = ["GatewayUnreachable", "HttpService"]

R = TypeVar("R")

DEFAULT_TIMEOUT_S = 60.0
# Polling a running eval: quick at first (small evals end fast), then at most
# twice a second, which costs the gateway one indexed read each time.
POLL_FIRST_S = 0.05
POLL_MAX_S = 0.5


def _local_only(processes: int) -> None:
    """`--processes` spreads an eval over this machine's processes; a gateway runs
    its evals in its own eval workers, not in this one."""
    if processes != 1:
        raise UsageError(
            f"--processes {processes} spreads an eval over this machine's processes; "
            "with --gateway the gateway runs it in its eval workers",
            hint="scale those out with `holon worker` on hosts sharing the gateway's store "
            "(or `holon gateway serve --eval-workers N`), or drop --gateway to run the "
            "eval here",
        )


def _segment(text: str) -> str:
    return quote(text, safe="")


def _agent_path(agent_id: str) -> str:
    org, _, name = agent_id.partition("/")
    return f"{_segment(org)}/{_segment(name)}"


class HttpService:
    kind = "gateway"

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"the gateway URL must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout_s,
            follow_redirects=False,  # a redirect could carry the token elsewhere
            # Every request goes to this base URL (no redirects): a plain http://
            # one never opens TLS, so skip loading the CA bundle (~30 ms a command).
            verify=self.url.startswith("https://"),
            transport=transport,
        )
        self._evals = HttpEvals(self)

    @property
    def evals(self) -> HttpEvals:
        return self._evals

    def close(self) -> None:
        self._http.close()

    # -- the wire -----------------------------------------------------------

    def send(
        self,
        method: str,
        path: str,
        *,
        body: JSONValue = None,
        params: dict[str, Any] | None = None,
        content: bytes | None = None,
        timeout_s: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """One request; a 2xx response, or the HolonError the error body describes. The body
        is `body` as JSON, or `content`, JSON text already written; `timeout_s` replaces
        the client's timeout for a request known to take longer."""
        built = self._built(method, path, body, params, content, headers, timeout_s)
        return self._sent(built, self.timeout_s if timeout_s is None else timeout_s)

    def _sent(self, request: httpx.Request, waited: float) -> httpx.Response:
        with self._reaching(waited):
            response = self._http.send(request)  # read whole
        if response.is_success:
            return response
        raise self._error(response)

    def _built(
        self,
        method: str,
        path: str,
        body: JSONValue,
        params: dict[str, Any] | None,
        content: bytes | None,
        headers: dict[str, str] | None,
        timeout_s: float | None = None,
    ) -> httpx.Request:
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        if body is not None:
            content = dumps(body).encode("utf-8")
        headers = {**(headers or {})}
        if content is not None:
            headers["Content-Type"] = "application/json"
        waited = self.timeout_s if timeout_s is None else timeout_s
        return self._http.build_request(
            method, path, params=query, content=content, headers=headers, timeout=waited
        )

    @contextlib.contextmanager
    def _reaching(self, waited: float) -> Iterator[None]:
        """httpx's failures to reach the gateway, as holon's errors."""
        try:
            yield
        except httpx.TimeoutException:
            raise GatewayUnreachable(
                f"the gateway at {self.url} did not answer within {waited:g} s",
                details={"url": self.url},
            ) from None
        except httpx.HTTPError as exc:
            raise GatewayUnreachable(
                f"cannot reach the gateway at {self.url}: {exc or type(exc).__name__}",
                details={"url": self.url},
                hint="is `holon gateway serve` running there? (--gateway or HOLON_GATEWAY_URL)",
            ) from None

    def _error(self, response: httpx.Response) -> HolonError:
        status = response.status_code
        if response.is_redirect:
            return GatewayUnreachable(
                f"the gateway at {self.url} answered {status} (a redirect to "
                f"{response.headers.get('location', '?')}): give the gateway's own URL",
                details={"url": self.url},
            )
        try:
            body = loads(response.content)
        except (ValueError, UnicodeError, RecursionError):
            body = None
        error = error_from_body(status, body)
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            # A status no class owns keeps the store's exit code: 422 is always
            # an input error, a 5xx the gateway's own failure (environment).
            if type(error) is HolonError and status == 422:
                return InputError(error.message, details=error.details, code=error.code)
            if status >= 500 and not isinstance(error, EnvironmentFault):
                return EnvironmentFault(
                    f"the gateway at {self.url} failed: {error.message}",
                    details=error.details,
                    code=error.code,
                )
            return error
        return GatewayUnreachable(
            f"the gateway at {self.url} answered {status} without a holon error body",
            details={"url": self.url, "status": status},
            hint="is --gateway (HOLON_GATEWAY_URL) the URL of a holon gateway?",
        )

    def json(
        self,
        method: str,
        path: str,
        *,
        body: JSONValue = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        return self._read(self.send(method, path, body=body, params=params), method, path)

    def _read(self, response: httpx.Response, method: str, path: str) -> Any:
        """A 2xx response's JSON body (anything else is not a holon gateway's answer)."""
        try:
            return loads(response.content)
        except (ValueError, UnicodeError, RecursionError):
            raise GatewayUnreachable(
                f"the gateway at {self.url} answered {method} {path} with something "
                "other than JSON",
                details={"url": self.url},
                hint="is --gateway (HOLON_GATEWAY_URL) the URL of a holon gateway?",
            ) from None

    def call(self, operation: Operation[R], request: R) -> JSONObject:
        """One operation of the table, sent as its declaration says: path fields in the
        path, query fields as parameters, body fields as the JSON body (or a document as
        the whole body), waiting at least the operation's own timeout."""
        built, waited = self._operation_request(operation, request)
        response = self._sent(built, waited)
        if operation.media is not None:  # a rendered document: its text, as the gateway wrote it
            return {"text": response.text}
        answer: JSONObject = self._read(response, built.method, built.url.path)
        return answer

    def write_document(
        self, operation: Operation[R], request: R, write: Callable[[str], object]
    ) -> None:
        """A rendered document (a report) to `write` as it arrives, never held whole. A
        body the gateway cut short (its writer failed after the first piece) raises
        GatewayUnreachable once what came is written."""
        if operation.media is None:
            raise TypeError(f"{operation.name} answers a view, not a document")
        built, waited = self._operation_request(operation, request)
        with self._reaching(waited):
            response = self._http.send(built, stream=True)
            try:
                if not response.is_success:
                    response.read()
                    raise self._error(response)
                try:
                    for text in response.iter_text():
                        write(text)
                except httpx.RemoteProtocolError as exc:
                    raise GatewayUnreachable(
                        f"the gateway at {self.url} cut the document short: {exc}",
                        details={"url": self.url},
                    ) from None
            finally:
                response.close()

    def _operation_request(
        self, operation: Operation[R], request: R
    ) -> tuple[httpx.Request, float]:
        """The request `operation` sends for `request`, and how long it waits for it."""
        if not operation.routed:
            raise UsageError(f"{operation.name} works on the store only, not through a gateway")
        path = operation.path
        for field in operation.located("path"):
            value = str(getattr(request, field.name))
            names = field.spec.segments or (field.name,)
            # An agent id `org/name` fills {org}/{name}; each part is one quoted segment.
            parts = value.split("/", len(names) - 1) if len(names) > 1 else [value]
            if len(parts) != len(names):
                raise UsageError(f"{field.name} must be {'/'.join(names)}, got {value!r}")
            for name, part in zip(names, parts, strict=True):
                path = path.replace(f"{{{name}}}", _segment(part))
        params = {f.name: getattr(request, f.name) for f in operation.located("query")}
        # A header field is a precondition (If-Match): its value as an ETag.
        preconditions = {
            f.spec.header: f'"{getattr(request, f.name)}"'
            for f in operation.located("header")
            if getattr(request, f.name) is not None
        }
        body: JSONValue = None
        content: bytes | None = None
        if operation.located("body"):
            body = {
                f.name: getattr(request, f.name)
                for f in operation.located("body")
                if getattr(request, f.name) is not None
            }
        for field in operation.located("document"):  # the whole body (a manifest, a mandate)
            if field.kind == "bytes":  # sent as read: the gateway checks these very bytes
                content = getattr(request, field.name)
            else:
                body = getattr(request, field.name)
        waited = self.timeout_s
        if operation.timeout_s is not None:  # its run outlasts our usual wait
            waited = max(self.timeout_s, operation.timeout_s)
        built = self._built(operation.method, path, body, params, content, preconditions, waited)
        return built, waited

    # -- live calls (caller tokens) -----------------------------------------

    def invoke(
        self, caller: str | None, agent_id: str | None, capability: str, input: JSONValue
    ) -> JSONObject:
        if caller is not None:
            raise UsageError(
                "over the gateway the token's caller decides whose mandates apply: drop --caller",
                hint="--caller NAME is for the CLI working on the store",
            )
        body = {"capability": capability, "input": input}
        if agent_id is None:
            path = f"/v1/capabilities/{_segment(capability)}/invoke"
        else:
            path = f"/v1/agents/{_agent_path(agent_id)}/invoke"
        answer: JSONObject = self.json("POST", path, body=body)
        return answer


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class HttpEvals:
    """Evals over the API; started evals are worked by the gateway's workers."""

    def __init__(self, service: HttpService) -> None:
        self.service = service

    def propose(self, agent_id: str, options: EvalOptions) -> Proposal:
        _local_only(options.processes)
        asked = EvalStart(
            agent=agent_id,
            suites=None if options.suites is None else list(options.suites),
            repetitions=options.repetitions,
            concurrency=options.concurrency,
            retries=options.retries,
            pace_s=Decimal(str(options.pace_s)),
            max_cost_usd=None if options.max_cost is None else str(options.max_cost),
        )
        planned = self.service.call(EVALS_START, replace(asked, dry_run=True))
        return Proposal(agent_id, planned["plan"], asked)

    def execute(self, proposal: Proposal, progress: Progress | None) -> JSONObject:
        started = self.service.call(EVALS_START, proposal.plan)
        view = started["eval"]
        if started["plan"] != proposal.view:
            # Something changed between the plan shown and the start (a new
            # agent or suite version): what runs is not what was confirmed.
            self.service.call(EVALS_CANCEL, EvalRef(view["id"]))
            raise Refused(
                f"the plan changed after it was shown (eval {view['id']} was cancelled)",
                hint="run `holon eval` again to see the new plan",
            )
        return self.follow(view["id"], progress)

    def resume(self, eval_id: str, progress: Progress | None, *, processes: int = 1) -> JSONObject:
        _local_only(processes)
        self.service.call(EVALS_RESUME, EvalRef(eval_id))
        return self.follow(eval_id, progress)

    def follow(self, eval_id: str, progress: Progress | None) -> JSONObject:
        """Poll until the eval is no longer running; its final view (as the store gives it)."""
        wait = POLL_FIRST_S
        try:
            while True:
                view = self.service.call(EVALS_SHOW, EvalRef(eval_id))
                if progress is not None:
                    spent = view.get("spent") or {}
                    progress(
                        {
                            "done": view["progress"]["done"],
                            "passed": spent.get("passed", 0),
                            "cost_usd": spent.get("cost_usd"),
                        }
                    )
                if view["status"] != EvalStatus.RUNNING:
                    view.pop("spent", None)  # the store's final view has none
                    return view
                time.sleep(wait)
                wait = min(POLL_MAX_S, wait * 2)
        except KeyboardInterrupt:
            log.warning(
                "eval %s continues on the gateway: holon evals status %s (or cancel)",
                eval_id,
                eval_id,
            )
            raise

    def record(self, agent_id: str) -> JSONObject:
        return self.service.call(RECORDS_SHOW, AgentRef(agent_id))

    def agents_claiming(self, capability: str) -> builtins.list[str]:
        ids: builtins.list[str] = []
        cursor = None
        while True:
            query = AgentsQuery(capability=capability, cursor=cursor, limit=1000)
            page = self.service.call(AGENTS_LIST, query)
            ids += [a["id"] for a in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                return ids
