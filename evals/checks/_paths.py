"""RFC 9535 JSONPath over holon's JSON values, with normalized paths and the `pdf` view.

Parsing and evaluation are `jsonpath_rfc9535`'s (it passes the whole
compliance suite), with four changes made through its extension points:

- numbers in filters are exact: literals are `int`/`Decimal` and
  comparisons accept `Decimal` (holon's JSON numbers), with `true != 1`;
- `match()` and `search()` run on RE2, not a backtracking engine;
- every filter evaluation is counted against a deterministic budget;
- a `.pdf` child segment on a PDF node (`{"media_type": "application/pdf",
  "data_base64": …}`) steps into its derived view (page_count, text, pages,
  metadata, fields), parsed by the caller's `PdfSource`.

A path is singular by syntax (only name and index selectors); a singular path
is evaluated by plain dict/list indexing, without the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from jsonpath_rfc9535 import JSONPathEnvironment, JSONPathError, JSONPathQuery
from jsonpath_rfc9535.exceptions import JSONPathRecursionError
from jsonpath_rfc9535.filter_expressions import (
    NOTHING,
    ComparisonExpression,
    Expression,
    FilterContext,
    FloatLiteral,
    IntegerLiteral,
    RelativeFilterQuery,
    RootFilterQuery,
)
from jsonpath_rfc9535.function_extensions import ExpressionType, FilterFunction
from jsonpath_rfc9535.node import JSONPathNode, JSONPathNodeList
from jsonpath_rfc9535.parse import Parser
from jsonpath_rfc9535.segments import JSONPathChildSegment
from jsonpath_rfc9535.selectors import (
    FilterSelector,
    IndexSelector,
    NameSelector,
    SliceSelector,
    WildcardSelector,
)
from jsonpath_rfc9535.serialize import canonical_string
from jsonpath_rfc9535.tokens import TokenStream

from evals.checks._limits import (
    CURRENT_METER,
    MAX_NODES,
    MAX_STRING_CHARS,
    LimitExceeded,
    Meter,
)
from evals.checks._regex import Regex, iregexp
from evals.checks._values import MISSING, is_number, json_equal

NodePath = tuple[str | int, ...]


class PathSyntaxError(ValueError):
    """A query the grammar refuses; `index` is where in the query the fault is."""

    def __init__(self, reason: str, query: str, index: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.query = query
        self.index = index


class PdfSource(Protocol):
    """Turns a PDF node into its derived view (or raises `PdfUnreadable`)."""

    def view(self, node: dict[str, Any], location: NodePath) -> Any: ...


class PdfUnreadable(Exception):
    """A PDF node whose view could not be made; the check fails with this message."""


def normalized_path(location: Iterable[str | int]) -> str:
    """The RFC 9535 normalized path: `$['items'][3]['sku']`."""
    return "$" + "".join(
        f"[{canonical_string(part)}]" if isinstance(part, str) else f"[{part}]" for part in location
    )


class Node:
    """One matched node: its value and its location (the parts of its normalized path)."""

    __slots__ = ("location", "value")

    def __init__(self, location: NodePath, value: Any) -> None:
        self.location = location
        self.value = value

    @property
    def path(self) -> str:
        return normalized_path(self.location)

    def __repr__(self) -> str:
        return f"Node({self.path!r}, {self.value!r})"


def is_pdf_node(value: Any) -> bool:
    """A PDF as the DSL addresses it; a node with its own `pdf` key keeps it."""
    return (
        type(value) is dict
        and value.get("media_type") == "application/pdf"
        and isinstance(value.get("data_base64"), str)
        and "pdf" not in value
    )


# --- the engine, adapted ---------------------------------------------------


def _is_empty(value: object) -> bool:
    return value is NOTHING or (isinstance(value, JSONPathNodeList) and not value)


def _equal(left: object, right: object) -> bool:
    if _is_empty(left) or _is_empty(right):
        return _is_empty(left) and _is_empty(right)
    if isinstance(left, JSONPathNodeList) or isinstance(right, JSONPathNodeList):
        return False
    return json_equal(left, right)


def _less(left: object, right: object) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left < right
    if is_number(left) and is_number(right):
        return bool(left < right)  # type: ignore[operator]
    return False


def _compare(left: object, operator: str, right: object) -> bool:
    if operator == "==":
        return _equal(left, right)
    if operator == "!=":
        return not _equal(left, right)
    if operator == "<":
        return _less(left, right)
    if operator == ">":
        return _less(right, left)
    if operator == "<=":
        return _less(left, right) or _equal(left, right)
    if operator == ">=":
        return _less(right, left) or _equal(left, right)
    return False


class _ExactComparison(ComparisonExpression):
    """RFC 9535 comparison over int/Decimal numbers, deep JSON equality for the rest."""

    __slots__ = ()

    def evaluate(self, context: FilterContext) -> bool:
        left = self.left.evaluate(context)
        if isinstance(left, JSONPathNodeList) and len(left) == 1:
            left = left[0].value
        right = self.right.evaluate(context)
        if isinstance(right, JSONPathNodeList) and len(right) == 1:
            right = right[0].value
        return _compare(left, self.operator, right)


class _MeteredNode(JSONPathNode):
    """A node whose children count against the case's `Meter`: every node the engine makes."""

    __slots__ = ()

    def new_child(self, value: object, key: int | str, parent: JSONPathNode | None) -> JSONPathNode:
        meter = CURRENT_METER.get()
        if meter is not None:
            meter.step()
        return _MeteredNode(
            value=value, location=(*self.location, key), parent=parent, root=self.root
        )


