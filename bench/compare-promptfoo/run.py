"""`holon test` against promptfoo: the same cases, the same loopback agent, one run.

A deterministic ticket classifier (agent.py, bare ASGI under uvicorn in a
subprocess, speaking holon-http) answers both tools. The bench generates, in
a temp dir, a holon suite of `--cases` public cases (five checks a case: the
output schema, label and priority equal the expected ones, confidence in
[0, 1], label in a closed set) and the equivalent promptfoo config (the
`http` provider pointed at the same agent with the same request body, the
same cases as `tests`, assertions `is-json` with the same schema, `equals`
on the label and the priority, `javascript` for the range and the set).
The agent is wrong on purpose on some cases; both tools must grade every
case and agree with the agent's own ground truth on the pass count, or the
bench stops.

Each tool runs as its user would run it, a fresh process per run, at the
same concurrency: `python -m gateway.cli test SUITE --endpoint URL
--concurrency C --json` (what `bin/holon` execs) and `promptfoo eval -c
CONFIG --no-cache --no-progress-bar --no-table --no-write --no-share -j C -o
results.json` (the package's own bin, not `npx`, so npm's resolution is not
counted; `--no-write` spares promptfoo its results database, which `holon
test` has no equivalent of). Both write every case's result (stdout JSON /
results.json). One untimed warm-up each (holon's also writes its bytecode, as
pip does when it installs a package, in spite of a PYTHONDONTWRITEBYTECODE in
the environment), then `--runs` timed runs, alternating; wall time, CPU time
(user + system of the process and its children), peak RSS of the process tree
(/proc polled every 10 ms) and the largest single process's max RSS (wait4).
Start-up alone (`holon test --help`, `promptfoo --version`) is measured too,
to split the figures.

promptfoo is installed with the machine's npm into a cache folder outside the
repository (default `$TMPDIR/holon-bench-promptfoo/<version>`) on first use;
its telemetry, update check, sharing and remote features are switched off and
its config dir is a temp folder. The version is pinned to the newest minor
(0.x has no stable major) that still supports this machine's Node 20.

Goal (reported, never asserted): holon at most 0.08 of promptfoo's wall time
and of its CPU time (medians).

    .venv/bin/python bench/compare-promptfoo/run.py [--cases 1000] [--concurrency 16]
        [--runs 3] [--json] [--promptfoo-dir DIR] [--no-promptfoo]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import agent  # noqa: E402

from bench._args import bench_parser, compared_tool  # noqa: E402
from bench._support import suite_directory, uvicorn_app  # noqa: E402

GOAL_RATIO = 0.08  # holon / promptfoo, wall and CPU time (medians)
PROMPTFOO_VERSION = "0.121"  # 0.122+ needs Node >= 22.22; this machine has Node 20
LABELS = ("billing", "bug", "account", "outage")
KNOWN_LABELS = (*LABELS, "other")
OUTPUT_SCHEMA = {
    "type": "object",
    "required": ["label", "priority", "confidence"],
    "properties": {
        "label": {"type": "string"},
        "priority": {"enum": ["low", "normal", "high", "urgent"]},
        "confidence": {"type": "number"},
    },
}
INPUT_SCHEMA = {
    "type": "object",
    "required": ["subject", "body"],
    "properties": {"subject": {"type": "string"}, "body": {"type": "string"}},
}
SUITE_YAML = f"""\
schema_version: 1
id: compare-tickets
version: 1
capability: ticket.classify
title: Tickets for the promptfoo comparison
input_schema: {{$ref: schemas/input.json}}
output_schema: {{$ref: schemas/output.json}}
limits: {{max_cost_usd: "0.01", timeout_s: 10}}
repetitions: 1
threshold: 0.5
expected_kind: facts  # each case's `expected` is the label and priority, not a whole answer
checks:
  - {{name: label, path: $.output.label, equals: {{path: $.expected.label}}}}
  - {{name: priority, path: $.output.priority, equals: {{path: $.expected.priority}}}}
  - {{name: confidence, path: $.output.confidence, between: [0, 1]}}
  - {{name: known label, path: $.output.label, one_of: {json.dumps(list(KNOWN_LABELS))}}}
