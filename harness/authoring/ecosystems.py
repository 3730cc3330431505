"""Which ecosystem a repository is, from its files, when no wholeloop.yaml says: the test parser
mining uses, and for Go, Rust and JavaScript the environment (Python's is environment.py's).

The root of the tree decides, in this order: Python packaging (pyproject.toml, setup.py,
setup.cfg) -> python; go.mod -> go; Cargo.toml -> rust; package.json -> javascript (Vitest or
Jest, from its devDependencies, dependencies and `test` script); .go files without go.mod are refused
(a GOPATH-era package: module mode cannot build it); else requirements*.txt, tox.ini,
noxfile.py or any .py file -> python. Nothing recognisable is refused (`UnsupportedRepository`)
naming what was found, with a wholeloop.yaml template to fill in.

What a detected Go, Rust or JavaScript repository gets is what `defaults` returns: every key of it
is one a wholeloop.yaml could give, and any key the file gives wins (`complete`). Go: Debian's
golang-go (1.19), or bookworm-backports' golang-1.NN-go (1.21 to 1.23) when go.mod's `go` line asks
for more, no module proxy (GOPROXY=off), GOTOOLCHAIN=local, CGO_ENABLED=0 (the image installs no C
compiler), GOFLAGS=-mod=vendor when vendor/modules.txt exists, tests built and run with -vet=off
(a vet finding is not a test result: harness/parsers/go.py); a go.mod whose `go` line is newer than
that is refused in one line (`ToolchainTooOld`), and one requiring modules without vendor/ is
refused naming them, unless wholeloop.yaml brings its own image, Dockerfile or setup.
JavaScript: the package manager from `packageManager`, else the lockfile (npm ci, pnpm install
--frozen-lockfile, yarn classic's --frozen-lockfile; yarn berry and bun refused without `install:`),
the Node major from `engines.node`, `devEngines`, `volta`, `.nvmrc` or `.node-version`, raised to what
the lock file's packages accept (their `engines`): above Debian's, the npm registry's `node` package
is installed globally in the setup. A test runner that only the `test` script names (no dependency,
dev, peer or optional, provides it: a package published out of a monorepo) is refused naming it,
unless wholeloop.yaml gives a setup or install. With a lock file and no workspace, `dependency_files` lets every
task of one lock file share one install (the deps image tier). Rust: Debian's rustc-web/cargo-web,
offline; a crate with no Cargo.lock gets what its Cargo.toml names from Debian's packaged crates
(librust-NAME-dev, /usr/share/cargo/registry as crates.io's replacement); one whose Cargo.lock
needs registry or git crates without a vendored directory source is refused naming them.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field

from .environment import CONFIG_NAME, EnvironmentNotInferred, RepoConfig
from .gitrepo import GitRepo

#: Debian bookworm's nodejs: a repository asking for a newer major gets the npm registry's `node`.
DEBIAN_NODE = 18
#: Debian bookworm's golang-go (what `defaults` installs): a go.mod asking for more gets backports' Go.
DEBIAN_GO = (1, 19)
#: the Go minor versions bookworm-backports carries (golang-1.NN-go); a go.mod asking for more is refused
BACKPORTS_GO = (21, 22, 23)
BACKPORTS = "deb http://deb.debian.org/debian bookworm-backports main"
PYTHON_PACKAGING = ("pyproject.toml", "setup.py", "setup.cfg")
PYTHON_OTHER = ("tox.ini", "noxfile.py", "Pipfile")
NPM_LOCKS = ("package-lock.json", "npm-shrinkwrap.json")
OTHER_LOCKS = {"pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "bun.lockb": "bun", "bun.lock": "bun"}
_GO_LINE = re.compile(r"^go\s+(\d+)\.(\d+)", re.MULTILINE)

TEMPLATE = f"""\
# {CONFIG_NAME}: beside the repository (or committed in it); every key is in docs/tasks.md
setup:             # commands that install the toolchain (network on)
  - apt-get update && apt-get install -y --no-install-recommends TOOLCHAIN
install:           # commands run in the repository (network on): dependencies, a build
  - BUILD
