"""Schemathesis against the gateway's own /openapi.json, over real HTTP, with every role.

Every generated request (valid and invalid, per the document) must get a
response the document describes: a documented status, the declared media
type, a body matching its schema, and never a 5xx other than the agent
outcomes (502/504) and an unavailable store (503) the document declares.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import given

from tests._hypothesis import derandomized
from tests.gateway.server._gateway import Gateway, tiny_gateway

pytestmark = pytest.mark.slow

# Per operation: the operator gets past every role gate, so it gets the most;
# the others mostly meet 403s, which the route-role test covers exhaustively.
EXAMPLES = {"operator": 10, "org:acme": 3, "caller:finance-bot": 3}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with tiny_gateway(tmp_path_factory.mktemp("schemathesis"), grant=True, eval_workers=0) as gw:
        yield gw


def _operations(gateway: Gateway) -> tuple[dict[str, Any], list[Any]]:
    spec = httpx.get(gateway.url + "/openapi.json").json()
    schema = schemathesis.openapi.from_dict(spec)
    return spec, [result.ok() for result in schema.get_all_operations()]


def _checker(
    gateway: Gateway, spec: dict[str, Any], operation: Any, role: str, tried: dict[str, int]
) -> Any:
    headers = {"Authorization": f"Bearer {gateway.tokens[role]}"}
    documented = set(spec["paths"][operation.path][operation.method.lower()]["responses"])

    @derandomized(EXAMPLES[role])
    @given(case=operation.as_strategy())
    def check(case: Any) -> None:
        response = case.call(base_url=gateway.url, headers=headers, timeout=30)
        label = f"{case.method} {case.formatted_path} as {role}"
        assert response.status_code not in (500, 501, 503), (label, response.text)
        assert str(response.status_code) in documented, (label, response.text)
        operation.validate_response(response)
        tried[operation.label] = tried.get(operation.label, 0) + 1

    return check


def test_every_response_conforms(gateway: Gateway) -> None:
    spec, operations = _operations(gateway)
    assert len(operations) >= 30
    tried: dict[str, int] = {}
    for operation in operations:
        for role in EXAMPLES:
            _checker(gateway, spec, operation, role, tried)()
    assert len(tried) == len(operations)
