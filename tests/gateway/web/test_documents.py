"""A document streamed from its writer thread (gateway/web/_documents.py), over real HTTP:
the pieces in order, an error before the first one answered with its status, one after it
a cut stream, a writer that never runs ahead of its client, a client that leaves or
stalls freeing its writer, and a bound on the writers at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.web import _documents
from gateway.web._documents import document_response
from schema.errors import NotFound
from tests._servers import serve
from tests.gateway._cli import CLI

Produce = Callable[[Callable[[str], object]], None]


class Writers:
    """The test's writers by name, and what each did."""

    def __init__(self) -> None:
        self.written: dict[str, int] = {}
        self.ended: dict[str, str] = {}
        self.release = threading.Event()
        self.lock = threading.Lock()

    def pieces(
        self, name: str, count: int, *, fail_at: int | None = None, size: int = 0
    ) -> Produce:
        """`count` pieces: each its number on a line, or `size` characters of x."""

        def produce(write: Callable[[str], object]) -> None:
            try:
                for index in range(count):
                    if index == fail_at:
                        raise NotFound(f"no piece {index}")
                    write("x" * size if size else f"{index:06d}\n")
                    with self.lock:
                        self.written[name] = index + 1
            except BaseException as exc:
                self.ended[name] = type(exc).__name__
                raise
            self.ended[name] = "done"

        return produce

    def held(self, name: str) -> Produce:
        def produce(write: Callable[[str], object]) -> None:
            write("first\n")
            self.release.wait(30)
            self.ended[name] = "done"

        return produce


@pytest.fixture
def served() -> Iterator[tuple[str, Writers]]:
    writers = Writers()
    plans: dict[str, Produce] = {
        "many": writers.pieces("many", 2000),
        "empty": writers.pieces("empty", 0),
        "refused": writers.pieces("refused", 10, fail_at=0),
        "cut": writers.pieces("cut", 50, fail_at=20),
        "left": writers.pieces("left", 100_000),
        "stalled": writers.pieces("stalled", 400, size=65_536),
    }

    async def route(request: Request) -> Response:
        name = request.path_params["name"]
        produce = plans.get(name) or writers.held(name)
        try:
            return await document_response(produce, status=200, media_type="text/plain")
        except NotFound as exc:
            return JSONResponse({"error": {"message": str(exc)}}, status_code=404)

    async def report(request: Request) -> Response:
        # A gateway whose report writer fails after 20 pieces (what `holon evals report
        # --gateway` then sees).
        return await document_response(
            writers.pieces("report", 50, fail_at=20), status=200, media_type="text/markdown"
        )

    app = Starlette(routes=[Route("/doc/{name}", route), Route("/v1/evals/{eval}/report", report)])
    with serve(app) as url:
        yield url, writers


def test_the_pieces_arrive_in_order_as_a_chunked_body(served: tuple[str, Writers]) -> None:
    url, writers = served
    response = httpx.get(f"{url}/doc/many", timeout=30)
    assert response.status_code == 200
    assert response.headers["transfer-encoding"] == "chunked"
    assert "content-length" not in response.headers
    assert response.text == "".join(f"{i:06d}\n" for i in range(2000))
    assert writers.ended["many"] == "done"
    empty = httpx.get(f"{url}/doc/empty", timeout=30)
    assert (empty.status_code, empty.text) == (200, "")


def test_an_error_before_the_first_piece_is_the_answer(served: tuple[str, Writers]) -> None:
    url, _ = served
    response = httpx.get(f"{url}/doc/refused", timeout=30)
    assert response.status_code == 404
    assert response.json() == {"error": {"message": "no piece 0"}}


def test_an_error_after_the_first_piece_cuts_the_stream(served: tuple[str, Writers]) -> None:
    url, writers = served
    received = []
    with pytest.raises(httpx.RemoteProtocolError):  # the body never ends as a whole one
        with httpx.stream("GET", f"{url}/doc/cut", timeout=30) as response:
            assert response.status_code == 200
            for text in response.iter_text():
                received.append(text)
    assert "".join(received) == "".join(f"{i:06d}\n" for i in range(20))
    assert writers.ended["cut"] == "NotFound"


def test_a_client_that_leaves_stops_its_writer(served: tuple[str, Writers]) -> None:
    url, writers = served
    with httpx.stream("GET", f"{url}/doc/left", timeout=30) as response:
        assert next(response.iter_lines()) == "000000"
    deadline = time.monotonic() + 20
    while "left" not in writers.ended and time.monotonic() < deadline:
        time.sleep(0.02)
    assert writers.ended["left"] != "done"  # stopped by its next piece, not finished
    assert writers.written["left"] < 100_000


def test_a_client_that_reads_nothing_is_cut(
    served: tuple[str, Writers], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, writers = served
    monkeypatch.setattr(_documents, "STALL_S", 0.5)
    with httpx.Client(timeout=30) as client, client.stream("GET", f"{url}/doc/stalled"):
        # 26 MB to write; the sockets hold a few: the writer stalls, then is stopped.
        deadline = time.monotonic() + 20
        while "stalled" not in writers.ended and time.monotonic() < deadline:
            time.sleep(0.05)
    # It never ran ahead of its client by more than the buffer and the sockets hold.
    assert writers.ended["stalled"] == "StalledClient"
    assert writers.written["stalled"] < 400


def test_writers_are_bounded(served: tuple[str, Writers]) -> None:
    url, writers = served
    streams: list[Any] = []
    clients = [httpx.Client(timeout=30) for _ in range(_documents.WRITERS + 1)]
    try:
        for index, client in enumerate(clients[: _documents.WRITERS]):
            streams.append(client.stream("GET", f"{url}/doc/held-{index}").__enter__())
        # Every writer is held: the next document waits for one of them to end.
        waiting = threading.Thread(
            target=lambda: streams.append(clients[-1].get(f"{url}/doc/many")), daemon=True
        )
        waiting.start()
        time.sleep(0.5)
        assert waiting.is_alive() and "many" not in writers.ended
        writers.release.set()  # the held writers end; the waiting document is written
        waiting.join(30)
        assert writers.ended["many"] == "done" and streams[-1].status_code == 200
    finally:
        writers.release.set()
        for client in clients:
            client.close()


def test_a_cut_report_fails_the_command_and_leaves_no_file(
    served: tuple[str, Writers], tmp_path: Path
) -> None:
    url, _ = served
    cli = CLI(tmp_path / "home", HOLON_GATEWAY_URL=url, HOLON_TOKEN="holon_test")
    target = tmp_path / "report.md"
    written = cli("evals", "report", "ev_1", "--format", "md", "-o", str(target))
    assert written.code == 3, written.stderr  # the gateway's failure: an environment's
    assert "cut the document short" in written.stderr
    assert not target.exists() and list(tmp_path.glob(".report.md*")) == []
    # To stdout, what came is written before the error: 20 whole pieces, then the exit.
    shown = cli("evals", "report", "ev_1", "--format", "md")
    assert shown.code == 3 and shown.stdout == "".join(f"{i:06d}\n" for i in range(20))
