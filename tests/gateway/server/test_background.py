"""The gateway's background work: periodic identity probes, evals queued on registration."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from records import Store
from tests._servers import serve
from tests.gateway.server._agent import Recording, manifest, recording_agent, serving_recorder
from tests.gateway.server._gateway import install_tiny, running_gateway

pytestmark = pytest.mark.slow


def test_periodic_probes_notice_another_version(store: Store, tmp_path: Path) -> None:
    recording = Recording(answers_version="9.9.9")
    with serving_recorder(store, "acme/drifter", recording):
        env = {"HOLON_PROBE_INTERVAL_S": "1"}
        with running_gateway(store, tmp_path / "home", env, eval_workers=0) as gw:
            deadline = time.monotonic() + 90
            text = ""
            while time.monotonic() < deadline:
                text = gw.call("GET", "/metrics", "operator").text
                if 'holon_agent_identity_mismatch{agent="acme/drifter"} 1' in text:
                    break
                time.sleep(0.2)
            assert 'holon_agent_identity_mismatch{agent="acme/drifter"} 1' in text
            assert 'holon_agent_probes_total{agent="acme/drifter",result="mismatch"}' in text
    assert recording.probes >= 1 and not recording.calls  # a probe is not a call


def test_a_new_version_registered_over_the_api_is_evaluated(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    recording = Recording()
    with serve(recording_agent("acme/fresh", "1.0.0", recording)) as url:
        env = {"HOLON_EVAL_ON_REGISTER": "on"}
        with running_gateway(store, tmp_path / "home", env) as gw:
            registered = gw.call("POST", "/v1/agents", "org:acme", json=manifest("acme/fresh", url))
            assert registered.status_code == 201, registered.text
            eval_id = registered.json()["queued_eval"]
            assert eval_id is not None
            deadline = time.monotonic() + 30
            status = {}
            while time.monotonic() < deadline:
                status = gw.call("GET", f"/v1/evals/{eval_id}", "operator").json()
                if status["status"] != "running":
                    break
                time.sleep(0.1)
            assert status["status"] == "done", status
            record = gw.call("GET", "/v1/records/acme/fresh", "org:acme").json()
            assert record["eval_id"] == eval_id and "holdout_epochs" not in record
            operator_view = gw.call("GET", "/v1/records/acme/fresh", "operator").json()
            assert "holdout_epochs" in operator_view

            recording.answers_version = "0.1.0"  # the next version is not what answers
            second = gw.call(
                "POST", "/v1/agents", "org:acme", json=manifest("acme/fresh", url, version="1.1.0")
            )
            assert second.status_code == 200, second.text
            body = second.json()
            assert body["queued_eval"] is None
            assert body["queued_eval_error"]["code"] == "identity_mismatch"


def test_an_eval_the_workers_finish_has_its_report_rendered_into_the_store(
    store: Store, tmp_path: Path
) -> None:
    """Off the eval's path: the eval is done first, its reports land in the store after,
    and another process then serves them without rendering."""
    from evals import make_plan, start
    from evals.reports import ReportCache, build_report, render_html, report_key

    install_tiny(store, tmp_path)
    recording = Recording()
    home = tmp_path / "home"
    with serving_recorder(store, "acme/fresh", recording):
        info = start(store, make_plan(store, "acme/fresh", home=home))
        assert store.eval_reports.count(info.id) == 0
        with running_gateway(store, home, eval_poll_s=0.1) as gw:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and store.eval_reports.count(info.id) < 4:
                time.sleep(0.1)
            assert store.evals.get(info.id).status == "done"
            for audience in ("author", "operator"):
                for form in ("html", "json"):
                    key = report_key(store, info.id, audience, form)
                    assert store.eval_reports.key(info.id, audience, form) == key
            served = gw.call(
                "GET", f"/v1/evals/{info.id}/report?format=html&audience=operator", "operator"
            )
            assert served.status_code == 200, served.text
            # The agent's org reads the author's stored report, never the operator's.
            authored = gw.call("GET", f"/v1/evals/{info.id}/report?format=html", "org:acme")
            assert authored.status_code == 200, authored.text
            assert authored.text == render_html(build_report(store, info.id, audience="author"))
            assert authored.text != served.text
    cache = ReportCache()
    text = cache.report(store, info.id, audience="operator", form="html", render=render_html)
    assert cache.renders == 0 and cache.stored_hits == 1
    assert text == render_html(build_report(store, info.id, audience="operator"))
    assert served.text == text
