"""`holon suites add|activate|list|show|validate|pull|rotate-holdout|exposure|exposure-reset`."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from gateway.cli._app import command_group, common_options, gateway_options
from gateway.cli._context import Context
from gateway.cli._operations import Local, command
from gateway.operations import (
    SUITES_ACTIVATE,
    SUITES_ADD,
    SUITES_EXPOSURE,
    SUITES_EXPOSURE_RESET,
    SUITES_FILES,
    SUITES_LIST,
    SUITES_ROTATE_HOLDOUT,
    SUITES_SHOW,
)
from schema import write_error, write_file
from schema.errors import InputError, Location, UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = command_group(sub, "suites", "install and inspect suites")
    store_only = [common_options()]
    both = [common_options(), gateway_options()]

    command(group, "add", SUITES_ADD, parents=store_only)
    command(group, "activate", SUITES_ACTIVATE, parents=store_only)

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
        description="Record the sha256 of each extension file (custom graders, generators and "
        "case loaders) of the suite at PATH as trusted, in HOLON_HOME. A file that changes is "
        "untrusted again. Read the files first: they run with your rights.",
    )
    trust.add_argument("path", metavar="PATH", type=Path, help="a suite directory")
    trust.set_defaults(handler=do_trust)

    command(group, "rotate-holdout", SUITES_ROTATE_HOLDOUT, parents=store_only)
    command(group, "exposure", SUITES_EXPOSURE, parents=store_only)
    command(group, "exposure-reset", SUITES_EXPOSURE_RESET, parents=store_only)


def do_validate(ctx: Context) -> int:
    result = ctx.store_service("suites validate").validate_suite(ctx.args.suite)
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
