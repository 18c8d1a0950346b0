"""tests/wheel/check_glibc.py: no ELF file may need a glibc symbol newer than a limit.

    python3 tests/wheel/check_glibc.py [--max 2.28] PATH...

Every ELF file under each PATH (a wheel, an unpacked wheel's folder or one
file) is read with binutils: `readelf -V` for the glibc versions it needs
(GLIBC_x.y from libc, libm, libpthread, libdl, librt, ld-linux), `objdump -T`
for the symbols bound to the versions past the limit. Prints one line per
file ("ok 2.14 reel.libs/libdav1d-….so.6") and, for each file past the limit,
its symbols; exits 1 when any file is past it, 2 when no ELF file was found.
scripts/test_wheel.sh runs it on the wheel (manylinux_2_28: --max 2.28).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from typing import Dict, List, Tuple

Version = Tuple[int, ...]
NEED = re.compile(r"Name:\s+GLIBC_([0-9][0-9.]*)\b")


def parse_version(text: str) -> Version:
    return tuple(int(x) for x in text.split("."))


def is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_files(root: str) -> List[str]:
    if os.path.isfile(root):
        return [root] if is_elf(root) else []
    out = []
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if not os.path.islink(p) and is_elf(p):
                out.append(p)
    return sorted(out)


def glibc_needs(path: str) -> List[Version]:
    """The GLIBC_x.y versions in the file's version needs (.gnu.version_r)."""
    text = subprocess.run(["readelf", "-V", "--wide", path], capture_output=True, text=True, check=True).stdout
    return sorted({parse_version(v) for v in NEED.findall(text)})


def symbols_past(path: str, limit: Version) -> Dict[str, List[str]]:
    """GLIBC_x.y past the limit -> the dynamic symbols the file binds to it."""
    text = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
    found: Dict[str, List[str]] = {}
    for line in text.splitlines():
        m = re.search(r"\(?GLIBC_([0-9][0-9.]*)\)?\s+(\S+)\s*$", line)
        if m and parse_version(m.group(1)) > limit:
            found.setdefault("GLIBC_" + m.group(1), []).append(m.group(2))
    return found


def check(paths: List[str], limit: Version) -> Tuple[int, int, List[str]]:
    """(files checked, files past the limit, report lines)."""
    checked = bad = 0
    lines: List[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for root in paths:
            base = root
            if root.endswith(".whl"):
                base = os.path.join(tmp, os.path.basename(root))
                with zipfile.ZipFile(root) as z:
                    z.extractall(base)
            for f in elf_files(base):
                checked += 1
                rel = os.path.relpath(f, base) if os.path.isdir(base) else f
                needs = glibc_needs(f)
                top = ".".join(map(str, needs[-1])) if needs else "none"
                if needs and needs[-1] > limit:
                    bad += 1
                    lines.append("FAIL %s %s needs GLIBC_%s" % (top, rel, top))
                    for ver, syms in sorted(symbols_past(f, limit).items()):
                        lines.append("    %s: %s" % (ver, " ".join(sorted(set(syms)))))
                else:
                    lines.append("ok %s %s" % (top, rel))
    return checked, bad, lines


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", default="2.28", help="the newest glibc version allowed (default 2.28)")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args(argv)
    limit = parse_version(a.max)
    checked, bad, lines = check(a.paths, limit)
    print("\n".join(lines))
    if checked == 0:
        print("no ELF file in %s" % " ".join(a.paths))
        return 2
    print("%d ELF files, %d need a glibc newer than %s" % (checked, bad, a.max))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
