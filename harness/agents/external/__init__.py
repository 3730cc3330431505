"""The `external` agent kind: an agent CLI run inside the task's container, metered by our proxy.

Per run: `prepare` builds (or finds) the CLI's install folder and checks it, before any agent
container starts. Per unit: `workspace` gives the container its mounts -- the install (read-only),
our forwarder (read-only), the folder of the proxy's Unix socket -- and a logs folder beside the
transcript. The CLI writes its logs inside the container (under its disk limit: no folder of the
host is writable from inside), and they are copied out after each attempt, `LOG_BYTES` at most. Per attempt: `run` starts a `MeteringProxy` with a fresh token and a `Budget`, runs
the CLI (forwarder first) with the problem statement, stops it a grace period after the budget
is spent (or when the run is stopping), and writes what it did: the recorded model calls and tool
calls, the CLI's own report of its spend, its logs, and why it stopped. Its patch is then taken
and graded by the runner exactly as the built-in agent's.

Not metered, and so not supported: subscription or OAuth logins (Claude's `/login`, ChatGPT
sign-in). The proxy must see every call, and it swaps an API key; a CLI that authenticates some
other way would spend outside the budget, so the container only ever gets the attempt's token.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sandbox import Backend, InfraError, Mount, PatchError, SandboxError

from ...models.pricing import lookup_price
from ...sandboxes import default_backend
from ...scrub import register, scrub_bytes
from ...transcript import ExternalRun, LimitHit, Stop
from ...vocabulary import StopReason
from .. import AgentContext, AgentResult, AgentSpec, UnknownAgent, Workspace
from ..budget import Budget, LimitReached
from ..provider import Call, ProviderClock, attribute
from .config import (
    INSTALL_DIR,
    LOGS_DIR,
    PORT,
    SOCKET_DIR,
    TOOLS_DIR,
    ExternalConfig,
    ExternalConfigError,
    load_external_config,
    shipped_configs,
    shipped_path,
)
from .install import Installed, InstallError, ensure_install
from .proxy import MeteringProxy
from .recorder import Recorder
from .self_report import READERS
from .wire import get_wire

LOG_BYTES = 64 * 2**20  # what the CLI's logs may bring out of the container onto the host
PROXY_LOG = "proxy.jsonl"  # the host's own log of the proxy, in each attempt's folder
DEFAULT_UPSTREAM = {
    "anthropic": "https://api.anthropic.com",
    "openai-chat": "https://api.openai.com",
    "openai-responses": "https://api.openai.com",
}
PROVIDER_OF = {"anthropic": "anthropic", "openai-chat": "openai", "openai-responses": "openai"}
_PLACEHOLDER = re.compile(
    r"\{(model|prompt|prompt_file|logs|home|base_url|token|workdir|test_command|install|attempt)\}"
)
FWD = f"{TOOLS_DIR}/wl-fwd"
QUICK_EXIT_S = 30.0  # a CLI that fails this fast without one model call did not start at all


@dataclass
class ExternalWorkspace(Workspace):
    socket_dir: str = ""


class ExternalAgent:
    """An agent CLI as an `Agent` (and a `ContainerAgent`); see the module docstring."""

    def __init__(self, config: ExternalConfig, model: str, config_path: str) -> None:
        self.config, self.model, self.name = config, model, config.name
        self.config_path = config_path
        self.allow_unknown_model = False  # --allow-unknown-model (set by `check`)
        self.installed: Installed | None = None
        self._lock = threading.Lock()

    def describe(self) -> dict:
        return {
            "agent": self.name,
            "model": self.model,
            "config_path": self.config_path,
            "external": {
                **self.config.describe(),
                "model": self.model,
                "install_key": self.installed.key if self.installed else None,
                "installed": self.installed.version if self.installed else None,
            },
        }

    # ------------------------------------------------------------------ before containers

    def upstream(self) -> tuple[str, str]:
        """(the provider's base URL, the real key), read on the host; raises ExternalConfigError."""
        provider = self.config.provider
        key = os.environ.get(provider.api_key_env, "")
        if not key:
            raise ExternalConfigError(
                f"{self.name}: {provider.api_key_env} is not set. The proxy forwards every model call with that "
                "API key (the container never sees it). Subscription or OAuth logins cannot be metered, so they "
                "are not supported."
            )
        register(key)  # scrubbed wherever it shows, whatever its variable is called
        url = provider.base_url or (os.environ.get(provider.base_url_env, "") if provider.base_url_env else "")
        return (url or DEFAULT_UPSTREAM[self.config.wire]).rstrip("/"), key

    def check(self, *, allow_unknown_price: bool = False) -> list[str]:
        """The key is set on the host; the model has a price (else its cost is "unknown")."""
        self.allow_unknown_model = allow_unknown_price  # the proxy refuses an unpriced model without it
        problems = []
        try:
            self.upstream()
        except ExternalConfigError as exc:
            problems.append(str(exc))
        problems += self._wire_reaches_model()
        name = self.model.split("/", 1)[-1]
        if (
            lookup_price(name, PROVIDER_OF[self.config.wire], overrides=self.config.prices or None) is None
            and not allow_unknown_price
        ):
            problems.append(
                f"{self.name}: {name} has no price in litellm's map, so its cost would be unknown and the "
                "cost limit unchecked; add it under `prices:` in the agent config, or pass "
                "--allow-unknown-model"
            )
        return problems

    def _wire_reaches_model(self) -> list[str]:
        """The CLI speaks the wires its config names: a model whose provider needs another cannot be
        reached (every attempt would end as the setup's error), so say it before any container
        starts, naming what would work. (`build` has already picked the wire that reaches it, when
        the CLI speaks one.)"""
        from ..provider import WIRES_OF_PROVIDER

        provider = model_provider(self.model)
        if provider is None or self.config.wire in WIRES_OF_PROVIDER[provider]:
            return []
        needed = sorted(WIRES_OF_PROVIDER[provider])
        others = [
            f"external:{name}"
            for name in shipped_configs()
            if WIRES_OF_PROVIDER[provider] & set(load_external_config(shipped_path(name)).spoken())
        ]
        spoken = self.config.spoken()
        served = sorted(p for p, wires in WIRES_OF_PROVIDER.items() if wires & set(spoken))
        return [
            f"{self.name} speaks the {' and '.join(spoken)} wire{'s' if len(spoken) > 1 else ''} only, which "
            f"do{'' if len(spoken) > 1 else 'es'} not reach {provider}'s models ({self.model} needs "
            f"{' or '.join(needed)}): give it a model from {', '.join(served)} (its default: {self.config.model})"
            + (f", or use an agent that speaks {' or '.join(needed)}: {', '.join(others)}" if others else "")
        ]

    def prepare(self, log: Callable[[str], None] | None = None, backend: Backend | None = None) -> None:
        """Check the key is there, build (or find) the install and the forwarder on `backend`
        (the run's; default: `default_backend()`)."""
        self.upstream()
        backend = backend or default_backend()
        with self._lock:
            if self.installed is None:
                self.installed = ensure_install(self.config, log=log, backend=backend)
        backend.helper_binary("wl-fwd")

    @contextlib.contextmanager
    def workspace(self, task, folder: Path, backend: Backend | None = None) -> Iterator[ExternalWorkspace]:
        backend = backend or default_backend()
        self.prepare(backend=backend)
        assert self.installed is not None
        logs = Path(folder) / "agent"
        logs.mkdir(parents=True, exist_ok=True)
        # Short and private: a Unix socket path has at most 107 bytes.
        sockets = tempfile.mkdtemp(prefix="wl-proxy-")
        os.chmod(sockets, 0o755)
        try:
            yield ExternalWorkspace(
                mounts=(
                    Mount(str(self.installed.path), INSTALL_DIR),
                    Mount(backend.helper_binary("wl-fwd"), FWD),
                    Mount(sockets, SOCKET_DIR),
                ),  # the logs stay inside, under the disk limit: _copy_logs
                logs_dir=logs,
                socket_dir=sockets,
                own_files=tuple(self.config.exclude),
            )
        finally:
            shutil.rmtree(sockets, ignore_errors=True)

    # ------------------------------------------------------------------ an attempt

    def run(self, ctx: AgentContext) -> AgentResult:
        ws = ctx.workspace
        if not isinstance(ws, ExternalWorkspace) or ws.logs_dir is None:
            raise RuntimeError("an external agent runs in a container its workspace() arranged")
        config = self.config
        budget = Budget(config.limits, deadline_s=ctx.deadline_s)
        upstream, key = self.upstream()
        token = "wl-" + secrets.token_urlsafe(24)
        here = f"{LOGS_DIR}/attempt-{ctx.attempt}"
        host_here = ws.logs_dir / f"attempt-{ctx.attempt}"
        host_here.mkdir(parents=True, exist_ok=True)
        prompt = ctx.task.problem_statement.strip() + "\n"
        if ctx.feedback:
            prompt += "\n" + ctx.feedback.strip() + "\n"
        values = {
            "model": self.model,
            "prompt": prompt,
            "prompt_file": f"{here}/task.md",
            "logs": here,
            "home": f"{LOGS_DIR}/home",
            "base_url": f"http://127.0.0.1:{PORT}",
            "token": token,
            "workdir": ctx.sandbox.workdir,
            "test_command": ctx.task.test_command or "",
            "install": INSTALL_DIR,
            "attempt": str(ctx.attempt),
        }

        def fill(text: str) -> str:
            return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)

        wire = get_wire(config.wire)
        recorder = Recorder(
            ctx.transcript,
            wire,
            config.tools,
            test_command=ctx.task.test_command or "",
            parser=ctx.task.hidden_tests.parser,
        )
        stopper = _Stopper(ctx, f"{here}/cli.pid", config.grace_s, budget)
        proxy_log = open(host_here / PROXY_LOG, "a", buffering=1)
        calls: list[Call] = []  # every model call as it ended: the evidence of whose a failure is
        clock = ProviderClock(budget)  # waiting on a failing provider is not the agent's time

        def on_call(exchange) -> None:  # on the proxy's recording thread, in the order calls ended
            call = Call(exchange.status, exchange.model, exchange.error, exchange.sent_at, exchange.answered_at)
            calls.append(call)
            clock.note(call)
            recorder(exchange)

        def on_limit(hit: LimitReached) -> None:
            ctx.transcript.write(LimitHit(limit=hit.reason, value=hit.value, maximum=hit.maximum))
            stopper.after_grace(f"{hit.reason}: {hit.detail}")

        proxy = MeteringProxy(
            f"{ws.socket_dir}/proxy.sock",
            wire=wire,
            upstream=upstream,
            api_key=key,
            token=token,
            budget=budget,
            model=self.model,
            models=config.models,
            allow_unknown_model=self.allow_unknown_model,
            server_tools=config.server_tools,
            refuse_status=config.refuse_status,
            prices=config.prices or None,
            provider=PROVIDER_OF[config.wire],
            record=on_call,
            on_limit=on_limit,
            log=lambda entry: proxy_log.write(_line(entry)),
        )
        started = time.monotonic()
        try:
            with proxy:
                sb = ctx.sandbox
                sb.write_file(f"{here}/task.md", prompt)
                for path, text in config.files.items():
                    sb.write_file(fill(path), fill(text))
                env = {k: fill(v) for k, v in config.env.items()}
                argv = [fill(a) for a in config.command]
                stdin = f"{here}/task.md" if config.prompt == "stdin" else "/dev/null"
                # The forwarder's failure says so with a word of this attempt's (exit code 97 alone
                # could be the CLI's own: its stdout goes to a file, never to this exec's).
                failed = f"wl-forwarder-failed-{secrets.token_hex(8)}"
                script = (
                    f"mkdir -p {shlex.quote(values['home'])} && {FWD} -d {PORT} {SOCKET_DIR}/proxy.sock || "
                    f"{{ echo {failed}; exit 97; }}\n"
                    f"echo $$ > {here}/cli.pid\ncd {shlex.quote(sb.workdir)}\n"
                    f'exec "$@" < {stdin} > {here}/stdout.txt 2> {here}/stderr.txt'
                )
                stopper.watch()
                result = sb.exec(
                    ["/bin/sh", "-c", script, "wl-agent", *argv],
                    env=env,
                    # the agent's clock pauses while the provider fails (the watch stops it at its limit)
                    timeout=budget.wall_limit_s + config.limits.max_provider_wait_s + config.grace_s + 5,
                )
                stopper.done()
        except InfraError as exc:
            stopper.done()
            _copy_logs(ctx.sandbox, LOGS_DIR, ws.logs_dir)  # what can still be read of them (best effort)
            ctx.transcript.write(Stop(reason=StopReason.infra_error, detail=str(exc)))
            return AgentResult.from_budget(
                budget, StopReason.infra_error, infra_error=f"infra_error: {exc}", infra_retryable=True
            )
        finally:
            proxy_log.close()
        seconds = time.monotonic() - started
        left_out = _copy_logs(ctx.sandbox, LOGS_DIR, ws.logs_dir)  # its attempt folders and its home
        report = READERS[config.self_report](host_here) if config.self_report else None
        stderr = _tail(host_here / "stderr.txt") or result.stderr[-3000:]
        kept = sorted(str(p.relative_to(ws.logs_dir.parent)) for p in host_here.rglob("*") if p.is_file())
        ctx.transcript.write(
            ExternalRun(
                attempt=ctx.attempt,
                cli=config.cli,
                version=config.version,
                exit_code=result.returncode,
                seconds=round(seconds, 3),
                timed_out=result.timed_out,
                stopped_by=stopper.reason,
                logs=kept[:200],
                self_report=report.model_dump() if report else None,
                stderr_tail=stderr,
                logs_left_out=left_out,
            )
        )
        reason, detail, infra, retry = self._stop_reason(
            proxy,
            result.returncode,
            result.timed_out,
            stopper,
            seconds,
            stderr,
            forwarder_failed=failed in result.stdout,
            started=lambda: _changed_repository(ctx.sandbox, config.exclude),
            calls=calls,
        )
        ctx.transcript.write(Stop(reason=reason, detail=detail))
        out = AgentResult.from_budget(
            budget, reason, infra_error=f"{reason}: {detail}" if infra else None, infra_retryable=retry
        )
        out.model_calls = proxy.stats.calls
        out.tool_s = max(seconds - budget.model_s - budget.wait_s, 0.0)  # waiting on the provider is neither
        return out

    def _stop_reason(
        self,
        proxy: MeteringProxy,
        code: int,
        timed_out: bool,
        stopper: _Stopper,
        seconds: float,
        stderr: str,
        *,
        forwarder_failed: bool = False,
        started: Callable[[], bool] = lambda: False,
        calls: list[Call] | None = None,
    ) -> tuple[StopReason, str, bool, bool]:
        """(stop reason, detail, infra, retryable) of a finished CLI run; `forwarder_failed`: the
        script said our forwarder could not start (then, and only then, exit code 97 is not the CLI's);
        `started`: did the CLI change the repository (then it did start, however fast it failed)?
        `calls`: the attempt's model calls as they ended; whose a provider's error is, is decided by
        the one rule, `harness.agents.provider.attribute`."""
        if stopper.interrupted:
            return (
                StopReason.interrupted,
                "the run is being stopped; this attempt will be redone on resume",
                False,
                False,
            )
        if stopper.waited_out is not None:  # the provider kept failing past max_provider_wait_s
            said = attribute(calls or [], self.model, exit_code=code, waited_out=stopper.waited_out)
            assert said is not None  # (waited_out always attributes)
            return said.reason, said.detail, said.infra, said.retryable
        if proxy.limit is not None:
            return proxy.limit.reason, proxy.limit.detail, False, False
        if timed_out or stopper.time_limit:
            return StopReason.time_limit, "the CLI ran past the attempt's time limit and was killed", False, False
        if code == 97 and forwarder_failed:
            return StopReason.agent_error, "the loopback forwarder could not start in the container", True, False
        # exact ids (provider.same_model), not the wire's looser reading that decides what the proxy lets
        # through: a made-up dated alias the agent called is its own choice (red team 4, attack 11)
        said = attribute(calls or [], self.model, exit_code=code)
        if said is not None:
            return said.reason, said.detail, said.infra, said.retryable
        if code == 0:
            return StopReason.submitted, "the CLI finished", False, False
        if proxy.stats.calls == 0 and seconds < QUICK_EXIT_S and not started():
            return (
                StopReason.agent_error,
                (
                    f"{self.config.cli} exited at once (exit code {code}) without calling the model; "
                    f"check the config's command and env. The end of its stderr:\n{stderr[-1500:]}"
                ),
                True,
                False,
            )
        return StopReason.agent_error, f"the CLI exited with code {code}: {stderr[-500:]}", False, False


