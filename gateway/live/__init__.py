"""Live calls: mandates decide, the ledger reserves and settles, the one executor calls."""

from gateway.live._cache import Lookups
from gateway.live._calls import LiveCalls, Started
from gateway.live._canaries import FLOOR_TICK_S, Canaries, CanaryPolicy, CanaryResult
from gateway.live._decision import check_mandate, denial_error
from gateway.live._routing import CallableAgent

__all__ = [
    "FLOOR_TICK_S",
    "CallableAgent",
    "Canaries",
    "CanaryPolicy",
    "CanaryResult",
    "LiveCalls",
    "Lookups",
    "Started",
    "check_mandate",
    "denial_error",
]
