"""`holon suites add|activate|list|show|validate|pull|rotate-holdout|exposure|exposure-reset`."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from gateway.cli._app import common_options, gateway_options
from gateway.cli._context import Context
from gateway.cli._operations import Local, command, show
from gateway.operations import SUITE_FIELDS, SUITES_FILES, SUITES_LIST, SUITES_SHOW
from schema.documents import write_error, write_file
from schema.errors import InputError, Location, UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("suites", help="install and inspect suites")
    group = parser.add_subparsers(dest="suites_command", metavar="ACTION", required=True)
    store_only = [common_options()]
    both = [common_options(), gateway_options()]

    add = group.add_parser(
        "add",
        parents=store_only,
        help="validate a suite directory and install it into the store",
        description="Validate the suite at PATH and install it. Versions install side by side; "
        "the first version of a suite is active at once, a later one with --activate or "
        "`holon suites activate`. Re-installing a version with other content is refused.",
    )
    add.add_argument("path", metavar="PATH", type=Path, help="a suite directory")
    add.add_argument("--activate", action="store_true", help="make this version current")
    add.set_defaults(handler=do_add)

    activate = group.add_parser("activate", parents=store_only, help="make a version current")
    activate.add_argument("suite", metavar="ID", help="an installed suite's id")
    activate.add_argument("version", metavar="VERSION", type=int, help="an installed version")
    activate.set_defaults(handler=do_activate)

    command(group, "list", SUITES_LIST, parents=both)
    command(group, "show", SUITES_SHOW, parents=both)

    validate = group.add_parser(
        "validate",
        parents=store_only,
        help="validate a suite (a directory or an installed id): counts and digests only",
    )
    validate.add_argument(
        "suite", metavar="SUITE", help="a suite directory, or an installed suite's id"
    )
    validate.set_defaults(handler=do_validate)

    command(group, "pull", SUITES_FILES, parents=both, local=SAVED)

    trust = group.add_parser(
        "trust",
        parents=store_only,
        help="trust a suite's Python extensions (after reading them)",
        description="Record the sha256 of each extension file (custom graders and generators) "
        "of the suite at PATH as trusted, in HOLON_HOME. A file that changes is untrusted "
        "again. Read the files first: they run with your rights.",
    )
    trust.add_argument("path", metavar="PATH", type=Path, help="a suite directory")
    trust.set_defaults(handler=do_trust)

    rotate = group.add_parser(
        "rotate-holdout",
        parents=store_only,
        help="start a new holdout epoch for a suite with a generated holdout",
    )
    rotate.add_argument("suite", metavar="ID", help="an installed suite's id")
    rotate.set_defaults(handler=do_rotate)

    exposure = group.add_parser(
        "exposure",
        parents=store_only,
        help="each org's holdout budget on a suite: evals spent per instance set, and resets",
        description="Each eval that grades a suite's holdout spends one unit of its agent's "
        "org's budget for that set of holdout instances (docs/integrity.md). Lists what each "
        "org spent, what it revealed in all (never reset), and every reset.",
    )
    exposure.add_argument("suite", metavar="ID", help="an installed suite's id")
    exposure.add_argument("--org", help="one org only")
    exposure.set_defaults(handler=do_exposure)

    reset = group.add_parser(
        "exposure-reset",
        parents=store_only,
        help="give an org its holdout budget on a suite back (logged and kept)",
        description="Reset ORG's spent holdout budget on a suite to 0 on every instance set. "
        "The lower-bound gate still counts every eval the org had (a reset forgives the "
        "budget, not the evidence).",
    )
    reset.add_argument("suite", metavar="ID", help="an installed suite's id")
    reset.add_argument("--org", required=True, help="the org whose budget is reset")
    reset.add_argument("--reason", required=True, help="why (kept with the reset)")
    reset.set_defaults(handler=do_exposure_reset)


def _print_suite(ctx: Context, view: dict[str, Any]) -> None:
    show(ctx, SUITE_FIELDS, view)


def do_add(ctx: Context) -> int:
    result = ctx.store_client("suites add").add_suite(ctx.args.path, activate=ctx.args.activate)
    if ctx.out.json_mode:
        ctx.out.json(result)
        return 0
    view = result["suite"]
    word = "installed" if result["status"] == "installed" else "already installed, unchanged:"
    ctx.out.line(
        f"{word} {view['id']} v{view['version']}" + (" (active)" if view["active"] else "")
    )
    _print_suite(ctx, view)
    return 0


def do_activate(ctx: Context) -> int:
    view = ctx.store_client("suites activate").activate_suite(ctx.args.suite, ctx.args.version)
    if ctx.out.json_mode:
        ctx.out.json(view)
    else:
        ctx.out.line(f"{view['id']} v{view['version']} is active")
    return 0


def do_validate(ctx: Context) -> int:
    result = ctx.store_client("suites validate").validate_suite(ctx.args.suite)
    if ctx.out.json_mode:
        ctx.out.json(result)
        return 0
    ctx.out.line(f"{result['id']} v{result['version']} is valid")
    ctx.out.fields(
        [
            ("capability", result["capability"]),
            ("public cases", result["public"]["cases"]),
            ("holdout cases", result["holdout"]["cases"]),
            *[(k.replace("_", " "), v) for k, v in result["digests"].items()],
        ]
    )
    return 0


def _saved(ctx: Context, pulled: dict[str, Any]) -> dict[str, Any]:
    """The pulled files written to --output, a new folder: where, and which."""
    target: Path = ctx.args.output
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} exists and is not a folder; pull into a new folder")
    if target.exists() and any(target.iterdir()):
        raise UsageError(f"{target} exists and is not empty; pull into a new folder")
    written = _write_folder(target, pulled["files"])
    return {"id": pulled["id"], "version": pulled["version"], "path": str(target), "files": written}


SAVED = Local(
    add=lambda p: p.add_argument(
        "-o", "--output", type=Path, required=True, metavar="DIR", help="a new folder to write"
    ),
    then=_saved,
)


def _write_folder(target: Path, files: dict[str, str]) -> list[str]:
    """Write `files` (relative path -> text) as the folder `target`, whole or not at all.

    They go to a staging folder beside it, renamed into place once all are
    written, so a full disk leaves no half suite behind.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name[:40]}.tmp-", dir=target.parent))
    except OSError as exc:
        raise write_error(exc, target) from None
    try:
        written = []
        for relative, text in sorted(files.items()):
            destination = (staging / relative).resolve()
            if not destination.is_relative_to(staging.resolve()):
                raise InputError(f"refusing to write outside {target}", location=Location(relative))
            write_file(destination, text.encode("utf-8"), make_parents=True)
            written.append(relative)
        try:
            os.rename(staging, target)  # onto nothing, or onto an empty folder
        except OSError as exc:
            raise write_error(exc, target) from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return written


