"""A sweep file: a suite, a base recipe and a matrix over RunSpec fields; each cell IS a RunSpec.

    name: models-x-temperature          # default: the file's name
    question: Which model should review our PRs, and at what cost?   # the decision record's first line
    suite: {paths: [tasks/demo]}        # one suite for every cell (RunSpec.suite)
    base:                               # any RunSpec field but suite and out: every cell starts here
      agent: {name: default}
      settings: {repeats: 2}
    matrix:                             # a dotted RunSpec path -> its values: a list, or {name: value}
      agent.model: {sonnet: anthropic/claude-sonnet-4-5, haiku: anthropic/claude-haiku-4-5}
      agent.settings.temperature: [0.0, 0.7]
    exclude:                            # named: the plan says which cells each one took out
      - name: haiku-is-greedy-only
        where: {agent.model: haiku, agent.settings.temperature: 0.7}   # a value or its name
    overrides:                          # named: RunSpec fields set on the cells `where` matches
      - name: cli-on-two-tasks          # e.g. a costly agent on a subset of the suite's tasks
        where: {agent.name: ext}
        set: {suite.paths: [tasks/demo/inikit-001.yaml, tasks/demo/inikit-002.yaml]}
    budget: {max_cost: 20.0, per_cell: 5.0}   # USD; --max-cost / --cell-max-cost override
    prices:                             # USD per token, for models the price map does not know
      openai/my-finetune: {input_cost_per_token: 3.0e-6, output_cost_per_token: 1.2e-5}
    workers: 4                          # units at once, shared by every cell
    out: runs/sweeps/models-x-temperature   # the sweep's folder; the same one again resumes

A cell's name is its axes' value names (`model=sonnet,temperature=0.7`); unless the matrix sets
`settings.label`, it is the cell's configuration label in every row and report.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import UserError
from ..models.pricing import Price
from ..run.spec import RunSpec, RunSpecError, SuiteSpec

SWEEP_SCHEMA = 1


class SweepSpecError(UserError):
    """A sweep file that is not valid: a field, an axis, a cell or an exclusion."""

    hint = "see docs/sweeps.md for the sweep file's fields"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Exclusion(_Strict):
    """Cells to leave out: every cell whose axes all match `where` (by value or by value name)."""

    name: str = Field(min_length=1)
    where: dict[str, Any] = Field(min_length=1)


class Override(_Strict):
    """RunSpec fields (dotted paths -> values, as the matrix's) set on every cell whose axes all match
    `where`, after the axes: e.g. `suite.paths` to run one agent's cells on a subset of the suite's
    tasks (its spec files; the plan refuses a task outside the sweep's suite)."""

    name: str = Field(min_length=1)
    where: dict[str, Any] = Field(min_length=1)
    set: dict[str, Any] = Field(min_length=1)

    @field_validator("set")
    @classmethod
    def _settable(cls, value: dict[str, Any]) -> dict[str, Any]:
        for path in value:
            root = path.split(".")[0]
            if root in ("out", "schema_version") or root == "executor" or path.startswith("settings.workers"):
                raise ValueError(f"{path}: a sweep has one {root} for every cell; an override cannot set it")
            if path == "suite" or (root == "suite" and path != "suite.paths"):
                raise ValueError(f"{path}: an override narrows a cell's tasks by `suite.paths` only")
        return value


class Budget(_Strict):
    """USD: the whole sweep's, and each cell's (None: no limit)."""

    max_cost: float | None = Field(None, gt=0)
    per_cell: float | None = Field(None, gt=0)


class SweepSpec(_Strict):
    schema_version: int = SWEEP_SCHEMA
    name: str = ""
    question: str = ""  # what the sweep is to decide: the decision record's first line (`wholeloop decide`)
    suite: SuiteSpec
    base: dict[str, Any] = Field(default_factory=dict)
    matrix: dict[str, list[Any] | dict[str, Any]] = Field(default_factory=dict)
    exclude: list[Exclusion] = Field(default_factory=list)
    overrides: list[Override] = Field(default_factory=list)
    budget: Budget = Field(default_factory=Budget)
    prices: dict[str, Price] = Field(default_factory=dict)
    workers: int = Field(1, ge=1, le=256)
    out: str | None = None

    @field_validator("base")
    @classmethod
    def _base_has_no_suite_or_out(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in ("suite", "out"):
            if key in value:
                raise ValueError(f"base.{key}: a sweep has one {key} (give it at the top level)")
        return value

    @field_validator("matrix")
    @classmethod
    def _axes(cls, value: dict[str, list[Any] | dict[str, Any]]) -> dict[str, list[Any] | dict[str, Any]]:
        for path, values in value.items():
            root = path.split(".")[0]
            if root in ("suite", "out", "schema_version"):
                raise ValueError(f"matrix.{path}: a sweep has one {root}; it is not an axis")
            if root == "executor" or path.startswith("settings.workers"):
                raise ValueError(f"matrix.{path}: the cells share the sweep's workers (give `workers:`)")
            if not values:
                raise ValueError(f"matrix.{path}: an axis needs at least one value")
            if isinstance(values, list) and any(isinstance(v, (dict, list)) for v in values):
                raise ValueError(f"matrix.{path}: name non-scalar values ({{name: value}} instead of a list)")
        return value

    @classmethod
    def load(cls, path: Path | str) -> SweepSpec:
        """The sweep in a YAML file; SweepSpecError saying which field is wrong."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise SweepSpecError(f"{path}: not YAML: {exc}") from None
        except OSError as exc:
            raise SweepSpecError(f"{path}: {exc.strerror}", "give the path of a sweep file") from None
        if not isinstance(data, dict):
            raise SweepSpecError(f"{path}: a sweep file is a mapping (suite, base, matrix, ...)")
        try:
            sweep = cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            raise SweepSpecError(f"{path}: {at}: {first['msg']} ({len(exc.errors())} problem(s))") from None
        if not sweep.name:
            sweep.name = path.stem
        return sweep

    def cells(self) -> tuple[list[Cell], dict[str, list[str]]]:
        """Every cell of the matrix not excluded, in matrix order, each a validated RunSpec; and
        for each exclusion the cells it took out. SweepSpecError for a cell that is not a valid
        recipe, two cells with one name, or an exclusion that matches no cell (a misspelling)."""
        axes = [(path, _named(values)) for path, values in self.matrix.items()]
        excluded: dict[str, list[str]] = {e.name: [] for e in self.exclude}
        overridden: dict[str, list[str]] = {o.name: [] for o in self.overrides}
        cells: list[Cell] = []
        for combo in itertools.product(*(values for _, values in axes)) if axes else [()]:
            chosen = {path: pair for (path, _), pair in zip(axes, combo, strict=True)}
            name = ",".join(f"{path.split('.')[-1]}={value_name}" for path, (value_name, _) in chosen.items()) or "base"
            hit = next((e for e in self.exclude if _matches(e, chosen)), None)
            if hit is not None:
                excluded[hit.name].append(name)
                continue
            data = copy.deepcopy(self.base)
            data.setdefault("settings", {})
            labelled = "settings.label" in chosen or data["settings"].get("label")
            for path, (_, value) in chosen.items():
                _set(data, path.split("."), copy.deepcopy(value))
            if not labelled:
                data["settings"]["label"] = name
            data["settings"]["workers"] = self.workers
            data["suite"] = self.suite.model_dump(mode="json")
            applied = [o for o in self.overrides if _matches(o, chosen)]
            for override in applied:
                overridden[override.name].append(name)
                for path, value in override.set.items():
                    _set(data, path.split("."), copy.deepcopy(value))
            try:
                spec = RunSpec.of(data, f"cell {name}")
            except RunSpecError as exc:
                raise SweepSpecError(str(exc), "a matrix path names a RunSpec field: see docs/sweeps.md") from None
            cells.append(Cell(name, spec, {p: v for p, (v, _) in chosen.items()}, [o.name for o in applied]))
        for kind, named in (("exclusion", excluded), ("override", overridden)):
            for rule, names in named.items():
                if not names:
                    raise SweepSpecError(
                        f"{kind} {rule!r} matches no cell",
                        "its `where` names matrix paths and their values (or value names)",
                    )
        labels = [c.spec.settings.label for c in cells]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise SweepSpecError(f"several cells have the label {', '.join(twice)}", "give each cell its own label")
        return cells, excluded


@dataclass
class Cell:
    """One configuration of a sweep: its name, its recipe, and its value name on each axis."""

    name: str
    spec: RunSpec
    axes: dict[str, str]
    overrides: list[str] = field(default_factory=list)  # the overrides that set some of its fields

    @property
    def label(self) -> str:
        return self.spec.settings.label


def _named(values: list[Any] | dict[str, Any]) -> list[tuple[str, Any]]:
    if isinstance(values, dict):
        return [(str(name), value) for name, value in values.items()]
    return [(str(value), value) for value in values]


def _matches(exclusion: Exclusion | Override, chosen: dict[str, tuple[str, Any]]) -> bool:
    kind = "exclusion" if isinstance(exclusion, Exclusion) else "override"
    for path, wanted in exclusion.where.items():
        if path not in chosen:
            raise SweepSpecError(
                f"{kind} {exclusion.name!r}: {path} is not an axis of the matrix",
                f"the axes: {', '.join(chosen) or '(none)'}",
            )
        name, value = chosen[path]
        if wanted != value and str(wanted) != name:
            return False
    return True


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    """data[a][b][c] = value for path a.b.c; a mapping value is merged into a mapping there."""
    for key in path[:-1]:
        data = data.setdefault(key, {})
        if not isinstance(data, dict):
            raise SweepSpecError(f"matrix.{'.'.join(path)}: {key} is not a mapping in the base")
    last = path[-1]
    if isinstance(value, dict) and isinstance(data.get(last), dict):
        data[last] = {**data[last], **value}
    else:
        data[last] = value
