"""The CUDA kernel images (issue 30): scripts/cuda_kernels.py compiles
src/cuda/kernels.cu with NVRTC 12.0 from PyPI (scripts/deps.sh --cuda; no GPU)
into the images REEL_CUDA=ON embeds. Checked without a GPU: each cubin is a
CUDA ELF (e_machine EM_CUDA) for its SASS architecture, the PTX is ISA 8.0
(CUDA 12.0: every driver from R525 loads it) for its target with IEEE
division and no fused multiply-add, and the generated table compiles as C
and lists them; a default build carries none and says so."""

from __future__ import annotations

import importlib.util
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import reel

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("cuda_kernels", ROOT / "scripts" / "cuda_kernels.py")
assert _spec and _spec.loader
_ck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ck)
IMAGES = _ck.default_images()  # CMakeLists.txt's REEL_CUDA_IMAGES, the one list
SASS = [int(n[3:]) for n in IMAGES if n.startswith("sm_")]
PTX = [int(n[8:]) for n in IMAGES if n.startswith("compute_")]
EM_CUDA = 190


def test_the_list_covers_volta_to_hopper_and_newer_gpus():
    # T4 (7.5), V100 (7.0), P100/P4 (6.x) run their own SASS; the newest PTX (9.0) is what the
    # driver compiles for GPUs after Hopper; nothing needs a PTX below 9.0 (SASS covers them)
    assert {60, 70, 75, 80, 90} <= set(SASS), IMAGES
    assert PTX == [90], IMAGES


def _nvrtc() -> str:
    r = subprocess.run(["bash", str(ROOT / "scripts" / "deps.sh"), "--cuda"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("libnvrtc.so.12"), r.stderr
    return r.stdout.strip()


def _compile(out: Path, images: list, c_file: Path | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "scripts" / "cuda_kernels.py"), "--nvrtc", _nvrtc(), "--images", ",".join(images),
           "--source", str(ROOT / "src" / "cuda" / "kernels.cu"), "-I", str(ROOT / "src"), "-I", str(ROOT / "include"),
           "--out-dir", str(out)]
    if c_file:
        cmd += ["--c-file", str(c_file)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_kernels")
    r = _compile(out, IMAGES, out / "images.c")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("cuda_kernels: NVRTC 12.0: "), r.stdout
    return out


def test_each_cubin_is_sass_for_its_architecture(kernels):
    assert SASS
    for sm in SASS:
        data = (kernels / f"kernels.sm_{sm}.cubin").read_bytes()
        assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, data[:16]  # 64-bit, little-endian
        # CUDA 12's ELF ABI (OS/ABI 0x33, version 7), which every driver from R525 loads; a
        # CUDA 13 compiler writes 0x41 / 8 (and the sm in e_flags' second byte): R580 and later only
        assert (data[7], data[8]) == (0x33, 7), data[:16]
        e_type, e_machine = struct.unpack_from("<HH", data, 16)
        (e_flags,) = struct.unpack_from("<I", data, 48)
        assert e_machine == EM_CUDA, e_machine
        assert e_type == 2, e_type  # an executable image: what cuModuleLoadData takes
        assert e_flags & 0xFF == sm, hex(e_flags)  # the SASS architecture
        # the kernel's name is in the symbol table
        assert b"reel_px_convert\0" in data


def _check_ptx(data: bytes, arch: int) -> None:
    assert data.endswith(b"\0") and data.count(b"\0") == 1  # text, NUL-terminated for cuModuleLoadData
    ptx = data[:-1].decode()
    assert re.search(r"^\.version 8\.0$", ptx, re.M), ptx[:400]  # PTX ISA 8.0: CUDA 12.0, R525
    assert re.search(rf"^\.target sm_{arch}$", ptx, re.M), ptx[:400]
    assert ".entry reel_px_convert(" in ptx
    # the rule is equality with the CPU: IEEE division, no contraction into fma
    assert "div.rn.f32" in ptx and "fma.rn.f32" not in ptx
    assert "div.approx" not in ptx and "div.full" not in ptx
    # no bfloat16/half conversion instructions (sm_80's cvt.rn.bf16): pixel.h rounds in integers
    assert "bf16" not in ptx and "cvt.rn.f16" not in ptx


def test_the_ptx_needs_no_driver_newer_than_cuda_12_0(kernels):
    assert PTX
    for arch in PTX:
        _check_ptx((kernels / f"kernels.compute_{arch}.ptx").read_bytes(), arch)


def test_the_oldest_architecture_compiles_to_the_same_exact_arithmetic(tmp_path):
    # the SASS of every image comes from the same source and options; the PTX of the oldest one
    # shows the kernel asks nothing of a newer GPU (no bf16 hardware conversion, IEEE division)
    oldest = min(SASS)
    r = _compile(tmp_path, [f"compute_{oldest}"])
    assert r.returncode == 0, r.stderr
    _check_ptx((tmp_path / f"kernels.compute_{oldest}.ptx").read_bytes(), oldest)


def test_the_docs_list_the_images():
    # docs/GPU.md's images table has a row per image, and names the list as CMake has it
    doc = (ROOT / "docs" / "GPU.md").read_text()
    assert f"`{';'.join(IMAGES)}`" in doc
    rows = re.findall(r"^\| `((?:sm|compute)_[0-9]+)` \|", doc, re.M)
    assert rows == IMAGES, rows


def test_the_table_compiles_and_lists_every_image(kernels):
    c = (kernels / "images.c").read_text()
    assert "with NVRTC 12.0: do not edit" in c
    for i, name in enumerate(IMAGES):
        kind = "ptx" if name.startswith("compute_") else "cubin"
        size = (kernels / f"kernels.{name}.{kind}").stat().st_size
        assert f"image{i}[{size}]" in c, (name, size)
        assert f'{{"{name}", {name.split("_")[1]}, {1 if kind == "ptx" else 0}, image{i}, sizeof image{i}}}' in c
    assert f"reel__cuda_nimages = {len(IMAGES)};" in c
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    assert cc, "no C compiler"
    flags = [cc, "-std=gnu11", "-Wall", "-Wextra", "-Wshadow", "-Werror", "-I", str(ROOT / "src"), "-I", str(ROOT / "include")]
    r = subprocess.run(flags + ["-c", str(kernels / "images.c"), "-o", str(kernels / "images.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # and the loader of the table (device.c's side of REEL_CUDA=ON, which the default build leaves out)
    r = subprocess.run(flags + ["-DREEL_HAVE_CUDA_KERNELS=1", "-fsyntax-only", str(ROOT / "src" / "cuda" / "device.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_bad_image_name_is_refused(tmp_path):
    r = _compile(tmp_path, ["sm_80", "sm80"])
    assert r.returncode == 1 and "image 'sm80': expected sm_NN (SASS) or compute_NN (PTX)" in r.stderr, r.stderr


def test_a_compile_error_names_the_file_and_the_image(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('#include "convert/pixel.h"\nextern "C" __global__ void k() { undeclared(); }\n')
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "cuda_kernels.py"), "--nvrtc", _nvrtc(),
                        "--images", "sm_90", "--source", str(bad), "-I", str(ROOT / "src"), "--out-dir",
                        str(tmp_path / "o")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr
    assert f"NVRTC 12.0 compiling {bad} for sm_90" in r.stderr and "undeclared" in r.stderr, r.stderr


def test_a_default_build_carries_no_kernels_and_says_so():
    # tests/python run against the default build (no CUDA compiler needed);
    # the wheel's check (tests/wheel) asserts the list of a build with them
    assert reel.build_info()["cuda_kernels"] == []
