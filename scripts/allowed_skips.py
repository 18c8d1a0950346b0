#!/usr/bin/env python3
"""scripts/allowed_skips.py: the strict-mode skip list, tests/allowed_skips.txt,
read once for every runner: pytest's conftest imports it, and the test runner
(scripts/run_tests.sh) asks it about a skip of its own stages (the wheel):

    python3 scripts/allowed_skips.py WHERE MESSAGE   # exit 0: allowed, 1: not

A rule is "WHERE | MESSAGE | WHY", fnmatch patterns over the skipped test's id
and its message, and a reason (tests/python/test_strict.py checks each)."""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path

LIST = Path(os.environ.get("REEL_ALLOWED_SKIPS") or Path(__file__).resolve().parents[1] / "tests" / "allowed_skips.txt")


def load_allowed_skips(path: Path = LIST) -> list:
    """The (where, message) patterns of the strict-mode skip list."""
    rules = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ", 2)]
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"{path}:{n}: not 'WHERE | MESSAGE | WHY': {line}")
        rules.append((parts[0], parts[1]))
    return rules


def skip_allowed(where: str, message: str, rules: list) -> bool:
    return any(fnmatch.fnmatchcase(where, w) and fnmatch.fnmatchcase(message, m) for w, m in rules)


def main(argv: list) -> int:
    if len(argv) != 3:
        print("usage: allowed_skips.py WHERE MESSAGE", file=sys.stderr)
        return 2
    return 0 if skip_allowed(argv[1], argv[2], load_allowed_skips()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
