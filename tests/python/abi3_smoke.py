"""Run by tests/python/test_abi3.py under each other CPython found (3.10,
3.12, ...): the one _reel.abi3.so imports there and works, with the buffer
protocol from 3.11 on and its 3.10 replacements before. Uses numpy only when
that interpreter has it. Prints "ok: ..." last."""

import ctypes
import gc
import os
import pickle
import shutil
import sys
import tempfile

import reel
from reel import _reel
from reel._testing import read_indices, write_video

v = sys.version_info[:2]
print(sys.version.split()[0], _reel.__file__.rsplit("/", 1)[-1])
d = tempfile.mkdtemp()
path = os.path.join(d, "v.mp4")
write_video(path, width=96, height=64, frames=30, gop=8)
dec = reel.VideoDecoder(path, layout="HWC")
f = dec.get_frames_at([3, 17])
assert read_indices(f) == [3, 17], read_indices(f)
assert read_indices(pickle.loads(pickle.dumps(f))) == [3, 17]
ai = f.__array_interface__
assert ai["typestr"] == "|u1" and ai["shape"] == (2, 64, 96, 3) and ai["data"][0] == f.data_ptr
try:
    m = memoryview(f)
    has_buffer = True
    assert m.shape == (2, 64, 96, 3)
except TypeError:
    has_buffer = False
assert has_buffer == (v >= (3, 11)), (v, has_buffer)
cap = f.__dlpack__()
get_name = ctypes.pythonapi.PyCapsule_GetName
get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
assert get_name(cap) == b"dltensor"
del cap
data = open(path, "rb").read()
for src in (data, bytearray(data), memoryview(data)):
    assert read_indices(reel.VideoDecoder(src, layout="HWC").get_frames_at([29, 0])) == [29, 0]
buf = bytearray(data)
m = reel.VideoDecoder(buf, layout="HWC")
try:
    buf.extend(b"x")
    pinned = False
except BufferError:
    pinned = True
assert pinned == (v >= (3, 11)), (v, pinned)
try:
    reel.VideoDecoder(12345)
except TypeError:
    pass
with open(path, "rb") as fo:
    assert read_indices(reel.VideoDecoder(fo, layout="HWC").get_frames_at([5])) == [5]
loader = reel.Loader([path, path], frames_per_clip=2, size=32, batch_size=2, epochs=1)
n = sum(1 for _ in loader)
assert n == 1, n
try:
    import numpy as np
    a = np.asarray(f)
    assert a.ctypes.data == f.data_ptr and read_indices(a) == [3, 17]
    a2 = np.asarray(dec.get_frames_at(np.array([4, 2])))
    assert read_indices(a2) == [4, 2]
    gc.collect()
    print("numpy", np.__version__, "ok")
except ImportError:
    print("no numpy")
shutil.rmtree(d)
print("ok: buffer protocol" if has_buffer else "ok: no buffer protocol (3.10 stable ABI)")
