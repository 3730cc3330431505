"""External agent configs (YAML, `kind: external`): how to install a CLI, run it, meter it, read it.

docs/agents.md documents every key. Shipped configs live in harness/data/agents/external/ and are
named on the command line as `--agent external:NAME`; any other file is `--agent-config FILE`.
Unknown keys are errors (a typo must not silently become a default).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ...errors import UserError
from ..budget import AgentLimits
from .wire import WIRES

INSTALL_DIR = "/opt/wl-agent"  # where the install folder is mounted (read-only) in the container
TOOLS_DIR = "/opt/wl/bin"  # our forwarder, read-only
SOCKET_DIR = "/run/wl"  # the proxy's socket folder
LOGS_DIR = "/opt/wl/logs"  # the CLI's logs and home, kept beside the transcript
PORT = 8765  # the forwarder's loopback port inside the container

_PIP_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[A-Za-z0-9.+!_-]+$")
_NPM_PIN = re.compile(r"^(@[a-z0-9._-]+/)?[a-z0-9._-]+@\d+\.\d+\.\d+[0-9A-Za-z.+-]*$")


class ExternalConfigError(UserError):
    hint = "See docs/agents.md (external agents); unknown keys are rejected."


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InstallStep(_Strict):
    """One step, exactly one of: pip requirements, npm packages, or a shell command."""

    pip: list[str] | None = None
    npm: list[str] | None = None
    shell: str | None = None

    @model_validator(mode="after")
    def _one(self) -> InstallStep:
        given = [k for k, v in (("pip", self.pip), ("npm", self.npm), ("shell", self.shell)) if v is not None]
        if len(given) != 1:
            raise ValueError(f"an install step is exactly one of pip, npm or shell (got {given or 'none'})")
        for req in self.pip or []:
            if not _PIP_PIN.match(req):
                raise ValueError(f"pip requirement {req!r} is not pinned: write name==version")
        for pkg in self.npm or []:
            if not _NPM_PIN.match(pkg):
                raise ValueError(
                    f"npm package {pkg!r} is not pinned: write name@x.y.z (an unpinned install "
                    "picks whatever version the installing node allows)"
                )
        return self

    def describe(self) -> str:
        if self.pip is not None:
            return "pip: " + " ".join(self.pip)
        if self.npm is not None:
            return "npm: " + " ".join(self.npm)
        return f"shell: {self.shell}"


class Provider(_Strict):
    """Where the proxy forwards, with which key. The key is read on the host, never sent inward."""

    base_url: str | None = None  # default: the env variable below, else the wire's public API
    base_url_env: str | None = None  # e.g. ANTHROPIC_BASE_URL
    api_key_env: str  # e.g. ANTHROPIC_API_KEY


class WireVariant(_Strict):
    """Another wire format the CLI can speak (CLIs built on litellm speak several), and how to point
    it at the proxy: the provider's key and URL variables and the CLI's env for that wire, merged
    over the config's own `env`. The run picks the wire from the model's provider."""

    provider: Provider
    env: dict[str, str] = Field(default_factory=dict)


class ToolRules(_Strict):
    """How to read the CLI's tool calls, for transcripts and recovery metrics."""

    shell: dict[str, str] = Field(default_factory=dict, description="tool name -> the argument with the command")
    edit: list[str] = Field(default_factory=list, description="tools that change files")
    scripts: dict[str, str] = Field(
        default_factory=dict,
        description="tool name -> the argument with a script whose `tools.NAME(...)` calls the shell and "
        "edit rules read (Codex's code mode: `exec`)",
    )
    edit_commands: list[str] = Field(default_factory=list, description="regexes: shell commands that change files")
    test_commands: list[str] = Field(default_factory=list, description="regexes: shell commands that run tests")
    exit_code: str | None = Field(None, description="regex, one group: the exit code in a shell tool's output")
    result_json: dict[str, str] = Field(
        default_factory=dict,
        description="when a shell result is a JSON object: which keys hold the `output` and the `exit_code`",
    )
    text_edits: Literal["search_replace"] | None = Field(None, description="edits written as text in replies (aider)")

    @field_validator("edit_commands", "test_commands")
    @classmethod
    def _regexes(cls, values: list[str]) -> list[str]:
        for value in values:
            re.compile(value)
        return values

    @field_validator("exit_code")
    @classmethod
    def _one_group(cls, value: str | None) -> str | None:
        if value is not None and re.compile(value).groups != 1:
            raise ValueError("exit_code needs exactly one group (the number)")
        return value


class VerifySettings(_Strict):
    """How `wholeloop agents verify` runs this CLI against the scripted provider."""

    model: str | None = Field(None, description="the model it is verified with (default: `model`)")
    finish: str | None = Field(
        None,
        description="a shell command the CLI ends its run on (mini-swe-agent's submit echo); "
        "without it the scripted provider ends with a text reply",
    )


