"""The numbers and tables of the HTML report, as plain dicts the template renders.

Every statistic (Wilson and bootstrap intervals, pass@k, paired tests, recovery, failure costs)
comes from `figures.compute_figures` (its `model_dump(mode="json")`); this module only arranges
it next to what is read from the rows (the matrix, time medians) for the template.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ..vocabulary import Outcome

OUTCOMES = list(Outcome)
SHORT = {
    Outcome.resolved: "✓",
    Outcome.unresolved: "unres",
    Outcome.regression: "regr",
    Outcome.empty_patch: "empty",
    Outcome.patch_apply_failed: "apply",
    Outcome.test_timeout: "timeout",
    Outcome.environment_broken: "env",
    Outcome.infra_error: "infra",
    Outcome.task_error: "task err",
}


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def _iv(interval: dict | None) -> dict:
    """An Interval of the figures as the template wants it (value None when unknown)."""
    iv = dict(interval or {})
    if iv.get("unknown"):
        iv["value"] = iv["low"] = iv["high"] = None
    iv.setdefault("value", None)
    iv.setdefault("low", None)
    iv.setdefault("high", None)
    return iv


def _k_values(items: list[dict], repeats: int) -> dict | None:
    """The largest k shown, every k in the tooltip."""
    if repeats <= 1 or not items:
        return None
    top = max(items, key=lambda v: v["k"])
    return {
        "k": top["k"],
        "value": top["value"],
        "all": ", ".join(f"k={v['k']}: {v['value'] * 100:.1f}%" for v in items),
    }


def _configs(figs: dict, reps: list) -> list[dict]:
    rows_by_config: dict[str, list] = defaultdict(list)
    for rep in reps:
        rows_by_config[rep.config] += rep.rows
    fails = {f["config"]: f for f in figs.get("failures", {}).get("configs", [])}
    scores = {s["config"]: s for s in figs.get("scoring", {}).get("configs", [])}
    recov = {r["config"]: r for r in figs.get("recovery", [])}
    out = []
    for c in figs.get("configs", []):
        name, rows = c["name"], rows_by_config.get(c["name"], [])
        rate, cost = _iv(c.get("resolve_rate")), _iv(c.get("cost_per_trial"))
        f = fails.get(name, {})
        out.append(
            {
                "label": name,
                "run_dir": c.get("run_dir"),
                "model": c.get("model") or c.get("agent"),
                "tasks": c.get("tasks", 0),
                "repeats": c.get("repeats", 1),
                "trials": c.get("trials", 0),
                "attempts": c.get("attempts", 0),
                "scored": c.get("scored", 0),
                "resolved": c.get("resolved", 0),
                "infra_errors": c.get("infra_errors", 0),
                "infra_share": c.get("infra_share"),
                "incomplete": c.get("incomplete", 0),
                "rate": rate["value"],
                "rate_lo": rate["low"],
                "rate_hi": rate["high"],
                "rate_tasks": _iv(c.get("resolve_rate_tasks")),
                "pass_at_k": _k_values(c.get("pass_at_k", []), c.get("repeats", 1)),
                "pass_hat_k": _k_values(c.get("pass_hat_k", []), c.get("repeats", 1)),
                "mean_cost": cost["value"],
                "cost_lo": cost["low"],
                "cost_hi": cost["high"],
                "total_cost": c.get("total_cost_usd"),
                "cost_per_resolved": _iv(c.get("cost_per_resolved")),
                "time": _iv(c.get("time_per_trial")),
                "time_per_resolved": _iv(c.get("time_per_resolved")),
                "median_time": _median([r.phases.total_s for r in rows]),
                "tokens_in": c.get("tokens_in", 0),
                "tokens_out": c.get("tokens_out", 0),
                "retried_tries": c.get("retried_tries", 0),
                "retried_cost": c.get("retried_cost_usd"),
                "outcomes": Counter(f.get("outcomes", {})),
                "stops": Counter(f.get("stop_reasons", {})),
                "expected_cost": _iv(scores.get(name, {}).get("expected_cost_per_task")),
                "recovery": recov.get(name, {}),
            }
        )
    return out


def _comparisons(figs: dict) -> list[dict]:
    out = []
    for c in figs.get("comparisons", []):
        better = c.get("better")
        out.append(
            {
                "a": c["a"],
                "b": c["b"],
                "tasks": c.get("shared_tasks", 0),
                "wins": c.get("wins_a", 0),
                "losses": c.get("wins_b", 0),
                "ties": c.get("ties", 0),
                "diff": _iv(c.get("difference")),
                "p": c.get("mcnemar_p"),
                "discordant": f"{c.get('mcnemar_b', 0)} / {c.get('mcnemar_c', 0)}",
                "verdict": c.get("verdict", ""),
                "caution": c.get("caution", ""),
                "verdict_class": "same" if c.get("same_tier", True) else ("better" if better == c["a"] else "worse"),
                "cpr_a": _iv(c.get("side_a", {}).get("cost_per_resolved")),
                "cpr_b": _iv(c.get("side_b", {}).get("cost_per_resolved")),
                "only": len(c.get("only_a", [])) + len(c.get("only_b", [])),
                "flips": _flips(c),
            }
        )
    return out


def _flips(c: dict) -> list[dict]:
    """The tasks whose first repeats flipped: the failing side's causes and the first divergence,
    side by side (docs/failures.md)."""
    out = []
    for t in c.get("tasks", []):
        why = t.get("why")
        if not why:
            continue
        d = why.get("divergence") or {}

        def point(p: dict | None) -> str:
            return f"{p['what']} (step {p['step']}, event {p['seq']})" if p else "(none)"

        out.append(
            {
                "task": t["task_id"],
                "failing": why.get("failing", ""),
                "causes": [f["cause"] for f in why.get("causes", [])],
                "where": f"{d['kind']} #{d['index']}" if d else (why.get("note") or "no divergence"),
                "fail": point(d.get("failing")) if d else "",
                "ok": point(d.get("resolved")) if d else "",
            }
        )
    return out


#: The controls run no model and no scaffold: the report says what they are instead.
_CONTROL_SCAFFOLDS = {
    "gold": "none: a control that applies the task's reference patch",
    "noop": "none: a control that changes nothing",
}


def _recipe(run: dict) -> dict:
    r = run.get("recipe", {})
    host, engine = r.get("host") or {}, r.get("docker_engine") or {}
    mem = host.get("memory_bytes")
    opts = r.get("options") or {}

    def kv(d: dict) -> str:
        return ", ".join(f"{k}={v}" for k, v in d.items() if v is not None and not isinstance(v, dict)) or "-"

    items = [
        ("command", r.get("command") or "-"),
        ("wholeloop", f"{r.get('wholeloop_version') or '?'} @ {(r.get('git_commit') or '?')[:12]}"),
        ("models", ", ".join(r.get("models") or []) or "-"),
        ("provider", (r.get("provider") or "-") + (" · " + ", ".join(r["base_urls"]) if r.get("base_urls") else "")),
        ("agent", r.get("agent") or "-"),
        (
            "scaffold",
            r.get("scaffold") or _CONTROL_SCAFFOLDS.get(r.get("agent") or "", "wholeloop's tool-calling agent"),
        ),
        ("sampling", kv(r.get("sampling") or {})),
        ("limits", kv(r.get("limits") or {})),
        ("options", kv(opts)),
        ("agent config", (r.get("agent_config_sha256") or "-")[:16]),
        ("prompt sha256", (r.get("prompt_sha256") or "-")[:16]),
        ("tool schemas", (r.get("tool_schema_sha256") or "-")[:16]),
        ("python", r.get("python") or "-"),
        ("docker engine", f"{engine.get('version', '-')} (API {engine.get('api_version', '?')})" if engine else "-"),
        ("host", f"{host.get('cpu', '?')}, {host.get('cpus', '?')} CPUs" + (f", {mem / 2**30:.0f} GiB" if mem else "")),
        ("started", r.get("started_at") or "-"),
        ("finished", r.get("finished_at") or "not finished"),
        (
            "tasks",
            f"{r.get('tasks', 0)}" + (f" · {r['sessions']} sessions (resumed)" if r.get("sessions", 0) > 1 else ""),
        ),
    ]
    return {
        "run_id": run.get("run_id") or r.get("run_id"),
        "path": run.get("run_dir"),
        "fields": items,
        "dependencies": r.get("dependencies") or {},
        "cwd": r.get("cwd") or "",
    }


def _hardest(figs: dict, rep_of: dict, names: dict[int, str]) -> list[dict]:
    """The figures' hardest failures, each with buttons opening its attempts, one per configuration."""
    out = []
    for h in figs.get("failures", {}).get("hardest", []):
        links: dict[str, list[int]] = {}
        for ref in h.get("transcripts", []):
            idx = rep_of.get((ref["run_dir"], h["task_id"], ref["config"], ref["repeat"]))
            if idx is not None and idx not in links.setdefault(names[idx], []):
                links[names[idx]].append(idx)
        out.append(
            {
                "task": h["task_id"],
                "outcomes": list(h.get("outcomes", {}).items()),
                "trials": h.get("trials", 0),
                "links": list(links.items()),
            }
        )
    return out


