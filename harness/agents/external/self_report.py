"""What a CLI says it spent, read from its own output or log: the cross-check of the proxy's figures.

Each reader returns neutral figures (`input_tokens` counts every prompt token, cache included, as
`harness.models.types.Usage` does) or None when the CLI left no report (it was killed, say).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel


class SelfReport(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    calls: int | None = None
    source: str = ""  # the file it was read from, relative to the attempt's logs folder


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None


def mini(logs: Path) -> SelfReport | None:
    """mini-swe-agent's trajectory: per assistant message the provider's raw usage; its cost total."""
    traj = _json(logs / "mini.traj.json")
    if not isinstance(traj, dict):
        return None
    out = SelfReport(source="mini.traj.json")
    for message in traj.get("messages") or []:
        usage = ((message.get("extra") or {}).get("response") or {}).get("usage") if isinstance(message, dict) else None
        if isinstance(usage, dict):
            out.input_tokens += int(usage.get("prompt_tokens") or 0)
            out.output_tokens += int(usage.get("completion_tokens") or 0)
            out.cache_read_tokens += int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    stats = (traj.get("info") or {}).get("model_stats") or {}
    out.cost_usd = stats.get("instance_cost")
    out.calls = stats.get("api_calls")
    return out


def claude(logs: Path) -> SelfReport | None:
    """Claude Code's `--output-format json` result on stdout."""
    result = _json(logs / "stdout.txt")
    if not isinstance(result, dict) or "usage" not in result:
        return None
    usage = result.get("usage") or {}
    read, write = int(usage.get("cache_read_input_tokens") or 0), int(usage.get("cache_creation_input_tokens") or 0)
    return SelfReport(
        input_tokens=int(usage.get("input_tokens") or 0) + read + write,
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
        cost_usd=result.get("total_cost_usd"),
        calls=result.get("num_turns"),
        source="stdout.txt",
    )


def codex(logs: Path) -> SelfReport | None:
    """Codex's `exec --json` events on stdout: the usage of each completed turn."""
    try:
        lines = (logs / "stdout.txt").read_text(errors="replace").splitlines()
    except OSError:
        return None
    out, found = SelfReport(source="stdout.txt"), False
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "turn.completed":
            usage = event.get("usage") or {}
            out.input_tokens += int(usage.get("input_tokens") or 0)
            out.output_tokens += int(usage.get("output_tokens") or 0)
            out.cache_read_tokens += int(usage.get("cached_input_tokens") or 0)
            found = True
    return out if found else None


_AIDER = re.compile(
    r"Tokens: ([\d.]+)(k?) sent(?:, ([\d.]+)(k?) cache write)?(?:, ([\d.]+)(k?) cache hit)?, "
    r"([\d.]+)(k?) received\.(?: Cost: \$([\d.]+) message)?"
)


def aider(logs: Path) -> SelfReport | None:
    """aider's `Tokens: ... sent, ... received. Cost: ...` lines (rounded to 0.1k above 1000)."""
    try:
        text = (logs / "stdout.txt").read_text(errors="replace")
    except OSError:
        return None

    def n(value: str | None, k: str | None) -> int:
        return round(float(value) * (1000 if k else 1)) if value else 0

    out, found = SelfReport(source="stdout.txt", cost_usd=0.0), False
    for m in _AIDER.finditer(text):
        found = True
        out.input_tokens += n(m.group(1), m.group(2))
        out.cache_write_tokens += n(m.group(3), m.group(4))
        out.cache_read_tokens += n(m.group(5), m.group(6))
        out.output_tokens += n(m.group(7), m.group(8))
        out.cost_usd = (out.cost_usd or 0.0) + float(m.group(9) or 0)
    return out if found else None


READERS = {"mini": mini, "claude": claude, "codex": codex, "aider": aider}
