# tests/python/test_frames.py: reel.Frames and the DLPack protocol: zero-copy
# into torch and numpy (same pointers, writes visible both ways), capsule
# naming and deleter rules (0.8 and 1.0 layouts), keep-alive, buffer protocol,
# copies and pickling.
from __future__ import annotations

import ctypes
import gc
import pickle
import sys
import weakref

import pytest

import reel
from conftest import read_indices


@pytest.fixture
def frames(video):
    return reel.VideoDecoder(video, layout="HWC").get_frames_at([1, 2, 3])


def test_attributes(frames):
    assert frames.shape == (3, 120, 160, 3) and frames.ndim == 4 and len(frames) == 3
    assert frames.dtype == "uint8" and frames.itemsize == 1 and frames.nbytes == 3 * 120 * 160 * 3
    assert frames.device == "cpu" and frames.owns_data and frames.data_ptr % 64 == 0
    assert frames.__dlpack_device__() == (1, 0)
    assert "Frames(shape=(3, 120, 160, 3), dtype=uint8" in repr(frames)
    with pytest.raises(TypeError):
        reel.Frames()


def test_torch_zero_copy(frames, torch):
    t = torch.from_dlpack(frames)
    assert t.data_ptr() == frames.data_ptr and t.shape == (3, 120, 160, 3) and t.dtype == torch.uint8
    assert t.is_contiguous() and t.device.type == "cpu"
    t[1, 5, 6] = torch.tensor([1, 2, 3], dtype=torch.uint8)
    mv = memoryview(frames)
    assert mv[1, 5, 6, 0] == 1 and mv[1, 5, 6, 2] == 3
    mv[2, 0, 0, 0] = 250
    assert int(t[2, 0, 0, 0]) == 250
    t2 = frames.torch()
    assert t2.data_ptr() == frames.data_ptr and int(t2[1, 5, 6, 1]) == 2


def test_numpy_zero_copy(frames, np):
    a = np.from_dlpack(frames)
    assert a.ctypes.data == frames.data_ptr and a.shape == (3, 120, 160, 3) and a.dtype == np.uint8
    a[0, 0, 0] = (9, 8, 7)
    mv = memoryview(frames)
    assert (mv[0, 0, 0, 0], mv[0, 0, 0, 1], mv[0, 0, 0, 2]) == (9, 8, 7)
    b = frames.numpy()
    assert b.ctypes.data == frames.data_ptr and b[0, 0, 0, 1] == 8
    c = np.asarray(frames)  # buffer protocol, also zero-copy
    assert c.ctypes.data == frames.data_ptr and c.flags.writeable


def test_torch_and_numpy_share(frames, np, torch):
    t, a = frames.torch(), frames.numpy()
    t.fill_(42)
    assert int(a.max()) == 42 and int(a.min()) == 42


def test_keep_alive_until_last_view(video, torch):
    f = reel.VideoDecoder(video, layout="HWC").get_frames_at([7])
    ref = weakref.ref(f)
    ptr = f.data_ptr
    t = f.torch()
    del f
    gc.collect()
    assert ref() is not None  # the tensor keeps it alive
    assert t.data_ptr() == ptr
    view = t[0]
    del t
    gc.collect()
    assert ref() is not None  # a view of the tensor still does
    assert read_indices(_as_frames(view)) == [7]
    del view
    gc.collect()
    assert ref() is None


def _as_frames(tensor):
    """Round-trips a torch tensor's bytes into a Frames for the index reader."""
    import reel._reel as R

    return R._frames_from_bytes(tensor.contiguous().numpy().tobytes(), "uint8", tuple(tensor.shape),
                                None, None, None, None)


