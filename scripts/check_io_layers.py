#!/usr/bin/env python3
"""scripts/check_io_layers.py [--graph] [SRC_IO_DIR]: src/io has no circle.

Reads the tree (no compiler): for the files of src/io (default: the one next
to this script),
  - calls: file A -> file B when A names a function that B defines with
    external linkage (reel_* / reel__*, not static); the graph of .c files
    must have no cycle, so io.c sits on top of the transports and
    io_common.c / pool.c / remote_stats.c / http_answer.c are leaves;
  - includes: header -> header through #include "io/..."; no cycle either;
  - the leaf: io_common.h includes no other header of src/io, and no
    transport (file.c, http*.c, s3*.c, pool.c) includes io/io_internal.h, the front
    end above them.
Prints each cycle or broken rule (with --graph, every call edge first), and "src/io layers: ok (N files, N call
edges)" when there is none; exit status 1 on a finding. For a whole-tree
layering check to fold in: check(folder) returns the findings as strings.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, List, Set

FUNC_DEF = re.compile(r"^(?!static\b)(?:[A-Za-z_][\w \t\*]*?[\s\*])(reel_\w+)\s*\(([^;{]*?)\)\s*\{", re.M | re.S)
IDENT = re.compile(r"\breel_\w+\b")
INCLUDE = re.compile(r'^#include\s+"io/([\w.]+)"', re.M)
# comments and literals in one pass, left to right: "s3://" is a string, not a comment
NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
TRANSPORT = re.compile(r"^(file|http.*|s3.*|pool)\.c$")


def _code(text: str) -> str:
    """The text without comments and string literals (includes kept aside)."""
    return NOT_CODE.sub(lambda m: '""' if m.group(0)[0] in "\"'" else " ", text)


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
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

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _path_in(comp: List[str], graph: Dict[str, Set[str]]) -> List[str]:
    """A cycle through comp's first node, staying inside comp (breadth-first)."""
    members, start = set(comp), comp[0]
    prev: Dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph.get(v, ())):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return comp


def check(folder: Path, show: bool = False) -> List[str]:
    """The findings for the src/io folder given (empty: none); with show,
    prints every call edge."""
    sources = {p.name: p.read_text(errors="replace") for p in sorted(folder.glob("*.c"))}
    headers = {p.name: p.read_text(errors="replace") for p in sorted(folder.glob("*.h"))}
    findings: List[str] = []
    defined: Dict[str, str] = {}
    for name, text in sources.items():
        for m in FUNC_DEF.finditer(_code(text)):
            defined[m.group(1)] = name
    calls: Dict[str, Set[str]] = {name: set() for name in sources}
    for name, text in sources.items():
        for ident in set(IDENT.findall(_code(text))):
            owner = defined.get(ident)
            if owner and owner != name:
                calls[name].add(owner)
    if show:
        for name in sorted(calls):
            print(f"{name} -> {', '.join(sorted(calls[name])) or '(nothing)'}")
    for comp in _cycles(calls):
        findings.append(f"call cycle among {', '.join(comp)}: " + " -> ".join(_path_in(comp, calls)))
    includes: Dict[str, Set[str]] = {}
    for name, text in headers.items():
        includes[name] = {h for h in INCLUDE.findall(text) if h in headers}
    for comp in _cycles(includes):
        findings.append(f"include cycle among {', '.join(comp)}: " + " -> ".join(_path_in(comp, includes)))
    if "io_common.h" in includes and includes["io_common.h"]:
        findings.append("io_common.h is the leaf but includes " + ", ".join(sorted(includes["io_common.h"])))
    for name, text in sources.items():
        if TRANSPORT.match(name) and "io_internal.h" in INCLUDE.findall(text):
            findings.append(f"{name} is a transport but includes io/io_internal.h (the front end above it)")
    if not findings:
        n_edges = sum(len(v) for v in calls.values())
        print(f"src/io layers: ok ({len(sources)} files, {n_edges} call edges)")
    return findings


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--graph"]
    folder = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "src" / "io"
    findings = check(folder, "--graph" in sys.argv[1:])
    for f in findings:
        print(f, file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
