"""The console's request handling: sessions, CSRF, roles, security headers, error pages.

A browser signs in by pasting an API token once (`/ui/sign-in`); the token
is exchanged for a session (records._sessions) and the browser keeps only
the session cookie: HttpOnly (no script reads it), SameSite=Strict (no
other site's page sends it), Secure under https, Path=/ui, with the
session's expiry. The session's role is its token's, and each page admits
the role kinds the API route of the same data admits (gateway/web/_auth.py).

Every state-changing request (POST) must carry the page's CSRF token, an
HMAC of the session cookie (a page of another origin can neither read the
cookie nor the token), and, when the browser sends one, an Origin of this
gateway. Signing in has no session to derive a token from, so its form must
name this gateway as its Origin (or, a browser that sends none, its Referer),
and is refused without either: else another site's page could sign a
browser in with the attacker's token (login CSRF) and watch what its user
then does there. Every answer carries a strict Content-Security-Policy: scripts and
styles from /ui/static only, nothing inline, nothing from elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from gateway.console._multipart import Upload, read_multipart
from gateway.console._render import render
from gateway.web import Access, Bearer, Shared, admit, check_params, read_body
from schema.errors import Forbidden, HolonError, NotFound, Unauthorized, UsageError

log = logging.getLogger(__name__)

__all__ = ["COOKIE", "CSP", "LIFETIME", "Web", "not_found", "page"]

COOKIE = "holon_console"
LIFETIME = timedelta(hours=12)
MAX_FORM_BYTES = 64 * 1024
MAX_FIELDS = 64
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make a form's Origin "null"
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


def csrf_token(cookie: str) -> str:
    """The CSRF token of a session: derived from its cookie, so nothing more is stored."""
    return hmac.new(cookie.encode(), b"holon console csrf v1", hashlib.sha256).hexdigest()


@dataclass
class Web:
    """What a page handler is given: who is signed in, the service, the form (POST)."""

    request: Request
    who: Bearer
    shared: Shared
    csrf: str
    form: dict[str, str]
    files: dict[str, Upload] = field(default_factory=dict)  # a multipart form's (an upload)

    def page(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return html(template, status, who=self.who, csrf=self.csrf, **context)

    def field(self, name: str, default: str | None = None) -> str:
        value = self.form.get(name, default)
        if value is None:
            raise UsageError(f"the form needs a field {name!r}", details={"field": name})
        return value


Handler = Callable[[Web], Awaitable[Response]]


def html(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("who", None)
    context.setdefault("csrf", "")
    response = HTMLResponse(render(template, **context), status_code=status)
    response.headers.update(HEADERS)
    return response


def secure(response: Response) -> Response:
    """The console's headers, where the response has not set its own (a report's frame)."""
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def see_other(path: str) -> Response:
    """A redirect within the console (a path, never a URL built from the Host header)."""
    return secure(RedirectResponse(path, status_code=303))


def error_page(error: HolonError, who: Bearer | None = None, csrf: str = "") -> HTMLResponse:
    status = error.http_status if error.http_status >= 400 else 500
    return html("error.html", status, error=error.to_body()["error"], who=who, csrf=csrf)


async def read_form(request: Request) -> dict[str, str]:
    """An urlencoded form, bounded; the last value of a repeated field wins."""
    raw = await read_body(request, MAX_FORM_BYTES)
    try:
        text = raw.decode("ascii")  # urlencoded bodies are ASCII; %-escapes carry UTF-8
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise UsageError("the form is not a valid urlencoded form") from None
    return dict(pairs)


def same_origin(request: Request) -> bool:
    """The browser's Origin header, if any, names this gateway (a form posted from another
    site's page carries that site's origin)."""
    origin = request.headers.get("origin")
    if origin is None:
        return True  # no Origin (an old browser): the CSRF token alone decides
    return origin in _own_origins(request)


def posted_from_here(request: Request) -> bool:
    """A form posted without a session (signing in) comes from this gateway's own page:
    its Origin names it, or, when there is no Origin, its Referer does (the console's
    Referrer-Policy sends it to this origin). Neither, or "null", is refused."""
    own = _own_origins(request)
    origin = request.headers.get("origin")
    if origin is not None:
        return origin in own
    referer = urlsplit(request.headers.get("referer", ""))
    return bool(referer.scheme) and f"{referer.scheme}://{referer.netloc}" in own


def _own_origins(request: Request) -> tuple[str, str]:
    host = request.headers.get("host", "")
    return f"http://{host}", f"https://{host}"


def signed_in_cookie(response: Response, request: Request, value: str, max_age: int) -> None:
    response.set_cookie(
        COOKIE,
        value,
        max_age=max_age,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


async def _session(request: Request, shared: Shared) -> tuple[Bearer | None, str]:
    """Who the session cookie signs in (None: nobody) and the CSRF token of its pages."""
    cookie = request.cookies.get(COOKIE)
    found = await shared.run(shared.store.sessions.authenticate, cookie) if cookie else None
    if found is None or cookie is None:
        return None, ""
    return Bearer(found.token.role, found.token.id), csrf_token(cookie)


def not_found(state: dict[str, Shared]) -> Callable[..., Any]:
    """Any other path under /ui: the console's own page saying so (404), whatever the
    method, with the navigation of whoever is signed in; nothing else is done."""

    async def endpoint(request: Request) -> Response:
        shared = state["shared"]
        started = time.perf_counter()
        who, csrf = None, ""
        try:
            who, csrf = await _session(request, shared)
        except Exception:  # the page says "not found" whatever the store says
            log.exception("reading the session on console %s", request.url.path)
        error = NotFound("no console page here", hint="the console's pages start at /ui/")
        response = error_page(error, who, csrf)
        shared.metrics.request(
            request.method, "/ui/{path}", 404, (time.perf_counter() - started) * 1000
        )
        return secure(response)

    return endpoint


def page(
    path: str,
    access: Access,
    handler: Handler,
    state: dict[str, Shared],
    *,
    upload_bytes: int = 0,
) -> Callable[..., Any]:
    """An endpoint of the console: the session's principal admitted by `access`, POSTs
    checked for CSRF, every HolonError an error page with its status. `upload_bytes`: the
    form is multipart (it carries a file), its body at most that many bytes."""

    async def endpoint(request: Request) -> Response:
        shared = state["shared"]
        started = time.perf_counter()
        who: Bearer | None = None
        csrf = ""
        try:
            who, csrf = await _session(request, shared)
            if who is None and access != "none":
                if request.method == "GET":
                    return see_other("/ui/sign-in")
                raise Unauthorized("sign in first: the session is unknown, ended or expired")
            form: dict[str, str] = {}
            files: dict[str, Upload] = {}
            if request.method == "POST":
                if upload_bytes:  # a form with a file: checked as any other, once read
                    admit(access, who)  # a role the page refuses has no upload read
                    form, files = await read_multipart(request, upload_bytes)
                else:
                    form = await read_form(request)
                if access == "none" and not posted_from_here(request):
                    raise Forbidden(
                        "sign in from this gateway's own sign-in page: the form must come "
                        "with an Origin (or Referer) of this gateway"
                    )
                if not same_origin(request):
                    raise Forbidden("a console form may only be posted from the console")
                if access != "none" and not hmac.compare_digest(form.get("csrf", ""), csrf):
                    raise Forbidden("the form's CSRF token is missing or wrong: reload the page")
            check_params(request)  # as the API: no control characters in the query
            principal = admit(access, who)
            response = await handler(Web(request, principal, shared, csrf, form, files))
        except HolonError as exc:
            response = error_page(exc, who, csrf)
        except Exception:
            log.exception("internal error on console %s %s", request.method, request.url.path)
            response = error_page(HolonError("internal error"), who, csrf)
        shared.metrics.request(
            request.method,
            "/ui" + path,
            response.status_code,
            (time.perf_counter() - started) * 1000,
        )
        return secure(response)

    return endpoint