class _Stopper:
    """Stops the CLI (its process group, TERM then KILL) a grace after a limit, or when the run stops."""

    def __init__(self, ctx: AgentContext, pid_file: str, grace_s: float, budget: Budget | None = None) -> None:
        self.ctx, self.pid_file, self.grace_s = ctx, pid_file, grace_s  # pid_file: inside the container
        self.budget = budget
        self.reason = ""
        self.interrupted = False
        self.time_limit = False  # the agent's own time (waits on the provider left out) ran out
        self.waited_out: float | None = None  # the wait on a failing provider reached its cap
        self.finished = threading.Event()
        self.lock = threading.Lock()

    def watch(self) -> None:
        threading.Thread(target=self._watch_cancel, daemon=True).start()

    def _watch_cancel(self) -> None:
        """Stop the CLI when the run stops, when its own time is up (the clock pauses while the
        provider fails), or when waiting on the provider reached `max_provider_wait_s`."""
        budget = self.budget
        while not self.finished.wait(0.5):
            if self.ctx.cancel.is_set():
                self.interrupted = True
                self.stop("the run is being stopped")
                return
            if budget is None:
                continue
            waited = budget.provider_wait_over()
            if waited is not None:
                self.waited_out = waited
                self.stop(f"the provider kept failing for {waited:.0f} s (max_provider_wait_s)")
                return
            working = budget.working_s()
            if working >= budget.wall_limit_s:
                self.time_limit = True
                self.ctx.transcript.write(
                    LimitHit(limit=StopReason.time_limit, value=round(working, 3), maximum=budget.wall_limit_s)
                )
                self.stop(
                    f"time_limit: {working:.0f} s of the agent's time reached the limit of {budget.wall_limit_s:g}"
                )
                return

    def after_grace(self, why: str) -> None:
        if not self.finished.wait(self.grace_s):
            self.stop(f"{why}; stopped {self.grace_s:g} s later")

    def stop(self, why: str) -> None:
        with self.lock:
            if self.reason or self.finished.is_set():
                return
            self.reason = why
        try:
            pid = int(self.ctx.sandbox.read_file(self.pid_file).decode().strip())
        except (SandboxError, UnicodeDecodeError, ValueError):
            return
        with contextlib.suppress(SandboxError):
            self.ctx.sandbox.exec(
                [
                    "/bin/sh",
                    "-c",
                    f"kill -TERM -{pid} {pid} 2>/dev/null; sleep 3; kill -KILL -{pid} {pid} 2>/dev/null; true",
                ],
                timeout=30,
            )

    def done(self) -> None:
        self.finished.set()