class ExternalConfig(_Strict):
    kind: Literal["external"]
    name: str
    cli: str = Field(description="the CLI's package name, for the manifest")
    version: str = Field(description="the pinned version, for the manifest")
    install: list[InstallStep] = Field(min_length=1)
    bundle_node: bool = Field(False, description="copy the installing node into the folder (CLIs that run on node)")
    check: list[str] = Field(
        description="argv run after the install, network off: must exit 0 (its output: the version)"
    )
    wire: Literal["anthropic", "openai-chat", "openai-responses"]
    wires: dict[Literal["anthropic", "openai-chat", "openai-responses"], WireVariant] = Field(
        default_factory=dict,
        description="other wires the CLI speaks, picked when --model's provider needs one of them",
    )
    model: str = Field(description="the model the CLI is given unless --model says otherwise")
    models: list[str] = Field(
        default_factory=list,
        description="other models the CLI may call on its own (a side model); the proxy refuses any other",
    )
    provider: Provider
    command: list[str] = Field(min_length=1)
    prompt: Literal["argument", "file", "stdin"] = "argument"
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict, description="files written before each attempt (path: text)")
    tools: ToolRules = Field(default_factory=ToolRules)
    exclude: list[str] = Field(default_factory=list, description="files it leaves in the repository, not its patch")
    logs: list[str] = Field(default_factory=list, description="globs (under the logs folder) of its own logs")
    self_report: Literal["mini", "claude", "codex", "aider"] | None = None
    limits: AgentLimits = Field(default_factory=AgentLimits)
    refuse_status: int = Field(
        429, ge=400, le=599, description="the status budget refusals get (one the CLI treats as final)"
    )
    grace_s: float = Field(15.0, ge=0, description="after the budget is spent, the CLI is stopped this much later")
    prices: dict[str, dict[str, float]] = Field(default_factory=dict, description="per-token prices litellm lacks")
    server_tools: dict[str, float] = Field(
        default_factory=dict,
        description="provider-side tools allowed (web_search, web_fetch, ...), each with its fee per use in USD",
    )
    verify: VerifySettings = Field(default_factory=VerifySettings)

    @field_validator("wire")
    @classmethod
    def _wire(cls, value: str) -> str:
        assert value in WIRES
        return value

    def spoken(self) -> list[str]:
        """Every wire this CLI can speak, its default first."""
        return [self.wire, *sorted(w for w in self.wires if w != self.wire)]

    def speaking(self, wire: str) -> ExternalConfig:
        """This config set to speak `wire` (its default or one of `wires`): the wire, the provider's
        variables and the CLI's env of that wire. Raises KeyError for a wire it does not speak."""
        if wire == self.wire:
            return self
        variant = self.wires[wire]  # type: ignore[index]
        return self.model_copy(update={"wire": wire, "provider": variant.provider, "env": {**self.env, **variant.env}})

    def describe(self) -> dict:
        """What the manifest records about this scaffold."""
        return {
            "kind": "external",
            "name": self.name,
            "cli": self.cli,
            "version": self.version,
            "install": [s.describe() for s in self.install],
            "wire": self.wire,
            "model": self.model,
            "models": self.models,
            "server_tools": self.server_tools,
            "command": self.command,
            "prompt": self.prompt,
            "env": sorted(self.env),
            "limits": self.limits.model_dump(),
            "refuse_status": self.refuse_status,
            "grace_s": self.grace_s,
            "exclude": self.exclude,
        }


def shipped_configs() -> list[str]:
    """Names usable as `--agent external:NAME`."""
    folder = resources.files("harness.data").joinpath("agents/external")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def shipped_path(name: str) -> Path:
    """The file of the shipped config `name`; raises ExternalConfigError naming the ones there are."""
    path = Path(str(resources.files("harness.data").joinpath(f"agents/external/{name}.yaml")))
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name) or not path.is_file():
        raise ExternalConfigError(
            f"no shipped external agent {name!r}; there are: {', '.join(shipped_configs())} "
            "(or give your own with --agent-config FILE)"
        )
    return path


def load_external_config(path: str | Path) -> ExternalConfig:
    """The config at `path`, validated; raises ExternalConfigError saying which keys are wrong."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ExternalConfigError(f"cannot read agent config {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ExternalConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ExternalConfigError(f"{path}: an agent config is a mapping of keys")
    try:
        return ExternalConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(map(str, err["loc"])) or "(top level)"
            if err["type"] == "extra_forbidden":
                known = _known_keys(err["loc"][:-1])
                problems.append(f"{where}: unknown key" + (f" (known: {', '.join(known)})" if known else ""))
            else:
                problems.append(f"{where}: {err['msg']}")
        raise ExternalConfigError(f"{path}: invalid external agent config: " + "; ".join(problems)) from None


def _known_keys(loc: tuple) -> list[str]:
    model: type[BaseModel] = ExternalConfig
    for part in loc:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[str(part)].annotation if str(part) in model.model_fields else None
        inner = [a for a in (get_args(annotation) or (annotation,)) if isinstance(a, type)]
        found = next((a for a in inner if issubclass(a, BaseModel)), None)
        if found is None:
            return []
        model = found
    return sorted(model.model_fields)