public: {{file: cases/public.jsonl}}
holdout: {{file: cases/holdout.jsonl}}
"""


# -- the cases, for both tools --------------------------------------------------


def ticket(i: int) -> tuple[dict[str, str], dict[str, str]]:
    """Case i's input and expected answer; some are worded so the agent gets them wrong."""
    label = LABELS[i % 4]
    priority = "normal"
    asks = "Could you have a look when you get a chance?"
    subject = {
        "billing": f"Invoice INV-{i} charged twice",
        "bug": f"App crashes when exporting report {i}",
        "account": f"Cannot reset password for user {i}",
        "outage": f"Service down in region eu-{i}",
    }[label]
    if i % 20 == 7:  # an outage named after the portal: the agent says billing
        subject = f"Invoice portal down since 9:00 (ticket {i})"
    elif i % 12 == 5:  # a bug without the keyword: "other", and over-confident
        subject = f"Export broken on report {i}"
    elif i % 16 == 2:  # "asap" makes the agent say urgent; the queue says high
        priority, asks = "high", "Please fix this asap, payroll runs tomorrow."
    body = (
        f"Hello team,\n\n{subject}. We noticed it this morning and it affects "
        f'our "Acme & Sons" account (#{1000 + i}). {asks}\n\nThanks,\nDana'
    )
    return {"subject": subject, "body": body}, {"label": label, "priority": priority}


def ground_truth(cases: int) -> int:
    """Cases the agent passes: every check of the suite, computed from its own code."""
    passed = 0
    for i in range(cases):
        given, expected = ticket(i)
        out = agent.classify(given)
        passed += (
            out["label"] == expected["label"]
            and out["priority"] == expected["priority"]
            and 0 <= out["confidence"] <= 1
            and out["label"] in KNOWN_LABELS
        )
    return passed


def make_suite(root: Path, cases: int) -> Path:
    public = []
    for i in range(cases):
        given, expected = ticket(i)
        public.append({"id": f"t-{i:05d}", "input": given, "expected": expected})
    # A holdout is required of a suite; `holon test` never runs it.
    given, expected = ticket(0)
    holdout = [{"id": "h-0", "input": given, "expected": expected}]
    splits = {"public": public, "holdout": holdout}
    return suite_directory(root, SUITE_YAML, (INPUT_SCHEMA, OUTPUT_SCHEMA), splits)


def make_promptfoo_config(root: Path, cases: int, endpoint: str, concurrency: int) -> Path:
    """The same cases and checks as a promptfoo config (JSON is YAML)."""
    tests = []
    for i in range(cases):
        given, expected = ticket(i)
        tests.append(
            {
                "description": f"t-{i:05d}",
                "vars": {
                    "subject": given["subject"],
                    "body": given["body"],
                    "expected_label": expected["label"],
                    "expected_priority": expected["priority"],
                },
            }
        )
    labels = json.dumps(list(KNOWN_LABELS))
    config = {
        "description": "compare-promptfoo",
        "prompts": ["{{subject}}"],
        "providers": [
            {
                "id": "http",
                "label": "bench-agent",
                "config": {
                    "url": endpoint,
                    "method": "POST",
                    "headers": {"Content-Type": "application/json"},
                    # The request holon sends: {"capability", "input"}.
                    "body": {
                        "capability": "ticket.classify",
                        "input": {"subject": "{{subject}}", "body": "{{body}}"},
                    },
                    "transformResponse": "json.output",
                },
            }
        ],
        "defaultTest": {
            "assert": [
                {"type": "is-json", "value": OUTPUT_SCHEMA},
                {"type": "equals", "value": "{{expected_label}}", "transform": "output.label"},
                {
                    "type": "equals",
                    "value": "{{expected_priority}}",
                    "transform": "output.priority",
                },
                {
                    "type": "javascript",
                    "value": "output.confidence >= 0 && output.confidence <= 1",
                },
                {"type": "javascript", "value": f"{labels}.includes(output.label)"},
            ]
        },
        "tests": tests,
        "evaluateOptions": {"maxConcurrency": concurrency, "cache": False},
        "sharing": False,
    }
    path = root / "promptfooconfig.yaml"
    path.write_text(json.dumps(config, indent=1))
    return path


# -- promptfoo install, the agent ------------------------------------------------


