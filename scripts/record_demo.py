#!/usr/bin/env python3
"""Record the demo suite's model turns: ``tasks/demo/recordings/<task-id>.jsonl``.

The README's first command, ``wholeloop run tasks/demo --model replay:tasks/demo/recordings``,
runs wholeloop's real tool-calling agent on the demo suite with a replay model instead of a
provider, so it needs no API key. This script writes what that model replays.

**The turns are scripted by the wholeloop authors, not produced by a model.** Each task below has
a short scripted solution in the voice of a competent agent that knows only the problem statement
and the repository (never the hidden tests): look around, reproduce, edit with ``str_replace``,
run the visible tests, submit. Five of the seven resolve; two fail the way agents do
(``inikit-004`` misses one requirement and stays ``unresolved``; ``ledgerly-002`` misreads how
leftover cents are handed out and breaks a test that passed before, a ``regression``). One script
has an ``old_str`` that does not match and recovers; one has a red test run, then a green one.

Recording runs every script through the real loop (``ToolAgent`` + ``Runner``) in real
containers, with a ``ScriptedModel`` whose steps are callables, so each turn's usage is measured
on what the loop actually sent at that step:

- ``input_tokens``: the messages and tool schemas of that request, converted to the OpenAI chat
  format and counted with ``litellm.token_counter(model="claude-sonnet-4-5", ...)`` (litellm's
  bundled Anthropic tokenizer: offline and deterministic, an approximation of the real model's);
- ``output_tokens``: the turn's text plus each tool call's name and JSON arguments, same tokenizer;
- ``cost_usd``: those tokens priced by ``harness.models.pricing`` with litellm's price map entry
  for ``claude-sonnet-4-5`` (no prompt caching assumed);
- ``latency_s``: **synthetic**: 0.4 s + output_tokens / 80 s, so reports show plausible model
  time; nothing was timed.

``Turn.model`` says all this in short, so a recording never passes for a real model's output.

    python scripts/record_demo.py                 # record all 7 tasks, rewrite the recordings
    python scripts/record_demo.py inikit-001      # only some tasks
    python scripts/record_demo.py --check         # replay the recordings through the loop in
                                                  # Docker; exit 1 unless every outcome is the
                                                  # declared one and the replay went as scripted
    python scripts/record_demo.py --keep runs/x   # keep the run folders (``wholeloop show``)
    python scripts/record_demo.py --check --recordings DIR   # replay other recordings

The turns' text and tool calls are fixed; token counts depend on the tool outputs the loop sent
back, which are the same from run to run (pytest's timings aside, which rarely change a count).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.agents.config import load_agent_config  # noqa: E402
from harness.agents.loop import ToolAgent  # noqa: E402
from harness.models import ReplayModel, ScriptedModel, ToolCall, ToolSpec, Turn, Usage  # noqa: E402
from harness.models.openai_format import to_openai_messages, to_openai_tools  # noqa: E402
from harness.models.pricing import lookup_price, turn_cost  # noqa: E402
from harness.records import ResultRow  # noqa: E402
from harness.run import Runner, RunOptions  # noqa: E402
from harness.tasks import Task, load_tasks  # noqa: E402
from harness.transcript import ToolResultEvent, read_transcript  # noqa: E402

DEMO = ROOT / "tasks" / "demo"
RECORDINGS = DEMO / "recordings"

#: The model whose tokenizer (litellm's) counts the tokens and whose price (litellm's map) prices them.
PRICED_AS = "claude-sonnet-4-5"
PROVIDER = "anthropic"
#: What Turn.model says: not a real model's name.
MODEL_LABEL = f"demo-script (tokens counted and priced as {PRICED_AS})"


# ---------------------------------------------------------------------------------------- steps


@dataclass
class Step:
    """One scripted assistant turn: brief text and one tool call, plus what its result must show.

    ``expect``: strings the tool's output must contain; ``error``: whether the call must fail.
    """

    text: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    expect: tuple[str, ...] = ()
    error: bool = False

    def problems(self, output: str, is_error: bool) -> list[str]:
        found = []
        if is_error != self.error:
            found.append(f"expected {'an error' if self.error else 'success'}, got: {output[:200]!r}")
        found += [f"output lacks {want!r}: {output[:200]!r}" for want in self.expect if want not in output]
        return found


def view(path: str, text: str, view_range: list[int] | None = None, expect: tuple[str, ...] = ()) -> Step:
    args: dict[str, Any] = {"command": "view", "path": path}
    if view_range:
        args["view_range"] = view_range
    return Step(text, "edit", args, expect)


def replace(path: str, old: str, new: str, text: str, *, error: bool = False) -> Step:
    expect = ("not found",) if error else ("edited",)
    return Step(text, "edit", {"command": "str_replace", "path": path, "old_str": old, "new_str": new}, expect, error)


def bash(command: str, text: str, expect: tuple[str, ...] = ()) -> Step:
    return Step(text, "bash", {"command": command}, expect)


def tests(text: str, *, green: bool = True, expect: tuple[str, ...] = ()) -> Step:
    return Step(text, "run_tests", {}, ("exit code 0:" if green else "exit code 1:",) + expect)


def submit(text: str) -> Step:
    return Step(text, "submit", {}, ("submitted",))


@dataclass
class Script:
    task_id: str
    expected: str  # the outcome grading must give
    steps: list[Step]


# ---------------------------------------------------------------------------------------- scripts
# Each edit's old_str is copied from the task's base commit; the ones meant to fail say so.

# inikit-001: markers inside values. First fix only looks for a space before the marker (the
# visible tab test goes red), the second accepts any whitespace.

I1_REPRO = '''\
python - <<'EOF'
from inikit import Config

config = Config.from_string("""
[links]
docs = https://example.org/manual#install
password = s3cr;et
port = 8080  # default
lang = c#  ; the language
""")
for key in ("docs", "password", "port", "lang"):
    print(key, repr(config.get("links", key)))
EOF'''

I1_ORIGINAL = """\
    for prefix in COMMENT_PREFIXES:
        index = value.find(prefix)
        if index != -1:
            value = value[:index]
    return value.rstrip()
