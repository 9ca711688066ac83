"""The operation table: each operation of holon declared once, with typed request types.

The server's routes and their OpenAPI parameters, the HTTP client's requests,
the store client's work, the CLI's flags and output, and the console's
filters all come from these declarations (docs/architecture.md, Operations).
"""

from typing import Any

from gateway.operations._calls import (
    LEDGER_LIST,
    MANDATES_LIST,
    MANDATES_REVISIONS,
    MANDATES_SHOW,
    LedgerQuery,
    MandateRef,
    MandatesQuery,
    budget_text,
)
from gateway.operations._declare import (
    Cli,
    Column,
    Field,
    Fields,
    Lines,
    Operation,
    Param,
    Principal,
    Render,
    Table,
    choice,
    fields,
    filters,
    param,
)
from gateway.operations._registry import (
    AGENTS_LIST,
    TOKENS_CREATE,
    TOKENS_LIST,
    TOKENS_REVOKE,
    AgentsQuery,
    TokenRef,
    TokenRequest,
    TokensQuery,
)

# Every operation declared in the table (the rest are still hand-written routes).
OPERATIONS: tuple[Operation[Any], ...] = (
    AGENTS_LIST,
    MANDATES_LIST,
    MANDATES_SHOW,
    MANDATES_REVISIONS,
    LEDGER_LIST,
    TOKENS_CREATE,
    TOKENS_LIST,
    TOKENS_REVOKE,
)

__all__ = [
    "AGENTS_LIST",
    "LEDGER_LIST",
    "MANDATES_LIST",
    "MANDATES_REVISIONS",
    "MANDATES_SHOW",
    "OPERATIONS",
    "TOKENS_CREATE",
    "TOKENS_LIST",
    "TOKENS_REVOKE",
    "AgentsQuery",
    "Cli",
    "Column",
    "Field",
    "Fields",
    "LedgerQuery",
    "Lines",
    "MandateRef",
    "MandatesQuery",
    "Operation",
    "Param",
    "Principal",
    "Render",
    "Table",
    "TokenRef",
    "TokenRequest",
    "TokensQuery",
    "budget_text",
    "choice",
    "fields",
    "filters",
    "param",
]
