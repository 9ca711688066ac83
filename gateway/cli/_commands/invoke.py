"""`holon invoke`: a live call under the caller's mandates.

On the store the CLI acts as operator, so a live call names the caller whose
mandates apply (`--caller NAME`); through a gateway the token's caller role
does. Exit codes: 0 the call went well, 1 denied (403/402/429), 2 usage or input
errors, 3 the agent failed or could not be reached (502/504).
"""

from __future__ import annotations

import argparse
import json

from gateway.cli._app import common_options, gateway_options, renamed_flag
from gateway.cli._commands.agents import agent_id
from gateway.cli._context import Context
from gateway.operations import numbers_text
from schema.errors import Denied, InputError, Location, UsageError
from schema.jsontext import JSONValue, NumberError, dumps, format_path, loads

MAX_INPUT_BYTES = 8 * 1024 * 1024


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    invoke = sub.add_parser(
        "invoke",
        parents=both,
        help="a live call under the caller's mandates (to one agent, or routed)",
        description="Call ORG/AGENT for CAP with INPUT under the caller's mandates, or without "
        "an agent let routing pick the best one they allow. The agent's output is printed on "
        "stdout (the whole response with --json). On the store the CLI acts as operator: "
        "--caller names the caller whose mandates apply; through a gateway the token's caller "
        "does. Exit 0 ok, 1 denied, 3 the agent failed or timed out.",
    )
    invoke.add_argument(
        "agent", type=agent_id, metavar="ORG/AGENT", nargs="?", help="the agent (default: routed)"
    )
    invoke.add_argument("--capability", metavar="CAP", required=True, help="the capability")
    invoke.add_argument(
        "--input",
        metavar="JSON|@FILE",
        required=True,
        help="the input: JSON text, @FILE for a JSON file, @- for standard input",
    )
    invoke.add_argument(
        "--caller", metavar="NAME", help="on the store: the caller whose mandates apply"
    )
    renamed_flag(invoke, "--as", "--caller", "caller", metavar="NAME")
    invoke.set_defaults(handler=do_invoke)


def _read_input(ctx: Context, text: str) -> JSONValue:
    """`--input`: JSON text, `@FILE`, or `@-` (standard input)."""
    where = "--input"
    if text.startswith("@"):
        name = text[1:]
        if name == "-":
            where, raw = "<stdin>", ctx.stdin.read(MAX_INPUT_BYTES + 1)
        else:
            where = name
            try:
                with open(name, encoding="utf-8") as stream:
                    raw = stream.read(MAX_INPUT_BYTES + 1)
            except OSError as exc:
                raise InputError(
                    f"cannot read the input: {exc.strerror}", location=Location(name)
                ) from None
            except UnicodeDecodeError:
                raise InputError("the input is not UTF-8 text", location=Location(name)) from None
        if len(raw) > MAX_INPUT_BYTES:
            raise InputError(f"the input is over {MAX_INPUT_BYTES} bytes", location=Location(where))
    else:
        raw = text
    try:
        return loads(raw)
    except NumberError as exc:
        raise InputError(
            exc.problem, location=Location(where, path=format_path(exc.path))
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg}",
            location=Location(where, exc.lineno, exc.colno),
            hint="--input takes JSON text, @FILE or @- (standard input)",
        ) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not valid JSON: {exc}", location=Location(where)) from None


def _explain_denial(ctx: Context, error: Denied) -> None:
    """Each mandate's reason and numbers, under the error line (people only)."""
    if ctx.out.json_mode:
        return
    for decision in error.details.get("mandates", []):
        skip = {"mandate", "decision", "reason"}
        numbers = numbers_text(decision, skip)
        said = decision.get("reason", decision.get("decision"))
        ctx.out.note(
            f"  mandate {decision.get('mandate')}: {said}" + (f" ({numbers})" if numbers else "")
        )


def do_invoke(ctx: Context) -> int:
    args = ctx.args
    if args.caller is not None and not args.caller.strip():
        raise UsageError("--caller needs a name")
    value = _read_input(ctx, args.input)
    service = ctx.service()
    try:
        answer = service.invoke(args.caller, args.agent, args.capability, value)
    except Denied as exc:
        ctx.out.error(exc)
        _explain_denial(ctx, exc)
        return exc.exit_code
    if ctx.out.json_mode:
        ctx.out.json(answer)
        return 0
    ctx.out.stdout.write(dumps(answer["output"]) + "\n")
    ctx.out.stdout.flush()
    routed = answer.get("routing")
    ctx.out.note(
        f"{answer['agent']} {answer['agent_version']} under mandate {answer['mandate']}"
        + (f" (routed among {routed['candidates']})" if routed else "")
        + f": ${answer['cost_usd']} ({answer['cost_source']}), {answer['latency_ms']} ms, "
        f"request {answer['request_id']}"
    )
    return 0
