"""Images in three tiers, each tagged by a hash of everything that went into it.

base  -- pulled from a registry, built from a Dockerfile, or bootstrapped offline (debootstrap)
env   -- base + CA trust + Python venv + the environment's setup commands (no repository)
deps  -- env + a few files of the repository (a lock file) + the install commands, when the task
         names those files: tasks whose files are the same share it (one install per lock file)
task  -- env (or deps) + the repository snapshot + install commands that need the repository
checks -- task + the repository's own linters and type checkers + their run on the base tree

An unchanged input never rebuilds; a changed one always does, because the tag *is* the hash.
Builds of the same tag happen once even when many workers (threads or processes) ask for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker.errors

from ..base import DEFAULT_BASE, REPO_DIR, BuiltImage, EnvSpec, LogFn
from ..errors import ImageBuildError, ImageNotFound, InputError
from ..patch import CACHE_PATTERNS
from ..snapshot import SNAPSHOT_FORMAT, Snapshot, cache_dir, tar_directory
from .engine import client, translate

IMAGE_FORMAT = 2  # bump when the build recipes below change: forces rebuilds everywhere
BOOTSTRAP_PACKAGES = ["python3", "python3-pip", "python3-venv", "git", "ca-certificates", "patch", "procps"]
CA_PATH = "/usr/local/share/wholeloop/ca-bundle.crt"
# Every client we know of that reads a CA bundle from the environment.
CA_ENV = ["SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS"]
# What each image setup script of a task image (see `task_image`) printed, as <name>.json: facts of
# the environment recorded before any agent ran, outside the repository, read by grading.
FACTS_DIR = "/opt/wholeloop/facts"


# ----------------------------------------------------------------------------- base tier


def base_image(spec: EnvSpec, log: LogFn | None = None) -> BuiltImage:
    """The base image for an environment, pulled or built as the spec says."""
    if spec.dockerfile:
        return _dockerfile_image(Path(spec.dockerfile), spec.network, log)
    cli = client()
    with translate(f"looking up image {spec.image}"):
        if spec.pull != "always":
            try:
                img = cli.images.get(spec.image)
                return BuiltImage(spec.image, img.id, cached=True)
            except docker.errors.ImageNotFound:
                pass
        if spec.pull == "never":
            raise ImageNotFound(f"image {spec.image} is not present and pull is 'never'")
    if log:
        log(f"pulling {spec.image}")
    try:
        with translate(f"pulling {spec.image}"):
            repo, _, tag = (
                spec.image.rpartition(":") if ":" in spec.image.split("/")[-1] else (spec.image, "", "latest")
            )
            img = cli.images.pull(repo, tag=tag or "latest")
    except Exception as exc:
        if spec.image == DEFAULT_BASE:
            raise ImageNotFound(
                f"base image {spec.image} is not present and cannot be pulled",
                hint="Build it offline: `wholeloop images bootstrap` (about a minute).",
            ) from exc
        raise ImageNotFound(
            f"image {spec.image} is not present and cannot be pulled: {exc}",
            hint="Check the name and your registry access, or use the offline base image "
            f"{DEFAULT_BASE} (`wholeloop images bootstrap`).",
        ) from exc
    return BuiltImage(spec.image, img.id, cached=False)


def _dockerfile_tag(dockerfile: Path) -> str:
    if not dockerfile.is_file():
        raise InputError(f"Dockerfile not found: {dockerfile}")
    context = dockerfile.parent
    digest = hashlib.sha256(f"dockerfile:{IMAGE_FORMAT}:{dockerfile.name}".encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes())
    return f"wholeloop-base:{digest.hexdigest()[:16]}"


def _dockerfile_image(dockerfile: Path, network: bool, log: LogFn | None) -> BuiltImage:
    tag = _dockerfile_tag(dockerfile)
    buf = io.BytesIO(tar_directory(dockerfile.parent))
    return _build(tag, buf, network, log, dockerfile=dockerfile.name)


def bootstrap_base_image(
    tag: str = DEFAULT_BASE,
    *,
    suite: str = "bookworm",
    mirror: str = "http://deb.debian.org/debian",
    packages: list[str] | None = None,
    log: LogFn | None = None,
) -> BuiltImage:
    """Build a base image with no registry: debootstrap a minimal Debian and `docker import` it.

    Needs root and the `debootstrap` program (Debian package of the same name).
    """
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "debootstrap is not installed", hint="apt-get install -y debootstrap (scripts/setup.sh does it)"
        )
    pkgs = ",".join(packages or BOOTSTRAP_PACKAGES)
    with tempfile.TemporaryDirectory(prefix="wholeloop-bootstrap-") as tmp:
        root = Path(tmp) / "root"
        cmd = ["debootstrap", "--variant=minbase", f"--include={pkgs}", suite, str(root), mirror]
        if log:
            log(" ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
            raise ImageBuildError(f"debootstrap failed: {tail[-1] if tail else 'no output'}\n" + "\n".join(tail))
        # Caches and docs are a third of the size and nobody reads them in a sandbox.
        for sub in (
            "var/cache/apt/archives",
            "var/lib/apt/lists",
            "usr/share/doc",
            "usr/share/man",
            "usr/share/locale",
        ):
            shutil.rmtree(root / sub, ignore_errors=True)
        archive = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(archive), "."], check=True)
        repo, _, version = tag.rpartition(":")
        changes = [
            "ENV LANG=C.UTF-8",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            'CMD ["/bin/bash"]',
            f"LABEL wholeloop=1 wholeloop.tier=base wholeloop.bootstrap={suite}",
        ]
        with translate("importing the base image"):
            client().api.import_image_from_file(str(archive), repository=repo, tag=version, changes=changes)
            img = client().images.get(tag)
    return BuiltImage(tag, img.id, cached=False)


# ----------------------------------------------------------------------------- env tier


def env_image_tag(spec: EnvSpec, base_id: str) -> str:
    ca = Path(spec.ca_bundle).read_bytes() if spec.ca_bundle else b""
    key = {
        "format": IMAGE_FORMAT,
        "base": base_id,
        "setup": list(spec.setup),
        "env": list(spec.env),
        "ca": hashlib.sha256(ca).hexdigest() if ca else None,
        "network": spec.network,
        "venv": spec.python_venv,
    }
    return "wholeloop-env:" + _hash(key)


def env_image(spec: EnvSpec, log: LogFn | None = None) -> BuiltImage:
    """The environment image for `spec`, built once and reused while its inputs are unchanged."""
    base = base_image(spec, log)
    if spec.ca_bundle and not Path(spec.ca_bundle).is_file():
        raise InputError(
            f"CA bundle not found: {spec.ca_bundle}",
            hint="Set environment.trust_ca_bundle to a file that exists on this host, or to false.",
        )
    tag = env_image_tag(spec, base.id)
    lines = [f"FROM {base.id}"]
    files: dict[str, bytes] = {}
    if spec.ca_bundle:
        files["ca-bundle.crt"] = Path(spec.ca_bundle).read_bytes()
        lines.append(f"COPY ca-bundle.crt {CA_PATH}")
        lines.append("ENV " + " ".join(f"{name}={CA_PATH}" for name in CA_ENV))
    if spec.env:
        lines.append("ENV " + " ".join(f"{k}={json.dumps(v)}" for k, v in spec.env))
    if spec.python_venv:
        # Debian's system pip refuses to install (PEP 668); a venv first on PATH makes
        # `pip install` and `python` behave the way task authors expect.
        lines.append(
            "RUN if command -v python3 >/dev/null && [ ! -x /opt/venv/bin/python ] "
            "&& python3 -c 'import venv, ensurepip' 2>/dev/null; then python3 -m venv /opt/venv; fi"
        )
        lines.append("ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH")
    lines += [f"RUN {_shell(cmd)}" for cmd in spec.setup]
    return _build_cached(tag, lines, files, spec.network, log)


# ----------------------------------------------------------------------------- task tier


def task_image_tag(
    env: BuiltImage,
    snapshot: Snapshot,
    install: tuple[str, ...],
    network: bool,
    setups: tuple[tuple[str, str], ...] = (),
) -> str:
    key = {
        "format": IMAGE_FORMAT,
        "snapshot_format": SNAPSHOT_FORMAT,
        "env": env.id,
        "tree": snapshot.tree,
        "commit": snapshot.commit,
        "install": list(install),
        "network": network,
    }
    if setups:
        key["setups"] = [list(pair) for pair in setups]
    return "wholeloop-task:" + _hash(key)


def deps_image_tag(
    env: BuiltImage, deps: tuple[tuple[str, bytes], ...], install: tuple[str, ...], network: bool
) -> str:
    key = {
        "format": IMAGE_FORMAT,
        "env": env.id,
        "files": sorted((path, hashlib.sha256(data).hexdigest()) for path, data in deps),
        "install": list(install),
        "network": network,
    }
    return "wholeloop-deps:" + _hash(key)


def deps_image(
    env: BuiltImage, deps: tuple[tuple[str, bytes], ...], install: tuple[str, ...], network: bool, log: LogFn | None
) -> BuiltImage:
    """env + `deps` (repository path, content) at /repo + the install commands run on them alone:
    built once for every task whose files are the same."""
    tag = deps_image_tag(env, deps, install, network)
    lines = [f"FROM {env.id}", f"COPY deps/ {REPO_DIR}/", f"WORKDIR {REPO_DIR}"]
    lines += [f"RUN {_shell(cmd)}" for cmd in install]
    return _build_cached(tag, lines, {f"deps/{path}": data for path, data in deps}, network, log)


def task_image(
    env: BuiltImage,
    snapshot: Snapshot,
    install: tuple[str, ...],
    network: bool,
    log: LogFn | None = None,
    setups: tuple[tuple[str, str], ...] = (),
    deps: tuple[tuple[str, bytes], ...] = (),
) -> BuiltImage:
    """env + the snapshot at /repo + install commands, with install leftovers kept out of diffs.

    `setups` are (name, shell script) pairs run last, each one's standard output
    kept as FACTS_DIR/<name>.json (a test parser records which plugins the environment has, say):
    facts of the environment from before any agent, outside the repository.

    `deps` (repository path, content): the install commands run on these files alone, in a deps
    image shared by every task with the same files (`deps_image`), and the snapshot is copied over
    what they installed; the task tier then runs no install."""
    if deps:
        env = deps_image(env, deps, install, network, log)
        install = ()
    tag = task_image_tag(env, snapshot, install, network, setups)
    lines = [f"FROM {env.id}", f"COPY repo/ {REPO_DIR}/", f"WORKDIR {REPO_DIR}"]
    lines += [f"RUN {_shell(cmd)}" for cmd in install]
    # Files an install step leaves behind (egg-info, build/, caches) must not show up in the
    # agent's patch: list them in .git/info/exclude, which is not part of any commit.
    lines.append(
        "RUN git ls-files --others --exclude-standard --directory -z "
        "| xargs -0 -r printf '/%s\\n' >> .git/info/exclude"
        f" && printf '%s\\n' {' '.join(shlex.quote(p) for p in CACHE_PATTERNS)} >> .git/info/exclude"
    )
    for name, script in setups:
        target = f"{FACTS_DIR}/{name}.json"
        lines.append(
            f"RUN {_shell(f'mkdir -p {FACTS_DIR} && ( {script} ) > {target}.tmp && mv {target}.tmp {target}')}"
        )
    return _build_cached(tag, lines, {}, network, log, repo_dir=snapshot.path)


def existing_task_image(
    spec: EnvSpec,
    snapshot: Snapshot,
    install: tuple[str, ...],
    network: bool,
    setups: tuple[tuple[str, str], ...] = (),
    deps: tuple[tuple[str, bytes], ...] = (),
) -> BuiltImage | None:
    """The task image `env_image` + `task_image` would give for these inputs, if it exists now;
    None when any tier would have to be built (or pulled). Never builds anything."""
    with translate("looking up images"):
        try:
            if spec.dockerfile:
                base_id = client().images.get(_dockerfile_tag(Path(spec.dockerfile))).id
            else:
                base_id = client().images.get(spec.image).id
            if spec.ca_bundle and not Path(spec.ca_bundle).is_file():
                return None
            env_tag = env_image_tag(spec, base_id)
            env = BuiltImage(env_tag, client().images.get(env_tag).id, cached=True)
            if deps:
                deps_tag = deps_image_tag(env, deps, install, network)
                env, install = BuiltImage(deps_tag, client().images.get(deps_tag).id, cached=True), ()
            tag = task_image_tag(env, snapshot, install, network, setups)
            return BuiltImage(tag, client().images.get(tag).id, cached=True)
        except (docker.errors.ImageNotFound, InputError):
            return None


def export_images(tags: list[str]) -> bytes:
    """`docker save` of these tags as one archive (layers they share appear once)."""
    with translate("saving images"):
        api = client().api
        response = api._get(api._url("/images/get"), params={"names": tags}, stream=True)
        api._raise_for_status(response)
        return b"".join(response.iter_content(chunk_size=1 << 20))


def import_images(archive: bytes) -> None:
    """`docker load` of an archive made by `export_images`."""
    with translate("loading images"):
        for chunk in client().api.load_image(archive, quiet=True):
            if isinstance(chunk, dict) and chunk.get("error"):
                raise ImageBuildError(f"loading images: {chunk['error']}")


# ----------------------------------------------------------------------------- checks tier


def checks_image_tags(
    task_id: str, install: tuple[str, ...], base_run: tuple[str, ...], tools_dir: str | None = None
) -> tuple[str, str]:
    """The tags of the tools tier and of the checks layer of the task image `task_id`. With
    `tools_dir` the tools tier is built on the task image's environment (`tools_base`), so every
    task image of one environment shares one install; without, on the task image itself."""
    base_id = tools_base(task_id) if tools_dir else task_id
    tools = {"format": IMAGE_FORMAT, "task": base_id, "install": list(install)}
    if tools_dir:
        tools["dir"] = tools_dir
    tools_tag = "wholeloop-checktools:" + _hash(tools)
    base = {"format": IMAGE_FORMAT, "task": task_id, "tools": tools_tag, "base_run": list(base_run)}
    return tools_tag, "wholeloop-checks:" + _hash(base)


def tools_base(task_id: str) -> str:
    """The image the checking tools of task image `task_id` are installed on: its nearest ancestor
    that is a wholeloop environment image (`wholeloop-env:`, which brought its interpreters: Python,
    Node), so the task images of one environment (one a base commit) share one install; the task
    image itself when it has none (an image wholeloop did not build)."""
    with translate(f"reading the history of image {task_id}"):
        for entry in client().api.history(task_id):
            if any(str(t).startswith("wholeloop-env:") for t in entry.get("Tags") or ()):
                return str(entry["Id"])
    return task_id


def checks_image(
    image: str,
    install: tuple[str, ...],
    base_run: tuple[str, ...],
    log: LogFn | None = None,
    tools_dir: str | None = None,
) -> BuiltImage:
    """The task image + the repository's own checks (`install`, network on) + their run on the
    base tree (`base_run`, network off), in two builds; see `sandbox.base.Backend.checks_image`.
    With `tools_dir` (the folder `install` fills), the tools are installed once per environment
    (`tools_base`) and that folder is copied into the layer; an install that fails on the
    environment (its interpreter came with the task's own install) is done on the task image."""
    task_id = image_id(image)
    tools_tag, tag = checks_image_tags(task_id, install, base_run, tools_dir)
    run_base = [f"WORKDIR {REPO_DIR}", *(f"RUN {_shell(cmd)}" for cmd in base_run)]
    if tools_dir:
        base_id = tools_base(task_id)
        try:
            tools = _build_cached(tools_tag, [f"FROM {base_id}", *(f"RUN {_shell(c)}" for c in install)], {}, True, log)
        except ImageBuildError:
            if base_id == task_id:
                raise
            tools_dir = None  # the environment alone cannot install them: on the task image, as before
            tools_tag, tag = checks_image_tags(task_id, install, base_run)
    if tools_dir:
        lines = [f"FROM {task_id}", f"COPY --from={tools_tag} {tools_dir} {tools_dir}", *run_base]
    else:
        tools = _build_cached(tools_tag, [f"FROM {task_id}", *(f"RUN {_shell(c)}" for c in install)], {}, True, log)
        lines = [f"FROM {tools.id}", *run_base]
    built = _build_cached(tag, lines, {}, False, log)
    built.seconds += tools.seconds
    built.cached = built.cached and tools.cached
    return built


@dataclass
class ImageInfo:
    tier: str  # base | env | task | ?
    tags: list[str]
    id: str
    size_bytes: int


def list_images() -> list[ImageInfo]:
    """The images wholeloop made (every tier), sorted by tag."""
    with translate("listing images"):
        found = client().images.list(filters={"label": "wholeloop=1"})
    out = [
        ImageInfo(img.labels.get("wholeloop.tier", "?"), list(img.tags), img.id, int(img.attrs.get("Size", 0)))
        for img in found
    ]
    return sorted(out, key=lambda i: i.tags[0] if i.tags else "")


def remove_images(tiers: tuple[str, ...] = ("env", "task")) -> list[str]:
    """Remove wholeloop's images of these tiers (they rebuild on demand); returns their names."""
    removed = []
    for info in list_images():
        if info.tier in tiers:
            with translate("removing images"):
                client().images.remove(info.id, force=True)
            removed.append(", ".join(info.tags) or info.id[:19])
    return removed


def image_id(tag: str) -> str:
    """The id of a local image; raises ImageNotFound."""
    with translate(f"looking up image {tag}"):
        try:
            return client().images.get(tag).id
        except docker.errors.ImageNotFound:
            raise ImageNotFound(
                f"image {tag} is not present", hint="Build the base image: bash scripts/setup.sh"
            ) from None


def image_exists(tag: str) -> bool:
    with translate(f"looking up image {tag}"):
        try:
            client().images.get(tag)
            return True
        except docker.errors.ImageNotFound:
            return False


# ----------------------------------------------------------------------------- building


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextlib.contextmanager
def _build_lock(tag: str) -> Iterator[None]:
    """One build per tag across threads (a lock) and processes (an flock on a cache file)."""
    with _locks_guard:
        lock = _locks.setdefault(tag, threading.Lock())
    lock_dir = cache_dir() / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with lock, open(lock_dir / (tag.replace("/", "_").replace(":", "_") + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build_cached(
    tag: str, lines: list[str], files: dict[str, bytes], network: bool, log: LogFn | None, repo_dir: Path | None = None
) -> BuiltImage:
    with _build_lock(tag):
        with translate(f"looking up image {tag}"):
            try:
                return BuiltImage(tag, client().images.get(tag).id, cached=True)
            except docker.errors.ImageNotFound:
                pass
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data in {"Dockerfile": "\n".join(lines).encode() + b"\n", **files}.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            if repo_dir is not None:
                tar.add(str(repo_dir), arcname="repo", filter=_as_root)
        buf.seek(0)
        return _build(tag, buf, network, log)


def _build(
    tag: str, context: io.BytesIO, network: bool, log: LogFn | None, dockerfile: str = "Dockerfile"
) -> BuiltImage:
    import time

    started = time.monotonic()
    tail: list[str] = []  # the last lines, escape codes removed: for the error's summary
    whole: list[str] = []  # the build's output as it came: kept in a file when the build fails
    tier = tag.split(":")[0].removeprefix("wholeloop-")
    with translate(f"building image {tag}"):
        stream = client().api.build(
            fileobj=context,
            custom_context=True,
            dockerfile=dockerfile,
            tag=tag,
            rm=True,
            forcerm=True,
            decode=True,
            network_mode="bridge" if network else "none",
            labels={"wholeloop": "1", "wholeloop.tier": tier},
        )
        for chunk in stream:
            if "error" in chunk:
                whole.append(chunk["error"])
                tail.append(_plain(chunk["error"]))
                if log:
                    log(tail[-1])
                raise build_failure(tag, tail, log_file=_keep_log(tag, whole))
            text = chunk.get("stream", "")
            if len(whole) < _LOG_CHUNKS:
                whole.append(text)
            for line in _plain(text).splitlines():
                if line.strip():
                    tail = (tail + [line])[-50:]
                    if log:
                        log(line)
        img = client().images.get(tag)
    return BuiltImage(tag, img.id, cached=False, seconds=time.monotonic() - started, log_tail=tail)


# Lines of `docker build` output that say nothing about why a step failed.
_BUILD_NOISE = re.compile(
    r"^(Step \d+/\d+ :|---> |Removing intermediate container|Successfully |Sending build context)"
)
# pip's and uv's framing of a subprocess's failure (matched once the box-drawing characters in
# front are gone): says that something failed, never what.
_FRAMING = re.compile(
    r"^(\[end of output\]|\[\d+ lines of output\]|\[notice\]|hint: See above|See above for output"
    r"|note: This (error|is an issue)|error: subprocess-exited|error: metadata-generation-failed"
    r"|Encountered error while|.* did not run successfully|exit code: \d+|Getting requirements to build"
    r"|Preparing (editable )?metadata|Installing build dependencies|Building (editable|wheel)|Running command"
    r"|Checking if build backend|Obtaining file:|WARNING: )"
)
# A line that names an error: an exception, a tool's `error:` line, a missing module or command, a
# resolver that found no solution.
_ERROR_LINE = re.compile(
    r"(^|\s)(\w+(Error|Exception|Failure)\b:?|error:|ERROR:|E: |fatal:|No matching distribution"
    r"|Could not find|not found|No such file|no version of|unsatisfiable|No solution found)",
    re.I,
)
_BOX = " │║╰─>▶×┃┗━"
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\r")
_LOG_CHUNKS = 200_000  # stream chunks kept for the log file (docker sends about one per line)
_TLS_FAILURE = re.compile(
    r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|x509: certificate|SSL certificate problem"
    r"|unable to get local issuer certificate|self[- ]signed certificate",
    re.I,
)
TLS_HINT = (
    "the build could not verify a TLS certificate (a proxy that re-signs TLS?): set `trust_ca_bundle: true` "
    "in the task's environment to trust this host's CA bundle, or give the path of your CA bundle"
)


def _plain(text: str) -> str:
    """Text without terminal escape codes (pip colours its errors even into a pipe) or carriage
    returns; a line's framing characters kept (the summary drops whole framing lines)."""
    return _ANSI.sub("", text).rstrip()


def _keep_log(tag: str, chunks: list[str]) -> Path | None:
    """The whole output of a failed build, in wholeloop's log folder (its error names the file)."""
    import time

    folder = cache_dir() / "logs"
    path = folder / f"build-{tag.replace(':', '-').replace('/', '-')}-{time.strftime('%Y%m%d-%H%M%S')}.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(_plain(c) + ("\n" if not c.endswith("\n") else "") for c in chunks))
    except OSError:
        return None
    return path


def _cause(output: list[str]) -> list[str]:
    """The lines of a failing step's output that say why: the last lines naming an error (an
    exception's last line, `error: ...`), framing removed; else the last two lines of substance."""
    lines = [line.strip().lstrip(_BOX).strip() for line in output]
    lines = [line for line in lines if line and not _FRAMING.match(line)]
    errors = [line for line in lines if _ERROR_LINE.search(line)]
    if errors:
        return errors[-2:]
    return lines[-2:]


def build_failure(tag: str, tail: list[str], log_file: Path | None = None) -> ImageBuildError:
    """The error of a failed build. Its first line is the summary: the lines of the failing step that
    say why (an exception, a tool's error line; not pip's framing, not the step header, not the
    'returned a non-zero code' line alone), so a log or a results row that shows one line still says
    why; the end of the build log follows, and the file that holds all of it is named."""
    tail = [_plain(line) for line in tail]
    last_step = max((i for i, line in enumerate(tail) if line.lstrip().startswith("Step ")), default=-1)
    step = [line.strip() for line in tail[last_step + 1 :] if line.strip() and not _BUILD_NOISE.match(line.strip())]
    *output, error = step or [""]
    code = re.search(r"non-zero code: (\d+)", error)
    cause = _cause(output) if output else [error]
    summary = " | ".join(cause)[:600] + (f" (exit code {code.group(1)})" if code and output else "")
    tls = any(_TLS_FAILURE.search(line) for line in tail)
    hint = (
        TLS_HINT
        if tls
        else (
            "fix the setup/install commands in the task's environment (the end of the build log follows the first line)"
        )
    )
    where = f"the whole build log: {log_file}\n" if log_file is not None else ""
    return ImageBuildError(
        f"building {tag} failed: {summary or 'no output'}\n{where}" + "\n".join(tail[-25:]), hint=hint
    )


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _shell(cmd: str) -> str:
    # JSON exec form keeps multi-line commands and quoting exactly as written; /bin/sh because
    # not every image has bash. `set -e` so a failing line in a multi-line command fails the build.
    return json.dumps(["/bin/sh", "-c", "set -e\n" + cmd])


def _hash(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
