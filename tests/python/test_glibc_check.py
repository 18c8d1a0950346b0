"""tests/wheel/check_glibc.py, the wheel stage's manylinux_2_28 check: it
fails a binary built against this machine's glibc (2.36) with the symbols
past 2.28 named, passes one that needs only old symbols, and refuses a
folder without ELF files."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = [sys.executable, str(ROOT / "tests" / "wheel" / "check_glibc.py")]


def _cc() -> str:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler")
    return cc


def test_a_binary_for_this_glibc_fails_naming_its_new_symbols(tmp_path):
    src = tmp_path / "main.c"
    src.write_text("#include <stdio.h>\nint main(int c, char **v) { printf(\"%s\\n\", v[c - 1]); return 0; }\n")
    subprocess.run([_cc(), "-O2", str(src), "-o", str(tmp_path / "main")], check=True, timeout=120)
    r = subprocess.run(CHECK + ["--max", "2.28", str(tmp_path)], capture_output=True, text=True, timeout=120)
    # glibc 2.34 moved __libc_start_main to a new version: every program linked here needs it
    assert r.returncode == 1, r.stdout
    assert "FAIL 2.34 main needs GLIBC_2.34" in r.stdout, r.stdout
    assert "GLIBC_2.34: __libc_start_main" in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("1 ELF files, 1 need a glibc newer than 2.28"), r.stdout
    # the same file is fine where the limit is this machine's glibc
    assert subprocess.run(CHECK + ["--max", "2.36", str(tmp_path / "main")], capture_output=True,
                          timeout=120).returncode == 0


def test_a_library_with_only_old_symbols_passes_and_a_folder_without_elf_files_is_refused(tmp_path):
    src = tmp_path / "lib.c"
    src.write_text("#include <string.h>\nsize_t reel_len(const char *s) { return strlen(s); }\n")
    lib = tmp_path / "pkg" / "liblen.so"
    lib.parent.mkdir()
    subprocess.run([_cc(), "-O2", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True, timeout=120)
    (tmp_path / "pkg" / "notes.txt").write_text("not an ELF file")
    r = subprocess.run(CHECK + [str(tmp_path / "pkg")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    assert "ok 2.2.5 liblen.so" in r.stdout and "1 ELF files, 0 need" in r.stdout, r.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    r = subprocess.run(CHECK + [str(empty)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no ELF file" in r.stdout, r.stdout
