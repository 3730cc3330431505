"""Authoring a suite: the pipelines that build and check task specs (a package above grading and runs).

- `mine`: commits of a repository's history -> task specs (`wholeloop mine`, `tasks from-commit`)
- `check`: `tasks check`, each spec's base and gold phases in the sandbox; the only writer of
  `<spec>.check.json`
- `environment`: a repository's environment, inferred from what it declares and resolved with uv
- `secrets`: the secret scan every mined or imported task passes
- `statements`: problem statements (commit message, an issue export, a model)
- `swebench`: SWE-bench instances in, predictions out
- `gitrepo`: read-only git for all of them

The task model they write (`Task`, the spec format) is `harness.tasks`, a leaf that grading, agents and
runs import; nothing of those imports this package.
"""
