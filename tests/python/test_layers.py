# tests/python/test_layers.py: the library's dependency graph is the one
# docs/ARCHITECTURE.md draws: read from the tree (includes and calls of the
# public API families), no module of src/ reaches a module above it (store
# -> pipeline, core -> convert, ...), and the public headers keep the same
# order among themselves.
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
INCLUDE = ROOT / "include" / "reel"

# Each module and what it may use, bottom to top (ARCHITECTURE.md, "Modules").
ALLOWED = {
    "core": set(),
    "io": {"core"},
    "convert": {"core"},
    "decoder": {"core", "io", "convert"},
    "store": {"core", "io", "convert", "decoder"},
    "pipeline": {"core", "io", "convert", "decoder", "store"},
    "pack": {"core", "io", "convert", "decoder", "store", "pipeline"},
}

# The public headers, by the module that implements them.
PUBLIC = {
    "common.h": "core",
    "io.h": "io",
    "convert.h": "convert",
    "decoder.h": "decoder",
    "store.h": "store",
    "dataset.h": "pipeline",
    "sampler.h": "pipeline",
    "order.h": "pipeline",
    "loader.h": "pipeline",
    "pipeline.h": "pipeline",
}

# A function defined at the start of a line of a .c file (not static): the
# module that implements it. A call to it from another module is a use.
DEFINITION_RE = re.compile(r"^(?!static\b)[a-z][\w \t\*]*?\b(reel_[a-z0-9_]+)\s*\(", re.M)
CALL_RE = re.compile(r"\b(reel_[a-z0-9_]+)\s*\(")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def included_module(name: str, here: str) -> str | None:
    """The module an #include names: "store/x.h", "reel/store.h", or a
    sibling header of the including module."""
    if name.startswith("reel/"):
        return PUBLIC.get(name[5:])
    if "/" in name:
        head = name.split("/", 1)[0]
        return head if head in ALLOWED else None
    return here if here in ALLOWED else PUBLIC.get(name)


def definitions(files) -> dict:
    """Function name -> the module whose .c file defines it."""
    found = {}
    for path in files:
        if path.suffix == ".c":
            for name in DEFINITION_RE.findall(strip_comments(path.read_text(errors="replace"))):
                found[name] = path.parent.name
    return found


def module_edges():
    """(module, used module, file, why) for every use across modules in src/."""
    files = sorted(SRC.glob("*/*.[ch]"))
    defined = definitions(files)
    for path in files:
        mod = path.parent.name
        text = path.read_text(errors="replace")
        for inc in INCLUDE_RE.findall(text):
            used = included_module(inc, mod)
            if used and used != mod:
                yield mod, used, path.relative_to(ROOT), f'#include "{inc}"'
        for name in set(CALL_RE.findall(strip_comments(text))):
            used = defined.get(name)
            if used and used != mod:
                yield mod, used, path.relative_to(ROOT), f"calls {name}"


def test_the_modules_are_the_documented_ones():
    assert {p.name for p in SRC.iterdir() if p.is_dir()} == set(ALLOWED)


def test_no_module_reaches_up():
    bad = sorted({f"{f}: {mod} -> {used} ({why})" for mod, used, f, why in module_edges()
                  if used not in ALLOWED[mod]})
    assert not bad, "uses against the module order:\n" + "\n".join(bad)


def test_the_public_headers_keep_the_order():
    bad = []
    for h in sorted(INCLUDE.glob("*.h")):
        mod = PUBLIC.get(h.name)
        if mod is None:  # reel.h and deprecated.h gather the others
            continue
        for inc in INCLUDE_RE.findall(h.read_text()):
            used = PUBLIC.get(inc.split("/")[-1])
            if used and used != mod and used not in ALLOWED[mod]:
                bad.append(f"include/reel/{h.name}: {mod} -> {used} ({inc})")
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_use_against_the_order():
    """The reader itself: an include or a call up the order is found."""
    assert included_module("pipeline/dataset_internal.h", "store") == "pipeline"
    assert included_module("reel/convert.h", "core") == "convert"
    code = strip_comments("/* reel_loader_next( */ int x = reel_dataset_get_size(ds);")
    assert CALL_RE.findall(code) == ["reel_dataset_get_size"]
    defined = definitions(sorted(SRC.glob("*/*.c")))
    assert defined["reel_dataset_get_size"] == "pipeline" and defined["reel_decoder_open"] == "decoder"
    assert defined["reel__io_redact"] == "io" and "reel__io_is_remote" in defined
    assert "pipeline" not in ALLOWED["store"] and "convert" not in ALLOWED["core"]


def test_private_headers_do_not_share_public_names():
    public = {h.name for h in INCLUDE.glob("*.h")}
    clash = sorted(str(p.relative_to(ROOT)) for p in SRC.glob("*/*.h") if p.name in public)
    assert not clash, f"private headers named like public ones: {clash}"