"""

I1_SPACE_ONLY = """\
    for prefix in COMMENT_PREFIXES:
        index = value.find(" " + prefix)
        if index != -1:
            value = value[:index]
    return value.rstrip()
"""

I1_FIXED = '''\
    """Drop a trailing ``# comment`` or ``; comment`` from an option value.

    A marker starts a comment only when whitespace comes right before it, so the ``#`` in
    ``http://example.org/#top`` and the ``;`` in ``s3cr;et`` are part of the value.
    """
    for index, char in enumerate(value):
        if char in COMMENT_PREFIXES and index > 0 and value[index - 1].isspace():
            return value[:index].rstrip()
    return value.rstrip()
'''

INIKIT_001 = Script(
    "inikit-001",
    "resolved",
    [
        view(".", "I'll start with the layout of the repository.", expect=("inikit/parser.py",)),
        view(
            "inikit/parser.py",
            "Option values are split off in the parser; let me read it.",
            expect=("_strip_inline_comment",),
        ),
        bash(
            I1_REPRO,
            "Let me reproduce the report, with a real inline comment next to the values that contain markers.",
            expect=("'https://example.org/manual'", "'s3cr'"),
        ),
        replace(
            "inikit/parser.py",
            I1_ORIGINAL,
            I1_SPACE_ONLY,
            "`_strip_inline_comment` cuts the value at the first `#` or `;` wherever it is. The README "
            "says a marker only starts a comment when whitespace comes before it, so I'll cut only at a "
            "marker that follows a space.",
        ),
        tests("Now the visible tests.", green=False, expect=("tab-semicolon",)),
        replace(
            "inikit/parser.py",
            '    """Drop a trailing ``# comment`` or ``; comment`` from an option value."""\n' + I1_SPACE_ONLY,
            I1_FIXED,
            "`port = 8080\\t; default` is no longer stripped: a tab is whitespace too. I'll scan for a "
            "marker that directly follows any whitespace character instead of searching for a space.",
        ),
        tests("Running the tests again."),
        bash(
            I1_REPRO,
            "The tests pass. Checking the example from the report once more.",
            expect=("'https://example.org/manual#install'", "'s3cr;et'", "port '8080'", "lang 'c#'"),
        ),
        submit(
            "Markers inside values are kept, inline comments after whitespace are still stripped "
            "(also after a value that contains a marker), and the tests pass."
        ),
    ],
)

# inikit-002: references see the section's own option first.

I2_REPRO = '''\
python - <<'EOF'
from inikit import Config

config = Config.from_string("""
[DEFAULT]
root = /srv
logs = ${root}/logs

[app]
root = /opt/app
data = ${root}/data

[worker]
queue = ${app:root}/queue
""")
for section, key in [("app", "root"), ("app", "data"), ("worker", "queue"), ("app", "logs"), ("worker", "logs")]:
    print(f"[{section}] {key} = {config.get(section, key)!r}")
EOF'''

INIKIT_002 = Script(
    "inikit-002",
    "resolved",
    [
        bash(
            'grep -n "_defaults\\|def _raw\\|def _reference\\|expand(" inikit/*.py',
            "Let me find where `${...}` references are resolved.",
            expect=("def _reference",),
        ),
        view(
            "inikit/config.py",
            "`get` reads through `_raw`, references through `_reference`; let me compare them.",
            view_range=[115, 140],
            expect=("scope = {**self._sections.get(section, {}), **self._defaults}",),
        ),
        bash(
            I2_REPRO,
            "Reproducing with the example from the issue, plus a default that refers to an overridden option.",
            expect=("[app] data = '/srv/data'",),
        ),
        replace(
            "inikit/config.py",
            "        scope = {**self._sections.get(section, {}), **self._defaults}\n",
            "        scope = {**self._defaults, **self._sections.get(section, {})}\n",
            "`_reference` merges the section first and `[DEFAULT]` second, so the default overwrites the "
            "section's own value: the opposite of `_raw`. Swapping the merge order makes a reference see "
            "exactly what `get` returns. It also covers a default value read through a section, since "
            "`expand` resolves its references from the reading section.",
        ),
        bash(
            I2_REPRO,
            "Checking the example again.",
            expect=(
                "[app] data = '/opt/app/data'",
                "[worker] queue = '/opt/app/queue'",
                "[app] logs = '/opt/app/logs'",
                "[worker] logs = '/srv/logs'",
            ),
        ),
        tests("The values are right; now the test suite."),
        submit("References now resolve a section's own option before `[DEFAULT]`, like `get` does; the tests pass."),
    ],
)

