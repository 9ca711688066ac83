"""The `holon` command: argument parsing, dispatch, errors and exit codes.

Exit codes (docs/cli.md): 0 ok; 1 the thing checked failed; 2 usage or input
error, or a refusal; 3 environment error (store or agent unreachable, and
holon's own bugs, which print no traceback unless --debug).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import math
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any, NoReturn, TextIO, cast

from gateway.cli._context import Context
from gateway.cli._output import Output
from gateway.settings import Settings
from schema.errors import EnvironmentFault, HolonError, UsageError

log = logging.getLogger(__name__)

Handler = Callable[[Context], int | None]


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so errors take the one path.

    Sub-parsers inherit the class: add_subparsers uses type(parent).
    """

    def error(self, message: str) -> NoReturn:
        raise _ArgError(f"{self.prog}: {message}")


class _ArgError(Exception):
    pass


class _Renamed(argparse.Action):
    """A flag's old name, kept for one release: it still works, and the run says the
    new name on stderr (`renamed_flag`)."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kw: Any) -> None:
        super().__init__(option_strings, dest, **kw)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        used = getattr(namespace, "renamed_flags", [])
        namespace.renamed_flags = [*used, (option_string, self.new)]


def renamed_flag(parser: argparse.ArgumentParser, old: str, new: str, dest: str, **kw: Any) -> None:
    """Accept `old` as a deprecated alias of the flag `new` (same `dest`, same values)."""
    parser.add_argument(
        old,
        dest=dest,
        action=_Renamed,
        new=new,
        default=argparse.SUPPRESS,
        help=f"deprecated: the old name of {new}, accepted until the next release",
        **kw,
    )


def seconds(text: str) -> float:
    """An argument's type: a non-negative number of seconds (`inf` allowed)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if math.isnan(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative number of seconds")
    return value


def wait_for_store_option(parser: argparse.ArgumentParser) -> None:
    """`--wait-for-store`, for the long-running processes (a gateway, a worker)."""
    parser.add_argument(
        "--wait-for-store",
        type=seconds,
        default=0.0,
        metavar="SECONDS",
        help="at start, wait this long for a store that does not answer yet or is behind "
        "this holon's schema (`holon db upgrade` running beside), looking every second "
        "(default 0: exit 3 at once; inf: wait forever)",
    )


def common_options() -> argparse.ArgumentParser:
    """Options every command takes, so they work after the command name."""
    parent = _Parser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print one JSON document")
    parent.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    # SUPPRESS: a sub-command's default must not overwrite a --home given before it.
    parent.add_argument(
        "--home",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="holon's state directory (wins over HOLON_HOME)",
    )
    return parent


def command_group(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """`holon NAME ACTION`: the command word `name`, whose actions are added to what this
    returns (the action chosen is parsed as `NAME_command`)."""
    parser = sub.add_parser(name, help=help)
    return parser.add_subparsers(dest=f"{name}_command", metavar="ACTION", required=True)


def _with_home(args: argparse.Namespace, environ: Mapping[str, str] | None) -> Mapping[str, str]:
    """The environment the command reads, with --home as HOLON_HOME when given."""
    import os

    env = os.environ if environ is None else environ
    home = getattr(args, "home", None)
    if home is None:
        return env
    if not home.strip():
        raise UsageError("--home needs a directory")
    return {**env, "HOLON_HOME": home}


# The gateway flags, by their attribute: accepted after the command (where each
# command declares whether it takes them) and before it, as `holon --gateway URL
# agents list`; before the command they are parsed under another name and handed
# to the command after parsing (`_hand_down`), because argparse lets a
# sub-command's defaults overwrite what the top level parsed.
_GATEWAY_FLAGS = {"gateway": "--gateway", "token_file": "--token-file", "token": "--token"}


def gateway_options(prefix: str = "") -> argparse.ArgumentParser:
    """For commands that work on the store or a gateway."""
    parent = _Parser(add_help=False)
    parent.add_argument(
        "--gateway",
        dest=f"{prefix}gateway",
        metavar="URL",
        help="a running gateway (or HOLON_GATEWAY_URL)",
    )
    parent.add_argument(
        "--token-file",
        dest=f"{prefix}token_file",
        metavar="PATH",
        help="read the bearer token for --gateway from the first line of PATH (- : stdin)",
    )
    parent.add_argument(
        "--token",
        dest=f"{prefix}token",
        help="bearer token for --gateway; shows in the process list: prefer HOLON_TOKEN "
        "or --token-file",
    )
    return parent


def _hand_down(args: argparse.Namespace) -> None:
    """Give the command the gateway flags given before it; refuse them where it takes none,
    and refuse two different values for one flag."""
    for name, flag in _GATEWAY_FLAGS.items():
        given = getattr(args, f"top_{name}", None)
        if given is None:
            continue
        if not hasattr(args, name):
            raise _ArgError(f"holon {args.command}: {flag} is not taken by this command")
        after = getattr(args, name)
        if after is not None and after != given:
            raise _ArgError(f"holon: {flag} is given twice, with different values")
        setattr(args, name, given)


# The top-level flags that take a value, by what they are spelled as on the command line.
_VALUED = frozenset({"--home", *_GATEWAY_FLAGS.values()})
_FLAGS = frozenset({"--json", "--debug", "--version"})


def command_word(argv: Sequence[str]) -> str | None:
    """The command `argv` names, read as argparse would, or None when that takes more
    than the top-level flags spelled in full (an abbreviation, `-h`, `--`): then the
    parser is built whole, which reads any command line correctly."""
    rest = iter(argv)
    for token in rest:
        if token in _VALUED:
            next(rest, None)
        elif token in _FLAGS or (token.startswith("--") and token.split("=")[0] in _VALUED):
            continue
        elif token.startswith("-"):
            return None
        else:
            return token
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `holon` parser; with `argv`, only its command's sub-parser (when it names one)."""
    from gateway.cli._commands import registrars

    parser = _Parser(
        prog="holon",
        description="holon: an agent gateway with a built-in quality gate",
        parents=[common_options(), gateway_options(prefix="top_")],
    )
    parser.add_argument(
        "--version", action="store_true", help="print holon's version, Python's and the platform"
    )
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", metavar="COMMAND"),
    )
    for register in registrars(None if argv is None else command_word(argv)):
        register(sub)
    return parser


