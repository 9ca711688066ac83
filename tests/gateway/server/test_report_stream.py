"""A report through the API is written as it is sent (gateway/web/_documents.py): a chunked
body, byte for byte the store's report, and refusals answered before any of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from records import Store
from tests.evals.reports._setup import fresh_report, run_eval, setup
from tests.gateway.server._in_process import gateway_app, lifespan, token


@pytest.fixture
def eval_id(store: Store, tmp_path: Path) -> str:
    setup(store, tmp_path)
    return run_eval(store, tmp_path / "home")  # its own event loop: before the test's


@pytest.mark.anyio
@pytest.mark.parametrize("form", ["junit", "md", "json"])
async def test_a_report_is_streamed_as_the_store_writes_it(
    store: Store, tmp_path: Path, eval_id: str, form: str
) -> None:
    app = gateway_app(store, tmp_path)
    operator, org, other, caller = (
        token(store, role) for role in ("operator", "org:test", "org:other", "caller:bot")
    )
    path = f"/v1/evals/{eval_id}/report?format={form}"
    async with lifespan(app) as client:
        served = await client.get(f"{path}&audience=operator", headers=_bearer(operator))
        authored = await client.get(path, headers=_bearer(org))
        refused = {
            role: await client.get(path, headers=_bearer(key))
            for role, key in (("org:other", other), ("caller:bot", caller))
        }
        raised = await client.get(f"{path}&audience=operator", headers=_bearer(org))
        missing = await client.get(
            f"/v1/evals/ev_missing/report?format={form}", headers=_bearer(operator)
        )
    for response, audience in ((served, "operator"), (authored, "author")):
        assert response.status_code == 200, response.text
        assert response.headers.get("content-length") is None  # written as it goes
        assert response.text == fresh_report(store, eval_id, audience, form)
    assert served.text != authored.text
    # Refusals are whole JSON errors with their statuses, never a report's first piece.
    for role, response in refused.items():
        assert response.status_code == 403, (role, response.text)
        assert response.json()["error"]["code"], role
    assert raised.status_code == 403 and "error" in raised.json()
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
