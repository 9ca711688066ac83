"""docs/gateway.md lists every route of the route table, with its method."""

from __future__ import annotations

from pathlib import Path

from gateway.server import ENDPOINTS

DOC = (Path(__file__).resolve().parents[3] / "docs" / "gateway.md").read_text()


def test_every_route_is_documented() -> None:
    missing = [f"{e.method} {e.path}" for e in ENDPOINTS if f"{e.method} {e.path}`" not in DOC]
    assert not missing, missing
