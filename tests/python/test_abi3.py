"""The extension is built against the stable ABI of CPython 3.10 (one
_reel.abi3.so for 3.10 and later): abi3audit finds no symbol outside it, and
what the 3.10 stable ABI lacks (the buffer protocol) has its replacement
(__array_interface__, bytes in place, a copy of other bytes-like sources),
run here on 3.11+ with REEL_PY_NO_BUFFER_PROTOCOL=1."""

from __future__ import annotations

import glob
import importlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import reel
from reel import _reel, _synth
from reel._testing import read_indices

MODULES = [pathlib.Path(_reel.__file__), pathlib.Path(_synth.__file__)]


def test_modules_are_abi3():
    for m in MODULES:
        assert m.name.endswith(".abi3.so"), m.name


def test_abi3audit_finds_nothing_beyond_3_10():
    """abi3audit (PyPI) reads the modules' imported symbols against the stable
    ABI's manifest: none outside it, none newer than 3.10."""
    probe = subprocess.run([sys.executable, "-m", "abi3audit", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("abi3audit is not installed (scripts/deps.sh installs it)")
    r = subprocess.run(
        [sys.executable, "-m", "abi3audit", "--assume-minimum-abi3", "3.10", "--report", *map(str, MODULES)],
        capture_output=True,
        text=True,
    )
    report = json.loads(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    for m in MODULES:
        res = report["specs"][str(m)]["object"]["result"]
        assert res["is_abi3"] and res["is_abi3_baseline_compatible"], (m.name, res)
        assert res["non_abi3_symbols"] == [] and res["future_abi3_objects"] == {}, (m.name, res)


def frames_of(dtype: str, shape: tuple, data: bytes):
    return _reel._frames_from_bytes(data, dtype, shape, None, None, None, None)


def test_array_interface(np):
    cases = [("uint8", "|u1", np.uint8), ("float32", "<f4", np.float32), ("float16", "<f2", np.float16),
             ("int64", "<i8", np.int64)]
    for name, typestr, npt in cases:
        want = np.arange(24, dtype=npt).reshape(2, 3, 4)
        f = frames_of(name, (2, 3, 4), want.tobytes())
        ai = f.__array_interface__
        assert ai["shape"] == (2, 3, 4) and ai["typestr"] == typestr and ai["version"] == 3
        assert ai["data"] == (f.data_ptr, False) and ai["strides"] is None

        class OnlyInterface:  # what numpy sees on 3.10, where Frames has no buffer protocol
            __array_interface__ = ai

        a = np.asarray(OnlyInterface())
        assert a.dtype == npt and np.array_equal(a, want) and a.ctypes.data == f.data_ptr
        a[0, 0, 0] = 7  # the same memory, writable
        assert np.frombuffer(f.tobytes(), npt)[0] == 7
    bf16 = frames_of("bfloat16", (4,), bytes(8))
    with pytest.raises(TypeError, match="bfloat16"):
        getattr(bf16, "__array_interface__")  # noqa: B009 - the attribute raises
    with pytest.raises(TypeError, match="bfloat16"):
        np.asarray(bf16)  # not a silent 0-d object array


CHILD = r"""
import gc, pathlib, pickle, sys
import numpy as np, torch
import reel
from reel import _reel
from reel._testing import read_indices

video = sys.argv[1]
d = reel.VideoDecoder(video, layout="HWC")
f = d.get_frames_at([3, 40])
try:
    memoryview(f)
except TypeError:
    pass
else:
    raise AssertionError("Frames has the buffer protocol with REEL_PY_NO_BUFFER_PROTOCOL=1")
a = np.asarray(f)  # __array_interface__: zero-copy
assert a.ctypes.data == f.data_ptr and a.shape == (2, 120, 160, 3)
t = torch.as_tensor(f)
assert t.data_ptr() == f.data_ptr and torch.from_dlpack(f).data_ptr() == f.data_ptr
want = a.copy()
del f, t
gc.collect()
assert np.array_equal(a, want)  # numpy keeps the Frames alive
assert read_indices(a) == [3, 40]
assert read_indices(pickle.loads(pickle.dumps(d.get_frames_at([5])))) == [5]
for idx in (np.array([7, 1], dtype=np.int64), np.array([7, 1], dtype=np.int32)):  # __array_interface__
    assert read_indices(d.get_frames_at(idx)) == [7, 1]
assert read_indices(d.get_frames_at(np.arange(12)[::7])) == [0, 7]  # not contiguous: read as a sequence
labels = _reel._frames_from_bytes(np.array([9, 2], np.int64).tobytes(), "int64", (2,), None, None, None, None)
assert read_indices(d.get_frames_at(labels)) == [9, 2]  # an int64 Frames, through its array interface


class OnlyInterface:  # not a sequence: only the array interface can read it
    def __init__(self, a):
        self.a, self.__array_interface__ = a, a.__array_interface__


assert read_indices(d.get_frames_at(OnlyInterface(np.array([4, 6])))) == [4, 6]

data = pathlib.Path(video).read_bytes()
for src in (data, bytearray(data), memoryview(data)):
    m = reel.VideoDecoder(src, layout="HWC")
    assert read_indices(m.get_frames_at([3, 40])) == [3, 40]
buf = bytearray(data)
m = reel.VideoDecoder(buf, layout="HWC")
buf[:] = bytes(len(buf))  # copied at open on 3.10: the decoder does not see this
assert read_indices(m.get_frames_at([59, 0])) == [59, 0]


class NoReadinto:
    def __init__(self, b):
        self.b, self.pos = b, 0
    def read(self, n=-1):
        out = self.b[self.pos:self.pos + n]
        self.pos += len(out)
        return bytearray(out)  # not bytes: copied
    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else (self.pos + off if whence == 1 else len(self.b) + off)
        return self.pos
    def tell(self):
        return self.pos
    def seekable(self):
        return True


m = reel.VideoDecoder(NoReadinto(data), layout="HWC")
assert read_indices(m.get_frames_at([20, 1])) == [20, 1]
print("ok")
"""


def test_python_3_10_paths(video, np, torch):
    """What CPython 3.10 runs: no buffer protocol in the stable ABI."""
    env = dict(os.environ, REEL_PY_NO_BUFFER_PROTOCOL="1")
    r = subprocess.run([sys.executable, "-c", CHILD, video], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


class OnlyInterface:
    def __init__(self, a):
        self.a, self.__array_interface__ = a, a.__array_interface__


def test_indices_through_the_array_interface(video, np):
    """An index array that is no sequence, only __array_interface__, on every version."""
    d = reel.VideoDecoder(video, layout="HWC")
    assert read_indices(d.get_frames_at(OnlyInterface(np.array([4, 6], np.int64)))) == [4, 6]
    assert read_indices(d.get_frames_at(OnlyInterface(np.array([5], np.int32)))) == [5]
    with pytest.raises(TypeError):
        d.get_frames_at(OnlyInterface(np.array([4.0, 6.0])))  # float: no index array, and no sequence


def test_buffer_protocol_where_the_stable_abi_has_it(video, np):
    """On 3.11+ Frames exports the buffer protocol and inputs are read in place."""
    if sys.version_info < (3, 11):
        pytest.skip("the stable ABI of 3.10 has no buffer protocol")
    d = reel.VideoDecoder(video, layout="HWC")
    f = d.get_frames_at([3])
    m = memoryview(f)
    assert m.shape == (1, 120, 160, 3) and m.format == "B" and not m.readonly
    assert np.frombuffer(m, np.uint8).ctypes.data == f.data_ptr


def other_cpythons() -> list:
    """CPython 3.10 and later other than this one: python3.N on PATH or pyenv's."""
    found = {}
    cands = [shutil.which(f"python3.{n}") for n in range(10, 20)]
    cands += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    for exe in filter(None, cands):
        r = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True)
        if r.returncode != 0:
            continue  # a pyenv shim without that version
        ver = tuple(map(int, r.stdout.split()))
        if ver >= (3, 10) and ver != sys.version_info[:2]:
            found.setdefault(ver, exe)
    return sorted(found.items())


def test_other_cpythons_import_the_module(tmp_path):
    """The one abi3 module, as built, imports and works under each other CPython
    installed here (abi3_smoke.py): a copy of the package alone on the path."""
    pythons = other_cpythons()
    if not pythons:
        pytest.skip("no CPython other than this one installed here (abi3audit is the check)")
    pkg = pathlib.Path(reel.__file__).parent
    shutil.copytree(pkg, tmp_path / "reel", ignore=shutil.ignore_patterns("__pycache__", "_bin"))
    # an editable install (make test) keeps the built modules outside the package's folder
    for mod in (importlib.import_module("reel._reel"), importlib.import_module("reel._synth")):
        built = pathlib.Path(str(mod.__file__))
        if not (tmp_path / "reel" / built.name).exists():
            shutil.copy2(built, tmp_path / "reel" / built.name)
    smoke = pathlib.Path(__file__).with_name("abi3_smoke.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(tmp_path)
    for ver, exe in pythons:
        r = subprocess.run([exe, str(smoke)], capture_output=True, text=True, env=env, timeout=300)
        want = "ok: buffer protocol" if ver >= (3, 11) else "ok: no buffer protocol"
        lines = r.stdout.strip().splitlines()
        assert r.returncode == 0 and lines and lines[-1].startswith(want), (ver, r.stdout[-2000:], r.stderr[-3000:])
