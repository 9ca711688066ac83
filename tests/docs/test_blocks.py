"""The doc test's reader of code blocks, and its judge, on pages written for the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs._blocks import (
    all_blocks,
    all_commands,
    commands,
    find_block,
    shell_words,
    split_comment,
    unlabeled,
)
from tests.docs._session import normalise, session
from tests.docs._steps import Step, prints
from tests.docs.test_commands import _run, coverage

PAGE = """\
# A page

```sh
bin/holon eval acme/x --yes    # evaluate it
# a comment line on its own
bin/holon invoke --input @t.json \\
    --gateway http://127.0.0.1:8000   # routed
holon path '$.a # not a comment' doc.json#still-a-word
```

```
$ holon path '$.a' doc.json
$['a'] = 1
$ holon checks grade c.yaml \\
> doc.json
FAIL: 0 of 1 checks passed

$ echo $?
1
```

- in a list:

  ```sh
  holon config   # indented
  ```

```yaml
key: value
```

```
python -m examples.agents.ticket_triage --port 1
```

```text
$ holon config
```
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(PAGE, encoding="utf-8")
    (tmp_path / "docs" / "cli.md").write_text("```sh\nholon generated\n```\n", encoding="utf-8")
    return tmp_path


def test_shell_blocks_join_continuations_and_drop_comments(root: Path) -> None:
    shown = [c for c in all_commands(root) if not c.console]
    assert [(c.line, c.text, c.comment) for c in shown] == [
        (4, "bin/holon eval acme/x --yes", "evaluate it"),
        (6, "bin/holon invoke --input @t.json --gateway http://127.0.0.1:8000", "routed"),
        (8, "holon path '$.a # not a comment' doc.json#still-a-word", ""),
        (25, "holon config", "indented"),
    ]
    assert all(c.output is None and c.status is None for c in shown)


def test_console_blocks_give_output_and_status(root: Path) -> None:
    first, second = [c for c in all_commands(root) if c.console]
    assert (first.line, first.text, first.output, first.status) == (
        12,
        "holon path '$.a' doc.json",
        "$['a'] = 1",
        None,
    )
    assert (second.line, second.text, second.status) == (
        14,
        "holon checks grade c.yaml doc.json",
        1,
    )
    assert second.output == "FAIL: 0 of 1 checks passed\n"


def test_generated_reference_is_left_out_and_unlabeled_commands_are_found(root: Path) -> None:
    assert all(c.page == "README.md" for c in all_commands(root))
    hidden = [(b.line, line) for b in all_blocks(root) for line in unlabeled(b)]
    assert hidden == [
        (32, "python -m examples.agents.ticket_triage --port 1"),
        (36, "$ holon config"),
    ]
    assert find_block("README.md", "yaml", "key:", root).text == "key: value\n"
    with pytest.raises(LookupError, match="found 0"):
        find_block("README.md", "yaml", "absent", root)


def test_echo_status_must_follow_a_command(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("```\n$ echo $?\n0\n```\n", encoding="utf-8")
    (block,) = all_blocks(tmp_path)
    with pytest.raises(ValueError, match="README.md:2"):
        commands(block)


@pytest.mark.parametrize(
    ("line", "command", "comment"),
    [
        ("a # b", "a", "b"),
        ("a#b", "a#b", ""),
        ("a '#' \"#\" \\# # c", "a '#' \"#\" \\#", "c"),
        ("# all comment", "", "all comment"),
    ],
)
def test_comments_start_at_a_word_outside_quotes(line: str, command: str, comment: str) -> None:
    assert split_comment(line) == (command, comment)


def test_words_split_as_a_shell_splits_them() -> None:
    assert shell_words('holon path "\\$.a[\'b\']" \'x y\' a\\ b "q\\""') == [
        "holon",
        "path",
        "$.a['b']",
        "x y",
        "a b",
        'q"',
    ]


def test_only_listed_differences_are_forgiven(tmp_path: Path) -> None:
    assert normalise(f"a   \n{tmp_path}/x\n\n", tmp_path) == "a\nTMP/x"
    assert normalise("a b") != normalise("a  b")


# -- the judge: a command that does not do what its page says fails the test ---------------


def _judge(tmp_path: Path, shown_page: str, step: Step) -> None:
    page = tmp_path / "page"
    (page / "docs").mkdir(parents=True)
    (page / "README.md").write_text(shown_page, encoding="utf-8")
    (command,) = all_commands(page)
    with session(tmp_path / "s", examples=False) as s, pytest.MonkeyPatch.context() as mp:
        mp.chdir(s.work)
        _run(s, command, step)


DOC = {"doc.json": lambda: '{"output": {"total": 1}}'}


def test_the_judge_passes_a_true_page(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    page = "```\n$ holon path '$.output.total' doc.json\n$['output']['total'] = 1\n```\n"
    _judge(tmp_path, page, Step(files=DOC))


@pytest.mark.parametrize(
    ("page", "step", "says"),
    [
        (
            "```\n$ holon path '$.output.total' doc.json\n$['output']['total'] = 2\n```\n",
            Step(files=DOC),
            "printed other output than the page shows",
        ),
        (
            "```\n$ holon path '$.output.total' doc.json\n$['output']['total'] = 1\n"
            "$ echo $?\n1\n```\n",
            Step(files=DOC),
            "exited 0, the page says 1",
        ),
        (
            "```sh\nholon path '$.output.total' doc.json  # prints 2\n```\n",
            Step(files=DOC, check=prints(r"= 2$")),
            "did not do what the page says",
        ),
        (
            "```sh\nholon path '$.output.[' doc.json\n```\n",
            Step(files=DOC),
            "exited 2, the page says 0",
        ),
    ],
    ids=["output", "shown-status", "claim", "code"],
)
def test_the_judge_fails_a_false_page(tmp_path: Path, page: str, step: Step, says: str) -> None:
    (tmp_path / "s").mkdir()
    with pytest.raises(pytest.fail.Exception, match=says):
        _judge(tmp_path, page, step)


def test_leading_assignments_are_the_command_s_environment(tmp_path: Path) -> None:
    with session(tmp_path, examples=False) as s:
        s.substitutions["EVAL_ID"] = "ev_1"
        assert s.command("HOLON_LOG_LEVEL=DEBUG A_B='x y' bin/holon evals status EVAL_ID") == (
            {"HOLON_LOG_LEVEL": "DEBUG", "A_B": "x y"},
            ["evals", "status", "ev_1"],
        )
        with pytest.raises(ValueError, match="not a holon command"):
            s.command("curl -s http://127.0.0.1:8000/healthz")


def test_a_step_names_what_its_output_may_vary_in() -> None:
    varies = ((r"ev_[0-9A-Z]{26}", "EVAL_ID"),)
    shown = "eval ev_01M8S270MBVQYNVFSQVJHHY5BT done"
    assert normalise("eval ev_01M8S3076QR1TVGQE3FSYY10E4 done", varies=varies) == normalise(
        shown, varies=varies
    )
    assert normalise("eval ev_x done", varies=varies) != normalise(shown, varies=varies)


def test_coverage_lists_unknown_commands_and_stale_entries(root: Path) -> None:
    shown = all_commands(root)
    table = {c.key: Step() for c in shown[1:]}
    table[("README.md", "holon gone")] = Step()
    unknown, stale = coverage(shown, table)
    assert unknown == ["README.md:4: bin/holon eval acme/x --yes"]
    assert stale == ["README.md: holon gone"]
    assert coverage(shown, {c.key: Step() for c in shown}) == ([], [])