test_command: TEST {{files}}   # {{files}}: the test files a commit touches
parser: PARSER     # one of: PARSERS
"""


def _apt(*packages: str) -> str:
    return f"apt-get update && apt-get install -y --no-install-recommends {' '.join(packages)} && rm -rf /var/lib/apt/lists/*"


class UnsupportedRepository(EnvironmentNotInferred):
    """Nothing in the repository says which language it is, or it is one mining cannot set up."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        from ..parsers import PARSERS  # (the registry imports nothing of authoring)

        self.hint = hint or f"write {CONFIG_NAME} saying how to build and test it, for example:\n" + TEMPLATE.replace(
            "PARSERS", ", ".join(PARSERS.names())
        )


class ToolchainTooOld(EnvironmentNotInferred):
    """The repository asks for a newer toolchain than the one mining would install."""

    hint = (
        f"Give {CONFIG_NAME} an `image:`, `dockerfile:` or `setup:` with a newer toolchain; "
        "see docs/tasks.md (Go, TypeScript and Rust)."
    )


@dataclass
class Detected:
    language: str  # python, go, rust, javascript
    parser: str
    marker: str  # the file that decided
    found: list[str] = field(default_factory=list)  # what else was seen (for messages)


def _root_names(repo: GitRepo, commit: str) -> tuple[set[str], bool]:
    names = {path for _, path in repo.files(commit)}
    root = {p for p in names if "/" not in p}
    return root | {p for p in names if p.startswith("vendor/modules.txt")}, any(p.endswith(".py") for p in names)