def test_capsule_protocol(frames):
    PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
    PyCapsule_GetName.restype = ctypes.c_char_p
    PyCapsule_GetName.argtypes = [ctypes.py_object]
    base = sys.getrefcount(frames)
    cap = frames.__dlpack__()
    assert PyCapsule_GetName(cap) == b"dltensor"
    assert sys.getrefcount(frames) == base + 1  # manager_ctx holds a reference
    del cap  # never consumed: the capsule destructor calls the deleter
    assert sys.getrefcount(frames) == base
    cap = frames.__dlpack__(max_version=(1, 0))
    assert PyCapsule_GetName(cap) == b"dltensor_versioned"
    del cap
    assert sys.getrefcount(frames) == base
    cap = frames.__dlpack__(max_version=(0, 8))
    assert PyCapsule_GetName(cap) == b"dltensor"
    del cap
    assert sys.getrefcount(frames) == base
    frames.__dlpack__(stream=None, dl_device=(1, 0), copy=False)  # accepted forms
    frames.__dlpack__(-1)
    with pytest.raises(BufferError):
        frames.__dlpack__(stream=5)
    with pytest.raises(BufferError):
        frames.__dlpack__(dl_device=(2, 0))
    assert sys.getrefcount(frames) == base


def test_consumed_capsule_renamed(frames, torch):
    PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
    PyCapsule_GetName.restype = ctypes.c_char_p
    PyCapsule_GetName.argtypes = [ctypes.py_object]
    base = sys.getrefcount(frames)
    cap = frames.__dlpack__()
    t = torch.utils.dlpack.from_dlpack(cap)
    assert PyCapsule_GetName(cap) == b"used_dltensor"
    del cap  # consumed: the destructor must not call the deleter
    assert sys.getrefcount(frames) == base + 1
    assert t.data_ptr() == frames.data_ptr
    del t  # torch calls the deleter
    assert sys.getrefcount(frames) == base


def test_copy_flag_and_copy(frames, np):
    c = frames.copy()
    assert c.owns_data and c.data_ptr != frames.data_ptr and c.tobytes() == frames.tobytes()
    assert c.indices == frames.indices
    a = np.from_dlpack(frames, copy=True)
    assert a.ctypes.data != frames.data_ptr and np.array_equal(a, frames.numpy())


def test_views_and_layout(video, np):
    d = reel.VideoDecoder(video)
    f = d.get_frames_at([0, 1, 2, 3])
    assert f.layout == "NCHW" and f.shape == (4, 3, 120, 160)
    v = f._view((2, 2, 3, 120, 160), layout="NTCHW")
    assert v.data_ptr == f.data_ptr and not v.owns_data and v.layout == "NTCHW"
    with pytest.raises(ValueError):
        f._view((5, 3, 120, 160))
    assert np.array_equal(v.numpy().reshape(f.shape), f.numpy())


def test_buffer_protocol_formats(video, np):
    for dtype, fmt in (("uint8", "B"), ("float32", "f"), ("float16", "e")):
        f = reel.VideoDecoder(video, dtype=dtype)[0]
        mv = memoryview(f)
        assert mv.format == fmt and mv.shape == f.shape and not mv.readonly and mv.nbytes == f.nbytes
        assert mv.c_contiguous
    bf = reel.VideoDecoder(video, dtype="bfloat16")[0]
    with pytest.raises(BufferError):
        memoryview(bf)


def test_pickle_frames(frames):
    g = pickle.loads(pickle.dumps(frames))
    assert g.shape == frames.shape and g.tobytes() == frames.tobytes()
    assert g.indices == frames.indices and g.pts_seconds == frames.pts_seconds and g.layout == frames.layout


def test_labels_dtype_int64(torch):
    import reel._reel as R

    f = R._frames_from_bytes((5).to_bytes(8, "little") * 3, "int64", (3,), None, None, None, None)
    t = f.torch()
    assert t.dtype == torch.int64 and t.tolist() == [5, 5, 5]


def test_many_exports_same_object(frames, torch):
    ts = [frames.torch() for _ in range(50)]
    assert len({t.data_ptr() for t in ts}) == 1
    base = sys.getrefcount(frames)
    del ts
    assert sys.getrefcount(frames) == base - 50
