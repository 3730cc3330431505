"""The layering of docs/architecture.md, enforced: import contracts (import-linter, configured in
pyproject.toml), no module reaching into another's private names, no getattr/hasattr on our own
objects standing in for a protocol method; and the doc itself kept true: its list of parts, its
table of who imports whom and its list of edges into `sandbox` against the code."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "sandbox")

# getattr/hasattr calls that read attributes of objects that are not ours (SDK responses and
# errors, sockets, the standard library, plug-ins), each with the reason it cannot be a protocol.
FOREIGN_GETATTR = {
    "harness/models/anthropic_model.py": "anthropic SDK messages, streams and errors",
    "harness/models/openai_model.py": "openai SDK responses",
    "harness/models/openai_format.py": "openai / litellm SDK errors and their chained causes",
    "harness/models/retry.py": "any exception the retry policy sees (SDK or ours)",
    "harness/models/base.py": "SDK objects or plain dicts (the `field` helper)",
    "harness/usage.py": "Usage's own fields, by name",
    "harness/registry.py": "plug-in objects from entry points",
    "harness/cli/__init__.py": "the `hint` of an error of any family (sandbox, tasks, models, agents)",
    "harness/run/executors/ray_node.py": "tarfile's data_filter (Python versions differ)",
    "harness/data/pytest/wholeloop_test_limit.py": "the signal module of the task's Python (SIGRTMAX from 3.11 on)",
    "sandbox/docker/engine.py": "docker SDK errors",
    "sandbox/docker/exec_api.py": "the docker SDK's socket wrapper",
    "sandbox/docker/exec_fast.py": "the docker SDK's socket wrapper",
    "sandbox/docker/in_container.py": "OSError subclasses",
    "sandbox/snapshot.py": "GitPython errors",
}


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path, ast.parse(path.read_text(), filename=str(path))


def test_import_contracts_hold():
    linter = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "broken" in proc.stdout and " 0 broken" in proc.stdout


def test_no_module_uses_another_modules_private_names():
    found = []
    for path, tree in _modules():
        rel = path.relative_to(ROOT).as_posix()
        imported_modules: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in PACKAGES):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(
                            f"{rel}:{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}"
                        )
                    imported_modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in PACKAGES:
                        imported_modules.add((alias.asname or alias.name).split(".")[0])
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in imported_modules
            ):
                found.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_no_getattr_or_hasattr_stands_in_for_a_protocol():
    found = []
    for path, tree in _modules():
        rel = path.relative_to(ROOT).as_posix()
        if rel in FOREIGN_GETATTR:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
            ):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert not found, (
        "getattr/hasattr on our own objects (declare the attribute in the protocol instead, or, for an "
        "object that is not ours, list the file in FOREIGN_GETATTR with the reason):\n" + "\n".join(found)
    )


# ------------------------------------------------------------------------------------ the doc itself

DOC = ROOT / "docs" / "architecture.md"
# The one edge that goes up the table: `harness/__init__.py` loads the Python API on first attribute
# access (so that `import harness` stays cheap), while report, run, authoring and cli read its version.
UPWARD = {("harness", "harness.api")}


def _section(title: str) -> str:
    """The text of the doc's section `title` (a `##` or `###` heading), up to the next heading of its level."""
    lines = DOC.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if re.fullmatch(rf"(#+) {re.escape(title)}", line)]
    assert len(starts) == 1, f"docs/architecture.md needs one section {title!r}"
    level = lines[starts[0]].index(" ")
    body, fenced = [], False
    for line in lines[starts[0] + 1 :]:
        fenced ^= line.startswith("```")
        heading = not fenced and re.match(r"(#+) ", line)
        if heading and len(heading.group(1)) <= level:
            break
        body.append(line)
    return "\n".join(body) + "\n"


def _part(module: str) -> str:
    """The top-level part a module belongs to: harness.run.unit -> harness.run, harness -> harness."""
    return ".".join(module.split(".")[:2])


def _parts_on_disk() -> dict[str, str]:
    """{dotted part: its path as the doc writes it} for every top-level module and package."""
    parts = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).iterdir()):
            if path.is_dir() and (path / "__init__.py").exists():
                parts[f"{package}.{path.name}"] = f"{package}/{path.name}/"
            elif path.suffix == ".py":
                dotted = package if path.name == "__init__.py" else f"{package}.{path.stem}"
                parts[dotted] = f"{package}/{path.name}"
    return parts


def _real_edges() -> dict[str, set[str]]:
    """{part: the other parts it imports}, from import-linter's graph (every import, module level or in a function)."""
    import grimp

    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    edges: dict[str, set[str]] = {_part(m): set() for m in graph.modules}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if _part(imported) != _part(module):
                edges[_part(module)].add(_part(imported))
    return edges


