"""What a command handler receives: settings, output, and the service layer (opened lazily)."""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from gateway.cli._output import Output
from gateway.settings import Settings
from schema.errors import UsageError

if TYPE_CHECKING:
    # Imported when a command first asks for the service: the store's pulls in
    # SQLAlchemy and every model, the HTTP one its own stack, and commands such
    # as `holon test SUITE-DIR` or any `--help` need neither.
    from gateway.client import HttpService, Service
    from gateway.service import StoreService

TOKEN_HINT = (
    "an operator creates one on the store: holon tokens create --role "
    "operator|org:ORG|caller:NAME; pass it in HOLON_TOKEN or with --token-file PATH"
)
TOKEN_FLAG_WARNING = (
    "--token puts the token in the process list (ps) and the shell's history; "
    "pass it in HOLON_TOKEN or with --token-file PATH (- reads stdin) instead"
)
MAX_TOKEN_FILE_BYTES = 64 * 1024  # a token is ~50 characters; a bound for /dev/zero


class Context:
    def __init__(
        self,
        settings: Settings,
        args: argparse.Namespace,
        output: Output,
        stdin: TextIO,
        argv: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        # The environment the command runs in (`run(environ=…)`), for the variables it names.
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.args = args
        self.out = output
        self.stdin = stdin
        self.argv = tuple(argv)
        self._service: Service | None = None

    def more(self, cursor: str) -> None:
        """The hint for the next page: this very command line (its filters kept), with the
        new cursor; a --token given on it is left out, so the hint never shows it."""
        kept: list[str] = []
        skip = False
        for arg in self.argv:
            if skip:
                skip = False
                continue
            if arg in ("--cursor", "--token"):
                skip = True
                continue
            if arg.startswith(("--cursor=", "--token=")):
                continue
            kept.append(arg)
        line = " ".join(shlex.quote(a) for a in ("holon", *kept, "--cursor", cursor))
        self.out.note(f"more: {line}")

    @property
    def gateway_url(self) -> str | None:
        url: str | None = getattr(self.args, "gateway", None) or self.settings.gateway_url
        return url

    @property
    def on_gateway(self) -> bool:
        return bool(self.gateway_url)

    def service(self) -> Service:
        """The store's service, or a gateway's over HTTP with --gateway (HOLON_GATEWAY_URL)."""
        if self._service is None:
            url = self.gateway_url
            if url:
                self._service = self._gateway_service(url)
            else:
                self._service = self._store_service()
        return self._service

    def _token(self) -> str:
        """The bearer token: --token-file, --token (with a warning), or HOLON_TOKEN."""
        path: str | None = getattr(self.args, "token_file", None)
        flag: str | None = getattr(self.args, "token", None)
        if path is not None and flag is not None:
            raise UsageError("give --token-file or --token, not both")
        if path is not None:
            return self._token_from_file(path)
        if flag is not None:
            self.out.warn(TOKEN_FLAG_WARNING)
            return flag.strip()
        return (self.settings.token or "").strip()

    def _token_from_file(self, path: str) -> str:
        where = "--token-file -" if path == "-" else f"--token-file {path}"
        try:
            # The first line only: with `-`, the rest of stdin stays for the command.
            if path == "-":
                text = self.stdin.readline(MAX_TOKEN_FILE_BYTES)
            else:
                with open(path, encoding="utf-8") as fh:
                    text = fh.readline(MAX_TOKEN_FILE_BYTES)
        except OSError as exc:
            raise UsageError(
                f"{where}: cannot read the token: {exc.strerror or exc}", details={"file": path}
            ) from None
        except UnicodeDecodeError:
            raise UsageError(
                f"{where}: the token file is not text (UTF-8)", details={"file": path}
            ) from None
        lines = text.splitlines()
        token = lines[0].strip() if lines else ""
        if not token:
            raise UsageError(
                f"{where}:1: the first line is empty; it must hold the token",
                details={"file": path, "line": 1},
                hint=TOKEN_HINT,
            )
        return token

    def _gateway_service(self, url: str) -> HttpService:
        token = self._token()
        if not token:
            raise UsageError(
                f"the gateway at {url} needs a token (HOLON_TOKEN or --token-file)",
                hint=TOKEN_HINT,
            )
        if not all("!" <= c <= "~" for c in token):
            # It travels as `Authorization: Bearer <token>`: printable ASCII, no spaces.
            raise UsageError("the token is not a holon token (printable ASCII, no spaces)")
        from gateway.client import HttpService

        return HttpService(url, token)

    def _store_service(self, wait_s: float = 0.0) -> StoreService:
        from gateway.service import StoreService

        service = StoreService.from_settings(self.settings, wait_s=wait_s, report=self.out.note)
        if service.first_use:
            self.out.note(
                "first use of this store: installed the shipped examples: "
                + ", ".join(service.first_use)
            )
        return service

    def store_service(self, command: str, *, wait_s: float = 0.0) -> StoreService:
        """For store-only commands (docs/cli.md); `wait_s`: how long to wait for a store
        that does not answer yet or is behind this holon's schema."""
        if self.gateway_url:
            where = "--gateway" if getattr(self.args, "gateway", None) else "HOLON_GATEWAY_URL"
            raise UsageError(
                f"`holon {command}` works on the store only, not through a gateway "
                f"({where} is set)",
                hint="run it where the store is (HOLON_DATABASE_URL or the embedded store), "
                "with HOLON_GATEWAY_URL unset",
            )
        from gateway.service import StoreService

        if self._service is None:
            self._service = self._store_service(wait_s)
        assert isinstance(self._service, StoreService)
        return self._service

    def close(self) -> None:
        if self._service is not None:
            self._service.close()
            self._service = None
