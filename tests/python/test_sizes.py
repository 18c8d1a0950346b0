# tests/python/test_sizes.py: the house rule on sizes (GUIDE.md; issue 17
# section 6): no C function over 120 lines (a table or a switch may be, when
# a comment on the line before says "a table" or "a switch"), and no C or
# Python source file far past 800 lines, in the library, the CLI, the
# binding and the tools.
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILE_MAX = 850  # "about 800": a file past it is split by concern
FUNCTION_MAX = 120
SOURCES = ["src/*/*.[ch]", "cli/*.[ch]", "tools/*/*.[ch]", "python/reel/*.[ch]", "python/reel/*.py"]


def _files():
    for pattern in SOURCES:
        yield from sorted(ROOT.glob(pattern))


def long_functions(text: str) -> list:
    """(name line, length) of each function body over FUNCTION_MAX lines: a
    definition starts a line and its body runs from a lone "{" to a lone "}"."""
    lines = text.split("\n")
    out, i = [], 0
    while i + 1 < len(lines):
        if re.match(r"^[A-Za-z].*\)\s*$", lines[i]) and lines[i + 1] == "{":
            j = i + 2
            while j < len(lines) and lines[j] != "}":
                j += 1
            exempt = i > 0 and re.search(r"a (table|switch)", lines[i - 1])
            if j - i + 1 > FUNCTION_MAX and not exempt:
                out.append((lines[i].strip(), j - i + 1))
            i = j
        i += 1
    return out


def test_no_function_over_120_lines():
    found = [f"{p.relative_to(ROOT)}: {name} ({n} lines)" for p in _files() if p.suffix in (".c", ".h")
             for name, n in long_functions(p.read_text(errors="replace"))]
    assert not found, "\n".join(found)


def test_no_file_far_past_800_lines():
    found = [f"{p.relative_to(ROOT)}: {n} lines" for p in _files()
             if (n := p.read_text(errors="replace").count("\n")) > FILE_MAX]
    assert not found, "\n".join(found)


def test_the_reader_finds_a_long_function():
    body = "int f(void)\n{\n" + "    x++;\n" * 130 + "}\n"
    assert long_functions(body) == [("int f(void)", 133)]
    assert long_functions("/* a table */\n" + body) == []
