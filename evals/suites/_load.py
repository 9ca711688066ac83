"""Loading a suite directory strictly: a suite that loads is fully valid.

Every fault names file:line:col and what was expected: the suite document
against `schema/suite.schema.json`, its schemas (self-contained in the
directory), its fixtures (generator and params), every check (compiled
here, once), every case line, and every fixture reference.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from jsonschema.exceptions import SchemaError

from evals.checks import CompiledCheck, check_validator_class, compile_checks
from evals.fixtures import find_references, fixture_specs
from evals.suites._cases import MAX_CASE_FILE_BYTES, MAX_CASES, read_cases
from evals.suites._extensions import ExtensionFile, Trusted, digests, load_extensions
from evals.suites._loaders import pinned_file, relocate, run_loader
from evals.suites._model import (
    DEFAULT_HOLDOUT_EVALS_PER_EPOCH,
    DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET,
    DEFAULT_OVERFIT_DELTA,
    DEFAULT_ROTATE_AFTER_DAYS,
    DEFAULT_ROTATE_MIN_HOURS,
    Case,
    HoldoutGenerator,
    HoldoutPool,
    Rotation,
    Suite,
    SuiteLimits,
)
from schema import load_document, make_validator, validate_document, validator, validator_class
from schema.documents import Document, PathKey, read_text
from schema.errors import InputError, Location, SuiteError

SUITE_FILE = "suite.yaml"

# Every case is graded against the output schema first (docs/suites.md, "Cases": "the
# output schema check included"); its name is reserved.
OUTPUT_SCHEMA_CHECK = "output schema"


def suite_file(path: str | Path) -> Path:
    """`path` is a suite directory or its suite.yaml."""
    p = Path(path)
    if p.is_dir():
        p = p / SUITE_FILE
    if not p.is_file():
        raise SuiteError(
            "not a suite: expected a directory with a suite.yaml, or a suite.yaml",
            location=Location(str(path)),
        )
    return p


def _inside(directory: Path, relative: str, document: Document, at: PathKey) -> Path:
    target = (directory / relative).resolve()  # symlinks followed: where it really leads
    if not target.is_relative_to(directory.resolve()):
        raise document.error(
            f"{relative!r} leads outside the suite directory (suites are self-contained)",
            at,
            cls=SuiteError,
        )
    if target.exists() and not target.is_file():
        # A folder, a named pipe or a device: reading it would fail or never end.
        raise document.error(f"{relative!r} is not a regular file", at, cls=SuiteError)
    return target


def _object_document(path: Path, what: str) -> Document:
    """A file of the suite that must hold an object; anything else is a SuiteError there."""
    try:
        document = load_document(path)
    except InputError as exc:
        raise SuiteError(exc.message, location=exc.location) from None
    if not isinstance(document.value, dict):
        raise document.error(f"{what} is an object", cls=SuiteError)
    return document


def _read_schema(directory: Path, document: Document, at: PathKey) -> tuple[str, dict[str, Any]]:
    relative: str = document.value[at[0]]["$ref"]
    path = _inside(directory, relative, document, (*at, "$ref"))
    loaded = _object_document(path, "a JSON Schema")
    _local_refs_only(loaded, loaded.value, ())
    try:
        validator_class().check_schema(loaded.value)
    except SchemaError as exc:
        raise loaded.error(
            f"not a valid JSON Schema: {exc.message}", tuple(exc.absolute_path), cls=SuiteError
        ) from None
    return relative, loaded.value


def _local_refs_only(document: Document, node: Any, at: PathKey) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            raise document.error(
                f"only local references (#/…) are allowed in a suite's schemas, found {ref!r}",
                (*at, "$ref"),
                cls=SuiteError,
            )
        for key, value in node.items():
            _local_refs_only(document, value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _local_refs_only(document, value, (*at, index))


def _seeded(node: Any) -> Any:
    """A generated-holdout template with a stand-in seed, to validate its references."""
    if isinstance(node, dict):
        if "$fixture" in node or "$truth" in node:
            return {**node, "seed": node.get("seed", 0)}
        return {k: _seeded(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_seeded(v) for v in node]
    return node


def _template_has_seed(node: Any) -> bool:
    if isinstance(node, dict):
        if ("$fixture" in node or "$truth" in node) and "seed" in node:
            return True
        return any(_template_has_seed(v) for v in node.values())
    if isinstance(node, list):
        return any(_template_has_seed(v) for v in node)
    return False


def load_suite(path: str | Path, *, trusted: Trusted | None = None, pinned: bool = False) -> Suite:
    """Load and fully validate a suite directory; raises SuiteError (exit 2) with its location.

    `trusted` says whether an extension file's sha256 is trusted; a suite with
    extensions does not load without it. `pinned` (an installed copy) reads the
    cases its loaders gave at install instead of running them (`_loaders`).
    """
    file = suite_file(path)
    directory = file.parent
    document = _object_document(file, "a suite document")
    validate_document(document, validator("suite"), cls=SuiteError, what="suite")
    data: dict[str, Any] = document.value
    graders: dict[str, Any] = {}
    loaders: dict[str, tuple[ExtensionFile, Any]] = {}
    extension_digests: dict[str, str] = {}
    if "extensions" in data:
        # Trusted Python (custom graders, generators and loaders): imported only
        # when every file's digest is trusted; generators register before
        # fixtures are validated, graders before checks compile.
        imported = load_extensions(directory, document, trusted)
        graders, loaders = imported.graders, imported.loaders
        extension_digests = dict(digests(imported.files))

    schema_files: dict[str, Any] = {}
    input_ref, input_schema = _read_schema(directory, document, ("input_schema",))
    output_ref, output_schema = _read_schema(directory, document, ("output_schema",))
    schema_files[input_ref] = input_schema
    schema_files[output_ref] = output_schema

    fixtures = fixture_specs(data.get("fixtures"), document=document)

    def check_reference(node: Any, at: PathKey, where: Location) -> None:
        find_references(node, fixtures, path=at, where=where)

    definitions = list(data.get("checks", []))
    for index, item in enumerate(definitions):
        if isinstance(item, dict) and item.get("name") == OUTPUT_SCHEMA_CHECK:
            raise document.error(
                f"the check name {OUTPUT_SCHEMA_CHECK!r} is reserved for the implicit output "
                "schema check",
                ("checks", index, "name"),
                cls=SuiteError,
            )
    schema_check = compile_checks(
        [{"name": OUTPUT_SCHEMA_CHECK, "path": "$.output", "schema": {"$ref": output_ref}}],
        base_dir=directory,
    )
    defaults: tuple[CompiledCheck, ...] = (
        *schema_check,
        *compile_checks(
            definitions,
            document=document,
            base_path=("checks",),
            base_dir=directory,
            extensions=graders,
        ),
    )
    input_validator = make_validator(input_schema)
    # An expected answer the output schema refuses is a case no agent could pass
    # honestly: refused at load, located, unless the suite says `expected` is facts.
    expected_validator = (
        check_validator_class(output_schema)(output_schema)
        if data.get("expected_kind", "output") == "output"
        else None
    )

    def cases(split: str, relative: str, at: PathKey, text: str | None = None) -> tuple[Case, ...]:
        return read_cases(
            _inside(directory, relative, document, at),
            relative=relative,
            split="public" if split == "public" else "holdout",
            default_checks=defaults,
            base_dir=directory,
            check_reference=check_reference,
            input_validator=input_validator,
            expected_validator=expected_validator,
            extensions=graders,
            text=text,
        )

    loaded: dict[str, str] = {}  # split -> the JSONL text of its loader's cases
    used: dict[str, dict[str, str]] = {}  # split -> the loader's name and sha256

    def split_cases(split: str) -> tuple[Case, ...]:
        spec = data[split]
        if "file" in spec:
            return cases(split, spec["file"], (split, "file"))
        name: str = spec["loader"]
        at: PathKey = (split, "loader")
        if name not in loaders:
            raise document.error(
                f"no loader named {name!r} under extensions.loaders", at, cls=SuiteError
            )
        file, load = loaders[name]
        if any(u["file"] == file.relative for u in used.values()):
            # A pulled public suite keeps the public loader's source: a loader of
            # both splits would show authors how the holdout is made.
            raise document.error(
                f"loader {name!r} ({file.relative}) loads the public split already; "
                "the holdout needs a file of its own",
                at,
                cls=SuiteError,
            )
        used[split] = {"name": name, "file": file.relative, "sha256": file.sha256}
        if pinned:
            relative = pinned_file(split)
            text = read_text(
                _inside(directory, relative, document, at),
                max_bytes=MAX_CASE_FILE_BYTES,
                expected="a JSONL file",
                cls=SuiteError,
            )
            loaded[split] = text
            return cases(split, relative, at, text)
        loaded[split] = run_loader(
            load,
            name=name,
            relative=file.relative,
            document=document,
            at=at,
            max_cases=MAX_CASES,
            max_chars=MAX_CASE_FILE_BYTES,
        )
        try:
            return cases(split, file.relative, at, loaded[split])
        except SuiteError as exc:
            raise relocate(exc, name, file.relative) from None

    public = split_cases("public")
    holdout_file: tuple[Case, ...] | None = None
    holdout_generator: HoldoutGenerator | None = None
    holdout_pool: HoldoutPool | None = None
    holdout = data.get("holdout")
    if holdout is not None and "generate" not in holdout:
        # A loader's holdout is stored at install: a stored holdout like a file's.
        holdout_file = split_cases("holdout")
        _disjoint(public, holdout_file, document)
        if "pool" in holdout:
            holdout_pool = _pool(holdout["pool"], len(holdout_file), document)
    elif holdout is not None:
        spec = holdout["generate"]
        template = spec["case"]
        at: PathKey = ("holdout", "generate", "case")
        for key in ("input", "expected"):
            if _template_has_seed(template[key]):
                raise document.error(
                    "a generated holdout draws its seeds from the store's secret: "
                    "its references take no seed",
                    (*at, key),
                    cls=SuiteError,
                )
            find_references(_seeded(template[key]), fixtures, document=document, path=(*at, key))
        own = compile_checks(
            template.get("checks", []),
            document=document,
            base_path=(*at, "checks"),
            base_dir=directory,
            extensions=graders,
        )
        checks = (*defaults, *own)
        if not checks:
            raise document.error("generated holdout cases would have no checks", at, cls=SuiteError)
        holdout_generator = HoldoutGenerator(
            count=spec["count"],
            rotation=_rotation(spec),
            template=template,
            checks=checks,
        )

    limits = data["limits"]
    return Suite(
        id=data["id"],
        version=data["version"],
        capability=data["capability"],
        title=data["title"],
        directory=directory,
        document=data,
        input_schema=input_schema,
        output_schema=output_schema,
        limits=SuiteLimits(
            Decimal(limits["max_cost_usd"]),
            Decimal(limits["timeout_s"]),
            limits.get("holdout_evals_per_epoch", DEFAULT_HOLDOUT_EVALS_PER_EPOCH),
            limits.get("holdout_evals_per_instance_set", DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET),
        ),
        repetitions=data.get("repetitions", 1),
        threshold=Decimal(data["threshold"]),
        grace_days=data.get("grace_days", 14),
        overfit_delta=Decimal(data["overfit"]["delta"])
        if "overfit" in data
        else DEFAULT_OVERFIT_DELTA,
        checks=defaults,
        check_definitions=tuple(definitions),
        fixtures=fixtures,
        public=public,
        holdout_file=holdout_file,
        holdout_generator=holdout_generator,
        schema_files=schema_files,
        extensions=extension_digests,
        loaders=used,
        loaded=loaded,
        holdout_pool=holdout_pool,
    )


def _rotation(spec: dict[str, Any]) -> Rotation:
    """The rotation settings of a `generate` or `pool` block: the same keys in both."""
    return Rotation(
        rotate_after_evals=spec.get("rotate_after_evals"),
        rotate_after_days=spec.get("rotate_after_days", DEFAULT_ROTATE_AFTER_DAYS),
        rotate_min_hours=spec.get("rotate_min_hours", DEFAULT_ROTATE_MIN_HOURS),
    )


def _pool(spec: dict[str, Any], cases: int, document: Document) -> HoldoutPool:
    """A stored holdout's `pool`: at least one whole subset of `subset` cases (the schema
    holds `subset` to a holdout's least and most cases, as a generated holdout's `count`)."""
    if spec["subset"] > cases:
        raise document.error(
            f"a pool of {cases} holdout cases holds no subset of {spec['subset']}: expected "
            f"a subset of at most {cases} cases, or a larger holdout",
            ("holdout", "pool", "subset"),
            cls=SuiteError,
        )
    return HoldoutPool(subset=spec["subset"], cases=cases, rotation=_rotation(spec))


def _disjoint(public: tuple[Case, ...], holdout: tuple[Case, ...], document: Document) -> None:
    ids = {c.id for c in public}
    for case in holdout:
        if case.id in ids:
            raise SuiteError(
                f"case id {case.id!r} is in both the public and the holdout split",
                location=case.source,
            )
    del document