def do_trust(ctx: Context) -> int:
    from evals.suites import TrustStore, extension_files, suite_file
    from schema import load_document

    file = suite_file(ctx.args.path)
    files = extension_files(file.parent, load_document(file))
    TrustStore(ctx.settings.home).trust(files)
    result = {
        "suite": str(file.parent),
        "trusted": [
            {"kind": f.kind, "name": f.name, "file": f.relative, "sha256": f.sha256} for f in files
        ],
    }
    if ctx.out.json_mode:
        ctx.out.json(result)
    elif not files:
        ctx.out.line(f"{file.parent} has no extensions: nothing to trust")
    else:
        ctx.out.table(
            ["kind", "name", "file", "sha256"],
            [(f.kind, f.name, f.relative, f.sha256) for f in files],
        )
        ctx.out.line(f"trusted {len(files)} file(s); a change to any of them needs trust again")
    return 0


def do_exposure(ctx: Context) -> int:
    view = ctx.store_client("suites exposure").exposure(ctx.args.suite, ctx.args.org)
    if ctx.out.json_mode:
        ctx.out.json(view)
        return 0
    ctx.out.line(f"{view['suite']}: {view['limit']} holdout-revealing evals per org per set")
    ctx.out.table(
        ["org", "instance set", "spent", "revealed", "updated"],
        [(e["org"], e["label"], e["spent"], e["revealed"], e["updated_at"]) for e in view["items"]],
    )
    for r in view["resets"]:
        ctx.out.line(
            f"reset {r['id']}: {r['org']} from {r['spent_before']} by {r['reset_by']} "
            f"at {r['at']}: {r['reason']}"
        )
    return 0


def do_exposure_reset(ctx: Context) -> int:
    from gateway.client import login_name

    client = ctx.store_client("suites exposure-reset")
    result = client.reset_exposure(
        ctx.args.suite, ctx.args.org, reason=ctx.args.reason, by=f"cli:{login_name()}"
    )
    if ctx.out.json_mode:
        ctx.out.json(result)
    else:
        ctx.out.line(
            f"{result['org']}'s holdout budget on {result['suite']} is reset "
            f"({len(result['resets'])} instance set(s))"
        )
    return 0


def do_rotate(ctx: Context) -> int:
    result = ctx.store_client("suites rotate-holdout").rotate_holdout(ctx.args.suite)
    if ctx.out.json_mode:
        ctx.out.json(result)
    else:
        ctx.out.line(f"{result['suite']} v{result['version']}: a new holdout epoch begins")
    return 0
