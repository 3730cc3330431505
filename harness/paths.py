"""wholeloop's cache folder, for the harness's own records in it (crash logs, the memo of intervals).

A leaf: the report and the CLI find it without importing `sandbox` (whose `snapshot.cache_dir`
gives the same folder to the lower layer, which cannot import the harness).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$WHOLELOOP_CACHE, else $XDG_CACHE_HOME/wholeloop (default ~/.cache/wholeloop)."""
    base = (
        os.environ.get("WHOLELOOP_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "wholeloop"
    )
    return Path(base)