def build(reps: list, figs: dict) -> dict:
    configs = _configs(figs, reps)
    known = {c["label"] for c in configs}
    for label in dict.fromkeys(r.config for r in reps):  # a configuration the figures left out
        if label not in known:
            configs.append(
                {
                    "label": label,
                    "outcomes": Counter(),
                    "stops": Counter(),
                    "rate": None,
                    "repeats": 1,
                    "expected_cost": _iv(None),
                    "cost_per_resolved": _iv(None),
                    "time": _iv(None),
                }
            )
    tasks = sorted({rep.final.task_id for rep in reps})
    # `tasks check` status of each task when its run started: results of unchecked tasks are marked
    checks = {
        t: s
        for run in figs.get("runs", [])
        for t, s in (run.get("recipe") or {}).get("task_checks", {}).items()
        if s != "checked"
    }
    cells: dict[tuple[str, str], list] = defaultdict(list)
    for rep in reps:
        cells[(rep.final.task_id, rep.config)].append(rep)
    matrix = []
    for task in tasks:
        row_cells: list[dict[str, Any] | None] = []  # a configuration's cell (None: it did not run the task)
        solved_by = 0
        for cfg in configs:
            group = sorted(cells.get((task, cfg["label"]), []), key=lambda r: (r.final.repeat, r.index))
            if not group:
                row_cells.append(None)
                continue
            outcomes = [r.final.outcome for r in group]
            k = sum(r.final.resolved for r in group)
            solved_by += k > 0
            worst = Counter(o for o in outcomes if o != Outcome.resolved).most_common(1)
            state = "all" if k == len(group) else ("none" if k == 0 else "some")
            row_cells.append(
                {
                    "reps": [r.index for r in group],
                    "outcomes": outcomes,
                    "k": k,
                    "n": len(group),
                    "state": state,
                    "main": Outcome.resolved.value if state == "all" else worst[0][0],
                    "short": SHORT.get(outcomes[0], outcomes[0][:6]),
                    "attempts": max(len(r.rows) for r in group),
                }
            )
        states = {c["state"] for c in row_cells if c}
        kinds = (["fail"] if states - {"all"} else []) + (["none"] if solved_by == 0 else [])
        kinds += ["split"] if len(states) > 1 else []
        matrix.append(
            {
                "task": task,
                "cells": row_cells,
                "solved_by": solved_by,
                "kinds": " ".join(kinds),
                "present": sum(c is not None for c in row_cells),
                "check": checks.get(task, ""),
            }
        )
    rep_of = {(str(r.run_dir), r.final.task_id, r.label, r.final.repeat): r.index for r in reps}
    scoring = figs.get("scoring", {}).get("scoring", {})
    names = {r.index: r.config for r in reps}
    return {
        "configs": configs,
        "tasks": tasks,
        "matrix": matrix,
        "hardest": _hardest(figs, rep_of, names),
        "comparison": _comparisons(figs),
        "recipes": [_recipe(r) for r in figs.get("runs", [])],
        "outcome_names": OUTCOMES,
        "multi": any(c.get("repeats", 1) > 1 for c in configs),
        "multi_attempt": any(c.get("recovery", {}).get("across", {}).get("max_attempts", 1) > 1 for c in configs),
        "scoring_source": scoring.get("source", ""),
        "scoring_custom": bool(scoring.get("costs")),
        "bootstrap": figs.get("bootstrap", {}),
    }