def promptfoo_env(config_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_DISABLE_SHARING": "1",
            "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
            "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "1",
            "PROMPTFOO_DISABLE_RUNTIME_WARNINGS": "1",
            "PROMPTFOO_CONFIG_DIR": str(config_dir),
            "PROMPTFOO_CACHE_PATH": str(config_dir / "cache"),
            "NO_COLOR": "1",
            "CI": "1",
        }
    )
    return env


def ensure_promptfoo(directory: Path, version: str) -> Path:
    """The promptfoo bin in `directory`, installed there with npm first if missing."""
    binary = directory / "node_modules" / ".bin" / "promptfoo"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("compare-promptfoo needs node and npm on PATH")
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{directory.name}.", dir=directory.parent))
    print(f"installing promptfoo@{version} into {directory} (once)...", file=sys.stderr)
    command = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund"]
    command += ["--loglevel=error", f"promptfoo@{version}"]
    # Its env even here, so no install step writes to ~/.promptfoo or phones home.
    env = promptfoo_env(staging / ".promptfoo-home")
    subprocess.run(command, check=True, stdout=sys.stderr, env=env)
    # Renamed into place only once complete, so an interrupted install is retried.
    if directory.exists():
        shutil.rmtree(directory)
    staging.rename(directory)
    return binary


@contextmanager
def agent_server() -> Iterator[str]:
    """agent.app under uvicorn in a subprocess; yields its URL."""
    with uvicorn_app("agent:app", HERE, "the bench agent") as url:
        yield url


# -- measuring one process tree --------------------------------------------------

PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    todo.extend(int(child) for child in handle.read().split())
        except OSError:
            continue
    return out


def _tree_rss(pid: int) -> int:
    total = 0
    for member in _tree(pid):
        try:
            with open(f"/proc/{member}/statm") as handle:
                total += int(handle.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


def measure(command: list[str], *, env: dict[str, str], cwd: Path, stdout: Path) -> dict[str, Any]:
    """Run `command` to the end: wall, CPU, peak tree RSS (polled), max RSS (wait4)."""
    peak = 0
    finished = threading.Event()
    with stdout.open("wb") as out:
        began = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=subprocess.PIPE)

        def poll() -> None:
            nonlocal peak
            while not finished.is_set():
                peak = max(peak, _tree_rss(process.pid))
                finished.wait(0.01)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        assert process.stderr is not None
        stderr = process.stderr.read()  # drained while it runs: a full pipe would block it
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - began
        finished.set()
        poller.join()
        process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit": process.returncode,
        "wall_s": round(wall, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_tree_rss_mb": round(peak / 2**20, 1),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1),  # KiB on Linux
        "stderr": stderr.decode(errors="replace")[-2000:],
    }


# -- the two tools ---------------------------------------------------------------


def shutdown_race(name: str, numbers: dict[str, Any]) -> bool:
    """promptfoo 0.121 sometimes dies as it exits, after writing its results: its logger
    is written to after its file transports are ended (`write after end`, unhandled,
    exit 1; seen on most runs of 200 cases or more on this machine). The run did all
    its work, so it counts, once its results are checked like any other's; the runs it
    happened on are counted in the output (`shutdown_crash`)."""
    crashed = (
        name == "promptfoo" and numbers["exit"] == 1 and "write after end" in numbers["stderr"]
    )
    numbers["shutdown_crash"] = crashed
    return crashed


def holon_command(suite: Path, endpoint: str, concurrency: int) -> list[str]:
    command = [sys.executable, "-m", "gateway.cli", "test", str(suite), "--endpoint", endpoint]
    return command + ["--concurrency", str(concurrency), "--json"]


def holon_counts(stdout: Path) -> dict[str, Any]:
    summary = json.loads(stdout.read_text())["summary"]
    # A call that failed (not "ok") is graded as a failed case: counted as an error here.
    return {
        "graded": summary["cases"],
        "passed": summary["passed"],
        "errors": summary["cells"] - summary["outcomes"].get("ok", 0),
        "eval_s": summary["seconds"],  # the cases alone: no start-up, suite loading or output
    }


def promptfoo_command(binary: Path, config: Path, concurrency: int, out: Path) -> list[str]:
    command = [str(binary), "eval", "-c", str(config), "--no-cache", "--no-progress-bar"]
    command += ["--no-table", "--no-write", "--no-share", "-j", str(concurrency), "-o", str(out)]
    return command


