"""`holon doctor`: check a deployment from this host, each problem with its fix."""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options
from gateway.cli._context import Context
from schema.errors import EnvironmentFault


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "doctor",
        parents=[common_options()],
        help="check this host's deployment: store, schema, key, policy, clock, workers",
        description="Check what every process sharing the store must agree on, from this "
        "host: the store reachable and at this holon's schema, the secret key the store's "
        "signing key was encrypted with, the network policy, the public URL of a shared "
        "store, this host's clock against the database's, and running evals without a "
        "worker. Each problem is printed with its fix. It changes nothing. Exit 3 when a "
        "check fails, 0 otherwise (warnings included).",
    )
    parser.set_defaults(handler=do_doctor)


_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skipped": "-   "}


def do_doctor(ctx: Context) -> int:
    from gateway.service import diagnose  # the store's code only when it runs

    findings = diagnose(ctx.settings)
    failed = [f for f in findings if f.level == "fail"]
    if ctx.out.json_mode:
        ctx.out.json({"ok": not failed, "findings": [f.to_json() for f in findings]})
    else:
        for finding in findings:
            ctx.out.line(f"{_MARK[finding.level]} {finding.check}: {finding.detail}")
            if finding.fix and finding.level in ("warn", "fail"):
                ctx.out.line(f"     fix: {finding.fix}")
    return EnvironmentFault.exit_code if failed else 0