# inikit-003: reference cycles. The first str_replace quotes an error message from memory, which
# does not match; the agent views the lines and edits them exactly.

I3_REPRO = '''\
python - <<'EOF' 2>&1 | tail -n 3
from inikit import Config

config = Config.from_string("""
[paths]
bin = ${bin}/local
""")
config.get("paths", "bin")
EOF'''

I3_WRONG_OLD = """\
        raw = resolve(target_section, key)
        if raw is None:
            raise InterpolationError(f"{match.group(0)} refers to a missing option")
        return expand(raw, target_section, resolve)
"""

I3_WRONG_NEW = """\
        raw = resolve(target_section, key)
        if raw is None:
            raise InterpolationError(f"{match.group(0)} refers to a missing option")
        link = (target_section, key)
        if link in chain:
            cycle = chain[chain.index(link) :] + (link,)
            raise InterpolationError("reference cycle: " + " -> ".join(f"[{s}] {k}" for s, k in cycle))
        return expand(raw, target_section, resolve, chain + (link,))
"""

I3_SIGNATURE_OLD = '''\
def expand(value: str, section: str, resolve: Resolver) -> str:
    """Expand the references in ``value``, an option read from ``section``.

    Raises :class:`InterpolationError` for a malformed reference or one to a missing option.
    """
'''

I3_SIGNATURE_NEW = '''\
def expand(value: str, section: str, resolve: Resolver, chain: tuple[tuple[str, str], ...] = ()) -> str:
    """Expand the references in ``value``, an option read from ``section``.

    ``chain`` holds the ``(section, key)`` options being expanded already, outermost first.
    Raises :class:`InterpolationError` for a malformed reference, one to a missing option, or
    a cycle of references.
    """
'''

I3_RECURSE_OLD = "        return expand(raw, target_section, resolve)\n"

I3_RECURSE_NEW = """\
        link = (target_section, key)
        if link in chain:
            cycle = chain[chain.index(link) :] + (link,)
            raise InterpolationError("reference cycle: " + " -> ".join(f"[{s}] {k}" for s, k in cycle))
        return expand(raw, target_section, resolve, chain + (link,))
"""

I3_CASES = """\
python - <<'EOF'
from inikit import Config, InterpolationError

loops = {
    "self": ("[paths]\\nbin = ${bin}/local\\n", "paths", "bin"),
    "two options": ("[s]\\na = ${b}\\nb = ${a}\\n", "s", "a"),
    "two sections": ("[x]\\nk = ${y:k}\\n[y]\\nk = ${x:k}\\n", "x", "k"),
    "via DEFAULT": ("[DEFAULT]\\nd = ${e}\\n[s]\\ne = ${d}\\n", "s", "d"),
}
for name, (text, section, key) in loops.items():
    config = Config.from_string(text)
    for read in (lambda: config.get(section, key), lambda: config.items(section)):
        try:
            read()
            print(name, "-> no error!")
        except InterpolationError as exc:
            print(name, "->", exc)

chain = "".join(f"k{i} = ${{k{i + 1}}}\\n" for i in range(50)) + "k50 = end\\n"
ok = Config.from_string("[s]\\na = x\\nb = ${a}${a}\\nc = ${b}-${b}\\n" + chain)
print("no loop:", ok.get("s", "c"), ok.get("s", "k0"))
EOF"""

INIKIT_003 = Script(
    "inikit-003",
    "resolved",
    [
        view(
            "inikit/interpolate.py",
            "References are expanded in `inikit/interpolate.py`; let me read it.",
            expect=("def expand",),
        ),
        bash(I3_REPRO, "Reproducing the self-reference from the issue.", expect=("RecursionError",)),
        replace(
            "inikit/interpolate.py",
            I3_WRONG_OLD,
            I3_WRONG_NEW,
            "`expand` recurses into every referenced value with no memory of which options it is already "
            "expanding. I'll pass down the chain of `(section, key)` pairs being expanded and raise "
            "`InterpolationError` naming the loop when a reference comes back to one of them.",
            error=True,
        ),
        view(
            "inikit/interpolate.py",
            "My old_str did not match the file; let me look at the exact lines.",
            view_range=[22, 37],
            expect=("in section [{section}] refers to a missing option",),
        ),
        replace(
            "inikit/interpolate.py",
            I3_SIGNATURE_OLD,
            I3_SIGNATURE_NEW,
            "The error message says `in section [...]`. I'll make smaller edits: first the signature.",
        ),
        replace("inikit/interpolate.py", I3_RECURSE_OLD, I3_RECURSE_NEW, "Then the recursive call."),
        bash(
            I3_CASES,
            "Checking loops of each kind from the issue through `get` and `items`, and that "
            "repeated references and a long chain still work.",
            expect=("self -> reference cycle: [paths] bin -> [paths] bin", "no loop: xx-xx end"),
        ),
        tests("Every loop is reported and the non-loops expand. Running the tests."),
        submit(
            "Reference cycles now raise InterpolationError naming the options in the loop, instead of "
            "RecursionError; repeated references and long chains still expand. Tests pass."
        ),
    ],
)

