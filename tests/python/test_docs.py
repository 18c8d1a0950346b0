"""The docs against the tree (issue 17 section 4): every signature that
docs/*.md shows as a code block of its own matches the real one (names,
order, keyword-only marker, defaults), and every repository path that the
docs name exists."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"```python\n(.*?)```", re.S)


def _documented_signatures() -> list:
    """(doc, dotted name, ast.arguments) for each ```python block holding one call alone."""
    out = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            code = block.strip()
            m = re.fullmatch(r"(reel(?:\.\w+)+)\((.*)\)", code, re.S)
            if not m:
                continue
            try:
                fn = ast.parse(f"def f({m.group(2)}): pass").body[0]
            except SyntaxError:
                continue  # an example call with literal arguments, not a signature
            assert isinstance(fn, ast.FunctionDef)
            out.append((doc.name, m.group(1), fn.args))
    return out


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise AssertionError(dotted)


def test_there_are_documented_signatures():
    names = [n for _, n, _ in _documented_signatures()]
    assert "reel.Loader" in names, names


@pytest.mark.parametrize("doc,name,args", _documented_signatures(), ids=lambda v: v if isinstance(v, str) else "")
def test_documented_signature_is_the_real_one(doc, name, args):
    real = inspect.signature(_resolve(name))
    params = [p for p in real.parameters.values() if p.name != "self"]
    documented = [(a.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in args.args]
    documented += [(a.arg, inspect.Parameter.KEYWORD_ONLY) for a in args.kwonlyargs]
    assert [(p.name, p.kind) for p in params] == documented, f"{doc}: {name} documented differently"
    defaults = dict(zip([a.arg for a in args.args][len(args.args) - len(args.defaults):], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    for p in params:
        if p.default is inspect.Parameter.empty:
            assert p.name not in defaults, f"{doc}: {name}({p.name}) has no default"
        else:
            assert p.name in defaults, f"{doc}: {name}({p.name}=...) default missing"
            assert ast.literal_eval(defaults[p.name]) == p.default, f"{doc}: {name}({p.name}=...)"


def test_loader_doc_names_every_choice():
    """The option values a user can pass are named in the Loader section."""
    from reel import _loader

    text = (ROOT / "docs" / "python.md").read_text()
    section = text[text.index("## Loader"):]
    section = section[:section.index("\n## ", 3)]
    for table in (_loader.POLICIES, _loader.ON_ERROR, _loader.SHARD):
        for choice in table:
            assert f'"{choice}"' in section, f"docs/python.md's Loader section does not name {choice!r}"


# ---------------------------------------------------------------- paths named in the docs
# Repository paths as the docs write them: `src/...`, `python/reel/x.c`, `reel/x.h` (include/reel/x.h), ...
PATH = re.compile(r"(?<![\w./-])((?:src|python|tests|bench|cli|include|scripts|tools|examples|docs|cmake)/[\w./*-]*\w"
                  r"|reel/\w+\.h|\.ci/run)")
# Build outputs and examples of user paths, not files of the tree.
# tests/fuzz/regressions/<target>/ is made when a fuzzer first finds an input.
NOT_TREE = re.compile(r"^tests/fuzz/regressions")


def _paths():
    for doc in DOCS:
        text = doc.read_text()
        for m in PATH.finditer(text):
            p = m.group(1).rstrip(".")
            if NOT_TREE.match(p) or text[max(0, m.start() - 4):m.start()] == "was ":
                continue  # a build output, or where a file used to be
            if "*" in p:  # a glob: something must match it
                yield doc.name, p, bool(list(ROOT.glob(p)))
            else:
                yield doc.name, p, (ROOT / ("include/" + p if p.startswith("reel/") else p)).exists()


def test_every_path_named_in_the_docs_exists():
    missing = []
    for doc, p, exists in _paths():
        if not exists:
            missing.append(f"{doc}: {p}")
    assert not missing, "paths named in the docs that are not in the tree:\n" + "\n".join(sorted(set(missing)))


def test_no_doc_names_a_removed_file():
    """The extension's old single file; pipeline.h, kept only for compatibility,
    is not the header to include (reel/loader.h is)."""
    found = [f"{doc.name}: _reel.c" for doc in DOCS if "_reel.c" in doc.read_text()]
    found += [f"{doc.name}: pipeline.h" for doc in DOCS
              if doc.name != "ARCHITECTURE.md" and "reel/pipeline.h" in doc.read_text()]
    for extra in (ROOT / "python/reel/_reel.pyi", ROOT / "CMakeLists.txt"):
        found += [f"{extra.name}: _reel.c" for _ in [0] if "_reel.c" in extra.read_text()]
    assert not found, found


def test_names_table_names_what_exists():
    """docs/python.md's table of names across C, the CLI and Python (issue 26
    section 2): every C identifier in it is declared in a public header, every
    `keyword=` is an argument of Loader or VideoDecoder, every metadata field
    is one of VideoMetadata's, and every CLI option is in the CLI's source."""
    import dataclasses

    import reel

    text = (ROOT / "docs" / "python.md").read_text()
    start = text.index("## Names across C, the CLI and Python")
    table = text[start:text.index("\n## ", start + 1)]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| concept")]
    assert len(rows) >= 20, rows
    headers = "".join(p.read_text() for p in (ROOT / "include" / "reel").glob("*.h"))
    cli = "".join(p.read_text() for p in (ROOT / "cli").glob("*.c"))
    callables = (reel.Loader, reel.VideoDecoder, reel.VideoDecoder.get_frames_near, reel.decode_near, reel.pack)
    params = set().union(*(inspect.signature(f).parameters for f in callables))
    fields = {f.name for f in dataclasses.fields(reel.VideoMetadata)}
    for row in rows:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == 4, row
        concept, c, cmd, py = cells
        for name in re.findall(r"\b(?:reel|REEL)_[A-Za-z0-9_]+", c):
            if name.endswith("_"):
                continue  # a prefix, e.g. REEL_ON_ERROR_*
            assert re.search(rf"\b{name}\b", headers), f"{concept}: {name} is in no public header"
        for opt in re.findall(r"(--[a-z][a-z-]*)", cmd):
            assert f'"{opt}"' in cli or f"{opt} " in cli or f"{opt}=" in cli, f"{concept}: the CLI has no {opt}"
        for kw in re.findall(r"`(\w+)=", py):
            assert kw in params, f"{concept}: {kw}= is no argument of Loader, VideoDecoder, decode_near or pack"
        for field in re.findall(r"VideoMetadata\.(\w+)", py) + re.findall(r"`\.(\w+)`", py):
            assert field in fields, f"{concept}: VideoMetadata has no {field}"
