"""The layering of docs/architecture.md, enforced: import contracts (import-linter, configured in
pyproject.toml), no module reaching into another's private names, and no getattr/hasattr on our
own objects standing in for a protocol method."""

from __future__ import annotations

import ast
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