def _package_json(repo: GitRepo, commit: str) -> dict:
    blob = repo.read(commit, "package.json")
    try:
        data = json.loads(blob or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _js_deps(pkg: dict, keys: tuple[str, ...] = ("dependencies", "devDependencies")) -> dict:
    deps: dict = {}
    for key in keys:
        if isinstance(pkg.get(key), dict):
            deps.update(pkg[key])
    return deps


def _js_runner(pkg: dict) -> str | None:
    deps = _js_deps(pkg)
    scripts = pkg.get("scripts")
    test = str(scripts.get("test", "")) if isinstance(scripts, dict) else ""
    for runner in ("vitest", "jest"):
        if runner in deps or re.search(rf"\b{runner}\b", test):
            return runner
    return None


def detect(repo: GitRepo, commit: str) -> Detected:
    """The ecosystem of `repo` at `commit` (see the module docstring). Raises UnsupportedRepository."""
    root, has_py = _root_names(repo, commit)
    for marker in PYTHON_PACKAGING:
        if marker in root:
            return Detected("python", "pytest", marker)
    if "go.mod" in root:
        return Detected("go", "go", "go.mod")
    go_files = sorted(p for p in root if p.endswith(".go"))
    if go_files and not any(p in root for p in ("Cargo.toml", "package.json")):
        shown = ", ".join(go_files[:3]) + (", ..." if len(go_files) > 3 else "")
        raise UnsupportedRepository(
            f"{repo.source}: Go sources ({shown}) but no go.mod at {commit[:10]}: a package of the GOPATH "
            "era, which `go build` in module mode refuses; commit a go.mod (`go mod init IMPORT/PATH`)"
        )
    if "Cargo.toml" in root:
        return Detected("rust", "cargo", "Cargo.toml")
    if "package.json" in root:
        pkg = _package_json(repo, commit)
        runner = _js_runner(pkg)
        if runner is None:
            test = (pkg.get("scripts") or {}).get("test") if isinstance(pkg.get("scripts"), dict) else None
            said = f"its test script is {test!r}" if test else "it has no test script"
            raise UnsupportedRepository(
                f"{repo.source}: package.json found, but neither Vitest nor Jest in its dependencies "
                f"or test script ({said}): no test parser for it"
            )
        return Detected("javascript", runner, "package.json")
    requirements = sorted(p for p in root if re.fullmatch(r"requirements[^/]*\.(txt|in)", p))
    for marker in [*requirements, *PYTHON_OTHER]:
        if marker in root:
            return Detected("python", "pytest", marker)
    if has_py:
        return Detected("python", "pytest", "*.py")
    seen = sorted(root)[:8]
    listed = ", ".join(seen) + (", ..." if len(root) > len(seen) else "") if seen else "no files"
    raise UnsupportedRepository(
        f"{repo.source}: no language recognised at {commit[:10]} (none of pyproject.toml, setup.py, "
        f"setup.cfg, go.mod, Cargo.toml, package.json, requirements*.txt, *.py; found {listed})"
    )


def _go_requires(text: str) -> list[str]:
    """The modules go.mod requires (single lines and blocks, indirect ones too), less those a
    `replace` points at a directory of the repository."""
    text = re.sub(r"//[^\n]*", "", text)
    local = {m.group(1) for m in re.finditer(r"^\s*(?:replace\s+)?(\S+)(?:\s+\S+)?\s*=>\s*\.{1,2}/", text, re.M)}
    required: list[str] = []
    for block in re.finditer(r"^require\s*\(([^)]*)\)", text, re.M):
        required += [line.split()[0] for line in block.group(1).splitlines() if line.split()]
    required += re.findall(r"^require\s+([^\s(]+)\s+\S+", text, re.M)
    return sorted({r for r in required if r not in local})


def _cargo_fetched(lock: str) -> list[str]:
    """ "name version" of every Cargo.lock package with a `source` (a registry or git): what an
    offline build needs from elsewhere."""
    out = []
    for block in lock.split("[[package]]")[1:]:
        fields = dict(re.findall(r'^(name|version|source)\s*=\s*"([^"]*)"', block, re.M))
        if "source" in fields:
            out.append(f"{fields.get('name', '?')} {fields.get('version', '?')}")
    return out


def _cargo_toml_fetched(text: str) -> list[str]:
    """With no Cargo.lock: the crates Cargo.toml's dependency tables (target ones too) name that are
    not a path in the repository (optional ones too: cargo resolves them all to write the lock file)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    tables = [data]
    targets = data.get("target")
    if isinstance(targets, dict):
        tables += [t for t in targets.values() if isinstance(t, dict)]
    out = set()
    for table in tables:
        for kind in ("dependencies", "dev-dependencies", "build-dependencies"):
            deps = table.get(kind)
            for name, spec in deps.items() if isinstance(deps, dict) else []:
                if isinstance(spec, dict) and ("path" in spec or spec.get("workspace")):
                    continue
                if isinstance(spec, dict) and isinstance(spec.get("package"), str):
                    name = spec["package"]  # a renamed dependency: the crate is `package`
                out.add(name)
    return sorted(out)


#: Debian's packaged crates (librust-*-dev) live here, each as a directory source cargo can read offline
DEBIAN_CARGO_REGISTRY = "/usr/share/cargo/registry"


def _debian_crates_setup(crates: list[str]) -> str:
    """Install Debian's packages of `crates` and make their registry crates.io's replacement, in a
    cargo config at / (cargo reads the config files of every folder above the repository)."""
    packages = [f"librust-{c.replace('_', '-').lower()}-dev" for c in crates]
    config = (
        f"[source.crates-io]\\nreplace-with = 'debian'\\n[source.debian]\\ndirectory = '{DEBIAN_CARGO_REGISTRY}'\\n"
    )
    # every crate Debian does not package named at once, with the way out, before installing any
    # (apt would stop at the first one it cannot locate, saying nothing of what to do); short: a
    # quarantine keeps 200 characters of the build's first line
    pairs = " ".join(f"{c}={p}" for c, p in zip(crates, packages, strict=True))
    check = (
        f"missing=''; for pair in {pairs}; do apt-cache show \"${{pair#*=}}\" >/dev/null 2>&1 || "
        'missing="${missing:+$missing, }${pair%%=*}"; done; if [ -n "$missing" ]; then echo "error: Debian '
        f"packages no crate named $missing: vendor them (cargo vendor) or give {CONFIG_NAME} a setup that "
        'provides them"; exit 1; fi'
    )
    return (
        "apt-get update || exit 1; "  # (not an && list: under set -e its failure would not stop the shell)
        + check
        + " && "
        + _apt(*packages).removeprefix("apt-get update && ")
        + f' && mkdir -p /.cargo && printf "{config}" > /.cargo/config.toml'
    )


def _cargo_vendored(repo: GitRepo, commit: str) -> bool:
    """Does the repository's cargo configuration replace crates.io with a directory source?"""
    for name in (".cargo/config.toml", ".cargo/config"):
        text = (repo.read(commit, name) or b"").decode("utf-8", "replace")
        if re.search(r"replace-with\s*=", text) and re.search(r"^directory\s*=", text, re.M):
            return True
    return False


def _go_version(text: str) -> tuple[int, int] | None:
    match = _GO_LINE.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def defaults(repo: GitRepo, commit: str, detected: Detected, config: RepoConfig) -> dict:
    """The wholeloop.yaml keys a detected Go, Rust or JavaScript repository gets at `commit`
    ({} for Python: environment.py infers it). Raises ToolchainTooOld / UnsupportedRepository."""
    root, _ = _root_names(repo, commit)
    own_toolchain = config.image is not None or config.dockerfile is not None or config.setup is not None
    if detected.language == "go":
        wanted = _go_version((repo.read(commit, "go.mod") or b"").decode("utf-8", "replace"))
        setup = [_apt("golang-go")]
        if wanted and wanted > DEBIAN_GO and not own_toolchain:
            minor = next((m for m in BACKPORTS_GO if wanted <= (1, m)), None)
            if wanted[0] != 1 or minor is None:
                raise ToolchainTooOld(
                    f"{repo.source} at {commit[:10]}: go.mod asks for Go {wanted[0]}.{wanted[1]}; the newest Go "
                    f"of Debian bookworm (with bookworm-backports) is 1.{BACKPORTS_GO[-1]}"
                )
            go = f"/usr/lib/go-1.{minor}/bin"
            setup = [
                f"echo '{BACKPORTS}' > /etc/apt/sources.list.d/backports.list && "
                + _apt(f"golang-1.{minor}-go")
                + f" && ln -sf {go}/go /usr/local/bin/go && ln -sf {go}/gofmt /usr/local/bin/gofmt"
            ]
        needed = _go_requires((repo.read(commit, "go.mod") or b"").decode("utf-8", "replace"))
        if needed and "vendor/modules.txt" not in root and not own_toolchain and "GOPROXY" not in config.env:
            raise UnsupportedRepository(
                f"{repo.source} at {commit[:10]}: go.mod requires {', '.join(needed)}, which no module proxy "
                "this machine reaches serves, and the repository has no vendor/ (`go mod vendor` makes one)",
                hint=f"give {CONFIG_NAME} a module proxy the image build reaches, `env: {{GOPROXY: URL}}` "
                "(the install runs with the network on and the modules stay in the image for grading), "
                "or mine a history whose commits have vendor/; see docs/tasks.md (Go, TypeScript and Rust)",
            )
        env = {"GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local"}
        if not own_toolchain:
            env["CGO_ENABLED"] = "0"  # golang-go without its recommends: no C compiler
        if "vendor/modules.txt" in root:
            env["GOFLAGS"] = "-mod=vendor"
        return {
            "setup": setup,
            "env": env,
            # compile every package and test binary into the build cache, running no test; no vet
            # gate: its findings are not test results (the parser's test command, harness/parsers/go.py)
            "install": ["go build ./... && go test -vet=off -count=1 -run '^$' ./... >/dev/null"],
            "visible_test_command": "go test -vet=off ./...",
        }
    if detected.language == "rust":
        locked = " --locked" if "Cargo.lock" in root else ""
        if "Cargo.lock" in root:
            where = "Cargo.lock"
            fetched = _cargo_fetched((repo.read(commit, "Cargo.lock") or b"").decode("utf-8", "replace"))
        else:
            where = "Cargo.toml"
            fetched = _cargo_toml_fetched((repo.read(commit, "Cargo.toml") or b"").decode("utf-8", "replace"))
        debian = []
        if fetched and not own_toolchain and not _cargo_vendored(repo, commit) and where == "Cargo.toml":
            # no lock file to honour: Debian's packaged crates, of the versions bookworm carries
            debian = [_debian_crates_setup(fetched)]
        elif fetched and not own_toolchain and not _cargo_vendored(repo, commit):
            shown = ", ".join(fetched[:6]) + (f" and {len(fetched) - 6} more" if len(fetched) > 6 else "")
            raise UnsupportedRepository(
                f"{repo.source} at {commit[:10]}: {where} needs {shown} from a registry or git, which "
                "cargo cannot fetch offline; vendor them (`cargo vendor` and its .cargo/config.toml source), "
                f"or give {CONFIG_NAME} a setup that provides them"
            )
        return {
            "setup": [
                _apt("rustc-web", "cargo-web"),
                *debian,
            ],  # bookworm's rustc/cargo (1.63) are too old for most crates
            "env": {"CARGO_NET_OFFLINE": "true", "CARGO_TERM_COLOR": "never"},
            "install": [f"cargo test --offline{locked} --no-run"],
            "visible_test_command": "cargo test --offline",
        }
    if detected.language == "javascript":
        return _javascript(repo, commit, root, detected, config)
    return {}


# an `engines` entry of a lock file: pnpm's `engines: {node: '>=18'}` (or block style), npm's "engines": {"node": ...}
_LOCK_ENGINES = re.compile(
    r"""engines"?\s*:\s*(?:\{[^}\n]*?|\{\s*|\n\s*)"?node"?\s*:\s*['"]?([^'"},\n]+)""", re.IGNORECASE
)


def _lowest_major(text: str) -> int | None:
    """The lowest Node major a range accepts: "^20.19.0 || >=22.12.0" gives 20, "v20.11.1" 20,
    ">=18" 18; None when it names no lower bound ("*", "lts/*", "<14")."""
    lows = []
    for alternative in text.split("||"):
        alternative = alternative.strip()
        match = re.match(r"^[\^~>=v\s]*(\d+)", alternative)
        if match is None:
            return None  # an alternative with no lower bound: any Node will do for it
        lows.append(int(match.group(1)))
    return min(lows) if lows else None


def _lock_node_major(repo: GitRepo, commit: str, root: set[str]) -> tuple[int, str] | None:
    """The Node major every package of the lock file accepts (the highest of their lowest), and
    the lock file; pnpm's and npm's lock files record each package's `engines` (yarn's do not)."""
    for lock in ("pnpm-lock.yaml", *NPM_LOCKS):
        if lock in root:
            text = (repo.read(commit, lock) or b"").decode("utf-8", "replace")
            majors = [m for m in (_lowest_major(r) for r in _LOCK_ENGINES.findall(text)) if m is not None]
            return (max(majors), f"{lock} (engines of its packages)") if majors else None
    return None


def _node_major(repo: GitRepo, commit: str, root: set[str], pkg: dict) -> tuple[int, str] | None:
    """The Node major the repository needs, and why: the first of `engines.node`, `devEngines`'
    node runtime, `volta.node`, `.nvmrc` and `.node-version` that names one (its lowest major:
    ">=20" and "v20.11.1" give 20; "lts/*" none), raised to what the lock file's packages need."""
    candidates: list[tuple[str, str]] = []
    engines = pkg.get("engines")
    if isinstance(engines, dict):
        candidates.append((str(engines.get("node", "")), "package.json engines.node"))
    dev = pkg.get("devEngines")
    runtimes = dev.get("runtime") if isinstance(dev, dict) else None
    for runtime in runtimes if isinstance(runtimes, list) else [runtimes]:
        if isinstance(runtime, dict) and runtime.get("name") == "node":
            candidates.append((str(runtime.get("version", "")), "package.json devEngines.runtime"))
    volta = pkg.get("volta")
    if isinstance(volta, dict):
        candidates.append((str(volta.get("node", "")), "package.json volta.node"))
    for name in (".nvmrc", ".node-version"):
        if name in root:
            candidates.append(((repo.read(commit, name) or b"").decode("utf-8", "replace").strip(), name))
    declared = None
    for text, where in candidates:
        major = _lowest_major(text) if text else None
        if major is not None:
            declared = (major, where)
            break
    locked = _lock_node_major(repo, commit, root)
    if declared is None or (locked is not None and locked[0] > declared[0]):
        return locked
    return declared


def _package_manager(root: set[str], pkg: dict) -> tuple[str, str | None]:
    """(npm, pnpm or yarn, the version `packageManager` pins or None), from `packageManager`, else the lockfile."""
    declared = pkg.get("packageManager")
    if isinstance(declared, str) and "@" in declared:
        name, _, version = declared.partition("@")
        return name, version.split("+", 1)[0] or None
    for lock, name in OTHER_LOCKS.items():
        if lock in root:
            return name, None
    return "npm", None


def _javascript(repo: GitRepo, commit: str, root: set[str], detected: Detected, config: RepoConfig) -> dict:
    pkg = _package_json(repo, commit)
    manager, version = _package_manager(root, pkg)
    berry = manager == "yarn" and (".yarnrc.yml" in root or (version is not None and not version.startswith("1.")))
    if config.install is None and (manager not in ("npm", "pnpm", "yarn") or berry):
        raise UnsupportedRepository(
            f"{repo.source} at {commit[:10]}: package.json installed with {'yarn berry' if berry else manager}; "
            f"only npm, pnpm and yarn classic are installed without {CONFIG_NAME} yet"
        )
    provided = _js_deps(pkg, ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"))
    if detected.parser not in provided and config.install is None and config.setup is None:
        # (a package published from a monorepo: its runner lives in the workspace root's package.json)
        raise UnsupportedRepository(
            f"{repo.source} at {commit[:10]}: package.json's test script runs {detected.parser}, but no dependency "
            f"of package.json provides it, so nothing would install it; add it to devDependencies, or give "
            f"{CONFIG_NAME} a setup or install that does"
        )
    globals_ = []
    node = _node_major(repo, commit, root, pkg)
    if node and node[0] > DEBIAN_NODE:
        globals_.append(f"node@{node[0]}")  # the npm registry's node package: /usr/local/bin first on PATH
    if manager == "pnpm":
        globals_.append(f"pnpm@{version or 'latest'}")
        install = "pnpm install --frozen-lockfile"
    elif manager == "yarn":
        globals_.append(f"yarn@{version or '1'}")
        install = "yarn install --frozen-lockfile"
    else:
        install = "npm ci" if any(p in root for p in NPM_LOCKS) else "npm install"
    setup = [_apt("nodejs", "npm")] + ([f"npm install -g {' '.join(globals_)}"] if globals_ else [])
    out = {
        "setup": setup,
        "env": {"NPM_CONFIG_UPDATE_NOTIFIER": "false"},
        "install": [install],
        "visible_test_command": "npx vitest run" if detected.parser == "vitest" else "npx jest",
    }
    shared = _dependency_files(repo, commit, root, pkg, manager)
    if shared and config.install is None:
        out["dependency_files"] = shared
    return out


def _dependency_files(repo: GitRepo, commit: str, root: set[str], pkg: dict, manager: str) -> list[str] | None:
    """What the detected install reads, when it reads nothing else: package.json (the image keeps
    only the keys an install reads), the lock file and the manager's settings. None (each task
    installs with the whole repository) without a lock file, or with workspaces or a pnpmfile."""
    lock = {"pnpm": ["pnpm-lock.yaml"], "yarn": ["yarn.lock"]}.get(manager, list(NPM_LOCKS))
    locks = [name for name in lock if name in root]
    if not locks or "workspaces" in pkg or ".pnpmfile.cjs" in root:
        return None
    files = ["package.json", *locks]
    if "pnpm-workspace.yaml" in root:
        settings = (repo.read(commit, "pnpm-workspace.yaml") or b"").decode("utf-8", "replace")
        if re.search(r"^packages\s*:", settings, re.MULTILINE):
            return None  # a workspace: its packages' files are needed too
        files.append("pnpm-workspace.yaml")  # pnpm 10's settings (onlyBuiltDependencies, ...)
    return files + [name for name in (".npmrc", ".yarnrc") if name in root]


def complete(config: RepoConfig, repo: GitRepo, commit: str, parser: str) -> tuple[RepoConfig, str | None]:
    """`config` with what a detected Go, Rust or JavaScript repository needs filled in where it
    gives nothing (its env merged under its own), and the file that decided (None: nothing added:
    Python, or a parser that is not the detected ecosystem's)."""
    try:
        detected = detect(repo, commit)
    except UnsupportedRepository:
        if config.setup is not None or config.install is not None:
            return config, None  # the file says how: nothing to detect
        raise
    if detected.parser != parser:
        return config, None
    keys = defaults(repo, commit, detected, config)
    if not keys:
        return config, None
    given = config.model_dump(exclude_none=True)
    update = {k: v for k, v in keys.items() if k != "env" and k not in given}
    update["env"] = {**keys["env"], **config.env}
    return config.model_copy(update=update), f"{detected.marker} (detected: {detected.language})"
