"""RunSpec: everything that defines a run, as one typed recipe with a YAML form on disk.

The command line builds one from its flags, `harness.run.start(spec)` takes one from Python, a Ray
node gets the driver's as it is, and a run folder's manifest stores it verbatim (`recipe`). What a
spec does not hold is decided per invocation (`--redo`, `--dry-run`, how the end is reported).

    suite:    {paths: [tasks/demo], include_quarantined: false, statement_quality: []}
    agent:    {name: default, model: anthropic/claude-sonnet-4-5, config_path: null,
               model_options: {base_url: null, stream: false}, settings: {temperature: 0.0}}
    settings: {workers: 4, repeats: 1, attempts: 1, feedback: none, infra_retries: 2, label: ""}
    limits:   {cpus: 2, memory: 4g}          # run-level overrides, above each task's
    executor: {kind: local}                  # or {kind: ray, address: HEAD:6379}
    history:  {enabled: true, url: null}     # prefer $WHOLELOOP_HISTORY_URL for a URL with a password
    out:      runs/my-run                    # null: runs/<time>-<label>
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..agents import AgentSpec
from ..errors import UserError
from ..grading.feedback import FeedbackMode
from ..redact import hide_url_passwords
from ..tasks import LimitsSpec

RUN_SPEC_SCHEMA = 1


class RunSpecError(UserError):
    """A run spec (a YAML file, or what a manifest stored) is not a valid recipe."""

    hint = "see harness/run/spec.py (docs/api.md) for the fields of a run spec"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SuiteSpec(_Strict):
    """Which tasks: spec files or folders of them, and which of them to keep."""

    paths: list[str] = Field(min_length=1)
    include_quarantined: bool = False  # also run tasks `tasks check` quarantined
    statement_quality: list[str] = Field(default_factory=list)  # only tasks of these statement classes


class SettingsSpec(_Strict):
    """How many units, tries and attempts, and how the run is named and dated."""

    workers: int = Field(1, ge=1, le=256)
    repeats: int = Field(1, ge=1, le=1000)
    attempts: int = Field(1, ge=1, le=20)
    feedback: FeedbackMode = "none"
    infra_retries: int = Field(2, ge=0, le=10)
    label: str = ""  # the configuration's name in reports (default: agent + model)
    training_cutoff: str | None = None  # the model's, for contamination dating
    allow_unknown_model: bool = False  # run a model the price map does not know (cost: unknown)


class ExecutorSpec(_Strict):
    """Where units run: threads here, or Ray tasks on a cluster."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = None  # ray: HEAD:PORT (default RAY_ADDRESS, or the cluster started here)
    max_in_flight: int | None = Field(None, ge=1)  # ray: units submitted at once (None: the cluster's CPUs bound it)


class HistorySpec(_Strict):
    """Whether the rows are indexed into a run history as they are written, and which one."""

    enabled: bool = True
    url: str | None = None  # default: $WHOLELOOP_HISTORY_URL, else history.sqlite beside the run folder


class RunSpec(_Strict):
    """Everything that defines a run."""

    schema_version: Literal[1] = 1  # RUN_SPEC_SCHEMA
    suite: SuiteSpec
    agent: AgentSpec
    settings: SettingsSpec = Field(default_factory=SettingsSpec)
    limits: LimitsSpec = Field(default_factory=LimitsSpec)
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    history: HistorySpec = Field(default_factory=HistorySpec)
    out: str | None = None  # the run folder; the same one again resumes

    def recipe(self) -> dict[str, Any]:
        """The spec as a manifest stores it: every field, a password in a URL hidden."""
        data = self.model_dump(mode="json")
        if data["history"]["url"]:
            data["history"]["url"] = hide_url_passwords(data["history"]["url"])
        if data["agent"]["model_options"].get("base_url"):
            data["agent"]["model_options"]["base_url"] = hide_url_passwords(data["agent"]["model_options"]["base_url"])
        return data

    @classmethod
    def of(cls, data: Any, where: str = "run spec") -> RunSpec:
        """A spec from its dict form; RunSpecError saying which field is wrong."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            raise RunSpecError(f"{where}: {at}: {first['msg']} ({len(exc.errors())} problem(s))") from None

    @classmethod
    def load(cls, path: Path | str) -> RunSpec:
        """A spec from its YAML file; RunSpecError when it is not valid."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise RunSpecError(f"{path}: not YAML: {exc}") from None
        return cls.of(data, str(path))

    def save(self, path: Path | str) -> None:
        """The YAML form (`RunSpec.load` reads it back to an equal spec)."""
        Path(path).write_text(yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False))


def agent_spec(
    name: str | None = None,
    *,
    model: str | None = None,
    config_path: str | Path | None = None,
    base_url: str | None = None,
    stream: bool = False,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> AgentSpec:
    """The agent part of a spec as the command line's flags give it: no name means the tool agent
    when a model or config is given, else the gold control; a replay model takes no API options."""
    name = name or ("default" if model or config_path else "gold")
    return AgentSpec(
        name=name,
        model=model,
        config_path=None if config_path is None else str(config_path),
        model_options={"base_url": base_url, "stream": stream} if model and not model.startswith("replay:") else {},
        settings={"temperature": temperature, "max_tokens": max_tokens},
    )
