"""What a command handler receives: settings, output, and the client (opened lazily)."""

from __future__ import annotations

import argparse
from typing import TextIO

from gateway.cli._output import Output
from gateway.client import Client, StoreClient
from gateway.settings import Settings
from schema.errors import UsageError


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

    def client(self) -> Client:
        """The store client, or the gateway client when --gateway is given."""
        if self._client is None:
            if self.gateway_url:
                raise UsageError(
                    "--gateway needs the gateway service, which this holon does not have yet",
                    hint="work on the store instead (unset HOLON_GATEWAY_URL)",
                )
            client = StoreClient.from_settings(self.settings)
            if client.first_use:
                self.out.note(
                    "first use of this store: installed the shipped examples: "
                    + ", ".join(client.first_use)
                )
            self._client = client
        return self._client

    def store_client(self, command: str) -> StoreClient:
        """For store-only commands (GATEWAY.md's CLI table)."""
        if self.gateway_url:
            raise UsageError(f"`holon {command}` works on the store only, not with --gateway")
        client = self.client()
        assert isinstance(client, StoreClient)
        return client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
