#!/usr/bin/env python3
"""Show that two runs of the same suite behaved the same: results.jsonl, every grade.json and the
`wholeloop report` output, compared with times, ids, dates and paths left out.

    python scripts/compare_runs.py BEFORE_RUN AFTER_RUN [--report-before FILE] [--report-after FILE]

A refactoring that claims "behaviour unchanged" runs the gold, noop and replay demo before and
after and compares each pair with this script (exit 0: the same; 1: differences, printed). The
report text is taken from FILE when given (e.g. the report of the old code), else by running
`wholeloop report RUN` with this checkout's code. Reads only the run folders' files (no harness
import), so an old and a new version of wholeloop are compared on equal terms.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Fields of a results row that differ between any two runs by nature.
ROW_VOLATILE = {"run_id", "started_at", "finished_at", "node"}
# Every phase field: seconds vary, and whether images were cached depends on what ran before.
GRADE_VOLATILE = {"seconds"}


def _rows(run: Path) -> list[dict]:
    rows = []
    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        for key in ROW_VOLATILE:
            row.pop(key, None)
        row.pop("phases", None)
        rows.append(row)
    return sorted(rows, key=lambda r: (r["task_id"], r.get("config", ""), r.get("repeat", 0), r.get("attempt", 1)))


def _grades(run: Path) -> dict[str, dict]:
    out = {}
    for path in sorted((run / "attempts").rglob("grade.json")):
        grade = json.loads(path.read_text())
        for key in GRADE_VOLATILE:
            grade.pop(key, None)
        out[str(path.relative_to(run))] = grade
    return out


_NUMBER_S = re.compile(r"\b\d+(\.\d+)?(ms|s|m|h)\b")  # 3.5s, 120ms, 1m ...
_CLOCK = re.compile(r"\b\d+:\d\d(:\d\d)?\b")
_DATE = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d)?(\.\d+)?(\+\d\d:\d\d|Z)?")
_HEX = re.compile(r"\b[0-9a-f]{12,40}(-dirty)?\b")
# The checkout a run was started from (`python -m harness.cli` records its path as argv[0]), and a
# box's rule, whose width follows its longest line: where the code lives, not what it did.
_CHECKOUT = re.compile(r"\S*/harness/cli/__main__\.py")
_RULE = re.compile(r"─{2,}")


def normalise_report(text: str, run: Path) -> list[str]:
    text = text.replace(str(run), "<run>").replace(run.name, "<run>")
    text = _DATE.sub("<date>", text)
    text = _NUMBER_S.sub("<t>", text)
    text = _CLOCK.sub("<t>", text)
    text = _HEX.sub("<hex>", text)
    text = _CHECKOUT.sub("wholeloop", text)
    text = _RULE.sub("─", text)
    lines = []
    for line in text.splitlines():
        if "wholeloop " in line and ("commit" in line or "version" in line):
            continue  # the recipe's own version line: it is what changed
        lines.append(re.sub(r"\s+", " ", line).strip())
    return [line for line in lines if line]


def _report(run: Path, given: Path | None) -> str:
    if given is not None:
        return given.read_text()
    exe = Path(sys.executable).with_name("wholeloop")
    proc = subprocess.run(
        [str(exe), "report", str(run)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    return proc.stdout + proc.stderr


def compare(
    before: Path, after: Path, report_before: Path | None = None, report_after: Path | None = None
) -> list[str]:
    problems: list[str] = []
    rows_a, rows_b = _rows(before), _rows(after)
    if len(rows_a) != len(rows_b):
        problems.append(f"results.jsonl: {len(rows_a)} rows before, {len(rows_b)} after")
    for a, b in zip(rows_a, rows_b):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                problems.append(
                    f"results.jsonl {a['task_id']} attempt {a.get('attempt')}: {key}: "
                    f"{json.dumps(a.get(key))[:300]} != {json.dumps(b.get(key))[:300]}"
                )
    grades_a, grades_b = _grades(before), _grades(after)
    if grades_a != grades_b:
        for name in sorted(set(grades_a) | set(grades_b)):
            if grades_a.get(name) != grades_b.get(name):
                problems.append(f"{name} differs: {grades_a.get(name)} != {grades_b.get(name)}")
    text_a = normalise_report(_report(before, report_before), before)
    text_b = normalise_report(_report(after, report_after), after)
    if text_a != text_b:
        problems.append(
            "report differs:\n" + "\n".join(difflib.unified_diff(text_a, text_b, "before", "after", lineterm=""))
        )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--report-before", type=Path, help="the report of BEFORE as text (default: run it now)")
    parser.add_argument("--report-after", type=Path, help="the report of AFTER as text (default: run it now)")
    args = parser.parse_args(argv)
    problems = compare(args.before, args.after, args.report_before, args.report_after)
    for problem in problems:
        print(problem)
    n_rows = len(_rows(args.after))
    print(
        f"{'SAME' if not problems else 'DIFFERENT'}: {args.before} vs {args.after} "
        f"({n_rows} rows, {len(_grades(args.after))} grades, report compared)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
