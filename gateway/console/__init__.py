"""The web console (docs/console.md): server-rendered pages under /ui/, signed in with a
session exchanged for an API token once, every action the API's own operation.

`routes(state)` is all the gateway app mounts; `state["shared"]` is filled by its lifespan.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import URLPath
from starlette.responses import RedirectResponse
from starlette.routing import BaseRoute, Match, Mount, NoMatchFound, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from gateway._roles import ANY, CALLER, LEDGER, OPERATOR, ORG
from gateway.console import (
    _call_pages,
    _caller_pages,
    _cell_pages,
    _cert_pages,
    _eval_list,
    _eval_pages,
    _forms,
    _org_pages,
    _pages,
    _upload_pages,
)
from gateway.console._web import Handler, not_found, page, secure
from gateway.web import Access, Shared

__all__ = ["routes"]


# (method, path under /ui, access, handler): the access is that of the API route of
# the same data or operation (gateway/server/_routes_*.py).
PAGES: list[tuple[str, str, Access, Handler]] = [
    ("GET", "/sign-in", "none", _pages.sign_in_form),
    ("POST", "/sign-in", "none", _pages.sign_in),
    ("POST", "/sign-out", ANY, _pages.sign_out),
    ("GET", "/", ANY, _pages.overview_page),
    # A caller: an agent its mandates cover (the records and live calls it may reach).
    ("GET", "/agents/{org}/{name}", ANY, _pages.agent_page),
    ("POST", "/agents/{org}/{name}/disable", ORG, _pages.disable_agent),
    ("POST", "/agents/{org}/{name}/enable", ORG, _pages.enable_agent),
    ("GET", "/suites", ANY, _pages.suites_page),
    # Before /suites/{suite}, which would take "upload" for a suite's id.
    ("GET", "/suites/upload", OPERATOR, _upload_pages.upload_form),
    ("POST", "/suites/upload", OPERATOR, _upload_pages.upload_suite_page),
    ("GET", "/suites/{suite}", ANY, _pages.suite_page),
    ("POST", "/suites/{suite}/activate", OPERATOR, _pages.activate_suite),
    ("GET", "/evals", ORG, _eval_list.evals_page),
    ("GET", "/evals/new", OPERATOR, _eval_pages.new_eval),
    ("POST", "/evals/plan", OPERATOR, _eval_pages.plan_eval),
    ("POST", "/evals/start", OPERATOR, _eval_pages.start_eval),
    ("GET", "/evals/{eval}", ORG, _eval_pages.eval_page),
    ("GET", "/evals/{eval}/progress", ORG, _eval_pages.eval_progress),
    ("GET", "/evals/{eval}/report", ORG, _eval_pages.eval_report),
    ("GET", "/evals/{eval}/charts", ORG, _eval_pages.eval_charts),
    ("GET", "/evals/{eval}/cells/{idx}", ORG, _cell_pages.cell_page),
    ("POST", "/evals/{eval}/cancel", ORG, _eval_pages.cancel_eval),
    ("POST", "/evals/{eval}/resume", OPERATOR, _eval_pages.resume_eval),
    ("GET", "/compare", ORG, _eval_pages.compare_page),
    ("GET", "/compare/download", ORG, _eval_pages.compare_download),
    ("GET", "/mandates", LEDGER, _call_pages.mandates_page),
    ("POST", "/mandates", OPERATOR, _call_pages.grant_mandate),
    ("GET", "/mandates/{mandate}", LEDGER, _call_pages.mandate_page),
    ("POST", "/mandates/{mandate}/revoke", OPERATOR, _call_pages.revoke_mandate),
    ("GET", "/ledger", LEDGER, _call_pages.ledger_page),
    ("GET", "/ledger.csv", LEDGER, _call_pages.ledger_csv),
    ("GET", "/tokens", OPERATOR, _call_pages.tokens_page),
    ("POST", "/tokens", OPERATOR, _call_pages.create_token),
    ("POST", "/tokens/{token}/revoke", OPERATOR, _call_pages.revoke_token),
    ("GET", "/agents/register", ORG, _forms.register_form),
    ("POST", "/agents/register", ORG, _forms.register_agent),
    ("POST", "/agents/{org}/{name}/secret", ORG, _forms.set_secret),
    ("POST", "/agents/{org}/{name}/secret/clear", ORG, _forms.clear_secret),
    ("POST", "/suites/{suite}/exposure/reset", OPERATOR, _forms.reset_exposure),
    ("GET", "/agents/{org}/{name}/eval", ORG, _org_pages.eval_form),
    ("POST", "/agents/{org}/{name}/eval/plan", ORG, _org_pages.plan_own_eval),
    ("POST", "/agents/{org}/{name}/eval/start", ORG, _org_pages.start_own_eval),
    ("POST", "/agents/{org}/{name}/call/confirm", CALLER, _caller_pages.confirm_call),
    ("POST", "/agents/{org}/{name}/call", CALLER, _caller_pages.make_call),
    ("GET", "/certificates", OPERATOR, _cert_pages.certificates_page),
    # Verifying reads public documents only (the key set, the revocation list).
    ("GET", "/certificates/verify", ANY, _cert_pages.verify_form),
    ("POST", "/certificates/verify", ANY, _cert_pages.verify_pasted),
    ("GET", "/certificates/{certificate}", ANY, _cert_pages.certificate_page),
]


# The forms that carry a file (multipart), and their bodies' bound in bytes.
UPLOADS = {("POST", "/suites/upload"): _upload_pages.UPLOAD_BODY_BYTES}


class _Bare(BaseRoute):
    """`/ui` itself, where people type (a Mount matches only below its path): a GET sent
    on to the console's `/ui/`. Not a `Route`: the API's routes are those of the OpenAPI
    document, and the gateway redirects no other slash (see gateway/server/_app.py)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and scope["path"] == "/ui" and scope["method"] in _GET:
            return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await secure(RedirectResponse("/ui/", status_code=308))(scope, receive, send)


_GET = ("GET", "HEAD")
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def routes(state: dict[str, Shared]) -> list[BaseRoute]:
    """The console's routes, all under one mount at /ui, and /ui itself sent there."""
    inner: list[BaseRoute] = [
        Route(
            path,
            page(path, access, handler, state, upload_bytes=UPLOADS.get((method, path), 0)),
            methods=[method],
        )
        for method, path, access, handler in PAGES
    ]
    inner.append(
        Mount("/static", StaticFiles(packages=[("gateway.console", "static")]), name="static")
    )
    # Any other path under /ui is the console's "not found" page, not the API's JSON.
    inner.append(Route("/{rest:path}", not_found(state), methods=list(_METHODS)))
    return [_Bare(), Mount("/ui", routes=inner)]
