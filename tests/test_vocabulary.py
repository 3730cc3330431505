"""The outcome and stop-reason vocabularies: one type each, documented where users read them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.vocabulary import NOT_SCORED, REDO_OUTCOMES, Outcome, StopReason

ROOT = Path(__file__).resolve().parent.parent


def _table_words(doc: str, heading: str) -> set[str]:
    """The backquoted words of the first column of the table under `heading` in docs/outcomes.md."""
    section = doc.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    words: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            words |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return words


def test_every_outcome_and_stop_reason_is_documented_and_nothing_else():
    doc = (ROOT / "docs" / "outcomes.md").read_text()
    assert _table_words(doc, "Outcomes") == {o.value for o in Outcome}
    assert _table_words(doc, "Stop reasons") == {s.value for s in StopReason}


def test_records_and_readme_name_every_outcome():
    records = (ROOT / "docs" / "records.md").read_text()
    outcome_line = next(line for line in records.splitlines() if line.startswith("| `outcome` |"))
    assert set(re.findall(r"`([a-z_]+)`", outcome_line)) - {"outcome"} == {o.value for o in Outcome}
    readme = (ROOT / "README.md").read_text()
    for outcome in Outcome:
        assert f"`{outcome}`" in readme, outcome


def test_the_vocabularies_are_strings_that_records_keep_as_they_are():
    assert Outcome.resolved == "resolved" and f"{Outcome.infra_error}" == "infra_error"
    assert NOT_SCORED == {Outcome.infra_error, Outcome.task_error, Outcome.ungraded}
    assert REDO_OUTCOMES <= NOT_SCORED
    # outcomes and stop reasons share only the one word that names the same event in both
    assert {o.value for o in Outcome} & {s.value for s in StopReason} == {"infra_error"}


def test_a_bare_value_error_is_a_bug_not_a_usage_error():
    """The command line prints a UserError as one line (exit 2); a ValueError escaping a command is
    a bug of ours (exit 70, the traceback in a log), never shown as the user's mistake."""
    from harness.cli import _user_error

    assert _user_error(ValueError("an internal inconsistency")) is None
    problem = _user_error(UserError("the spec names no repository", hint="add repo:"))
    assert problem is not None and problem.message == "the spec names no repository" and problem.hint == "add repo:"


@pytest.mark.parametrize(
    "qualname",
    [
        "harness.tasks.spec.TaskSpecError",
        "harness.agents.config.AgentConfigError",
        "harness.agents.UnknownAgent",
        "harness.agents.external.config.ExternalConfigError",
        "harness.registry.UnknownName",
        "harness.records.RunFolderBusy",
        "harness.history.db.HistoryError",
        "harness.history.query.QueryError",
        "harness.authoring.gitrepo.MineError",
        "harness.authoring.swebench.SWEBenchError",
        "harness.run.regrade.RegradeError",
        "harness.models.errors.ModelConfigError",
        "harness.report.errors.ReportInputError",
    ],
)
def test_typed_input_errors_are_user_errors_not_value_errors(qualname):
    import importlib

    module, name = qualname.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, UserError) and not issubclass(cls, ValueError)
