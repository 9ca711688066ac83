"""Live calls: mandates decide, the ledger reserves and settles, the one executor calls."""

from gateway.live._cache import Lookups
from gateway.live._calls import CallableAgent, LiveCalls
from gateway.live._decision import check_mandate, denial_error

__all__ = ["CallableAgent", "LiveCalls", "Lookups", "check_mandate", "denial_error"]