def _changed_repository(sb, own: list[str]) -> bool:
    """Did anything change the repository (the engine's change list), besides the CLI's own files
    (`exclude`: its patterns, as the patch leaves them out) and anything under `.git`?"""
    from fnmatch import fnmatch

    try:
        changes = sb.changes()
    except SandboxError:
        return False

    def own_file(path: str) -> bool:
        parts = path.split("/")
        return ".git" in parts or any(fnmatch(part, pattern.rstrip("/")) for part in parts for pattern in own)

    return any(c.path and not own_file(c.path) for c in changes)


def _line(entry: dict) -> str:
    import orjson

    return orjson.dumps(entry).decode() + "\n"


def _copy_logs(sb, inside: str, host: Path, limit: int = LOG_BYTES) -> str:
    """Copy the CLI's logs folder (its attempt folders and its home) out of the container into
    `host`, read from outside (the archive API: a symlink stays a symlink and is left out), `limit`
    bytes at most in all; a file copied at an earlier attempt is replaced, the proxy's log (the
    host's own) never. Returns what was left out ("" when nothing)."""
    try:
        entries = sb.read_tree([inside], max_file_bytes=limit)
    except PatchError as exc:  # one file over the limit: none is read
        return f"the CLI's logs were not copied out: {exc}"
    except SandboxError as exc:
        return f"the CLI's logs could not be read: {exc}"
    total, left = 0, []
    for entry in entries:
        rel = entry.path.removeprefix(inside).lstrip("/")
        parts = rel.split("/")
        if entry.kind != "file" or not rel or ".." in parts or parts[-1] == PROXY_LOG:
            continue
        if total + len(entry.data) > limit:
            left.append(rel)
            continue
        target = host / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)  # a symlink planted on the host earlier is replaced, never followed
        target.write_bytes(scrub_bytes(entry.data))  # a key a provider echoed into a log: as records are
        total += len(entry.data)
    return (
        f"{len(left)} file(s) of the CLI's logs left out (over {limit} bytes in all): {', '.join(left[:5])}"
        if left
        else ""
    )