# inikit-004: parse error locations. Misses "the path ... as a string": load() passes the path
# object through, so ParseError.filename is a Path when load() is given one -> unresolved.

I4_ERROR_OLD = '''\
class ParseError(InikitError):
    """The text is not valid INI."""
'''

I4_ERROR_NEW = '''\
class ParseError(InikitError):
    """The text is not valid INI.

    ``filename`` says where the text came from (``"<string>"`` for text) and ``lineno`` is the
    1-based line of the error; ``str()`` reads ``"site.ini:12: duplicate option 'port'"``.
    """

    def __init__(self, message: str, filename: str = "<string>", lineno: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.lineno = lineno

    def __str__(self) -> str:
        where = self.filename if self.lineno is None else f"{self.filename}:{self.lineno}"
        return f"{where}: {self.message}"
'''

I4_PARSE_OLD = '''\
def parse(text: str) -> Sections:
    """Parse INI ``text``. Raises :class:`ParseError` on the first malformed line."""
    sections: Sections = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(COMMENT_PREFIXES):
            continue
        if line.startswith("["):
            current = sections.setdefault(_section_name(line), {})
            continue
        if current is None:
            raise ParseError(f"option outside of any section: {line!r}")
        key, value = _split_option(line)
        if key in current:
            raise ParseError(f"duplicate option {key!r}")
        current[key] = value
'''

I4_PARSE_NEW = '''\
def parse(text: str, filename: str = "<string>") -> Sections:
    """Parse INI ``text``. Raises :class:`ParseError` on the first malformed line.

    ``filename`` is only used in error messages.
    """
    sections: Sections = {}
    current: dict[str, str] | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(COMMENT_PREFIXES):
            continue
        try:
            if line.startswith("["):
                current = sections.setdefault(_section_name(line), {})
                continue
            if current is None:
                raise ParseError(f"option outside of any section: {line!r}")
            key, value = _split_option(line)
            if key in current:
                raise ParseError(f"duplicate option {key!r}")
        except ParseError as exc:
            raise ParseError(exc.message, filename, lineno) from None
        current[key] = value
'''

I4_REPRO = """\
printf '[server]\\nhost = example.org\\n\\n# ports\\nport = 8080\\nport = 8081\\n' > /tmp/site.ini
python - <<'EOF'
import inikit

attempts = {
    "load": lambda: inikit.load("/tmp/site.ini"),
    "loads": lambda: inikit.loads("[s]\\na = 1\\nnonsense\\n"),
    "from_string": lambda: inikit.Config.from_string("\\n; comment\\nkey = outside\\n"),
}
for name, call in attempts.items():
    try:
        call()
    except inikit.ParseError as exc:
        print(f"{name}: {exc}  (filename={exc.filename!r}, lineno={exc.lineno})")
EOF"""

INIKIT_004 = Script(
    "inikit-004",
    "unresolved",
    [
        bash(
            'grep -rn "ParseError\\|def load\\|def parse" inikit/',
            "Let me see where parse errors are raised and how files reach the parser.",
            expect=("inikit/loader.py",),
        ),
        view("inikit/errors.py", "The exception first.", expect=("class ParseError",)),
        view("inikit/parser.py", "Now the parser loop.", view_range=[19, 55], expect=("def parse(text: str)",)),
        view("inikit/loader.py", "And the loader, which knows the file names.", expect=("config.update(parse(text))",)),
        replace(
            "inikit/errors.py",
            I4_ERROR_OLD,
            I4_ERROR_NEW,
            "Plan: `ParseError` carries `filename` and `lineno` and formats itself as "
            "`file:line: message`; `parse` numbers every line and attaches the location to any "
            "`ParseError` raised while handling a line (the helpers raise without knowing it); `load` "
            "passes the file name down. Starting with the exception.",
        ),
        replace(
            "inikit/parser.py",
            I4_PARSE_OLD,
            I4_PARSE_NEW,
            "Now `parse`: `enumerate(..., start=1)` counts blank and comment lines too.",
        ),
        replace(
            "inikit/loader.py",
            "        config.update(parse(text))\n",
            "        config.update(parse(text, path))\n",
            "And `load` passes the path it read.",
        ),
        bash(
            I4_REPRO,
            "Trying a file with a duplicate option, and text through `loads` and `from_string`.",
            expect=("load: /tmp/site.ini:6: duplicate option 'port'", "loads: <string>:3:", "from_string: <string>:3:"),
        ),
        tests("Locations are right for files and strings. Running the tests."),
        submit(
            "ParseError now has `filename` and `lineno` and reads `file:line: message` for `load`, "
            "`loads`, `parse` and `Config.from_string`; tests pass."
        ),
    ],
)

