"""Agent configs (YAML): which tools, which prompts, which limits and sampling settings.

A config is the unit a team compares ("our scaffold vs. theirs"), so everything that shapes the
agent's behaviour lives here and is recorded, with hashes, in the run's manifest.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

import yaml
from jinja2 import Environment, StrictUndefined, TemplateError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import UserError
from ..models.types import Settings
from .budget import AgentLimits
from .tools import SCHEMAS, tool_specs


class AgentConfigError(UserError):
    hint = "Start from harness/data/agents/default.yaml; unknown keys are rejected."


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "default"
    tools: list[str] = Field(default_factory=lambda: ["bash", "edit", "run_tests", "submit"])
    system_prompt: str
    instance_prompt: str
    limits: AgentLimits = Field(default_factory=AgentLimits)
    settings: Settings = Field(default_factory=Settings)
    output_chars: int = Field(12_000, gt=100, description="characters of one tool result shown to the model")

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, names: list[str]) -> list[str]:
        tool_specs(names)  # raises ValueError naming the unknown ones (pydantic reports it as this field's)
        return names

    def render(self, template: str, **values: object) -> str:
        try:
            return _jinja.from_string(template).render(**values).strip() + "\n"
        except TemplateError as exc:
            raise AgentConfigError(f"agent config {self.name!r}: prompt template error: {exc}") from exc

    def tool_schemas(self) -> list[dict]:
        return tool_specs(self.tools)

    def describe(self) -> dict:
        """For the manifest: the whole config, plus hashes of the prompts and tool schemas."""
        schemas = json.dumps(self.tool_schemas(), sort_keys=True)
        return {
            **self.model_dump(mode="json"),
            "tool_schema_sha256": hashlib.sha256(schemas.encode()).hexdigest(),
            "prompt_sha256": hashlib.sha256((self.system_prompt + "\0" + self.instance_prompt).encode()).hexdigest(),
        }


_jinja = Environment(undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)


def load_agent_config(path: str | Path | None = None, **overrides: object) -> AgentConfig:
    """The config at `path` (default: the shipped default.yaml), with settings overrides applied."""
    if path is None:
        text = resources.files("harness.data").joinpath("agents/default.yaml").read_text()
        where = "default.yaml"
    else:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise AgentConfigError(f"cannot read agent config {path}: {exc.strerror}") from exc
        where = str(path)
    try:
        data = yaml.safe_load(text) or {}
        if isinstance(data, dict) and data.get("kind", "tool") == "tool":
            data.pop("kind", None)  # the agent kind this config is for (harness.agents.AGENT_KINDS)
        settings = {**data.get("settings", {}), **{k: v for k, v in overrides.items() if v is not None}}
        data["settings"] = settings
        config = AgentConfig.model_validate(data)
    except yaml.YAMLError as exc:
        raise AgentConfigError(f"{where}: not valid YAML: {exc}") from exc
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise AgentConfigError(f"{where}: invalid agent config: {fields}") from None
    unknown = [t for t in config.tools if t not in SCHEMAS]
    if unknown:
        raise AgentConfigError(f"{where}: unknown tools {unknown}; available: {sorted(SCHEMAS)}")
    return config
