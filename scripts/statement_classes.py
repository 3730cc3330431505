#!/usr/bin/env python3
"""The problem statements mining would give a repository's candidate commits, and their classes.

    python scripts/statement_classes.py REPO [REPO ...] [--since DATE] [--issues FILE] [--env-file FILE]
                                         [--parser NAME] [--json] [--show]

Nothing is built, scanned or written, and no model is asked: per repository, the count and share of
each class (issue, commit_message, thin, leaks_fix), how many statements lost a trailer or other
noise, and with --show each candidate's class, leaked names and cleaned statement. The figures of
docs/tasks.md ("Statement classes") come from it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.authoring.gitrepo import MineError  # noqa: E402
from harness.authoring.mine import MineOptions, candidate_statements  # noqa: E402
from harness.authoring.statements import QUALITIES  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repos", nargs="+")
    ap.add_argument("--since")
    ap.add_argument("--issues", type=Path)
    ap.add_argument("--env-file", type=Path)
    ap.add_argument("--parser")
    ap.add_argument("--max-lines", type=int, default=800)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args()
    results = []
    for repo in args.repos:
        options = MineOptions(
            since=args.since, issues=args.issues, env_file=args.env_file, parser=args.parser, max_lines=args.max_lines
        )
        try:
            found = candidate_statements(repo, options)
        except MineError as exc:
            print(f"{repo}: {exc}", file=sys.stderr)
            continue
        counts = Counter(origin["statement_quality"] for _, _, origin in found)
        cleaned = sum(1 for _, _, origin in found if origin["statement_removed"])
        results.append(
            {
                "repository": repo,
                "candidates": len(found),
                "classes": {q: counts.get(q, 0) for q in QUALITIES},
                "cleaned": cleaned,
                "features": sum(1 for _, _, origin in found if origin["change"] == "feature"),
                "with_additions": sum(1 for _, _, origin in found if origin["statement_additions"]),
                "tasks": [
                    {
                        "commit": j.commit.sha[:10],
                        "subject": j.commit.subject,
                        "class": origin["statement_quality"],
                        "change": origin["change"],
                        "additions": origin["statement_additions"],
                        "leaks": origin["statement_leaks"],
                        "removed": origin["statement_removed"],
                        "statement": statement,
                    }
                    for j, statement, origin in found
                ],
            }
        )
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for r in results:
        n = r["candidates"] or 1
        shares = ", ".join(f"{q} {c} ({c / n:.0%})" for q, c in r["classes"].items())
        print(
            f"{r['repository']}: {r['candidates']} candidate(s): {shares}; cleaned {r['cleaned']}; "
            f"features {r['features']} ({r['with_additions']} given an interface)"
        )
        if args.show:
            for t in r["tasks"]:
                leaks = f" leaks: {', '.join(t['leaks'])}" if t["leaks"] else ""
                removed = f" removed: {', '.join(t['removed'])}" if t["removed"] else ""
                print(f"  {t['commit']} {t['class']:<14} {t['change']:<7} {t['subject'][:70]}{leaks}{removed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