class _MeteredQuery(JSONPathQuery):
    """A query whose nodes are `_MeteredNode`s (filter subqueries included)."""

    __slots__ = ()

    def finditer(self, value: Any) -> Iterable[JSONPathNode]:
        nodes: Iterable[JSONPathNode] = [
            _MeteredNode(value=value, location=(), parent=None, root=value)
        ]
        for segment in self.segments:
            nodes = segment.resolve(nodes)
        return nodes


class _MeteredFilter(FilterSelector):
    """A filter selector that counts each evaluation against the case's `Meter`."""

    __slots__ = ()

    def resolve(self, node: JSONPathNode) -> Iterable[JSONPathNode]:
        meter = CURRENT_METER.get()
        value = node.value
        if meter is not None and isinstance(value, dict | list):
            meter.step(len(value))
        return super().resolve(node)


def _number_literal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        return Decimal("NaN")


def _exact_literal(stream: TokenStream) -> Expression:
    """A number literal as int (integral, of sane size) or Decimal, never a float."""
    number = _number_literal(stream.current.value)
    if number.is_finite() and number.adjusted() < 400 and number == number.to_integral_value():
        return IntegerLiteral(stream.current, value=int(number))
    return FloatLiteral(stream.current, value=number)  # type: ignore[arg-type]


class _Parser(Parser):
    def parse_integer_literal(self, stream: TokenStream) -> Expression:
        super().parse_integer_literal(stream)  # keeps the grammar's checks
        return _exact_literal(stream)

    def parse_float_literal(self, stream: TokenStream) -> Expression:
        super().parse_float_literal(stream)
        return _exact_literal(stream)

    def parse_infix_expression(self, stream: TokenStream, left: Expression) -> Expression:
        expression = super().parse_infix_expression(stream, left)
        if type(expression) is ComparisonExpression:
            return _ExactComparison(
                expression.token, expression.left, expression.operator, expression.right
            )
        return expression

    def parse_root_query(self, stream: TokenStream) -> Expression:
        query = super().parse_root_query(stream)
        if isinstance(query, RootFilterQuery):
            query.query = _MeteredQuery(env=self.env, segments=query.query.segments)
        return query

    def parse_relative_query(self, stream: TokenStream) -> Expression:
        query = super().parse_relative_query(stream)
        if isinstance(query, RelativeFilterQuery):
            query.query = _MeteredQuery(env=self.env, segments=query.query.segments)
        return query

    def parse_filter_selector(self, stream: TokenStream) -> FilterSelector:
        selector = super().parse_filter_selector(stream)
        return _MeteredFilter(env=self.env, token=selector.token, expression=selector.expression)