def _import_table() -> list[tuple[str, set[str], set[str]]]:
    """The rows of the doc's import table, in order: (part, harness parts it imports, sandbox parts)."""
    rows = []
    for line in _section("Who imports whom").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 3, f"an import table row needs 3 cells: {line!r}"
        names = [re.findall(r"`([^`]+)`", cell) for cell in cells]
        assert len(names[0]) == 1, f"one part per row: {line!r}"
        harness, sandbox = set(names[1]), set(names[2])
        assert all(_part(n).split(".")[0] == "harness" for n in harness), f"harness column: {line!r}"
        assert all(_part(n).split(".")[0] == "sandbox" for n in sandbox), f"sandbox column: {line!r}"
        rows.append((names[0][0], harness, sandbox))
    return rows


def test_the_parts_list_names_every_top_level_module_and_package_and_nothing_else():
    block = re.search(r"```\n(.*?)```", _section("The parts"), re.S)
    assert block, "the parts are listed in a code block"
    listed = {line.split()[0] for line in block.group(1).splitlines() if re.match(r"(harness|sandbox)/", line)}
    on_disk = set(_parts_on_disk().values())
    assert not on_disk - listed, f"missing from docs/architecture.md's parts: {sorted(on_disk - listed)}"
    assert not listed - on_disk, f"docs/architecture.md lists parts that do not exist: {sorted(listed - on_disk)}"


def test_the_import_table_is_every_edge_between_parts_and_runs_downwards():
    rows = _import_table()
    documented = {part: harness | sandbox for part, harness, sandbox in rows}
    assert len(documented) == len(rows), "a part has two rows"
    real = _real_edges()
    assert set(documented) == set(_parts_on_disk()), (
        f"parts without a row: {sorted(set(_parts_on_disk()) - set(documented))}; "
        f"rows of no part: {sorted(set(documented) - set(_parts_on_disk()))}"
    )
    wrong = []
    for part in sorted(documented):
        missing, stale = real.get(part, set()) - documented[part], documented[part] - real.get(part, set())
        if missing:
            wrong.append(f"{part} imports {sorted(missing)}, not in its row")
        if stale:
            wrong.append(f"{part}'s row lists {sorted(stale)}, which it does not import")
    assert not wrong, "docs/architecture.md's import table is out of date:\n" + "\n".join(wrong)
    order = [part for part, _, _ in rows]
    upward = [
        f"{part} imports {imported}, listed above it"
        for part in order
        for imported in sorted(documented[part])
        if order.index(imported) < order.index(part) and (part, imported) not in UPWARD
    ]
    assert not upward, "the table runs downwards (a cycle, or reorder the rows):\n" + "\n".join(upward)
    assert all(imported in real[part] for part, imported in UPWARD), "an exception in UPWARD is gone: drop it"


def test_every_edge_into_sandbox_is_listed_with_what_it_is_for():
    listed: dict[str, set[str]] = {}
    for line in _section("Edges into sandbox").splitlines():
        match = re.match(r"- `(harness[\w.]*)`:", line)
        if match:
            current = listed.setdefault(match.group(1), set())
        if line.startswith(("- ", "  ")) and listed:
            current |= {n for n in re.findall(r"`([^`]+)`", line) if re.fullmatch(r"sandbox(\.\w+)?", n)}
    real = {
        part: {i for i in imported if i.split(".")[0] == "sandbox"}
        for part, imported in _real_edges().items()
        if part.split(".")[0] == "harness"
    }
    real = {part: imported for part, imported in real.items() if imported}
    assert set(listed) == set(real), (
        f"import sandbox but are not listed: {sorted(set(real) - set(listed))}; "
        f"listed but import no sandbox: {sorted(set(listed) - set(real))}"
    )
    wrong = {part: (sorted(real[part]), sorted(listed[part])) for part in real if real[part] != listed[part]}
    assert not wrong, f"sandbox parts each part imports (real, listed): {wrong}"


# The machine-level commands that are about the Docker engine itself (its base image, its images and
# containers, a test container): the only parts that name the Docker backend. Everything a run needs
# (images, facts, installs, status, disk room, pruning) goes through `sandbox.base.Backend`.
DOCKER_SPECIFIC_PARTS = {"harness.cli", "harness.doctor"}


def test_only_the_machine_commands_import_the_docker_backend():
    """A sandbox backend is one file plus one registry line (`harness.sandboxes`): no part of the
    harness that runs, grades, installs or checks, and no part of `sandbox` but `sandbox.docker`
    itself, imports `sandbox.docker` (any import, module level or in a function)."""
    importers = {part for part, imported in _real_edges().items() if "sandbox.docker" in imported}
    assert importers <= DOCKER_SPECIFIC_PARTS, (
        f"import sandbox.docker instead of taking a backend: {sorted(importers - DOCKER_SPECIFIC_PARTS)}"
    )


# ------------------------------------------------------------------------------------ the tests' own layering


def test_no_test_module_imports_another_or_the_conftest():
    """Shared helpers live in tests/support (fixtures in tests/conftest.py): a test module imported
    by another runs its autouse fixtures and module-level code where nobody asked for them."""
    tests = ROOT / "tests"
    ours = {p.stem for p in tests.glob("test_*.py")} | {"conftest"}
    found = []
    for path in sorted(tests.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found += [f"{path.name}:{node.lineno}: {name}" for name in names if name.split(".")[0] in ours]
    assert not found, "test modules importing test modules (move the helper to tests/support):\n" + "\n".join(found)
