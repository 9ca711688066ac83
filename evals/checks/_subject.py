"""What a check body works on: the grading context, the subject of a path, operands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evals.checks._limits import Meter
from evals.checks._paths import CompiledPath, NodePath, PdfSource
from evals.checks._values import MISSING


@dataclass(slots=True, eq=False)
class Context:
    """One graded document: its root, the PDF views made for it, the case's meter."""

    root: Any
    pdf: PdfSource | None
    meter: Meter


@dataclass(slots=True, eq=False)
class Subject:
    """The value a body is applied to.

    Singular (a singular path, or one node under a quantifier): `value` is the
    node's value or MISSING. Non-singular: `locations` are where the matched
    nodes are and `value` is the list of their values.
    """

    singular: bool
    value: Any
    locations: list[NodePath] | None
    path: CompiledPath | None
    root: Any
    _location: NodePath | None = None

    @property
    def location(self) -> NodePath | str:
        """The normalized location of a singular subject (the path text for a non-singular one)."""
        if not self.singular and self.path is not None:
            return self.path.text
        if self._location is None and self.path is not None:
            self._location = self.path.locate(self.root)
        if self._location is None:
            return self.path.text if self.path is not None else "$"
        return self._location

    def item_locations(self) -> list[NodePath | str]:
        """Where each item of the subject's value is: its nodes, or `location[i]` for a list."""
        if self.locations is not None:
            return list(self.locations)
        base = self.location
        if isinstance(base, str) or not isinstance(self.value, list):
            return [base] * (len(self.value) if isinstance(self.value, list) else 0)
        return [(*base, index) for index in range(len(self.value))]

    @property
    def count(self) -> int:
        if self.locations is not None:
            return len(self.locations)
        return 0 if self.value is MISSING else 1


def subject_of(path: CompiledPath, context: Context) -> Subject:
    """Evaluate `path` on the context's document."""
    root = context.root
    if path.singular:
        return Subject(True, path.get(root, context.pdf), None, path, root)
    locations, values = path.select(root, context.pdf)
    return Subject(False, values, locations, path, root)


def node_subject(location: NodePath, value: Any, root: Any) -> Subject:
    """One matched node, as the subject of a quantifier's body."""
    return Subject(True, value, None, None, root, location)


class Operand:
    """A literal, or `{path: …}` into the same document; `prepare` is applied to either.

    A literal is prepared once, at compile time; a path's value each time it
    is read (MISSING when the path matches nothing).
    """

    __slots__ = ("literal", "path", "prepare")

    def __init__(
        self,
        literal: Any = MISSING,
        path: CompiledPath | None = None,
        prepare: Callable[[Any], Any] | None = None,
    ) -> None:
        self.path = path
        self.prepare = prepare
        self.literal = prepare(literal) if prepare is not None and path is None else literal

    def value(self, context: Context) -> Any:
        path = self.path
        if path is None:
            return self.literal
        if path.singular:
            found = path.get(context.root, context.pdf)
        else:
            found = path.select(context.root, context.pdf)[1]
        if found is MISSING or self.prepare is None:
            return found
        return self.prepare(found)

    @property
    def text(self) -> str:
        """How the operand reads in a detail: the path, for a path operand."""
        return self.path.text if self.path is not None else ""
