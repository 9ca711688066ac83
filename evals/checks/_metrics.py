"""What a check's metric means: its name, unit and which way is better (docs/checks.md, "Metrics").

Each metric is declared once, beside the predicate that emits it (`SIMILARITY` in
`_scoring`, `COUNT` in `_sizes` …), and the predicate emits it under that
declaration's name. `metric_table` gathers the declarations of the predicates it
is given, so reports and `evals compare` read one table: a report shows each
metric's unit and direction, and a comparison calls a change an improvement or a
regression by its direction. A metric with no direction (how many nodes a path
matched) is measured, never judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["DIRECTIONS", "Direction", "Metric", "declared_metrics", "metric_table"]

Direction = Literal["maximize", "minimize"]
DIRECTIONS: tuple[Direction, ...] = get_args(Direction)


@dataclass(frozen=True)
class Metric:
    """A metric a predicate emits. `unit` names what one of it is (`ratio`: a share in
    0..1, `count`, `ms`, `usd`, `characters` …); `direction` None: neither way is better."""

    name: str
    unit: str
    direction: Direction | None
    meaning: str

    def __post_init__(self) -> None:
        if self.direction is not None and self.direction not in DIRECTIONS:
            raise ValueError(f"metric {self.name}: direction is one of {DIRECTIONS} or None")

    @property
    def is_share(self) -> bool:
        """A share (0..1): an interval over its values is clipped to that range."""
        return self.unit == "ratio"

    def to_json(self) -> dict[str, str | None]:
        return {"direction": self.direction, "unit": self.unit}


def metric_table(*declared: Iterable[Metric]) -> Mapping[str, Metric]:
    """Every metric by name. One name means one thing: two predicates emitting a name
    share its declaration, and two different declarations of a name are an error."""
    table: dict[str, Metric] = {}
    for group in declared:
        for item in group:
            known = table.setdefault(item.name, item)
            if known != item:
                raise ValueError(f"metric {item.name} is declared twice, differently")
    return dict(sorted(table.items()))


def declared_metrics(root: type) -> Mapping[str, Metric]:
    """The table of every metric `root` and its subclasses declare (their `metrics`): a
    predicate added later is in it without being listed anywhere else."""
    found: list[Iterable[Metric]] = []
    pending = [root]
    while pending:
        cls = pending.pop()
        found.append(cls.__dict__.get("metrics", ()))
        pending.extend(cls.__subclasses__())
    return metric_table(*found)