# ledgerly-001: half-up rounding.

L1_REPRO = """\
python - <<'EOF'
import decimal
from ledgerly import Invoice, Money

decimal.getcontext().rounding = decimal.ROUND_DOWN  # an application with its own context
invoice = Invoice("INV-1", tax_rate=5)
invoice.add_line("Sticker", 1, "2.50")
print("tax", repr(invoice.tax))
for amount, currency in [("0.125", "USD"), ("-0.125", "USD"), ("0.135", "USD"), ("2.5", "JPY"), ("1.0005", "KWD")]:
    money = Money(amount, currency)
    print(amount, currency, repr(money.rounded()), money.format())
EOF"""

LEDGERLY_001 = Script(
    "ledgerly-001",
    "resolved",
    [
        bash(
            'grep -rn "quantize\\|rounded()" ledgerly/',
            "Let me find where amounts are rounded.",
            expect=("ledgerly/money.py",),
        ),
        view(
            "ledgerly/money.py",
            "Everything goes through `Money.rounded`; let me read it.",
            view_range=[1, 60],
            expect=("def rounded",),
        ),
        bash(
            L1_REPRO,
            "Reproducing, with the calling application's decimal context changed as well.",
            expect=("0.125 USD Money('0.12', 'USD')",),
        ),
        replace(
            "ledgerly/money.py",
            "from decimal import Decimal, InvalidOperation\n",
            "from decimal import ROUND_HALF_UP, Decimal, InvalidOperation\n",
            "`quantize` is called without a rounding mode, so it takes the thread's decimal context: "
            "ROUND_HALF_EVEN by default (0.125 -> 0.12 but 0.135 -> 0.14), or whatever the application "
            "set. Passing `rounding=ROUND_HALF_UP` gives commercial rounding (away from zero on a half) "
            "in every context. Line amounts, tax and `format()` all call `rounded()`.",
        ),
        replace(
            "ledgerly/money.py",
            '        """This amount rounded to the currency\'s minor unit (commercial rounding)."""\n'
            "        return Money(self._amount.quantize(self._currency.quantum), self._currency)\n",
            '        """This amount rounded to the currency\'s minor unit (commercial rounding).\n\n'
            "        A half rounds away from zero: 0.125 -> 0.13 and -0.125 -> -0.13.\n"
            '        """\n'
            "        return Money(self._amount.quantize(self._currency.quantum, rounding=ROUND_HALF_UP), "
            "self._currency)\n",
            "Now the call itself.",
        ),
        bash(
            L1_REPRO,
            "Checking the same cases.",
            expect=(
                "tax Money('0.13', 'USD')",
                "0.125 USD Money('0.13', 'USD') $0.13",
                "-0.125 USD Money('-0.13', 'USD') -$0.13",
                "2.5 JPY Money('3', 'JPY')",
                "1.0005 KWD Money('1.001', 'KWD')",
            ),
        ),
        tests("Halves round away from zero in every currency, whatever the context. Running the tests."),
        submit(
            "Money.rounded() now rounds half up (away from zero) explicitly, independent of the decimal "
            "context; line amounts, tax and format() follow. Tests pass."
        ),
    ],
)

# ledgerly-002: allocate. Hands leftover cents to the *first* parts (the 100/3 example), not to
# the parts that lost most to rounding -> 10.00 split [1, 2] gives 3.34/6.66 -> regression.

L2_REPRO = """\
python - <<'EOF'
from ledgerly import Money

for amount, ratios in [("100.00", [1, 1, 1]), ("0.05", [1, 1])]:
    parts = Money(amount).allocate(ratios)
    print(amount, ratios, parts, "sum:", sum(parts, Money.zero()).amount)
EOF"""

L2_OLD = """\
        total = sum(weights)
        return [(self * weight / total).rounded() for weight in weights]
"""

L2_NEW = """\
        total = sum(weights)
        quantum = self._currency.quantum
        units = int(self.rounded().amount / quantum)  # whole minor units to hand out
        parts = [int(units * weight / total) for weight in weights]  # each share rounded down
        leftover = units - sum(parts)
        for i, weight in enumerate(weights):  # one unit each to the first parts, ratio 0 excluded
            if leftover <= 0:
                break
            if weight:
                parts[i] += 1
                leftover -= 1
        return [Money(part * quantum, self._currency) for part in parts]
"""

L2_MORE = """\
python - <<'EOF'
from ledgerly import Invoice, Money

cases = [("100.00", "USD", [1, 1, 1]), ("0.05", "USD", [1, 1]), ("0.05", "USD", [1, 0, 1]),
         ("1000", "JPY", [1, 1, 1]), ("1", "KWD", [1, 1, 1]), ("90", "USD", [1, 2])]
for amount, currency, ratios in cases:
    parts = Money(amount, currency).allocate(ratios)
    total = sum(parts, Money.zero(currency))
    print(amount, currency, ratios, [str(p.amount) for p in parts], "adds up" if total == Money(amount, currency) else "OFF")

invoice = Invoice("INV-7")
invoice.add_line("Annual plan", 1, "100.00")
print("installments", invoice.installments(3))
EOF"""

