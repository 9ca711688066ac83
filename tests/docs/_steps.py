"""The parts of the doc test's table: a step, its checks and its runners (tests/docs/_table.py).

A step is how one shown command runs in a session and what it must do; the
checks and runners here are the ones pages share (a regex on the output, a
file written, a server started as a process, a shell line that is not
`holon`); page-specific ones live beside the table.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests._servers import free_port
from tests.docs._blocks import ROOT, Shown, find_block, shell_words
from tests.docs._session import (
    Session,
    answers,
    holon_process,
    interrupt,
    wait_until,
)
from tests.gateway._cli import Result

Runner = Callable[[Session, Shown], Result]
Check = Callable[[Session, Result], None]
Prepare = Callable[[Session], None]


def holon(session: Session, shown: Shown) -> Result:
    """`[VAR=value …] holon …` / `bin/holon …` in-process (bin/holon has its own tests)."""
    env, argv = session.command(shown.text)
    return session.holon(*argv, **env)


@dataclass(frozen=True)
class Step:
    check: Check | None = None
    before: Prepare | None = None
    run: Runner = holon
    code: tuple[int, ...] = (0,)
    examples: bool = False
    slow: bool = False
    # (regex, replacement): what a console block's output may differ in (ids, times).
    varies: tuple[tuple[str, str], ...] = ()
    files: Mapping[str, Callable[[], str | bytes]] = field(default_factory=dict)


# -- checks --------------------------------------------------------------------------------


def prints(*patterns: str, stream: str = "stdout") -> Check:
    """Each regex is found in the command's stdout (or stderr)."""

    def check(session: Session, result: Result) -> None:
        text = getattr(result, stream)
        for pattern in patterns:
            assert re.search(pattern, text, re.MULTILINE), f"{stream} lacks /{pattern}/:\n{text}"

    return check


def writes_pdf(name: str, *texts: str) -> Check:
    def check(session: Session, result: Result) -> None:
        from pypdf import PdfReader

        data = (session.work / name).read_bytes()
        assert data.startswith(b"%PDF-"), f"{name} is not a PDF"
        reader = PdfReader(io.BytesIO(data))
        text = "\n".join(page.extract_text() for page in reader.pages)
        assert len(reader.pages) >= 1
        for want in texts:
            assert want.lower() in text.lower(), f"{name}'s text lacks {want!r}:\n{text[:500]}"

    return check


def writes_html(name: str, *texts: str) -> Check:
    def check(session: Session, result: Result) -> None:
        page = (session.work / name).read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>"), name
        for want in texts:
            assert session.substitute(want) in page, f"{name} lacks {want!r}"

    return check


def remember(name: str, pattern: str, *, substitute: str | None = None) -> Check:
    """Keep what the command printed (group 1 of `pattern`) for later commands of the block."""

    def check(session: Session, result: Result) -> None:
        found = re.search(pattern, result.stdout, re.MULTILINE)
        assert found, f"stdout lacks /{pattern}/:\n{result.stdout}"
        session.values[name] = found.group(1)
        if substitute is not None:
            session.substitutions[substitute] = found.group(1)

    return check


def page_file(page: str, lang: str, containing: str) -> Callable[[], str]:
    """An input file as the page shows it: its one ```lang block that contains `containing`."""
    return lambda: find_block(page, lang, containing).text


# -- runners of lines that are not `holon` -------------------------------------------------


def export_token(session: Session, shown: Shown) -> Result:
    """`export HOLON_TOKEN=...`: the token the block's `tokens create` printed."""
    session.env["HOLON_TOKEN"] = session.values["token"]
    return Result(0, "", "")


def http_get(session: Session, shown: Shown) -> Result:
    """`curl -s URL`: the same GET, by httpx (curl need not be installed)."""
    import httpx

    (url,) = [w for w in session.substitute(shown.text).split() if w.startswith("http")]
    response = httpx.get(url, timeout=10)
    return Result(0 if response.is_success else 22, response.text, "")


def python(session: Session, shown: Shown) -> Result:

    words = shell_words(shown.text)
    assert words[0] == "python"
    return session.run([sys.executable, *words[1:]], cwd=ROOT)


def piped_secret(session: Session, shown: Shown) -> Result:
    """`printf '%s' "$TOKEN" | holon …`: the command with $TOKEN on its standard input."""
    _, command = shown.text.split("|", 1)
    session.values["secret"] = "piped-s3cr3t"
    return session.holon(*session.argv(command.strip()), stdin=session.values["secret"])


def background(ready_path: str, *, cwd: Path | None = None, says: str = "") -> Runner:
    """A server started as a process (on a free port), ready when `ready_path` answers 200.

    Every `http://127.0.0.1:PORT` the block shows afterwards is this server, and it is
    stopped with Ctrl-C when the block ends: it must exit 0, having printed /`says`/."""

    def run(session: Session, shown: Shown) -> Result:

        words = shell_words(session.substitute(shown.text))
        port = next(words[i + 1] for i, w in enumerate(words) if w == "--port")
        actual = free_port()
        words[words.index("--port") + 1] = str(actual)
        session.substitutions[f"http://127.0.0.1:{port}"] = f"http://127.0.0.1:{actual}"
        if words[0] == "python":
            argv = [sys.executable, *words[1:]]
        else:
            argv = holon_process(*words[1:])
        proc = session.spawn(argv, cwd=cwd)
        url = f"http://127.0.0.1:{actual}{ready_path}"
        wait_until(lambda: answers(url), proc, shown.text)
        session.values[f"url:{port}"] = f"http://127.0.0.1:{actual}"
        session.stack.callback(_stopped_cleanly, proc, shown.text, says)
        return Result(0, "", "")

    return run


def _stopped_cleanly(proc: subprocess.Popen[str], what: str, says: str) -> None:
    result = interrupt(proc)
    said = result.stdout + result.stderr
    assert result.code == 0 and "Traceback" not in said, (
        f"{what}: Ctrl-C gave exit {result.code}\n{said}"
    )
    assert re.search(says, said, re.MULTILINE), f"{what}: its output lacks /{says}/:\n{said}"


WORKED_CELLS = 10
# One cell started every WORKER_PACE_S: the worker cannot finish the eval (110 cells, 11 s)
# before it is stopped.
WORKER_PACE_S = 0.1


def worker(session: Session, shown: Shown) -> Result:
    """`holon worker` as a process: it works an eval started for it, then Ctrl-C stops it.

    Nobody else works the eval, so its recorded cells are the worker's; a few of them
    show it working (the whole eval would only cost time). It is paced so that it never
    finishes, however slow the machine is to see its first ten cells: the step's check
    then cancels the rest (the gateway the block starts next would pick it up), which an
    eval already done refuses, and a finished eval writes the agent's record again."""
    from evals import make_plan, start

    store = session.store()
    plan = make_plan(store, "acme/ticket-triage", home=session.home, pace_s=WORKER_PACE_S)
    info = start(store, plan)
    proc = session.spawn(holon_process(*session.argv(shown.text)))

    def working() -> bool:
        return store.evals.counts(info.id)["done"] >= WORKED_CELLS

    wait_until(working, proc, shown.text)
    stopped = interrupt(proc)
    assert store.evals.counts(info.id)["pending"] > 0, "the worker finished the eval"
    session.values["worked"] = info.id
    return stopped
