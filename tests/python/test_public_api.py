"""The public C API's promises that a compiler checks (issue 17 section 3):
deprecated names warn (functions and enum values alike, as
include/reel/deprecated.h promises), REEL_NO_DEPRECATED removes them, and the
new names compile without a warning."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _compile(tmp_path: Path, body: str, *flags: str) -> subprocess.CompletedProcess:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "use.c"
    src.write_text('#include "reel/reel.h"\n' + body + "\n")
    return subprocess.run([cc, "-std=c11", "-fsyntax-only", "-Wall", "-I", str(ROOT / "include"), *flags, str(src)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("body,new", [
    ("int f(void) { return REEL_RESIZE_FUSED; }", "REEL_RESIZE_MODE_FUSED"),
    ("int f(void) { return REEL_RESIZE_AFTER_RGB; }", "REEL_RESIZE_MODE_AFTER_RGB"),
    ("void f(reel_dataset **d) { reel_dataset_free(d); }", "reel_dataset_destroy"),
    ("long long f(const reel_loader *l) { return reel_loader_failures_by_cause(l, REEL_E_IO); }",
     "reel_loader_get_failures_by_cause"),
    ("int f(const reel_transform *t) { return reel_transform_output_size(t, 4, 4, 0, 0, 0, 0); }",
     "reel_transform_get_output_size"),
])
def test_deprecated_names_warn_and_can_be_left_out(tmp_path, body, new):
    r = _compile(tmp_path, body)
    assert r.returncode == 0, r.stderr
    assert "deprecated" in r.stderr and new in r.stderr, r.stderr
    assert _compile(tmp_path, body, "-DREEL_NO_DEPRECATED", "-Werror=implicit-function-declaration").returncode != 0


def test_current_names_compile_cleanly(tmp_path):
    body = ("int f(reel_dataset **d, const reel_loader *l) { reel_stage s = REEL_STAGE_DECODE; reel_error e;\n"
            "  reel_loader_metrics m; e.status = REEL_E_IO; reel_dataset_destroy(d);\n"
            "  return reel_loader_get_metrics(l, &m) + (int)reel_loader_get_num_failures(l)\n"
            "         + (int)reel_loader_get_failures_by_cause(l, REEL_E_IO) + (int)s + (int)e.status\n"
            "         + REEL_RESIZE_MODE_FUSED; }")
    r = _compile(tmp_path, body, "-Wextra", "-Werror")
    assert r.returncode == 0, r.stderr
