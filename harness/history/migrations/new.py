"""Write a new schema revision: `python -m harness.history.migrations.new "what changed"`.

Brings a scratch SQLite database to the current head, lets Alembic compare it with
`harness/history/schema.py` and writes the difference as versions/<NNNN>_<slug>.py. Read and edit
the file (autogenerate is a draft), then set `schema.HEAD` to its revision id; the test that
compares the migrated database with schema.py, on SQLite and PostgreSQL, checks the result.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import cast

from alembic import command
from alembic.config import Config
from alembic.script import Script, ScriptDirectory

from harness.history.db import MIGRATIONS, HistoryIndex
from harness.history.url import sqlite_url


def main(message: str) -> Path:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head() or "0000"
    rev_id = f"{int(head) + 1:04d}"
    slug = re.sub(r"[^a-z0-9]+", "_", message.lower()).strip("_")[:40] or "change"
    config.set_main_option("file_template", f"{rev_id}_{slug}")
    with tempfile.TemporaryDirectory() as tmp, HistoryIndex.open(sqlite_url(Path(tmp) / "h.sqlite")) as index:
        with index.engine.begin() as conn:
            config.attributes["connection"] = conn
            # one head, so one revision (a list is for several heads, None for none written)
            script = cast(Script, command.revision(config, message, autogenerate=True, rev_id=rev_id))
    return Path(script.path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(main(sys.argv[1]))
