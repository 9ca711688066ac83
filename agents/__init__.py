"""Agents: manifests, protocol adapters and the one executor.

Never touches the database: everything it needs arrives as arguments.
"""

from agents._addresses import Address, AddressGuard
from agents._cost import price
from agents._endpoint import Endpoint, EndpointError, parse_endpoint
from agents._executor import Executor, execute
from agents._identity import Identity, IdentityCheck
from agents._limits import DEFAULT_MAX_RESPONSE_BYTES, MAX_REQUEST_BYTES, CallLimits
from agents._loop import frozen_gc, run_loop
from agents._manifest import (
    CARD_PROTOCOLS,
    PROTOCOL_SECTIONS,
    PROTOCOLS,
    AgentLimits,
    Manifest,
    McpSpec,
    OpenAIChatSpec,
    Pricing,
    load_manifest,
    manifest_from_dict,
    manifest_from_text,
    parse_manifest,
)
from agents._outcome import Attempt, CostSource, Outcome, OutcomeCode, Usage, printable
from agents._trace import request_id
from agents._wire import PreparedRequest, build_request, secret_problem

__all__ = [
    "CARD_PROTOCOLS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_REQUEST_BYTES",
    "PROTOCOLS",
    "PROTOCOL_SECTIONS",
    "Address",
    "AddressGuard",
    "AgentLimits",
    "Attempt",
    "CallLimits",
    "CostSource",
    "Endpoint",
    "EndpointError",
    "Executor",
    "Identity",
    "IdentityCheck",
    "Manifest",
    "McpSpec",
    "OpenAIChatSpec",
    "Outcome",
    "OutcomeCode",
    "PreparedRequest",
    "Pricing",
    "Usage",
    "build_request",
    "execute",
    "frozen_gc",
    "load_manifest",
    "manifest_from_dict",
    "manifest_from_text",
    "parse_endpoint",
    "parse_manifest",
    "price",
    "printable",
    "request_id",
    "run_loop",
    "secret_problem",
]