def promptfoo_counts(out: Path) -> dict[str, Any]:
    results = json.loads(out.read_text())["results"]
    stats = results["stats"]
    return {
        "graded": stats["successes"] + stats["failures"] + stats.get("errors", 0),
        "passed": stats["successes"],
        "errors": stats.get("errors", 0),
        "eval_s": stats["durationMs"] / 1000,  # the evaluation alone
    }


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": len(runs)}
    for key in ("wall_s", "eval_s", "cpu_s", "peak_tree_rss_mb", "max_rss_mb"):
        if key not in runs[0]:
            continue
        values = [r[key] for r in runs]
        out[key] = {"min": min(values), "median": round(statistics.median(values), 3)}
    out["shutdown_crashes"] = sum(bool(r.get("shutdown_crash")) for r in runs)
    return out


def holon_version() -> str:
    """The installed distribution's version, else the checkout's own (`schema._version`)."""
    try:
        return metadata.version("holon")
    except metadata.PackageNotFoundError:
        from schema._version import __version__

        return str(__version__)


def versions(promptfoo: Path | None, env: dict[str, str]) -> dict[str, str]:
    def output(command: list[str], env: dict[str, str] | None = None) -> str:
        result = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        return result.stdout.strip().splitlines()[-1]

    holon = holon_version()
    try:
        holon += "+" + output(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    except (OSError, subprocess.CalledProcessError):
        pass
    found = {"holon": holon, "python": sys.version.split()[0]}
    if promptfoo is not None:
        found["promptfoo"] = output([str(promptfoo), "--version"], env=env)
        found["node"] = output(["node", "--version"])
    return found


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--cases", type=int, default=1000, help="cases (default 1000)")
    parser.add_argument("--concurrency", type=int, default=16, help="for both tools (16)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each tool (3)")
    compared_tool(
        parser,
        "promptfoo",
        PROMPTFOO_VERSION,
        where="where promptfoo is (or gets) installed",
        alone="promptfoo neither installed nor run, no ratios",
    )
    args = parser.parse_args()
    binary = None if args.no_promptfoo else ensure_promptfoo(args.promptfoo_dir, PROMPTFOO_VERSION)
    expected_pass = ground_truth(args.cases)
    with tempfile.TemporaryDirectory(prefix="holon-bench-compare-") as tmp, agent_server() as url:
        root = Path(tmp)
        suite = make_suite(root, args.cases)
        config = make_promptfoo_config(root, args.cases, url, args.concurrency)
        holon_env = dict(os.environ, HOLON_HOME=str(root / "holon-home"), NO_COLOR="1")
        # As installed: pip compiles a package's bytecode when it installs it, so an
        # installed holon never compiles its sources at start-up. A machine that sets
        # PYTHONDONTWRITEBYTECODE (this one does) would have every run compile about
        # 150 modules; here the warm-up run writes the bytecode, under the temp dir.
        holon_env.pop("PYTHONDONTWRITEBYTECODE", None)
        holon_env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        pf_env = promptfoo_env(root / "promptfoo-home")
        found = versions(binary, pf_env)
        tools = {
            "holon": (holon_command(suite, url, args.concurrency), holon_env, holon_counts, 1),
        }
        startup_commands = {
            "holon": ([sys.executable, "-m", "gateway.cli", "test", "--help"], holon_env),
        }
        if binary is not None:
            tools["promptfoo"] = (
                promptfoo_command(binary, config, args.concurrency, root / "results.json"),
                pf_env,
                lambda _stdout: promptfoo_counts(root / "results.json"),
                100,  # promptfoo's exit status when a test failed
            )
            startup_commands["promptfoo"] = ([str(binary), "--version"], pf_env)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in tools}
        startup: dict[str, list[dict[str, Any]]] = {name: [] for name in tools}
        for attempt in range(args.runs + 1):  # attempt 0 warms up (files, caches, migrations)
            for name, (command, env, counts, failed_status) in tools.items():
                stdout = root / f"{name}.out"
                numbers = measure(command, env=env, cwd=root, stdout=stdout)
                if numbers["exit"] not in (0, failed_status) and not shutdown_race(name, numbers):
                    raise SystemExit(f"{name} exited {numbers['exit']}:\n{numbers['stderr']}")
                numbers.update(counts(stdout))
                if (
                    numbers["graded"] != args.cases
                    or numbers["passed"] != expected_pass
                    or numbers["errors"]
                ):
                    raise SystemExit(
                        f"{name} graded {numbers['graded']} of {args.cases} cases "
                        f"({numbers['errors']} errors) and passed {numbers['passed']}; "
                        f"the agent's ground truth is {expected_pass}"
                    )
                del numbers["stderr"]
                if attempt:
                    runs[name].append(numbers)
                    if not args.json:
                        print(f"run {attempt} {name:>9}: {numbers}", file=sys.stderr)
                command, env = startup_commands[name]
                started = measure(command, env=env, cwd=root, stdout=root / "startup.out")
                del started["stderr"]
                if attempt:
                    startup[name].append(started)
    result: dict[str, Any] = {
        "cases": args.cases,
        "concurrency": args.concurrency,
        "passed_by_both": expected_pass,
        "versions": found,
    }
    for name in tools:
        result[name] = summarise(runs[name])
        started = summarise(startup[name])
        result[name]["startup_wall_s"] = started["wall_s"]
        result[name]["startup_cpu_s"] = started["cpu_s"]
    if binary is None:
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(json.dumps(result["holon"], indent=2))
        return
    holon_wall = result["holon"]["wall_s"]["median"]
    promptfoo_wall = result["promptfoo"]["wall_s"]["median"]
    result["wall_ratio_holon_to_promptfoo"] = round(holon_wall / promptfoo_wall, 3)
    # CPU time is steadier than wall time on a shared machine: the same ratio, in CPU.
    cpu = result["holon"]["cpu_s"]["median"] / result["promptfoo"]["cpu_s"]["median"]
    result["cpu_ratio_holon_to_promptfoo"] = round(cpu, 3)
    result["goal_ratio"] = GOAL_RATIO
    result["goal_met"] = {
        "wall": result["wall_ratio_holon_to_promptfoo"] <= GOAL_RATIO,
        "cpu": result["cpu_ratio_holon_to_promptfoo"] <= GOAL_RATIO,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


def report(result: dict[str, Any]) -> None:
    v = result["versions"]
    print(
        f"{result['cases']} cases at concurrency {result['concurrency']}, same loopback agent; "
        f"both graded all and passed {result['passed_by_both']}"
    )
    print(
        f"holon {v['holon']} (Python {v['python']}), promptfoo {v['promptfoo']} "
        f"(Node {v['node']}); min / median of {result['holon']['runs']} runs"
    )
    header = f"{'':10} {'wall s':>13} {'of which eval':>13} {'CPU s':>13} {'peak RSS MB':>15}"
    print(header + f" {'max proc MB':>15} {'start-up s':>13}")
    for name in ("holon", "promptfoo"):
        r = result[name]
        cells = [
            f"{r[key]['min']:>6.2f} {r[key]['median']:>6.2f}"
            for key in ("wall_s", "eval_s", "cpu_s", "peak_tree_rss_mb", "max_rss_mb")
        ]
        start = r["startup_wall_s"]
        print(
            f"{name:10} {cells[0]:>13} {cells[1]:>13} {cells[2]:>13} {cells[3]:>15} "
            f"{cells[4]:>15} {start['min']:>6.2f} {start['median']:>6.2f}"
        )
    goal, met = result["goal_ratio"], result["goal_met"]
    for measure, key in (
        ("wall", "wall_ratio_holon_to_promptfoo"),
        ("CPU", "cpu_ratio_holon_to_promptfoo"),
    ):
        verdict = "met" if met[measure.lower()] else "NOT met"
        print(
            f"holon / promptfoo {measure} time (medians): {result[key]}  "
            f"(goal <= {goal}: {verdict})"
        )
    crashes = result["promptfoo"]["shutdown_crashes"]
    if crashes:
        print(f"promptfoo died at exit, its results written, in {crashes} of the timed runs")
    print(
        "start-up alone (CPU s, medians): "
        + ", ".join(
            f"{n} {result[n]['startup_cpu_s']['median']:.2f}" for n in ("holon", "promptfoo")
        )
    )


if __name__ == "__main__":
    main()
