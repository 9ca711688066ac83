"""The commands README.md and docs/*.md show, read from their fenced code blocks.

Two kinds of block hold commands:

- a shell block (```sh, ```bash, ```shell): every line is a command, a line
  ending in `\\` continues on the next, and a trailing `# comment` says what
  the command does;
- a console block (no language, or ```console, whose lines start with `$ `):
  a `$ ` line is a command and the lines up to the next `$ ` line are its
  exact output; `$ echo $?` and the line after it show the exit status of
  the command before.

docs/cli.md is generated from the parser and checked on its own
(tests/gateway/test_docs.py), so it is left out. A block without a language
whose lines look like commands but carry no `$ ` prompt, or a block of
another language (```text) holding such lines, is reported as a problem:
label it ```sh or ```console, or the doc test cannot see its commands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGS = frozenset({"sh", "bash", "shell"})
CONSOLE_LANGS = frozenset({"", "console"})
SKIPPED_PAGES = frozenset({"docs/cli.md"})  # generated; tests/gateway/test_docs.py checks it

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<lang>[^`\s]*)")
_PROMPT = "$ "
_STATUS = "echo $?"
# A line that reads as a command: what an unlabeled block must not hold without a `$ ` prompt.
_LOOKS_LIKE_A_COMMAND = re.compile(r"^(bin/holon|holon|python|curl|export|printf)\s")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the checkout: "README.md", "docs/checks.md"
    line: int  # the opening fence's line (1-based)
    lang: str
    lines: tuple[str, ...]  # the content, the fence's indentation removed

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Shown:
    """One command as a page shows it."""

    page: str
    line: int  # the command's first line
    block: int  # its block's opening fence line
    text: str  # continuations joined, prompt and trailing comment dropped
    comment: str  # the trailing comment ("" without one)
    console: bool
    output: str | None = None  # console: the shown output, lines joined with "\n"
    status: int | None = None  # console: the exit status a following `$ echo $?` shows

    @property
    def key(self) -> tuple[str, str]:
        return (self.page, self.text)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages(root: Path = ROOT) -> list[Path]:
    found = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [p for p in found if p.relative_to(root).as_posix() not in SKIPPED_PAGES]


def blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """Every fenced block of a page, in order; an unclosed fence runs to the end, as in Markdown."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        body = tuple(_dedent(line, indent) for line in lines[i + 1 : j])
        found.append(Block(page, i + 1, opening["lang"].lower(), body))
        i = j + 1
    return found


def _dedent(line: str, indent: int) -> str:
    # Markdown strips up to the fence's indentation from each content line.
    cut = 0
    while cut < indent and cut < len(line) and line[cut] == " ":
        cut += 1
    return line[cut:]


def split_comment(line: str) -> tuple[str, str]:
    """(command, comment): a `#` starts a comment at the start of a word, outside quotes."""
    quote = ""
    i = 0
    while i < len(line):
        char = line[i]
        if quote:
            if char == "\\" and quote == '"':
                i += 2
                continue
            if char == quote:
                quote = ""
        elif char == "\\":
            i += 2
            continue
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
        i += 1
    return line.rstrip(), ""


def _joined(lines: tuple[str, ...], start: int, prompt: str = "") -> tuple[str, str, int]:
    """The logical line starting at `start` (continuations joined): (command, comment, next)."""
    parts: list[str] = []
    comments: list[str] = []
    i = start
    while True:
        raw = lines[i]
        if i > start and prompt and raw.startswith("> "):
            raw = raw[2:]  # a console's continuation prompt
        command, comment = split_comment(raw)
        if comment:
            comments.append(comment)
        i += 1
        if command.endswith("\\") and i < len(lines):
            parts.append(command[:-1].strip())
            continue
        parts.append(command.strip())
        break
    return " ".join(p for p in parts if p), " ".join(comments), i


def is_console(block: Block) -> bool:
    return block.lang == "console" or (
        block.lang in CONSOLE_LANGS and any(line.startswith(_PROMPT) for line in block.lines)
    )


def commands(block: Block) -> list[Shown]:
    """The commands a block shows (none for a block that shows no commands)."""
    if block.lang in SHELL_LANGS:
        return list(_shell(block))
    if is_console(block):
        return list(_console(block))
    return []


def _shell(block: Block) -> Iterator[Shown]:
    i = 0
    while i < len(block.lines):
        if not block.lines[i].strip() or block.lines[i].lstrip().startswith("#"):
            i += 1
            continue
        first = i
        text, comment, i = _joined(block.lines, i)
        yield Shown(block.page, block.line + 1 + first, block.line, text, comment, console=False)


def _console(block: Block) -> Iterator[Shown]:
    lines = block.lines
    i = 0
    pending: Shown | None = None
    while i < len(lines):
        if not lines[i].startswith(_PROMPT):
            i += 1  # output before any prompt: not a command's
            continue
        first = i
        text, comment, i = _joined(lines, i, prompt=_PROMPT)
        text = text[len(_PROMPT) :].strip() if text.startswith("$") else text
        output_start = i
        while i < len(lines) and not lines[i].startswith(_PROMPT):
            i += 1
        output = "\n".join(lines[output_start:i])
        if text == _STATUS:
            if pending is None or not output.strip().isdigit():
                raise ValueError(
                    f"{block.page}:{block.line + 1 + first}: `$ echo $?` must follow a command "
                    "and be followed by its status"
                )
            pending = Shown(**{**pending.__dict__, "status": int(output.strip())})
            continue
        if pending is not None:
            yield pending
        pending = Shown(
            block.page, block.line + 1 + first, block.line, text, comment, True, output=output
        )
    if pending is not None:
        yield pending


def unlabeled(block: Block) -> list[str]:
    """Lines that look like commands in a block the doc test does not read commands from
    (no language and no `$ ` prompt, or another language such as ```text)."""
    if block.lang in SHELL_LANGS or is_console(block):
        return []
    return [
        line
        for line in block.lines
        if _LOOKS_LIKE_A_COMMAND.match(line) or line.startswith(_PROMPT)
    ]


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [block for page in pages(root) for block in blocks(page, root)]


def all_commands(root: Path = ROOT) -> list[Shown]:
    return [shown for block in all_blocks(root) for shown in commands(block)]


def find_block(page: str, lang: str, containing: str, root: Path = ROOT) -> Block:
    """The one block of `page` in `lang` whose text contains `containing` (a test's input file)."""
    found = [b for b in blocks(root / page, root) if b.lang == lang and containing in b.text]
    if len(found) != 1:
        raise LookupError(
            f"{page}: expected one ```{lang} block containing {containing!r}, found {len(found)}"
        )
    return found[0]


def shell_words(text: str) -> list[str]:
    """A command's words as a POSIX shell splits them (quotes and backslashes; no expansion).

    `shlex` keeps the backslash of `\\$` inside double quotes, where a shell drops it."""
    words: list[str] = []
    word: list[str] = []
    started = False
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            if started:
                words.append("".join(word))
                word, started = [], False
            i += 1
            continue
        started = True
        if char == "'":
            end = text.index("'", i + 1)
            word.append(text[i + 1 : end])
            i = end + 1
        elif char == '"':
            i += 1
            while text[i] != '"':
                if text[i] == "\\" and text[i + 1] in '$`"\\':
                    i += 1
                word.append(text[i])
                i += 1
            i += 1
        elif char == "\\":
            word.append(text[i + 1])
            i += 2
        else:
            word.append(char)
            i += 1
    if started:
        words.append("".join(word))
    return words
