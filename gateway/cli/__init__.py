"""The `holon` command line."""

from gateway.cli._app import build_parser, main, run

__all__ = ["build_parser", "main", "run"]
