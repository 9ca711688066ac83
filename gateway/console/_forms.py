"""Console forms that write an agent or a suite's holdout budget, each the operation the
API and the CLI run, narrowed to the role as the API narrows it.

- Register an agent from a pasted manifest (YAML or JSON, as `holon agents register
  FILE` reads one): a bad manifest is refused with the CLI's located message (line,
  column, path, what was expected). An org registers its own agents only.
- Set or clear an agent's bearer secret: write-only; no page shows it back.
- Reset an org's holdout budget on a suite with a reason (an operator's, logged and
  kept, as `holon suites exposure reset`).

Adding a suite from an archive is _upload_pages.py's (a multipart form).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.responses import Response

from gateway.console._web import Web, see_other
from gateway.operations import (
    AGENTS_REGISTER,
    AGENTS_SECRET_CLEAR,
    AGENTS_SECRET_SET,
    SUITES_EXPOSURE,
    SUITES_EXPOSURE_RESET,
    AgentRef,
    AgentSecret,
    ExposureQuery,
    ExposureReset,
    Registration,
)
from schema.errors import UsageError

__all__ = [
    "MAX_MANIFEST_BYTES",
    "clear_secret",
    "exposure",
    "register_agent",
    "register_form",
    "reset_exposure",
    "set_secret",
]

# A pasted manifest, within the console's 64 KiB form (a file's own bound is 1 MiB).
MAX_MANIFEST_BYTES = 60 * 1024
MAX_REASON_CHARS = 500
SOURCE = "<pasted manifest>"


async def register_form(web: Web) -> Response:
    return web.page("agent_register.html", text="", registered=None)


async def register_agent(web: Web) -> Response:
    from agents import manifest_from_text

    text = web.field("manifest")
    if not text.strip():
        raise UsageError("paste a manifest (YAML or JSON)", details={"field": "manifest"})
    if len(text.encode()) > MAX_MANIFEST_BYTES:
        raise UsageError(f"a pasted manifest is at most {MAX_MANIFEST_BYTES} bytes")
    # Read and validated as the CLI reads its file, so an error names its line and path.
    manifest = manifest_from_text(text, SOURCE)
    assert AGENTS_REGISTER.narrow is not None
    asked = AGENTS_REGISTER.narrow(web.who, Registration(manifest.to_json()))
    view = await web.shared.run(web.shared.service.call, AGENTS_REGISTER, asked)
    return web.page("agent_register.html", 201, text="", registered=view)


def _agent(web: Web) -> str:
    return f"{web.request.path_params['org']}/{web.request.path_params['name']}"


async def set_secret(web: Web) -> Response:
    secret = web.field("secret")
    assert AGENTS_SECRET_SET.narrow is not None
    asked = AGENTS_SECRET_SET.narrow(web.who, AgentSecret(_agent(web), secret))
    await web.shared.run(web.shared.service.call, AGENTS_SECRET_SET, asked)
    return see_other(f"/ui/agents/{quote(asked.agent)}")


async def clear_secret(web: Web) -> Response:
    assert AGENTS_SECRET_CLEAR.narrow is not None
    asked = AGENTS_SECRET_CLEAR.narrow(web.who, AgentRef(_agent(web)))
    await web.shared.run(web.shared.service.call, AGENTS_SECRET_CLEAR, asked)
    return see_other(f"/ui/agents/{quote(asked.agent)}")


def exposure(web: Web, suite: str) -> dict[str, Any]:
    """Each org's holdout budget on the suite (the operator's: `holon suites exposure`)."""
    view: dict[str, Any] = web.shared.service.call(SUITES_EXPOSURE, ExposureQuery(suite))
    return view


async def reset_exposure(web: Web) -> Response:
    suite = web.request.path_params["suite"]
    org = web.field("org").strip()
    reason = web.field("reason").strip()
    if not org:
        raise UsageError("name the org whose budget is reset", details={"field": "org"})
    if not reason or len(reason) > MAX_REASON_CHARS:
        raise UsageError(
            f"give the reason for the reset (1 to {MAX_REASON_CHARS} characters): it is kept",
            details={"field": "reason"},
        )
    asked = ExposureReset(suite, org, reason, by=web.who.token_id)
    await web.shared.run(web.shared.service.call, SUITES_EXPOSURE_RESET, asked)
    return see_other(f"/ui/suites/{quote(suite)}")
