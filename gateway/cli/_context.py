"""What a command handler receives: settings, output, and the client (opened lazily)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from gateway.cli._output import Output
from gateway.settings import Settings
from schema.errors import UsageError

if TYPE_CHECKING:
    # Imported when a command first asks for a client: the store client pulls in
    # SQLAlchemy and every model, the HTTP client its own stack, and commands such
    # as `holon test SUITE-DIR` or any `--help` need neither.
    from gateway.client import Client, HttpClient, StoreClient

TOKEN_HINT = (
    "an operator creates one on the store: holon tokens create --role "
    "operator|org:ORG|caller:PRINCIPAL; pass it with --token or HOLON_TOKEN"
)


class Context:
    def __init__(
        self, settings: Settings, args: argparse.Namespace, output: Output, stdin: TextIO
    ) -> None:
        self.settings = settings
        self.args = args
        self.out = output
        self.stdin = stdin
        self._client: Client | None = None

    @property
    def gateway_url(self) -> str | None:
        url: str | None = getattr(self.args, "gateway", None) or self.settings.gateway_url
        return url

    @property
    def on_gateway(self) -> bool:
        return bool(self.gateway_url)

    def client(self) -> Client:
        """The store client, or the gateway client when --gateway (HOLON_GATEWAY_URL) is given."""
        if self._client is None:
            url = self.gateway_url
            if url:
                self._client = self._gateway_client(url)
            else:
                self._client = self._store_client()
        return self._client

    def _gateway_client(self, url: str) -> HttpClient:
        token: str = (getattr(self.args, "token", None) or self.settings.token or "").strip()
        if not token:
            raise UsageError(
                f"the gateway at {url} needs a token (--token or HOLON_TOKEN)", hint=TOKEN_HINT
            )
        if not all("!" <= c <= "~" for c in token):
            # It travels as `Authorization: Bearer <token>`: printable ASCII, no spaces.
            raise UsageError("the token is not a holon token (printable ASCII, no spaces)")
        from gateway.client import HttpClient

        return HttpClient(url, token)

    def _store_client(self) -> StoreClient:
        from gateway.client import StoreClient

        client = StoreClient.from_settings(self.settings)
        if client.first_use:
            self.out.note(
                "first use of this store: installed the shipped examples: "
                + ", ".join(client.first_use)
            )
        return client

    def store_client(self, command: str) -> StoreClient:
        """For store-only commands (GATEWAY.md's CLI table)."""
        if self.gateway_url:
            where = "--gateway" if getattr(self.args, "gateway", None) else "HOLON_GATEWAY_URL"
            raise UsageError(
                f"`holon {command}` works on the store only, not through a gateway "
                f"({where} is set)",
                hint="run it where the store is (HOLON_DATABASE_URL or the embedded store), "
                "with HOLON_GATEWAY_URL unset",
            )
        from gateway.client import StoreClient

        client = self.client()
        assert isinstance(client, StoreClient)
        return client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