def _configure_logging(level: str, stream: TextIO) -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_holon", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream)
    handler._holon = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)


@contextlib.contextmanager
def _stop_as_interrupt() -> Iterator[list[bool]]:
    """SIGTERM (a service manager's stop, a container's, a rolling restart's) does what
    Ctrl-C does: a worker records the cells in flight and gives the rest back, an eval
    stops its children, a gateway (uvicorn, which takes SIGTERM over while it serves)
    finishes and settles its calls; the command then exits 143. The list says whether
    SIGTERM came. Only the main thread may set handlers (tests run commands elsewhere)."""
    stopped: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield stopped
        return

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        stopped.append(True)
        interrupt = signal.getsignal(signal.SIGINT)  # asyncio's while a loop runs
        if callable(interrupt):
            interrupt(signal.SIGINT, frame)
        else:  # SIGINT ignored (a background job): stop anyway
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield stopped
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one command; returns its exit code. Tests call this in-process."""
    argv = list(sys.argv[1:] if argv is None else argv)
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    json_mode = "--json" in argv
    debug = "--debug" in argv
    output = Output(json_mode=json_mode, stdout=stdout, stderr=stderr)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
        _hand_down(args)
        for old, new in getattr(args, "renamed_flags", []):
            output.note(f"holon: {old} is deprecated: use {new} (the old name goes next release)")
    except _ArgError as exc:
        usage = UsageError(str(exc), hint="see `holon --help`")
        output.error(usage)
        return usage.exit_code
    except SystemExit as exc:  # --help and --version print and exit 0
        return int(exc.code or 0)
    handler: Handler | None = getattr(args, "handler", None)
    if args.version and handler is None:
        _print_version(output)
        return 0
    if handler is None:
        parser.print_help(stdout)
        return UsageError.exit_code  # `holon` alone, or a group without its command
    context: Context | None = None
    try:
        environ = _with_home(args, environ)
        settings = Settings.from_env(environ)
        if getattr(args, "home", None) is not None:
            settings = settings.given("home", "--home")
        _configure_logging("DEBUG" if debug else settings.log_level, stderr)
        context = Context(
            settings,
            args,
            output,
            stdin if stdin is not None else sys.stdin,
            argv=argv,
            environ=environ,
        )
        with _stop_as_interrupt() as stopped:
            try:
                return handler(context) or 0
            except KeyboardInterrupt:
                if not stopped:
                    raise
                output.note("terminated")
                return 128 + signal.SIGTERM
    except HolonError as exc:
        if debug:
            log.exception("%s", exc)
        output.error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        output.note("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the file system said no (HOLON_HOME, a path, a full disk): not a bug
        if debug:
            log.exception("%s", exc)
        where = f" ({exc.filename})" if exc.filename else ""
        fault = EnvironmentFault(
            f"{exc.strerror or exc}{where}",
            hint="check HOLON_HOME and the paths given: they must be folders and files "
            "this user may write",
        )
        output.error(fault)
        return fault.exit_code
    except Exception as exc:  # a bug in holon: say so plainly, exit as an environment error
        if debug:
            log.exception("internal error")
        bug = HolonError(
            f"internal error: {type(exc).__name__}: {exc}",
            hint="this is a bug in holon; run again with --debug for the traceback",
        )
        output.error(bug)
        # The body says `internal`; the exit code says what a script can do about it:
        # nothing it gave was wrong, so it is not 1 or 2 but the environment's 3.
        return EnvironmentFault.exit_code
    finally:
        if context is not None:
            context.close()


def _print_version(output: Output) -> None:
    import platform

    from schema import __version__

    about = {
        "holon": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }
    if output.json_mode:
        output.json(about)
    else:
        output.line(f"holon {about['holon']} (Python {about['python']}, {about['platform']})")


def main() -> None:
    code = run()
    # The interpreter's collections at exit would walk every object still alive (the
    # modules imported, what the command built) only for the process to end and drop
    # them all: frozen, they are left to it. About 50 ms of CPU after a 1,000-case
    # `holon test`. Only here, at the process's end: `run` is also called in-process.
    gc.freeze()
    sys.exit(code)
