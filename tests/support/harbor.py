"""A repository-shaped Harbor task directory, as SWE-bench Pro V2's are (tests/test_harbor_tasks.py
and the red team's hostile variants of it build on it)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from support import git, write

FIX = "def add(a, b):\n    return a + b\n"
TEST_PATCH = """\
diff --git a/tests/test_add.py b/tests/test_add.py
new file mode 100644
--- /dev/null
+++ b/tests/test_add.py
@@ -0,0 +1,5 @@
+from calc import add
+
+
+def test_add():
+    assert add(2, 3) == 5
"""
TEST_SH = """\
#!/bin/bash
# SWE-bench Pro V2 style: run the tests, keep the output, let the parser write the reward
set -uo pipefail
cd /app
git apply --verbose /tests/test.patch
python -m pytest -rA -p no:cacheprovider tests 2>&1 | tee /tmp/test_output.txt
mkdir -p /logs/verifier
python /tests/parser.py /tmp/test_output.txt /tests/config.json > /logs/verifier/reward.txt
"""
SOLVE_SH = """\
#!/bin/bash
set -euo pipefail
cd /app
cat > /tmp/fix.patch <<'EOF'
diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
EOF
git apply /tmp/fix.patch
"""


def harbor_task(root: Path, name: str = "calc-add") -> Path:
    """A repository-shaped Harbor task directory, as SWE-bench Pro V2's are."""
    task = root / name
    repo = task / "environment" / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "calc/__init__.py": "def add(a, b):\n    return a - b\n",
            "tests/test_mul.py": "def test_mul():\n    assert 2 * 3 == 6\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    write(
        task,
        {
            "task.toml": textwrap.dedent("""\
                schema_version = "1.4"

                [task]
                name = "swebenchpro/NAME"

                [metadata]
                difficulty = "easy"

                [agent]
                timeout_sec = 1200.0

                [verifier]
                timeout_sec = 300.0

                [environment]
                workdir = "/app"
                """).replace("NAME", name),
            "instruction.md": "add() subtracts instead of adding.\n\nadd(2, 3) should be 5.\n",
            "environment/Dockerfile": textwrap.dedent("""\
                FROM wholeloop/base:bookworm
                # Debian's pip installs into a venv only (PEP 668)
                RUN python3 -m venv /opt/venv
                ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH
                # the same setup as the demo's: its image is shared
                RUN pip install pytest==8.3.4
                COPY repo /app
                WORKDIR /app
                """),
            "tests/test.sh": TEST_SH,
            "tests/test.patch": TEST_PATCH,
            "tests/parser.py": "import sys\nprint(1 if ' failed' not in open(sys.argv[1]).read() else 0)\n",
            "tests/config.json": json.dumps(
                {
                    "instance_id": "calc-add",
                    "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
                    "PASS_TO_PASS": ["tests/test_mul.py::test_mul"],
                }
            ),
            "solution/solve.sh": SOLVE_SH,
        },
    )
    return task