def _tail(path: Path, size: int = 3000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(fh.tell() - size, 0))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def build(spec: AgentSpec) -> ExternalAgent:
    """The external agent of `spec`: `--agent external:NAME` (shipped) or `--agent-config FILE`."""
    if spec.name.startswith("external:"):
        path = str(shipped_path(spec.name.removeprefix("external:")))
    elif spec.config_path is not None:
        path = spec.config_path
    else:
        raise UnknownAgent(f"agent {spec.name!r} has no external agent config")
    config = load_external_config(path)
    if spec.settings.get("temperature") is not None or spec.settings.get("max_tokens") is not None:
        raise UnknownAgent(
            f"{config.name}: --temperature and --max-tokens are the CLI's own settings; set them in "
            "its command or env in the agent config"
        )
    model = spec.model or config.model
    return ExternalAgent(config.speaking(wire_for(config, model)), model, path)


def model_provider(model: str) -> str | None:
    """The provider `model` names (its prefix, else litellm's map), as the preflight reads it."""
    from ...models.pricing import litellm_price_map
    from ..provider import provider_of

    return provider_of(model, litellm_price_map())


def wire_for(config: ExternalConfig, model: str) -> str:
    """The wire to speak to `model`: the config's default when it reaches the model's provider (or
    the provider is unknown), else the first other wire the CLI speaks that does; else the default,
    and the preflight refuses the pairing before any container starts."""
    from ..provider import WIRES_OF_PROVIDER

    if not config.wires:
        return config.wire
    provider = model_provider(model)
    if provider is None:
        return config.wire
    return next((w for w in config.spoken() if w in WIRES_OF_PROVIDER[provider]), config.wire)


__all__ = ["ExternalAgent", "ExternalConfigError", "InstallError", "build"]