LEDGERLY_002 = Script(
    "ledgerly-002",
    "regression",
    [
        bash(
            'grep -n "def allocate\\|def installments" -A12 ledgerly/money.py ledgerly/invoice.py',
            "Let me look at `allocate` and `installments`.",
            expect=("def allocate",),
        ),
        bash(L2_REPRO, "Reproducing both examples from the issue.", expect=("sum: 99.99", "sum: 0.06")),
        replace(
            "ledgerly/money.py",
            L2_OLD,
            L2_NEW,
            "Each part is rounded on its own, so the rounding errors add up instead of cancelling: "
            "3 x 33.33 = 99.99, and 0.025 rounds up twice to 0.06. I'll split in whole minor units: "
            "round every share down, then hand the leftover units out one at a time to the first parts "
            "(so 100.00 / 3 gives 33.34, 33.33, 33.33), skipping parts with ratio 0 so they stay at zero.",
        ),
        bash(
            L2_MORE,
            "Checking the examples and other currencies, a zero ratio, and installments.",
            expect=(
                "100.00 USD [1, 1, 1] ['33.34', '33.33', '33.33'] adds up",
                "0.05 USD [1, 1] ['0.03', '0.02'] adds up",
                "1000 JPY [1, 1, 1] ['334', '333', '333'] adds up",
            ),
        ),
        tests("Parts add up in every case. Running the tests."),
        submit(
            "allocate() now splits in minor units and hands leftover units to the first non-zero parts, so "
            "parts (and installments) always add up to the amount. Tests pass."
        ),
    ],
)

# ledgerly-003: discount feature, three edits over two files.

L3_INIT_OLD = '''\
class Invoice:
    """An invoice in one currency with a flat tax rate (a percentage, e.g. ``20``)."""

    def __init__(self, number: str, currency: str = "USD", tax_rate: Quantity = 0) -> None:
        self.number = number
        self.currency = get_currency(currency)
        self.tax_rate = _decimal(tax_rate, "tax_rate")
        if not 0 <= self.tax_rate <= 100:
            raise ValueError(f"tax_rate is a percentage between 0 and 100, got {self.tax_rate}")
        self.lines: list[LineItem] = []
'''

L3_INIT_NEW = '''\
def _percentage(value: Quantity, what: str) -> Decimal:
    result = _decimal(value, what)
    if not 0 <= result <= 100:
        raise ValueError(f"{what} is a percentage between 0 and 100, got {result}")
    return result


class Invoice:
    """An invoice in one currency with a flat tax rate and an optional discount.

    Both are percentages (``tax_rate=20`` is 20%); the discount comes off the subtotal before tax.
    """

    def __init__(
        self, number: str, currency: str = "USD", tax_rate: Quantity = 0, discount_percent: Quantity = 0
    ) -> None:
        self.number = number
        self.currency = get_currency(currency)
        self.tax_rate = _percentage(tax_rate, "tax_rate")
        self.discount_percent = _percentage(discount_percent, "discount_percent")
        self.lines: list[LineItem] = []
'''

L3_TOTALS_OLD = '''\
    @property
    def tax(self) -> Money:
        """Tax on the subtotal, rounded to the minor unit."""
        return (self.subtotal * self.tax_rate / 100).rounded()

    @property
    def total(self) -> Money:
        return self.subtotal + self.tax
'''

L3_TOTALS_NEW = '''\
    @property
    def discount(self) -> Money:
        """``discount_percent`` of the subtotal, rounded to the minor unit (zero without a discount)."""
        return (self.subtotal * self.discount_percent / 100).rounded()

    @property
    def tax(self) -> Money:
        """Tax on the subtotal less the discount, rounded to the minor unit."""
        return ((self.subtotal - self.discount) * self.tax_rate / 100).rounded()

    @property
    def total(self) -> Money:
        return self.subtotal - self.discount + self.tax
'''

L3_REPORT_OLD = """\
    rows.append(_total("Subtotal", invoice.subtotal))
"""

L3_REPORT_NEW = """\
    rows.append(_total("Subtotal", invoice.subtotal))
    if invoice.discount_percent:
        rows.append(_total(f"Discount ({number(invoice.discount_percent)}%)", -invoice.discount))
"""

L3_REPRO = """\
python - <<'EOF'
from ledgerly import Invoice
from ledgerly.report import render_invoice

invoice = Invoice("INV-20", tax_rate=20, discount_percent=10)
invoice.add_line("Consulting", 12, "100.00")
print(render_invoice(invoice))
print(invoice.discount, invoice.tax, invoice.total, invoice.installments(3))

odd = Invoice("INV-21", tax_rate="7.5", discount_percent="12.50")
odd.add_line("Widget", 3, "9.99")
print(render_invoice(odd).splitlines()[-3], "|", odd.discount, odd.tax, odd.total)
print("no discount line:", "Discount" not in render_invoice(Invoice("INV-22")))
for bad in (-5, 101, "abc"):
    try:
        Invoice("INV-23", discount_percent=bad)
    except ValueError as exc:
        print("ValueError:", exc)
EOF"""

