#!/usr/bin/env python3
"""scripts/check_layers.py [BUILD_DIR]: reads the tree and checks that
dependencies point one way, down the layers of docs/ARCHITECTURE.md:

    pack -> pipeline -> store -> decoder -> io -> convert -> core

(a module may use any module below it, never one above), and that the files
of src/io do not call each other in a circle. Includes are read from the
sources (src/*/*.[ch], public headers counted as their module's); calls from
the objects of BUILD_DIR (default build/) with nm, when they are there.

Edges still being fixed are listed in KNOWN_PENDING below with who fixes
them; the check fails on any other edge, and notes a pending edge that is
gone (remove it then: the list only shrinks). Prints one line per problem;
exit status 1 if any."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["core", "convert", "io", "decoder", "store", "pipeline", "pack"]  # bottom to top
RANK = {m: i for i, m in enumerate(LAYERS)}
# Public headers by the module that implements them (reel.h, pipeline.h and
# deprecated.h gather others: they belong to the top).
PUBLIC = {"common.h": "core", "convert.h": "convert", "io.h": "io", "decoder.h": "decoder", "store.h": "store",
          "dataset.h": "pipeline", "sampler.h": "pipeline", "loader.h": "pipeline", "pipeline.h": "pipeline",
          "reel.h": "pipeline", "deprecated.h": "pipeline"}

# "kind from -> to": why it is still here and who removes it.
KNOWN_PENDING = {
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([\w/]+\.h)"', re.M)


def module_of_include(inc: str, here: str) -> str:
    if inc.startswith("reel/"):
        return PUBLIC.get(inc[len("reel/"):], "pipeline")
    if "/" in inc:
        return inc.split("/", 1)[0]
    return here  # a header next to the file


def include_edges() -> dict:
    edges = defaultdict(list)
    for f in sorted((ROOT / "src").glob("*/*.[ch]")):
        here = f.parent.name
        for inc in INCLUDE.findall(f.read_text(errors="replace")):
            to = module_of_include(inc, here)
            if to != here and to in RANK:
                edges[(here, to)].append(f"{f.relative_to(ROOT)}: {inc}")
    # the public headers themselves
    for f in sorted((ROOT / "include" / "reel").glob("*.h")):
        here = PUBLIC.get(f.name, "pipeline")
        for inc in INCLUDE.findall(f.read_text(errors="replace")):
            to = PUBLIC.get(Path(inc).name, "pipeline")
            if to != here:
                edges[(here, to)].append(f"{f.relative_to(ROOT)}: {inc}")
    return edges


def object_symbols(build: Path) -> dict:
    """{source path: (defined, undefined)} from build/CMakeFiles/reel_obj.dir."""
    objdir = build / "CMakeFiles" / "reel_obj.dir" / "src"
    out = {}
    if not objdir.is_dir():
        return out
    for o in sorted(objdir.glob("*/*.c.o")):
        src = ROOT / "src" / o.parent.name / o.name[:-2]
        if not src.exists():
            continue  # a stale object of a removed file
        r = subprocess.run(["nm", "-g", str(o)], capture_output=True, text=True)
        if r.returncode != 0:
            continue
        defined, undefined = set(), set()
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[-2] == "U":
                undefined.add(parts[-1])
            elif len(parts) == 3 and parts[1] in "TDBRC" and parts[2].startswith("reel"):
                defined.add(parts[2])
        out[src.relative_to(ROOT)] = (defined, undefined)
    return out


def call_edges(syms: dict) -> tuple:
    owner = {}
    for src, (defined, _) in syms.items():
        for s in defined:
            owner[s] = src
    modules, files = defaultdict(list), defaultdict(set)
    for src, (_, undefined) in syms.items():
        for s in undefined:
            to = owner.get(s)
            if to is None or to == src:
                continue
            a, b = src.parts[1], to.parts[1]
            if a != b:
                modules[(a, b)].append(f"{src} calls {s} ({to})")
            elif a == "io":
                files[src.name].add(to.name)
    return modules, files


def cycles(graph: dict) -> list:
    """The strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def problems(build: Path) -> tuple:
    found, seen = [], set()
    for (a, b), where in sorted(include_edges().items()):
        if RANK[a] < RANK[b]:
            key = f"include {a} -> {b}"
            seen.add(key)
            if key not in KNOWN_PENDING:
                found.append(f"{key} (upward): " + "; ".join(where[:4]))
    syms = object_symbols(build)
    if syms:
        modules, files = call_edges(syms)
        for (a, b), where in sorted(modules.items()):
            if RANK.get(a, 0) < RANK.get(b, 0):
                key = f"call {a} -> {b}"
                seen.add(key)
                if key not in KNOWN_PENDING:
                    found.append(f"{key} (upward): " + "; ".join(sorted(where)[:4]))
        for comp in cycles({k: sorted(v) for k, v in files.items()}):
            seen.add("io-circle")
            if "io-circle" not in KNOWN_PENDING:
                found.append("src/io files call each other in a circle: " + " <-> ".join(comp))
    fixed = [f"{key} is fixed: remove it from KNOWN_PENDING in scripts/check_layers.py ({why})"
             for key, why in KNOWN_PENDING.items()
             if key not in seen and (syms or not key.startswith(("call", "io-circle")))]
    return found, fixed, bool(syms)


def main() -> int:
    build = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build"
    found, fixed, had_objects = problems(build)
    if not had_objects:
        print(f"check_layers: no objects in {build}: includes checked, calls not", file=sys.stderr)
    for p in found:
        print(p)
    for p in fixed:
        print(f"note: {p}", file=sys.stderr)
    pending = ", ".join(KNOWN_PENDING) or "none"
    print(f"check_layers: {len(found)} problem(s); known pending: {pending}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
