"""Number amplification: hostile numbers anywhere in JSON, read and written back by holon.

Every input holds at least one number from `tests/campaign/_numbers.py`
(huge exponents, long digit strings, huge integers, the limits' edges) at a
random position. Each is either refused, naming the first refused number's
JSON path (and, in a document, its file:line:col), or read whole and
written back at most `MAX_NUMBER_GROWTH` characters longer per number in
exponent form: never expanded. Four ways in: `loads`, documents, an agent's
answer through the executor, a caller's body through the gateway (both
over real HTTP on 127.0.0.1), the last also checking that every answered
call has its ledger row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents import CallLimits, Executor
from records import Store, new_key, open_store
from schema.documents import parse_document
from schema.errors import InputError
from schema.jsontext import NumberError, dumps, format_path, loads
from schema.numbers import MAX_NUMBER_GROWTH
from tests._servers import serve
from tests.agents.conftest import make_agent
from tests.agents.test_numbers import Scripted
from tests.campaign._mutate import fuzz_settings
from tests.campaign._numbers import exponent_markers, first_refused, hostile_value, write
from tests.campaign._tally import record
from tests.gateway.server import _numbers_agent
from tests.gateway.server._agent import manifest
from tests.gateway.server._gateway import Gateway, mandate, running_gateway

LONG = pytest.mark.timeout(900)


def _bounded(written: str | bytes, text: str | bytes) -> None:
    """Written back never expanded: the growth allowed per exponent marker, and no more."""
    allowed = len(text) + MAX_NUMBER_GROWTH * exponent_markers(text)
    assert len(written) <= allowed, (len(written), len(text))
    assert len(written) <= 12 * len(text)  # hence a constant factor: a marker takes 3 characters


@pytest.mark.parametrize("examples", [300, pytest.param(900, marks=[pytest.mark.slow, LONG])])
def test_loads_refuses_at_the_path_or_writes_back_bounded(examples: int) -> None:
    @fuzz_settings(examples)
    @given(value=hostile_value())
    def one(value: Any) -> None:
        text, placed = write(value)
        expected = first_refused(placed)
        try:
            read = loads(text)
        except NumberError as exc:
            assert exc.path == expected, (exc.path, expected)
            assert len(str(exc)) < 400  # the token is quoted cut, never whole
            record("number amplification (JSON text)", "refused at its path")
            return
        assert expected is None, f"{format_path(expected)} was read"
        _bounded(dumps(read), text)
        assert loads(dumps(read)) == read
        record("number amplification (JSON text)", "read, written back bounded")

    one()


@pytest.mark.parametrize("examples", [150, pytest.param(300, marks=[pytest.mark.slow, LONG])])
def test_documents_refuse_at_file_line_column_and_path(examples: int) -> None:
    @fuzz_settings(examples)
    @given(value=hostile_value(longest=20_000), pretty=st.booleans())
    def one(value: Any, pretty: bool) -> None:
        text, placed = write({"doc": value}, pretty=pretty)
        expected = first_refused(placed)
        try:
            document = parse_document(text, "doc.json")
        except InputError as exc:
            assert expected is not None, str(exc)[:300]
            where = exc.location
            assert where.file == "doc.json" and where.path == format_path(expected), str(exc)
            assert where.line is not None and where.column is not None
            line = text.splitlines()[where.line - 1]
            token = dict(placed)[expected]
            assert line[where.column - 1 :].startswith(token[:40]), (line[:80], where)
            record("number amplification (documents)", "refused at file:line:col and path")
            return
        assert expected is None, f"{format_path(expected)} was read"
        assert document.value == loads(text)
        _bounded(dumps(document.value), text)
        record("number amplification (documents)", "read, written back bounded")

    one()


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[Scripted, str]]:
    agent = Scripted()
    with serve(agent.app()) as url:
        yield agent, url


@pytest.mark.parametrize("examples", [60, pytest.param(150, marks=[pytest.mark.slow, LONG])])
def test_agent_answers_are_refused_at_the_path_or_passed_on_bounded(
    scripted: tuple[Scripted, str], examples: int
) -> None:
    agent, url = scripted
    executor = Executor()
    import asyncio

    loop = asyncio.new_event_loop()
    try:

        @fuzz_settings(examples)
        @given(value=hostile_value(longest=20_000))
        def one(value: Any) -> None:
            text, placed = write({"output": value})
            expected = first_refused(placed)
            agent.answer = text.encode()
            call = executor.execute(make_agent(url + "/agent"), "echo", {}, CallLimits())
            outcome = loop.run_until_complete(call)
            if expected is not None:
                assert outcome.code == "invalid_response", outcome
                assert outcome.error is not None
                assert outcome.error.startswith(f"body at {format_path(expected)}: "), outcome.error
                record("number amplification (agent answers)", "invalid_response at its path")
                return
            assert outcome.code == "ok", outcome
            written = dumps(outcome.output).encode()
            assert outcome.output_bytes is not None and outcome.output_bytes >= len(written)
            _bounded(written, text)
            record("number amplification (agent answers)", "ok, passed on bounded")

        one()
    finally:
        loop.run_until_complete(executor.aclose())
        loop.close()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    root = tmp_path_factory.mktemp("numbers")
    store: Store = open_store(
        f"sqlite:///{root / 'holon.db'}", secret_key=new_key(), auto_upgrade=True
    )
    with serve(_numbers_agent.app) as agent_url:
        store.agents.register(manifest("acme/numbers", agent_url))
        store.mandates.grant(mandate(max_cost_per_call_usd="0.01"))
        with running_gateway(store, root / "home", eval_workers=0) as gw:
            yield gw
    store.close()


@pytest.mark.parametrize("examples", [40, pytest.param(150, marks=[pytest.mark.slow, LONG])])
def test_caller_bodies_are_refused_at_the_path_or_answered_bounded(
    gateway: Gateway, examples: int
) -> None:
    answered = 0
    before = len(_ledger(gateway))

    @fuzz_settings(examples)
    @given(value=hostile_value(longest=20_000))
    def one(value: Any) -> None:
        nonlocal answered
        text, placed = write({"capability": "ticket.classify", "input": {"v": value}})
        expected = first_refused(placed)
        _numbers_agent.received.clear()
        response = gateway.call(
            "POST",
            "/v1/agents/acme/numbers/invoke",
            "caller:finance-bot",
            content=text.encode(),
            headers={"Content-Type": "application/json"},
        )
        if expected is not None:
            assert response.status_code == 400, response.text[:300]
            assert response.json()["error"]["details"]["path"] == format_path(expected)
            assert len(response.content) < 2048
            assert _numbers_agent.received == []
            record("number amplification (caller bodies)", "400 at its path")
            return
        assert response.status_code == 200, response.text[:300]
        answered += 1
        # To the agent and back, never expanded beyond what the numbers may add.
        (sent,) = _numbers_agent.received
        assert sent <= len(text) + MAX_NUMBER_GROWTH * exponent_markers(text)
        assert loads(response.content)["output"] == loads(text)["input"]
        assert len(response.content) <= 2 * sent + 1024
        record("number amplification (caller bodies)", "200, answered bounded")

    one()
    rows = _ledger(gateway)
    assert len(rows) - before == answered  # every answered call has its ledger row: none lost
    assert all(r["status"] == "settled" and r["outcome"] == "ok" for r in rows)


def _ledger(gateway: Gateway) -> list[dict[str, Any]]:
    response = gateway.call("GET", "/v1/ledger?limit=1000", "caller:finance-bot")
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items