LEDGERLY_003 = Script(
    "ledgerly-003",
    "resolved",
    [
        view(".", "Let me see the layout first.", expect=("ledgerly/invoice.py",)),
        view("ledgerly/invoice.py", "The invoice model.", expect=("class Invoice",)),
        view("ledgerly/report.py", "And the text report.", expect=("def render_invoice",)),
        replace(
            "ledgerly/invoice.py",
            L3_INIT_OLD,
            L3_INIT_NEW,
            "I'll add `discount_percent` next to `tax_rate`, sharing its parsing and 0-100 validation "
            "through a small `_percentage` helper.",
        ),
        replace(
            "ledgerly/invoice.py",
            L3_TOTALS_OLD,
            L3_TOTALS_NEW,
            "Now the amounts: `discount` is rounded once, tax is charged on the subtotal less the "
            "discount, and the total (which `installments` splits) follows.",
        ),
        replace(
            "ledgerly/report.py",
            L3_REPORT_OLD,
            L3_REPORT_NEW,
            "The report gets a negative discount line between subtotal and tax, only when there is a "
            "discount, formatted with the same `number()` as the tax label.",
        ),
        bash(
            L3_REPRO,
            "Rendering the example from the request, a fractional discount, and the invalid values.",
            expect=(
                "Discount (10%)       -$120.00",
                "Tax (20%)        $216.00",
                "Total      $1,296.00",
                "Discount (12.5%)",
                "no discount line: True",
                "ValueError: discount_percent",
            ),
        ),
        tests("The layout matches the request. Running the tests."),
        submit(
            "Invoice takes discount_percent (validated like tax_rate); discount is rounded once, tax is "
            "charged after it, total and installments follow, and the report shows a Discount line. "
            "Tests pass."
        ),
    ],
)

SCRIPTS: dict[str, Script] = {
    s.task_id: s for s in (INIKIT_001, INIKIT_002, INIKIT_003, INIKIT_004, LEDGERLY_001, LEDGERLY_002, LEDGERLY_003)
}
EXPECTED: dict[str, str] = {task_id: s.expected for task_id, s in SCRIPTS.items()}


# ---------------------------------------------------------------------------------------- tokens


class Meter:
    """Counts tokens with litellm's tokenizer and prices them with litellm's price map."""

    def __init__(self) -> None:
        # Never fetch litellm's price map over the network (the import would, without this).
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        self._count = litellm.token_counter
        if lookup_price(PRICED_AS, PROVIDER) is None:
            raise SystemExit(f"litellm's price map has no {PRICED_AS}: pick another PRICED_AS")

    def input_tokens(self, messages: list[dict], tools: list[dict]) -> int:
        specs = [ToolSpec.model_validate(t) for t in tools]
        return self._count(model=PRICED_AS, messages=to_openai_messages(messages), tools=to_openai_tools(specs))

    def output_tokens(self, text: str, calls: list[ToolCall]) -> int:
        pieces = [text] + [piece for c in calls for piece in (c.name, c.raw_arguments)]
        return sum(self._count(model=PRICED_AS, text=piece) for piece in pieces if piece)


def make_turn(step: Step, index: int, messages: list[dict], tools: list[dict], meter: Meter) -> Turn:
    call = ToolCall.parse(f"call_{index:02d}", step.tool, json.dumps(step.args))
    usage = Usage(
        input_tokens=meter.input_tokens(messages, tools), output_tokens=meter.output_tokens(step.text, [call])
    )
    return Turn(
        text=step.text,
        tool_calls=[call],
        usage=usage,
        cost_usd=turn_cost(usage, PRICED_AS, PROVIDER),
        latency_s=round(0.4 + usage.output_tokens / 80, 3),
        stop_reason="tool_use",
        model=MODEL_LABEL,
    )


# ---------------------------------------------------------------------------------------- running


def _run(task: Task, model: Any, out: Path, label: str) -> ResultRow:
    """One task through the real loop in Docker: a fresh agent, its own run folder."""
    agent = ToolAgent(model, load_agent_config())
    rows = Runner([task], agent, RunOptions(out=out, label=label)).run()
    (row,) = [r for r in rows if r.task_id == task.id]
    return row


def tool_results(run_dir: Path, row: ResultRow) -> list[ToolResultEvent]:
    events = read_transcript(run_dir / row.transcript_path)
    return [e for e in events if isinstance(e, ToolResultEvent)]


def verify(script: Script, run_dir: Path, row: ResultRow) -> list[str]:
    """What went differently from the script: outcome, stop reason, each tool result."""
    problems = []
    if row.outcome != script.expected:
        problems.append(f"outcome {row.outcome} (expected {script.expected}){': ' + row.error if row.error else ''}")
    if row.stop_reason != "submitted":
        problems.append(f"stopped: {row.stop_reason}")
    results = tool_results(run_dir, row)
    if len(results) != len(script.steps):
        problems.append(f"{len(results)} tool results for {len(script.steps)} scripted steps")
    for n, (step, result) in enumerate(zip(script.steps, results), 1):
        off = step.problems(result.output, result.is_error)
        if off:  # later steps are out of step with this one: one diagnosis is enough
            problems += [f"step {n} ({step.tool}): {p}" for p in off]
            break
    return problems