def _regex_input(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    if len(value) > MAX_STRING_CHARS:
        raise LimitExceeded(
            f"a filter regex input of {len(value)} characters is over the "
            f"{MAX_STRING_CHARS}-character limit"
        )
    return value


class _RegexFunction(FilterFunction):
    """RFC 9535's regex functions, on RE2: false unless the value is a string and the
    pattern an I-Regexp; `test` says how the two must meet."""

    arg_types = [ExpressionType.VALUE, ExpressionType.VALUE]
    return_type = ExpressionType.LOGICAL

    def __call__(self, string: object, pattern: object) -> bool:
        text = _regex_input(string)
        program = iregexp(pattern) if isinstance(pattern, str) else None
        return text is not None and program is not None and self.test(program, text)

    def test(self, program: Regex, text: str) -> bool:
        raise NotImplementedError


class _Match(_RegexFunction):
    """RFC 9535 `match()`: the whole string matches an I-Regexp."""

    def test(self, program: Regex, text: str) -> bool:
        return program.fullmatch(text)


class _Search(_RegexFunction):
    """RFC 9535 `search()`: some substring matches an I-Regexp."""

    def test(self, program: Regex, text: str) -> bool:
        return program.search(text)


class _Environment(JSONPathEnvironment):
    parser_class = _Parser
    max_recursion_depth = 256  # documents were depth-bounded by the executor's reader

    def compile(self, query: str) -> JSONPathQuery:
        compiled = super().compile(query)
        return _MeteredQuery(env=self, segments=compiled.segments)

    def setup_function_extensions(self) -> None:
        super().setup_function_extensions()
        self.function_extensions["match"] = _Match()
        self.function_extensions["search"] = _Search()


_ENVIRONMENT: _Environment | None = None


def _environment() -> _Environment:
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        _ENVIRONMENT = _Environment()
    return _ENVIRONMENT


# --- compiled paths ----------------------------------------------------------


def _literal_key(segment: Any) -> str | int | None:
    """The key of a child segment with one name or index selector, else None."""
    if not isinstance(segment, JSONPathChildSegment) or len(segment.selectors) != 1:
        return None
    selector = segment.selectors[0]
    if isinstance(selector, NameSelector):
        return selector.name
    if isinstance(selector, IndexSelector):
        return selector.index
    return None


_NAME, _INDEX, _WILD, _SLICE, _PDF = range(5)


def _simple_steps(segments: Sequence[Any]) -> tuple[tuple[tuple[int, Any], ...], ...] | None:
    """Child segments of name/index/wildcard/slice selectors as plain steps, else None.

    Those cover most non-singular paths (`$.output.items[*].sku`); they are
    walked with dict/list operations. Filters and descendants need the engine.
    """
    steps = []
    for segment in segments:
        if not isinstance(segment, JSONPathChildSegment):
            return None
        step: list[tuple[int, Any]] = []
        for selector in segment.selectors:
            if isinstance(selector, NameSelector):
                step.append((_NAME, selector.name))
            elif isinstance(selector, IndexSelector):
                step.append((_INDEX, selector.index))
            elif isinstance(selector, WildcardSelector):
                step.append((_WILD, None))
            elif isinstance(selector, SliceSelector):
                step.append((_SLICE, selector.slice))
            else:
                return None
        if step == [(_NAME, "pdf")]:
            step = [(_PDF, None)]
        steps.append(tuple(step))
    return tuple(steps)


def _walk(
    steps: Sequence[tuple[tuple[int, Any], ...]], root: Any, pdf: PdfSource | None
) -> tuple[list[NodePath], list[Any]]:
    """RFC 9535 semantics for simple child segments: each node, each selector, in order."""
    current: list[tuple[NodePath, Any]] = [((), root)]
    for step in steps:
        found: list[tuple[NodePath, Any]] = []
        add = found.append
        for location, value in current:
            is_dict = type(value) is dict
            is_list = type(value) is list
            for kind, arg in step:
                if kind == _NAME:
                    if is_dict and arg in value:
                        add(((*location, arg), value[arg]))
                elif kind == _WILD:
                    if (is_dict or is_list) and len(found) + len(value) > MAX_NODES:
                        raise LimitExceeded(f"path matches more than {MAX_NODES} nodes")
                    if is_dict:
                        for key, item in value.items():
                            add(((*location, key), item))
                    elif is_list:
                        for index, item in enumerate(value):
                            add(((*location, index), item))
                elif kind == _INDEX:
                    if is_list:
                        index = arg if arg >= 0 else len(value) + arg
                        if 0 <= index < len(value):
                            add(((*location, index), value[index]))
                elif kind == _SLICE:
                    if is_list and arg.step != 0:
                        indexes = range(*arg.indices(len(value)))
                        if len(found) + len(indexes) > MAX_NODES:
                            raise LimitExceeded(f"path matches more than {MAX_NODES} nodes")
                        for index in indexes:
                            add(((*location, index), value[index]))
                elif is_dict:  # _PDF: a `.pdf` step
                    if "pdf" in value:
                        add(((*location, "pdf"), value["pdf"]))
                    elif pdf is not None and is_pdf_node(value):
                        add(((*location, "pdf"), pdf.view(value, location)))
            if len(found) > MAX_NODES:
                raise LimitExceeded(f"path matches more than {MAX_NODES} nodes")
        current = found
    if not current:
        return [], []
    locations, values = zip(*current, strict=True)
    return list(locations), list(values)


class CompiledPath:
    """A parsed path: `singular` by syntax, evaluated by `get` (singular) or `nodes`."""

    __slots__ = (
        "_names_only",
        "_stages",
        "_steps",
        "keys",
        "reads_only",
        "singular",
        "text",
        "uses_pdf",
    )

    def __init__(self, text: str, query: JSONPathQuery) -> None:
        self.text = text
        # The one member of the graded document the path reads (`input`, `output`, ...),
        # or None when it may read more: no first name, or a filter whose query starts
        # at the root again (`$.output[?@.a == $.expected.a]`).
        first = _literal_key(query.segments[0]) if query.segments else None
        self.reads_only: str | None = (
            first if isinstance(first, str) and "$" not in text[1:] else None
        )
        self.singular: bool = query.singular_query()
        keys = [_literal_key(segment) for segment in query.segments]
        self.keys: tuple[str | int, ...] = (
            tuple(k for k in keys if k is not None) if self.singular else ()
        )
        self.uses_pdf = "pdf" in keys
        self._names_only = not self.uses_pdf and all(isinstance(k, str) for k in self.keys)
        # Non-singular paths run on the engine, in stages split at each `.pdf` segment.
        stages: list[list[Any]] = [[]]
        for segment, key in zip(query.segments, keys, strict=True):
            if key == "pdf":
                stages.append([])
            else:
                stages[-1].append(segment)
        env = query.env
        self._stages = tuple(_MeteredQuery(env=env, segments=tuple(s)) for s in stages)
        self._steps = _simple_steps(query.segments)

    def __repr__(self) -> str:
        return f"CompiledPath({self.text!r})"

    def get(self, root: Any, pdf: PdfSource | None) -> Any:
        """The value at a singular path, or MISSING."""
        value = root
        if self._names_only:
            # Only object member names: indexing anything but a dict (list, str, number,
            # null) with a str raises TypeError, a missing member KeyError.
            try:
                for key in self.keys:
                    value = value[key]
            except (KeyError, TypeError):
                return MISSING
            return value
        for index, key in enumerate(self.keys):
            if isinstance(key, str):
                if type(value) is not dict:
                    return MISSING
                child = value.get(key, MISSING)
                if child is MISSING and key == "pdf" and pdf is not None and is_pdf_node(value):
                    child = pdf.view(value, self.locate(root, index) or ())
                value = child
                if value is MISSING:
                    return MISSING
            else:
                if type(value) is not list:
                    return MISSING
                try:
                    value = value[key]
                except IndexError:
                    return MISSING
        return value

    def locate(self, root: Any, upto: int | None = None) -> NodePath | None:
        """The normalized location a singular path reaches (negative indexes resolved)."""
        keys = self.keys if upto is None else self.keys[:upto]
        out: list[str | int] = []
        value = root
        for key in keys:
            if isinstance(key, int):
                if type(value) is list and -len(value) <= key < len(value):
                    key = key if key >= 0 else len(value) + key
                    value = value[key]
                elif key < 0:
                    return None  # past a `.pdf` step the values are not at hand
                else:
                    value = None
            else:
                value = value.get(key) if type(value) is dict else None
            out.append(key)
        return tuple(out)

    def nodes(self, root: Any, pdf: PdfSource | None) -> list[Node]:
        """Every node the path matches, in document order, capped at MAX_NODES."""
        locations, values = self.select(root, pdf)
        return [Node(location, value) for location, value in zip(locations, values, strict=True)]

    def select(self, root: Any, pdf: PdfSource | None) -> tuple[list[NodePath], list[Any]]:
        """`nodes`, as the list of their locations and the list of their values."""
        if self._steps is not None:
            return _walk(self._steps, root, pdf)
        meter = CURRENT_METER.get()
        if meter is not None:
            meter.steps = 0
        current = [Node((), root)]
        for number, stage in enumerate(self._stages):
            if number:
                current = _step_into_pdf(current, pdf)
            if stage.segments:
                current = _run_stage(stage, current)
        return [node.location for node in current], [node.value for node in current]


def _step_into_pdf(nodes: Sequence[Node], pdf: PdfSource | None) -> list[Node]:
    out = []
    for node in nodes:
        value = node.value
        if type(value) is not dict:
            continue
        if "pdf" in value:
            out.append(Node((*node.location, "pdf"), value["pdf"]))
        elif pdf is not None and is_pdf_node(value):
            out.append(Node((*node.location, "pdf"), pdf.view(value, node.location)))
    return out


def _run_stage(stage: JSONPathQuery, nodes: Sequence[Node]) -> list[Node]:
    out: list[Node] = []
    meter = CURRENT_METER.get()
    try:
        for node in nodes:
            base = node.location
            for found in stage.finditer(node.value):
                out.append(Node(base + found.location, found.value))
                if len(out) > MAX_NODES:
                    raise LimitExceeded(f"path matches more than {MAX_NODES} nodes")
                if meter is not None and not len(out) % 4096:
                    meter.check_clock()
    except JSONPathRecursionError:
        raise LimitExceeded(
            f"path descends more than {_Environment.max_recursion_depth} levels"
        ) from None
    return out


def parse_path(text: str) -> CompiledPath:
    """Parse a JSONPath query, or raise PathSyntaxError with the fault's index."""
    if not isinstance(text, str):
        raise PathSyntaxError("a path is a string", "", 0)
    try:
        query = _environment().compile(text)
    except JSONPathError as exc:
        token = exc.token
        reason = str(exc.args[0]) if exc.args else type(exc).__name__
        raise PathSyntaxError(reason, text, token.index if token is not None else 0) from None
    except (ValueError, OverflowError, RecursionError) as exc:
        raise PathSyntaxError(str(exc) or type(exc).__name__, text, 0) from None
    return CompiledPath(text, query)


def caret_lines(text: str, index: int) -> str:
    """`text` on one line and a caret under character `index`, both indented."""
    flat = "".join(" " if ch in "\t\r\n" else ch for ch in text)
    index = max(0, min(index, len(flat)))
    return f"\n    {flat}\n    {' ' * index}^"


def evaluate(path: CompiledPath, root: Any, pdf: PdfSource | None = None) -> list[Node]:
    """All nodes of `path` in `root`; a singular path gives zero or one node."""
    if path.singular and not path.uses_pdf:  # past `.pdf`, only a walk knows the real indexes
        value = path.get(root, pdf)
        if value is MISSING:
            return []
        return [Node(path.locate(root) or (), value)]
    meter_token = None
    if CURRENT_METER.get() is None:
        meter_token = CURRENT_METER.set(Meter(3600.0))
    try:
        return path.nodes(root, pdf)
    finally:
        if meter_token is not None:
            CURRENT_METER.reset(meter_token)
