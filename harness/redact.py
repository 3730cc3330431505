"""Secrets kept out of what wholeloop writes and prints. A leaf: imports nothing of ours, nothing heavy."""

from __future__ import annotations

import re

_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)(?P<password>\S*)@")


def hide_url_passwords(text: str) -> str:
    """`scheme://user:password@host` -> `scheme://user:***@host`, wherever it occurs in `text`
    (command lines in manifests, database URLs in messages)."""
    return _URL_PASSWORD.sub(lambda m: m.group("head") + "***@", text)