def record_task(task: Task, out: Path, meter: Meter) -> tuple[ResultRow, list[Turn], list[str]]:
    """Run a task's script through the loop; the turns it returned, and what went off-script."""
    script = SCRIPTS[task.id]
    turns: list[Turn] = []

    def step_fn(index: int, step: Step) -> Callable[..., Turn]:
        def answer(messages: list[dict], tools: list[dict], settings: Any) -> Turn:
            turn = make_turn(step, index, messages, tools, meter)
            turns.append(turn)
            return turn

        return answer

    model = ScriptedModel([step_fn(i, s) for i, s in enumerate(script.steps, 1)], name=MODEL_LABEL)
    row = _run(task, model, out, "demo-script")
    return row, turns, verify(script, out, row)


def replay_task(task_id: str, out: Path, recordings: Path = RECORDINGS) -> tuple[ResultRow, list[str]]:
    """Replay one task's recording through the loop in Docker (run folder ``out``).

    Returns the result row and what went differently from the script (empty when all is as
    declared: outcome, stop reason, every tool result, and usage equal to the recording's sum).
    """
    (task,) = [t for t in load_tasks([DEMO]) if t.id == task_id]
    path = recordings / f"{task_id}.jsonl"
    model = ReplayModel(path)
    row = _run(task, model, out, "replay")
    problems = verify(SCRIPTS[task_id], out, row)
    total = sum((t.usage for t in model.turns), Usage())
    if row.usage.input_tokens != total.input_tokens or row.usage.output_tokens != total.output_tokens:
        problems.append(f"usage {row.usage} differs from the recording's {total}")
    if row.steps != len(model.turns):
        problems.append(f"{row.steps} steps for {len(model.turns)} recorded turns")
    return row, problems


def _summary(task_id: str, row: ResultRow, problems: list[str], turns: int) -> str:
    mark = "ok " if not problems else "BAD"
    cost = "unknown" if row.cost_usd is None else f"${row.cost_usd:.4f}"
    line = (
        f"{mark} {task_id:13} {row.outcome:11} (expected {EXPECTED[task_id]:10}) {turns:2} turns  "
        f"in {row.usage.input_tokens:6} out {row.usage.output_tokens:5} tokens  {cost}"
    )
    return "\n".join([line] + [f"      {p}" for p in problems])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", help="task ids (default: all demo tasks)")
    parser.add_argument("--check", action="store_true", help="replay the recordings and verify the outcomes")
    parser.add_argument(
        "--recordings",
        type=Path,
        default=RECORDINGS,
        help="with --check: the folder of recordings to replay (default: %(default)s)",
    )
    parser.add_argument("--keep", type=Path, help="keep the run folders here (default: a temporary folder)")
    parser.add_argument("--workers", type=int, default=4, help="tasks run in parallel")
    args = parser.parse_args(argv)

    tasks = {t.id: t for t in load_tasks([DEMO])}
    if set(tasks) != set(SCRIPTS):
        print(f"demo tasks {sorted(tasks)} and scripts {sorted(SCRIPTS)} differ", file=sys.stderr)
        return 2
    chosen = args.tasks or sorted(tasks)
    unknown = [t for t in chosen if t not in tasks]
    if unknown:
        print(f"unknown task(s): {', '.join(unknown)}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="record-demo-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        bad = 0
        if args.check:

            def check(task_id: str) -> tuple[str, ResultRow, list[str]]:
                row, problems = replay_task(task_id, root / task_id, args.recordings)
                return task_id, row, problems

            with ThreadPoolExecutor(max(1, args.workers)) as pool:
                for task_id, row, problems in pool.map(check, chosen):
                    bad += bool(problems)
                    print(_summary(task_id, row, problems, row.steps), flush=True)
            print("all recordings replay as declared" if not bad else f"{bad} recording(s) did not replay as declared")
            return 1 if bad else 0

        meter = Meter()
        with ThreadPoolExecutor(max(1, args.workers)) as pool:
            results = list(pool.map(lambda tid: (tid, *record_task(tasks[tid], root / tid, meter)), chosen))
        RECORDINGS.mkdir(parents=True, exist_ok=True)
        totals, cost = Usage(), 0.0
        for task_id, row, turns, problems in results:
            bad += bool(problems)
            print(_summary(task_id, row, problems, len(turns)), flush=True)
            if problems:
                continue  # never write a recording that did not go as scripted
            path = RECORDINGS / f"{task_id}.jsonl"
            path.write_text("".join(t.model_dump_json() + "\n" for t in turns), encoding="utf-8")
            totals += sum((t.usage for t in turns), Usage())
            cost += sum(t.cost_usd or 0.0 for t in turns)
        print(
            f"wrote {len(results) - bad} recording(s) to {RECORDINGS.relative_to(ROOT)}: "
            f"{totals.input_tokens} input + {totals.output_tokens} output tokens, ${cost:.4f} as {PRICED_AS}"
        )
        if args.keep:
            print(f"run folders kept in {root}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
