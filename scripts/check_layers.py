#!/usr/bin/env python3
"""scripts/check_layers.py [--graph] [BUILD_DIR]: the one layering check.

Reads the tree and checks that dependencies are those docs/ARCHITECTURE.md
draws (issue 17, Checks):
  1. modules: no include or call from a module of src/ into one it may not
     use (ALLOWED: store -> pipeline, core -> convert, ... are upward); read
     from the sources (includes, and calls of functions another module
     defines) and, when BUILD_DIR (default build/) holds the objects, from
     their symbols (nm: every call that links, inline ones included);
  2. the public headers keep the same order among themselves;
  3. src/io: its files call each other in no circle (sources and objects),
     its headers include each other in no circle, io_common.h is the leaf
     and no transport includes io/io_front.h (the front end above them);
  4. "is it remote?" is asked only where a path enters (REMOTE_ASKERS): a
     dataset entry carries the answer down through the sources;
  5. no private header is named like a public one;
  6. a module's internals are its own: its internal headers (*internal.h)
     are included by its own files alone; another module includes only the
     inter-module headers declared for it here (INTER_MODULE: each opens
     with its one purpose), and calls another module's reel__ functions only
     as those headers declare them;
  7. within every module, its files call each other in no circle (the
     loader's files, loader*.c, included), but for the one listed in
     ACCEPTED_CYCLES with its reason.
Prints one line per finding (--graph: the src/io call graph first) and exits
1 if there is any. tests/python/test_layers.py runs it on the tree and on
copies with planted faults."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]

# Each module and what it may use, bottom to top (ARCHITECTURE.md, "Modules").
ALLOWED: Dict[str, Set[str]] = {
    "core": set(),
    "io": {"core"},
    "convert": {"core"},
    "cuda": {"core", "convert"},
    "decoder": {"core", "io", "convert", "cuda"},
    "audio": {"core", "io", "convert", "decoder"},
    "store": {"core", "io", "convert", "decoder", "audio"},
    "pipeline": {"core", "io", "convert", "decoder", "audio", "store", "cuda"},
    "pack": {"core", "io", "convert", "decoder", "audio", "store", "pipeline"},
}
# The public headers by the module that implements them (reel.h and
# deprecated.h gather the others and belong to none).
PUBLIC = {"common.h": "core", "device_buffer.h": "cuda", "io.h": "io", "convert.h": "convert", "decoder.h": "decoder", "audio.h": "audio", "store.h": "store",
          "sampler_settings.h": "core", "dataset.h": "pipeline", "sampler.h": "pipeline", "order.h": "pipeline", "loader.h": "pipeline",
          "pipeline.h": "pipeline"}
# Who may ask reel__io_is_remote: the I/O layer, which owns the question,
# and the places where a path enters reel. The dataset decides once per entry
# (pipeline/entry.h) and the sources, the loader and the decoder below them
# use that answer; the public path-taking entries (reel_decoder_open, and
# reel__io_open under reel_store_open and the manifest reader) ask once for a
# path that comes from no entry.
REMOTE_ASKERS = {"pipeline/dataset.c", "pipeline/dataset_manifest.c", "decoder/open.c", "audio/audio.c"}
TRANSPORT = re.compile(r"^(file|http.*|s3.*|pool)\.c$")
# A module's internal headers: included by the files of its own folder alone.
PRIVATE_HEADER = re.compile(r"(^|_)internal\.h$")
ABOVE_CORE = set(ALLOWED) - {"core"}
# The inter-module headers: the only headers of a module of src/ that files
# of another module include, and the modules that may include each. Each has
# one purpose, said in its opening comment (ARCHITECTURE.md, "Module-private
# internals"); a module's other headers are its own.
INTER_MODULE: Dict[str, Set[str]] = {
    # core: the shared base, for every module above it
    "core/error.h": ABOVE_CORE,
    "core/clock.h": ABOVE_CORE,
    "core/frame.h": ABOVE_CORE,
    "core/hash.h": ABOVE_CORE,
    "core/json.h": ABOVE_CORE,
    "io/io_front.h": {"decoder", "audio", "store", "pipeline"},  # reading bytes by URI
    "io/remote.h": {"decoder", "audio", "store"},  # a remote source's request statistics
    "io/remote_fields.h": {"pipeline"},  # the remote settings and stats as field lists
    "convert/dtype.h": {"pipeline"},  # bytes per output element
    "convert/pixel.h": {"cuda"},  # the per-pixel arithmetic the GPU kernels and their emulation share
    "decoder/log.h": {"audio"},
    "audio/damage.h": {"store", "pack", "pipeline"},  # a window's damage as spans of the grid, and what a window says of them  # FFmpeg's log lines of the audio object's contexts routed to its file
    "cuda/device.h": {"decoder", "pipeline"},  # the device setting, a CUDA device, its memory pool and kernel launch
    "decoder/open.h": {"pipeline"},  # opening with the entry's answer to "is it remote?"
    "decoder/decoder_for_loader.h": {"pipeline", "audio"},  # a loader sample's decode, its GOP contexts per call; the bytes its audio shares
    "store/store_for_pack.h": {"pack"},  # the store's writing side
    "store/store_for_pipeline.h": {"pipeline"},  # the loader's store source, a store's folder
}
# Call circles among a module's files that are known and accepted (check 7).
ACCEPTED_CYCLES: Dict[Tuple[str, ...], str] = {
    # reel_dataset_create_from_path (dataset.c) picks the manifest reader or
    # the folder scan, which build their dataset through dataset.c's adders
    ("pipeline/dataset.c", "pipeline/dataset_manifest.c", "pipeline/dataset_scan.c"):
        "create_from_path dispatches to the readers that build through dataset.c",
}
DECLARED_RE = re.compile(r"\b(reel__\w+)\s*\(")

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DEFINITION_RE = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?[\s\*](reel_\w+)\s*\(([^;{]*?)\)\s*\{", re.M | re.S)
IDENT_RE = re.compile(r"\breel_\w+\b")
# comments and literals in one pass, left to right: "s3://" is a string, not a comment
NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def code_of(text: str) -> str:
    """The text without comments and string literals."""
    return NOT_CODE.sub(lambda m: '""' if m.group(0)[0] in "\"'" else " ", text)


def included_module(name: str, here: str) -> str | None:
    """The module an #include names: "store/x.h", "reel/store.h", or a
    header next to the including file."""
    if name.startswith("reel/"):
        return PUBLIC.get(name[5:])
    if "/" in name:
        head = name.split("/", 1)[0]
        return head if head in ALLOWED else None
    return here


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


class Tree:
    """The sources of one tree (the real one, or a copy a test plants a fault in)."""

    def __init__(self, root: Path):
        self.root = root
        self.files = {p.relative_to(root / "src").as_posix(): code_of(p.read_text(errors="replace"))
                      for p in sorted((root / "src").glob("*/*.[ch]"))}
        self.raw_includes = {f: INCLUDE_RE.findall((root / "src" / f).read_text(errors="replace")) for f in self.files}
        self.defined: Dict[str, str] = {}  # function -> file ("io/io.c")
        for f, text in self.files.items():
            if f.endswith(".c"):
                for m in DEFINITION_RE.finditer(text):
                    self.defined[m.group(1)] = f

    def calls(self, f: str) -> Iterator[Tuple[str, str]]:
        """(function, the file defining it) for each function of another file that f names."""
        for name in sorted(set(IDENT_RE.findall(self.files[f]))):
            owner = self.defined.get(name)
            if owner and owner != f:
                yield name, owner


def module_findings(tree: Tree) -> List[str]:
    bad = set()
    for f in tree.files:
        mod = f.split("/")[0]
        for inc in tree.raw_includes[f]:
            used = included_module(inc, mod)
            if used and used != mod and used not in ALLOWED.get(mod, set()):
                bad.add(f"upward: src/{f}: {mod} -> {used} (#include \"{inc}\")")
        for name, owner in tree.calls(f):
            used = owner.split("/")[0]
            if used != mod and used not in ALLOWED.get(mod, set()):
                bad.add(f"upward: src/{f}: {mod} -> {used} (calls {name})")
    headers = tree.root / "include" / "reel"
    for h in sorted(headers.glob("*.h")):
        mod = PUBLIC.get(h.name)
        for inc in INCLUDE_RE.findall(h.read_text()) if mod else ():
            used = PUBLIC.get(inc.split("/")[-1])
            if used and used != mod and used not in ALLOWED[mod]:
                bad.add(f"upward: include/reel/{h.name}: {mod} -> {used} ({inc})")
    public = {h.name for h in headers.glob("*.h")}
    for f in tree.files:
        if f.endswith(".h") and f.split("/")[1] in public:
            bad.add(f"private header src/{f} is named like a public one")
    return sorted(bad)


def private_findings(tree: Tree) -> List[str]:
    """Check 6: internal headers stay in their module; other modules use the
    declared inter-module headers, and only what those declare."""
    bad = set()
    declares: Dict[str, Set[str]] = {}  # reel__ function -> the inter-module headers declaring it
    for h in INTER_MODULE:
        text = tree.files.get(h)
        if text is None:
            bad.add(f"inter-module header {h} is declared in INTER_MODULE but is not in src/")
            continue
        raw = (tree.root / "src" / h).read_text(errors="replace").lstrip()
        if not raw.startswith((f"/* {h.split('/')[1]}: ", f"/* {h}: ")):
            bad.add(f"inter-module header src/{h} does not open with its purpose (/* {h.split('/')[1]}: ...)")
        if PRIVATE_HEADER.search(h):
            bad.add(f"inter-module header src/{h} is named like an internal one")
        # what it declares, with the headers of its own module that it includes
        seen, todo = set(), [h]
        while todo:
            g = todo.pop()
            if g in seen or g not in tree.files:
                continue
            seen.add(g)
            for name in DECLARED_RE.findall(tree.files[g]):
                declares.setdefault(name, set()).add(h)
            todo += [i for i in tree.raw_includes[g] if i.split("/")[0] == h.split("/")[0]]
    for f in tree.files:
        mod = f.split("/")[0]
        for inc in tree.raw_includes[f]:
            head = inc.split("/")[0] if "/" in inc else mod
            if head == mod or head not in ALLOWED:
                continue
            if PRIVATE_HEADER.search(inc.split("/")[-1]):
                bad.add(f"private: src/{f} includes {inc}, an internal header of src/{head} (its module's alone)")
            elif inc not in INTER_MODULE:
                bad.add(f"private: src/{f} includes {inc}, which is no inter-module header (check_layers.INTER_MODULE)")
            elif mod not in INTER_MODULE[inc]:
                bad.add(f"private: src/{f} includes {inc}, an inter-module header not declared for {mod}")
        for name, owner in tree.calls(f):
            used = owner.split("/")[0]
            if used == mod or not name.startswith("reel__"):
                continue
            if not any(mod in INTER_MODULE[h] for h in declares.get(name, ())):
                bad.add(f"private: src/{f} calls {name} of src/{used}, declared in no inter-module header for {mod}")
    return sorted(bad)


def cycle_findings(tree: Tree) -> List[str]:
    """Check 7: no call circle among the files of one module (src/io has its
    own, check 3)."""
    out = []
    for mod in sorted(set(ALLOWED) - {"io"}):
        calls = {f: {o for _, o in tree.calls(f) if o.split("/")[0] == mod}
                 for f in tree.files if f.split("/")[0] == mod and f.endswith(".c")}
        out += [f"src/{mod} call cycle among {', '.join(c)}" for c in cycles(calls)
                if tuple(c) not in ACCEPTED_CYCLES]
    return out


def io_findings(tree: Tree, show: bool = False) -> List[str]:
    io = {f: text for f, text in tree.files.items() if f.startswith("io/")}
    calls = {f: {owner for _, owner in tree.calls(f) if owner.startswith("io/")} for f in io if f.endswith(".c")}
    if show:
        for f in sorted(calls):
            print(f"{f} -> {', '.join(sorted(calls[f])) or '(nothing)'}")
    out = [f"src/io call cycle among {', '.join(c)}" for c in cycles(calls)]
    includes = {f: {"io/" + i[3:] for i in tree.raw_includes[f] if i.startswith("io/") and "io/" + i[3:] in io}
                for f in io if f.endswith(".h")}
    out += [f"src/io include cycle among {', '.join(c)}" for c in cycles(includes)]
    if includes.get("io/io_common.h"):
        out.append("io_common.h is the leaf but includes " + ", ".join(sorted(includes["io/io_common.h"])))
    for f in io:
        if TRANSPORT.match(f[3:]) and "io/io_front.h" in tree.raw_includes[f]:
            out.append(f"{f[3:]} is a transport but includes io/io_front.h (the front end above it)")
    return out


def remote_findings(tree: Tree) -> List[str]:
    return [f"src/{f} asks reel__io_is_remote: the entry (or the public entry above) has decided it"
            for f, text in tree.files.items()
            if f not in REMOTE_ASKERS and not f.startswith("io/") and re.search(r"\breel__io_is_remote\s*\(", text)]


def object_findings(tree: Tree, build: Path) -> Tuple[List[str], bool]:
    """Calls that link, from the objects of build/ (nm): module order and the
    src/io circle. (findings, whether there were objects)."""
    objdir = build / "CMakeFiles" / "reel_obj.dir" / "src"
    owner: Dict[str, str] = {}
    undefined: Dict[str, Set[str]] = {}
    for o in sorted(objdir.glob("*/*.c.o")) if objdir.is_dir() else ():
        f = f"{o.parent.name}/{o.name[:-2]}"
        if f not in tree.files:
            continue  # a stale object of a removed file
        r = subprocess.run(["nm", "-g", str(o)], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            continue
        undefined[f] = set()
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[-2] == "U":
                undefined[f].add(parts[-1])
            elif len(parts) == 3 and parts[1] in "TDBRC" and parts[2].startswith("reel"):
                owner[parts[2]] = f
    out, io_calls = set(), defaultdict(set)
    for f, syms in undefined.items():
        for s in syms:
            to = owner.get(s)
            if not to or to == f:
                continue
            a, b = f.split("/")[0], to.split("/")[0]
            if a != b and b not in ALLOWED.get(a, set()):
                out.add(f"upward call (objects): src/{f}: {a} -> {b} ({s})")
            elif a == b == "io":
                io_calls[f].add(to)
    out |= {f"src/io call cycle (objects) among {', '.join(c)}" for c in cycles(io_calls)}
    return sorted(out), bool(undefined)


def check(root: Path = ROOT, build: Path | None = None, show: bool = False) -> Tuple[List[str], bool]:
    """(findings, whether built objects were read) for the tree at root."""
    tree = Tree(root)
    found = (module_findings(tree) + private_findings(tree) + cycle_findings(tree) + io_findings(tree, show)
             + remote_findings(tree))
    objects, had = object_findings(tree, build if build is not None else root / "build")
    return found + objects, had


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--graph"]
    found, had_objects = check(ROOT, Path(args[0]) if args else None, "--graph" in sys.argv[1:])
    for p in found:
        print(p)
    if not had_objects:
        print("check_layers: no built objects: sources checked, linked calls not", file=sys.stderr)
    print(f"check_layers: {len(found)} problem(s)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
