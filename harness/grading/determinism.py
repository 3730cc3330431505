"""What must not change a grade: the hash seed and the test order, fixed in grading, varied by the check.

Python randomises `hash()` of str and bytes per process unless PYTHONHASHSEED is set, so anything
built by iterating a set or a dict keyed by them -- parametrized test ids, the order of generated
cases -- can differ from one run to the next. Test-order randomisers (pytest-randomly, and
pytest-random-order when enabled) shuffle the tests with a fresh seed per run, and pytest-randomly
reseeds `random` (numpy, faker, ...) with it before each test.

Grading runs the hidden tests with PYTHONHASHSEED=GRADING_SEED (the task's own value when its
environment sets one) and every randomiser the environment has seeded with GRADING_SEED: the same
run gives the same tests in the same order with the same random values. Seeded, not disabled:
`-p no:randomly` would break a repository whose pytest configuration passes the plugin's own
options (`addopts = -p randomly --randomly-dont-reorganize`), and pytest-randomly's per-test
reseeding of `random` is itself what makes random values repeatable. Which randomisers exist and
how each is seeded is the test parser's (`harness.parsers.pytest.RANDOMISERS`).

`wholeloop tasks check` runs each phase with `check_seed(n)` for its n-th run (the first is
grading's), varying both on purpose: a task whose test ids or outcomes change with them is
quarantined, so what the agent sees in its own container (whatever order its pytest picks) and what
grading sees agree on every checked task. Mined tasks' images set PYTHONHASHSEED too.
"""

from __future__ import annotations

from ..tasks import Task

GRADING_SEED = 0  # PYTHONHASHSEED and the randomisers' seed in grading (0: hash randomisation off)
HASH_SEED_VAR = "PYTHONHASHSEED"


def check_seed(run: int) -> int:
    """The seed of a check's n-th run of a phase (0-based): grading's first, then others."""
    return GRADING_SEED + run


def hash_seed(task: Task, seed: int = GRADING_SEED) -> str:
    """PYTHONHASHSEED for a hidden test run with `seed`: the task's own when its environment sets one
    (its author fixed it: the check does not vary it either), else the seed."""
    return task.environment.env.get(HASH_SEED_VAR) or str(seed)


def hash_seed_fixed_by_task(task: Task) -> bool:
    return bool(task.environment.env.get(HASH_SEED_VAR))
