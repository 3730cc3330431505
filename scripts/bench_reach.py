#!/usr/bin/env python3
"""Measure reach on the realism corpus (scripts/corpus.toml): mine every project with no
hand-written config, check it, run the controls on what was kept.

    python scripts/bench_reach.py WORK_DIR [--only NAME,...] [--shard I/N] [--no-controls]
    python scripts/bench_reach.py WORK_DIR --report [--json out.json]

Per project, in WORK_DIR: the repository (scripts/build_corpus.py), `tasks/` (what `wholeloop mine`
wrote: specs, check verdicts, mine-report.json), `gold/` and `noop/` (run folders of
`wholeloop run tasks --agent gold --repeats 3` and `--agent noop`), and one line in
WORK_DIR/state.jsonl when the project is done. A project with a line there is not measured again:
stop the script at any time (Ctrl-C, a reboot) and run it again to continue; `--shard I/N` runs
every N-th project, so several processes can share the corpus (one docker build at a time each:
`mine` builds one environment at a time).

Figures per project and in total (`--report` prints them from the state file, nothing is run):

- **env built**: candidates whose environment image built (a candidate whose dependencies do not
  resolve never gets one, nor a check verdict);
- **healthy**: candidates whose check read a healthy environment at base (docs/tasks.md,
  "Environment health"); a project counts as healthy when at least one candidate was;
- **kept**: tasks kept / candidates (commits that pass the mining rules);
- **gold 3/3**: kept tasks that gold resolved in all 3 repeats of `wholeloop run --agent gold`;
- **noop**: kept tasks noop resolved (target 0);
- **refused**: commits refused for a secret (each one a false refusal: the corpus is public
  releases) and the files scanned (the distinct files of the candidates' base snapshots);
- **builds** and **install s / cand.**: environment images built and the image seconds of the
  check per candidate.

Uses only the wholeloop command line and public record formats (mine-report.json, the check's
verdicts, results.jsonl).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_corpus  # noqa: E402

STATE = "state.jsonl"
NO_CANDIDATE = "no candidate commit"  # mine's refusal when no commit passes the mining rules
REPEATS = 3


def _wholeloop() -> list[str]:
    return [sys.executable, "-m", "harness.cli"]


def done(work: Path) -> dict[str, dict]:
    path = work / STATE
    out: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:  # a line cut by a kill: that project is measured again
                continue
            out[row["name"]] = row
    return out


def _files_scanned(repo: Path, bases: list[str]) -> int:
    blobs: set[str] = set()
    for base in bases:
        listing = subprocess.run(
            ["git", "-C", str(repo), "ls-tree", "-r", base], capture_output=True, text=True, check=True
        ).stdout
        blobs.update(line.split()[2] for line in listing.splitlines() if line.split()[1] == "blob")
    return len(blobs)


def _parents(repo: Path, commits: list[str]) -> list[str]:
    out = []
    for c in commits:
        proc = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{c}^"], capture_output=True, text=True)
        if proc.returncode == 0:
            out.append(proc.stdout.strip())
    return out


def read_mining(repo: Path, tasks: Path) -> dict:
    """The mining and check figures of one project, from mine-report.json and the verdicts."""
    report = json.loads((tasks / "mine-report.json").read_text())
    commits = report["commits"]
    candidates = [c for c in commits if "spec" in c or "refused" in c]
    refused = [c for c in commits if "refused" in c]
    verdicts = []
    for c in commits:
        if "spec" in c:
            path = tasks / (c["spec"].removesuffix(".yaml") + ".check.json")
            if path.is_file():
                verdicts.append(json.loads(path.read_text()))
    built = [v for v in verdicts if v.get("quarantined") != "environment build failed" and v.get("image")]
    healthy = [v for v in verdicts if (v.get("health") or {}).get("healthy")]
    reasons: dict[str, int] = {}
    for c in commits:
        why = c.get("skipped") or c.get("refused") or c.get("quarantined")
        if why:
            key = why.split(":")[0][:60]
            reasons[key] = reasons.get(key, 0) + 1
    return {
        "commits": len(commits),
        "candidates": len(candidates),
        "checked": len(verdicts),
        "env_built": len(built),
        "healthy": len(healthy),
        "kept": sorted(c["kept"]["task_id"] for c in commits if "kept" in c),
        "refused": [c["refused"] for c in refused],
        "files_scanned": _files_scanned(repo, _parents(repo, [c["commit"] for c in candidates])),
        "images_built": sum(row.get("built", 0) for row in report.get("environments", {}).values()),
        "image_seconds": round(sum(v.get("seconds", {}).get("images", 0.0) for v in verdicts), 1),
        "reasons": reasons,
        "unhealthy": sorted({(v.get("health") or {}).get("summary", "") for v in verdicts} - {""})[:3],
    }


def read_run(run: Path) -> dict[str, list[str]]:
    """task id -> the outcomes of its latest rows, from results.jsonl."""
    rows: dict[tuple[str, int], dict] = {}
    path = run / "results.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("final", True):
                rows[(row["task_id"], row.get("repeat", 0))] = row  # the last written stands
    out: dict[str, list[str]] = {}
    for (task, _), row in sorted(rows.items()):
        out.setdefault(task, []).append(row["outcome"])
    return out


def measure(project: dict, work: Path, *, controls: bool, max_candidates: int | None = None, log=print) -> dict:
    name = project["name"]
    row: dict = {"name": name, "kind": project["kind"], "covers": project.get("covers", "")}
    started = time.monotonic()
    try:
        repo = build_corpus.build(work / "repos", project, log=log)
    except (build_corpus.FixtureError, OSError, subprocess.CalledProcessError) as exc:
        row.update(error=f"not built: {exc}"[:500])
        return row
    tasks = work / "tasks" / name
    cmd = [*_wholeloop(), "mine", str(repo), "--out", str(tasks), "--repeats", str(REPEATS)]
    if project["kind"] == "debian":
        cmd += ["--test-scope", "all"]
    if max_candidates:
        cmd += ["--max", str(max_candidates)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    row["mine_exit"] = proc.returncode
    (work / "logs").mkdir(exist_ok=True)
    (work / "logs" / f"{name}.mine.log").write_text(proc.stdout + "\n--- stderr\n" + proc.stderr)
    if not (tasks / "mine-report.json").is_file():
        lines = proc.stderr.strip().splitlines() or ["mine wrote no report"]
        # the refusal's own line, not the last line of its hint (a template)
        row["error"] = next((line for line in lines if line.startswith("error:")), lines[-1])[:500]
        row["seconds"] = round(time.monotonic() - started, 1)
        return row
    row.update(read_mining(repo, tasks))
    if controls and row["kept"]:
        for agent, repeats in (("gold", REPEATS), ("noop", 1)):
            out = work / "runs" / name / agent
            run_cmd = [*_wholeloop(), "run", str(tasks), "--agent", agent, "--repeats", str(repeats), "--out", str(out)]
            proc = subprocess.run(run_cmd, capture_output=True, text=True, cwd=ROOT)
            (work / "logs" / f"{name}.{agent}.log").write_text(proc.stdout + "\n--- stderr\n" + proc.stderr)
            outcomes = read_run(out)
            if agent == "gold":
                row["gold_all"] = sorted(t for t, o in outcomes.items() if len(o) == repeats and set(o) == {"resolved"})
                row["gold_outcomes"] = outcomes
            else:
                row["noop_resolved"] = sorted(t for t, o in outcomes.items() if "resolved" in o)
    row["seconds"] = round(time.monotonic() - started, 1)
    return row


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.0f} %)" if b else "0/0"


def report(rows: list[dict], not_run: list[str]) -> dict:
    measured = [r for r in rows if "candidates" in r]
    with_cand = [r for r in measured if r["candidates"]]
    healthy = [r for r in measured if r["healthy"]]
    # a project with a task spec had an environment to make: one whose resolution already failed
    # at mining has no check verdict, and counts as not healthy; so does one whose mining was
    # refused or stopped (an error row: no environment at all)
    tried = [r for r in measured if r["candidates"] - len(r["refused"]) > 0]
    tried += [r for r in rows if "error" in r and NO_CANDIDATE not in r["error"]]
    keeping = [r for r in with_cand if r["kept"]]
    kept = sum(len(r["kept"]) for r in measured)
    gold_all = sum(len(r.get("gold_all", [])) for r in measured)
    controlled = sum(len(r["kept"]) for r in measured if "gold_all" in r)
    total = {
        "projects": len(rows),
        "measured": len(measured),
        "errors": {r["name"]: r["error"] for r in rows if "error" in r},
        "healthy_projects": _pct(len(healthy), len(tried)),
        "keeping_projects": _pct(len(keeping), len(with_cand)),
        "candidates": sum(r["candidates"] for r in measured),
        "env_built": sum(r["env_built"] for r in measured),
        "checked": sum(r["checked"] for r in measured),
        "kept": kept,
        "gold_3_of_3": f"{gold_all}/{controlled}",
        "noop_resolved": sum(len(r.get("noop_resolved", [])) for r in measured),
        "false_refusals": sum(len(r["refused"]) for r in measured),
        "files_scanned": sum(r["files_scanned"] for r in measured),
        "images_built": sum(r["images_built"] for r in measured),
        "image_seconds_per_candidate": round(
            sum(r["image_seconds"] for r in measured) / max(1, sum(r["checked"] for r in measured)), 1
        ),
        "not_run": not_run,
    }
    return total


def print_table(rows: list[dict], total: dict) -> None:
    head = f"{'project':<38} {'cand':>4} {'built':>5} {'healthy':>7} {'kept':>4} {'gold3':>5} {'noop':>4} {'refused/files':>13} {'img':>3} {'s/cand':>6}"
    print(head)
    for r in rows:
        if "candidates" not in r:
            print(f"{r['name']:<38} error: {r.get('error', '')[:90]}")
            continue
        gold = f"{len(r['gold_all'])}" if "gold_all" in r else "-"
        noop = f"{len(r['noop_resolved'])}" if "noop_resolved" in r else "-"
        per = r["image_seconds"] / r["checked"] if r["checked"] else 0.0
        print(
            f"{r['name']:<38} {r['candidates']:>4} {r['env_built']:>5} {r['healthy']:>7} {len(r['kept']):>4} "
            f"{gold:>5} {noop:>4} {len(r['refused']):>6}/{r['files_scanned']:<6} {r['images_built']:>3} {per:>6.0f}"
        )
    print()
    for key, value in total.items():
        print(f"{key}: {value}")


def markdown(rows: list[dict]) -> str:
    """The per-project table of docs/tasks.md."""
    out = [
        "| project | covers | candidates | env built | healthy | kept | gold 3/3 | noop | refused / files | builds | image s / cand. |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        error = r.get("error", "")
        if "candidates" not in r and NO_CANDIDATE in error:
            why = error.split(" commit(s): ", 1)[-1].split("); See", 1)[0].replace(" (--allow-config takes it)", "")
            out.append(f"| {r['name']} | {r['covers']} | 0 ({why}) | - | - | - | - | - | - | - | - |")
            continue
        if "candidates" not in r:
            out.append(f"| {r['name']} | {r['covers']} | error: {error[:160]} | | | | | | | | |")
            continue
        per = round(r["image_seconds"] / r["checked"]) if r["checked"] else "-"
        out.append(
            f"| {r['name']} | {r['covers']} | {r['candidates']} | {r['env_built']} | {r['healthy']} | {len(r['kept'])} "
            f"| {len(r['gold_all']) if 'gold_all' in r else '-'} | {len(r['noop_resolved']) if 'noop_resolved' in r else '-'} "
            f"| {len(r['refused'])} / {r['files_scanned']} | {r['images_built']} | {per} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--only", action="append", help="NAME[,NAME...]")
    parser.add_argument("--shard", help="I/N: every N-th project of the manifest, starting at the I-th")
    parser.add_argument("--no-controls", action="store_true", help="mine and check only; no gold/noop runs")
    parser.add_argument("--max", type=int, help="mine only the N most recent candidates of each project")
    parser.add_argument("--report", action="store_true", help="print the figures of the state file; run nothing")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--markdown", action="store_true", help="also print the per-project table as Markdown")
    args = parser.parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    manifest = build_corpus.load_manifest()
    only = [n for chunk in args.only or [] for n in chunk.split(",") if n]
    try:
        projects = build_corpus.select(manifest, only or None, args.shard)
    except build_corpus.CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.report:
        for project in projects:
            if project["name"] in done(work):
                continue
            print(f"{project['name']}: measuring", flush=True)
            row = measure(
                project,
                work,
                controls=not args.no_controls,
                max_candidates=args.max,
                log=lambda line: print(line, flush=True),
            )
            with open(work / STATE, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(
                f"{project['name']}: {json.dumps({k: v for k, v in row.items() if k != 'gold_outcomes'})}", flush=True
            )
    state = done(work)
    rows = [state[p["name"]] for p in manifest if p["name"] in state]
    total = report(rows, [p["name"] for p in manifest if p["name"] not in state])
    print_table(rows, total)
    if args.markdown:
        print()
        print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({"projects": rows, "total": total}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
