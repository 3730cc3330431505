"""Model review (issue 25 item 5): `wholeloop review RUN --review-model MODEL` asks a model, here
the local scripted provider speaking Anthropic's wire (tests/support/fakellm.py, the real SDK), to
review each resolved patch against a rubric; its verdicts are kept apart from the human verdicts
and from acceptance, and reports show how it agrees with the human verdicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.fabricate import fabricate_run
from support.fakellm import FakeLLM, Reply

from harness.model_review import RUBRIC_VERSION, parse_reply
from harness.records import ModelReview, Review, RunFolder
from harness.report.axes import DEFAULT_RULES, decide
from harness.vocabulary import Acceptance, Outcome, ReviewVerdict

CLEAN = {"tests_deleted": [], "outside_scope": [], "size_ratio": 1.0, "own_checks": {"checks": [], "new": []}}
MODEL = "anthropic/claude-test"


def _run(tmp_path: Path) -> RunFolder:
    """A fabricated run whose first three rows are resolved, with acceptance axes (all clean)."""
    fabricate_run(tmp_path / "run", tasks=6, configs=["a"], repeats=1)
    folder = RunFolder(tmp_path / "run")
    lines = []
    for i, r in enumerate(folder.rows()):
        r.acceptance = dict(CLEAN)
        r.outcome, r.resolved = (Outcome.resolved, True) if i < 3 else (Outcome.unresolved, False)
        lines.append(json.dumps(r.model_dump(mode="json")) + "\n")
    folder.results_path.write_text("".join(lines))
    return folder


def _human(folder: RunFolder, row, verdict: str, reason: str = "") -> None:
    folder.add_review(
        Review(
            **folder.review_key(row),
            verdict=verdict,
            reason=reason,
            reviewer="ana",
        )
    )


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", "ANTHROPIC_API_KEY": "test-key", **(env or {})},
    )


def _report(folder: RunFolder, out: Path) -> tuple[str, dict]:
    done = _cli("report", str(folder.path), "--json", str(out), "--html", str(out.with_suffix(".html")))
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(out.read_text())


def test_a_model_reviews_each_resolved_patch_recorded_apart_and_compared_with_human_verdicts(tmp_path):
    folder = _run(tmp_path)
    first, second, third = [r for r in folder.latest() if r.resolved]
    _human(folder, first, "accept", "a clean fix")
    _human(folder, second, "reject", "wrong module")
    _, before = _report(folder, tmp_path / "before.json")
    with FakeLLM() as server:
        server.script(
            Reply(text='{"verdict": "reject", "reasoning": "It only handles the case the test checks."}'),
            Reply(
                text='Here is my review:\n```json\n{"verdict": "reject", "reasoning": "Touches an unrelated module."}\n```'
            ),
            Reply(text="Looks fine to me overall."),  # no verdict in the asked form
        )
        done = _cli("review", str(folder.path), "--review-model", MODEL, "--base-url", server.base_url)
        bodies = server.bodies()
        assert done.returncode == 0, done.stderr
        again = _cli("review", str(folder.path), "--review-model", MODEL, "--base-url", server.base_url)
        assert again.returncode == 0 and len(server.requests) == 3, again.stdout  # nothing left to review
    said = " ".join(done.stdout.split())
    assert f"--review-model: sending to {MODEL} at {server.base_url}" in said and "3 model review(s) recorded" in said
    assert "0 resolved attempt(s)" in again.stdout and "(3 done)" in again.stdout

    # what was sent: the rubric, the problem and the agent's patch, one request per resolved attempt
    sent = [body["messages"][0]["content"] for body in bodies]
    sent = [c if isinstance(c, str) else "".join(part["text"] for part in c) for c in sent]
    for row, prompt in zip((first, second, third), sent, strict=True):
        assert "Correctness beyond the tests" in prompt and "## The patch" in prompt
        assert f"{row.task_id}: <b>drops</b>" in prompt  # the problem the agent was given
        patch = (folder.path / row.patch_path).read_text() if row.patch_path else ""
        assert patch.strip() in prompt

    # recorded apart, with the model, the rubric, the exact prompt and the whole reply
    reviews = RunFolder(folder.path).model_reviews()
    assert [(r.task_id, r.verdict, r.readable) for r in reviews] == [
        (first.task_id, ReviewVerdict.reject, True),
        (second.task_id, ReviewVerdict.reject, True),
        (third.task_id, ReviewVerdict.unsure, False),
    ]
    assert all(
        r.model == MODEL and r.endpoint == server.base_url and r.rubric_version == RUBRIC_VERSION for r in reviews
    )
    assert [r.prompt for r in reviews] == sent and all(len(r.prompt_sha256) == 64 for r in reviews)
    assert (
        reviews[0].reasoning == "It only handles the case the test checks."
        and reviews[2].reply == "Looks fine to me overall."
    )
    assert all(r.input_tokens > 0 and r.output_tokens > 0 for r in reviews)
    # never a human verdict, never acceptance: reviews.jsonl holds the two human verdicts alone
    assert len(RunFolder(folder.path).reviews()) == 2
    out, after = _report(folder, tmp_path / "after.json")
    assert after["acceptance"] == before["acceptance"] and after["review"] == before["review"]
    [m] = after["model_reviews"]
    assert (m["model"], m["reviews"], m["accept"], m["reject"], m["unsure"], m["unreadable"]) == (MODEL, 3, 0, 2, 1, 1)
    humans = m["humans"]
    # first: ana accepts, the model rejects; second: both reject; third: no human verdict
    assert (humans["n"], humans["both_reject"], humans["reviewer_accepts_model_rejects"]) == (2, 1, 1)
    assert humans["kappa"] is None and [d["task_id"] for d in humans["disagreements"]] == [first.task_id]
    screen = " ".join(out.split())
    assert f"model review by {MODEL} (never counted as acceptance): 3 reviewed" in screen
    assert "agrees with reviewers on 1/2; kappa: n < 20" in screen
    page = (tmp_path / "after.html").read_text()
    assert 'id="model-review"' in page and "It only handles the case the test checks." in page
    assert 'id="model-review"' not in (tmp_path / "before.html").read_text()


def test_a_forbidden_egress_sends_nothing_and_records_nothing(tmp_path):
    folder = _run(tmp_path)
    with FakeLLM() as server:
        done = _cli(
            "review",
            str(folder.path),
            "--review-model",
            MODEL,
            "--base-url",
            server.base_url,
            env={"WHOLELOOP_NO_EGRESS": "1"},
        )
        assert server.requests == []
    assert done.returncode == 2 and "--review-model" in done.stderr + done.stdout, done.stderr
    assert not RunFolder(folder.path).model_reviews_path.exists()


def test_a_reply_is_read_from_its_json_object_and_anything_else_is_unsure():
    assert parse_reply('{"verdict": "accept", "reasoning": "ok"}') == (ReviewVerdict.accept, "ok", True)
    assert parse_reply('Sure.\n{"verdict": "Reject", "reasoning": "scope"}\nThanks') == (
        ReviewVerdict.reject,
        "scope",
        True,
    )
    assert parse_reply('{"verdict": "reject", "reasoning": "a } in it" ')[0] is ReviewVerdict.reject  # cut JSON
    assert parse_reply("I would merge it.") == (ReviewVerdict.unsure, "I would merge it.", False)
    assert parse_reply('{"verdict": "maybe"}')[2] is False


def _model(folder: RunFolder, row, verdict: str, reasoning: str, *, model: str = MODEL, readable: bool = True):
    folder.add_model_review(
        ModelReview(
            **folder.review_key(row),
            verdict=verdict,
            reasoning=reasoning,
            readable=readable,
            model=model,
        )
    )


def test_a_policy_that_names_a_model_counts_its_reject_at_report_time_and_the_default_never_does(tmp_path):
    """The policy key `model_review: MODEL` (default: none): the same run folder reads differently
    with and without it, no regrade; its reason names the model and its reasoning; an attempt the
    model has not reviewed readably is not measured (never false); a run folder without model
    reviews reads as before under the default policy. (Figures and show --json in process, the
    screens, the HTML and the exit code through the CLI.)"""
    from harness.report.acceptance import NotMeasured, load_policy
    from harness.report.figures import compute_figures
    from harness.report.gate import SideRows, gate
    from harness.report.show import show_json

    folder = _run(tmp_path)
    first, second, third = [r for r in folder.latest() if r.resolved]
    policy_file = tmp_path / "wholeloop.yaml"
    policy_file.write_text(f"acceptance:\n  model_review: {MODEL}\n")
    policy = load_policy(policy_file)

    def figures(rules=None, **options) -> dict:
        return compute_figures([folder.path], policy=rules, comparisons=False, **options).model_dump(mode="json")

    # a run folder without model reviews: the default reads it as before; the key makes it not measured
    old = figures()
    [a] = old["acceptance"]
    assert (a["accepted"], a["not_measured"], old["model_reviews"]) == (3, 0, [])
    [a] = figures(policy)["acceptance"]
    assert (a["accepted"], a["not_measured"], a["resolved_not_accepted"], a["accept_rate"]["value"]) == (0, 3, 0, None)

    _model(folder, first, "reject", "It only handles the case the test checks.")
    _model(folder, second, "accept", "A clean fix.")
    _model(folder, third, "unsure", "Looks fine to me overall.", readable=False)
    _model(folder, third, "reject", "Another model's view.", model="openai/other")

    # without the key: a model's verdict is never counted
    without = figures()
    assert without["acceptance"] == old["acceptance"]
    assert [(m["model"], m["counted"]) for m in without["model_reviews"]] == [(MODEL, False), ("openai/other", False)]

    # with it: the first is refused by the model's reject, the second accepted, the third (no verdict
    # in the asked form) not measured; the other model's reject is not counted
    done = _cli(
        "report",
        str(folder.path),
        "--policy",
        str(policy_file),
        "--json",
        str(tmp_path / "with.json"),
        "--html",
        str(tmp_path / "with.html"),
    )
    assert done.returncode == 0, done.stderr
    found = json.loads((tmp_path / "with.json").read_text())
    [a] = found["acceptance"]
    assert (a["accepted"], a["resolved_not_accepted"], a["not_measured"]) == (1, 1, 1)
    assert a["reasons"] == {"rejected by the model review": 1}
    assert a["examples"]["rejected by the model review"] == [
        f"{first.task_id} (repeat 0): rejected by the model review ({MODEL}: It only handles the case the test checks.)"
    ]
    assert f"not rejected by {MODEL}'s review" in a["policy"]
    assert [(m["model"], m["counted"]) for m in found["model_reviews"]] == [(MODEL, True), ("openai/other", False)]
    screen = " ".join(done.stdout.split())
    assert f"model review by {MODEL} (counted by the policy: its reject refuses a patch)" in screen
    assert "model review by openai/other (never counted as acceptance)" in screen
    assert "(counted by the policy)" in (tmp_path / "with.html").read_text()

    # show names the reason; without the key the same attempt is accepted
    [unit] = show_json(folder.path, first.task_id, policy=policy)
    [attempt] = unit["attempts"]
    assert attempt["acceptance"]["verdict"] == "not_accepted"
    assert attempt["acceptance"]["reasons"] == ["rejected by the model review"]
    assert MODEL in attempt["acceptance"]["said"] and "only handles the case" in attempt["acceptance"]["said"]
    assert "model_review" not in (attempt["row"]["acceptance"] or {})  # the record is not changed
    [plain] = show_json(folder.path, first.task_id)
    assert plain["attempts"][0]["acceptance"]["verdict"] == "accepted"
    text = _cli("show", str(folder.path), first.task_id, "--policy", str(policy_file))
    assert "acceptance: not accepted: rejected by the model review" in " ".join(text.stdout.split())

    # --metric accept: the attempt the model gave no verdict on refuses, with what to run
    refused = _cli("report", str(folder.path), "--policy", str(policy_file), "--metric", "accept")
    assert refused.returncode == 2, refused.stdout
    said = " ".join((refused.stderr + refused.stdout).split())
    assert third.task_id in said and f"--review-model {MODEL}" in said
    with pytest.raises(NotMeasured):
        figures(policy, metric="accept")
    assert figures(metric="accept")["metric"] == "accept"
    # the gate reads the same reviews from each side's run folder
    side = SideRows(name="run", config="a", rows=folder.latest(), run_dir=str(folder.path))
    with pytest.raises(NotMeasured, match="review-model"):
        gate(side, side, metric="accept", policy=policy)
    assert gate(side, side, metric="accept").candidate_value == pytest.approx(3 / 6)
    _model(folder, third, "accept", "Fine on a second look.")  # the model's latest review counts
    assert gate(side, side, metric="accept", policy=policy).candidate_value == pytest.approx(2 / 6)


def test_the_decision_counts_only_the_named_models_readable_verdict():
    clean = dict(CLEAN)
    rules = {**DEFAULT_RULES, "model_review": MODEL}
    review = {"model": MODEL, "verdict": "reject", "reasoning": "wrong\n  module", "readable": True}
    assert decide(True, {**clean, "model_review": review}, DEFAULT_RULES)[0] is Acceptance.accepted
    verdict, reasons, evidence = decide(True, {**clean, "model_review": review}, rules)
    assert (verdict, reasons) == (Acceptance.not_accepted, ["rejected by the model review"])
    assert evidence == {"rejected by the model review": f"{MODEL}: wrong module"}
    unsure = {**review, "verdict": "unsure"}
    assert decide(True, {**clean, "model_review": unsure}, rules)[0] is Acceptance.accepted
    assert decide(True, {**clean, "model_review": {**unsure, "readable": False}}, rules)[0] is Acceptance.not_measured
    assert decide(True, {**clean, "model_review": None}, rules)[0] is Acceptance.not_measured
    assert decide(False, {**clean, "model_review": None}, rules)[0] is Acceptance.not_accepted
