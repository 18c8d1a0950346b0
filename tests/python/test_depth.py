# tests/python/test_depth.py: depth and high bit depth (issue 29 point 4)
# from Python: color="gray" and dtype="uint16" through VideoDecoder, the
# Loader and the packed store, against the ffmpeg CLI's gray12le, gray16le,
# rgb48le and gray code for code; torchcodec's rgb48 references of the shared
# 10-bit video; the errors by name.
from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

import reel

W, H = 96, 64


def _make(ffmpeg: str, path: Path, fmt: str, codec: list, frames: int = 10) -> Path:
    if not path.exists():
        r = subprocess.run([ffmpeg, "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                            f"testsrc2=s={W}x{H}:r=10:d={frames / 10},format={fmt}", *codec, "-pix_fmt", fmt,
                            str(path)], capture_output=True)
        if r.returncode != 0:
            pytest.skip(f"this ffmpeg cannot encode {fmt} with {codec[1]}: {r.stderr.decode()[-200:]}")
    return path


@pytest.fixture(scope="module")
def videos(tmp_path_factory, ffmpeg) -> dict:
    root = tmp_path_factory.mktemp("depth")
    x265 = ["-c:v", "libx265", "-x265-params", "lossless=1:log-level=error"]
    (root / "depth").mkdir()  # a folder of two depth videos, for the store
    out = {"gray12": _make(ffmpeg, root / "depth" / "d0.mp4", "gray12le", x265)}
    out["gray12b"] = _make(ffmpeg, root / "depth" / "d1.mp4", "gray12le", x265, frames=6)
    out["gray16"] = _make(ffmpeg, root / "g16.mkv", "gray16le", ["-c:v", "ffv1"])
    out["yuv10"] = _make(ffmpeg, root / "y10.mp4", "yuv420p10le", ["-c:v", "libx265", "-x265-params", "log-level=error"])
    out["yuv8"] = _make(ffmpeg, root / "y8.mp4", "yuv420p", ["-c:v", "libx264", "-qp", "0"])
    return out


def ffmpeg_frames(np, ffmpeg: str, path: Path, pix: str, dtype, vf: str = ""):
    """Every frame through the ffmpeg CLI as raw `pix`, flat per frame."""
    cmd = [ffmpeg, "-nostdin", "-v", "error", "-i", str(path), *(["-vf", vf] if vf else []), "-pix_fmt", pix,
           "-f", "rawvideo", "-"]
    raw = subprocess.run(cmd, capture_output=True, check=True).stdout
    return np.frombuffer(raw, dtype=dtype)


def test_gray12_gives_its_codes_and_float_divides_by_4095(np, ffmpeg, videos):
    d = reel.VideoDecoder(videos["gray12"], color="gray", dtype="uint16")
    assert d.frame_shape == (1, H, W) and d.dtype == "uint16"
    got = d[:].numpy()
    assert got.dtype == np.uint16 and got.shape == (10, 1, H, W)
    want = ffmpeg_frames(np, ffmpeg, videos["gray12"], "gray12le", "<u2").reshape(got.shape)
    assert np.array_equal(got, want)
    assert 255 < got.max() <= 4095
    f32 = reel.VideoDecoder(videos["gray12"], color="gray", dtype="float32")[:].numpy()
    assert np.array_equal(f32, want.astype(np.float32) / np.float32(4095))
    # the divisor is on the 8-bit scale: 1 gives codes * 255 / 4095
    one = reel.VideoDecoder(videos["gray12"], color="gray", dtype="float32", divisor=1.0)[0].numpy()
    assert np.array_equal(one, want[0].astype(np.float32) / np.float32(4095 / 255))
    # uint8: ffmpeg's -pix_fmt gray of the same file
    g8 = reel.VideoDecoder(videos["gray12"], color="gray")[:].numpy()
    assert np.array_equal(g8, ffmpeg_frames(np, ffmpeg, videos["gray12"], "gray", np.uint8).reshape(g8.shape))


def test_gray12_resized_keeps_its_range(np, ffmpeg, videos):
    d = reel.VideoDecoder(videos["gray12"], color="gray", dtype="uint16", size=(30, 40), layout="HWC")
    got = d[:].numpy()
    assert got.shape == (10, 30, 40, 1)
    want = ffmpeg_frames(np, ffmpeg, videos["gray12"], "gray12le", "<u2",
                         "scale=40:30:flags=bilinear:in_range=tv:out_range=tv")
    assert np.array_equal(got.ravel(), want)


def test_gray16_and_deep_yuv(np, ffmpeg, videos):
    g16 = reel.VideoDecoder(videos["gray16"], color="gray", dtype="uint16")[:].numpy()
    assert np.array_equal(g16.ravel(), ffmpeg_frames(np, ffmpeg, videos["gray16"], "gray16le", "<u2"))
    rgb = reel.VideoDecoder(videos["yuv10"], dtype="uint16", layout="HWC")[:].numpy()
    assert rgb.shape == (10, H, W, 3)
    assert np.array_equal(rgb.ravel(), ffmpeg_frames(np, ffmpeg, videos["yuv10"], "rgb48le", "<u2"))
    g10 = reel.VideoDecoder(videos["yuv10"], color="gray", dtype="uint16")[:].numpy()
    assert np.array_equal(g10.ravel(), ffmpeg_frames(np, ffmpeg, videos["yuv10"], "gray10le", "<u2"))
    # the default stays 8-bit RGB, as before
    assert reel.VideoDecoder(videos["yuv10"])[0].numpy().dtype == np.uint8


def test_eight_bit_gray_is_ffmpeg_gray(np, ffmpeg, videos):
    d = reel.VideoDecoder(videos["yuv8"], color="gray", size=(24, 32))
    got = d[:].numpy()
    assert got.shape == (10, 1, 24, 32)
    assert np.array_equal(got.ravel(), ffmpeg_frames(np, ffmpeg, videos["yuv8"], "gray", np.uint8,
                                                     "scale=32:24:flags=bilinear"))
    wide = reel.VideoDecoder(videos["yuv8"], color="gray", dtype="uint16", size=(24, 32))[:].numpy()
    assert wide.dtype == np.uint16 and np.array_equal(wide, got)


def test_torch_and_pickle(np, torch, videos):
    f = reel.VideoDecoder(videos["gray12"], color="gray", dtype="uint16")[0:2]
    t = f.torch()
    assert t.dtype == torch.uint16 and tuple(t.shape) == (2, 1, H, W)
    assert np.array_equal(t.to(torch.int32).numpy(), f.numpy().astype(np.int32))
    import pickle
    back = pickle.loads(pickle.dumps(f))
    assert back.dtype == "uint16" and np.array_equal(back.numpy(), f.numpy())


def _ref(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("/data/0")))


def test_hdr_rgb48_equals_torchcodec_references(np, shared_videos):
    refs = shared_videos / "nasa_13013_hdr.mp4.refs"
    if not refs.is_dir():
        pytest.skip("no reference frames for nasa_13013_hdr.mp4")
    d = reel.VideoDecoder(shared_videos / "nasa_13013_hdr.mp4", dtype="uint16", layout="HWC")
    got = d.get_frames_at([0, 5, 10]).numpy()
    for k, i in enumerate((0, 5, 10)):
        want = np.frombuffer(_ref(refs / f"nasa_13013_hdr.mp4.stream0.frame{i:06d}.rgb48.pt"), "<u2")
        assert np.array_equal(got[k].ravel(), want), f"frame {i}"


@pytest.mark.parametrize("layout", ["BTCHW", "BCTHW", "BTHWC"])
def test_loader_gray_uint16_equals_the_decoder(np, videos, layout):
    src = [str(videos["gray12"]), str(videos["gray12b"])]
    with reel.Loader(src, frames_per_clip=3, size=(30, 40), crop=None, batch_size=2, color="gray", dtype="uint16",
                     sampler="regular", shuffle=False, epochs=1, layout=layout) as loader:
        batches = list(loader)
    assert len(batches) == 1
    b = batches[0]
    frames = b.frames.numpy()
    shape = {"BTCHW": (2, 3, 1, 30, 40), "BCTHW": (2, 1, 3, 30, 40), "BTHWC": (2, 3, 30, 40, 1)}[layout]
    assert frames.dtype == np.uint16 and frames.shape == shape
    for row, info in enumerate(b.info):
        want = reel.VideoDecoder(info.path, color="gray", dtype="uint16", size=(30, 40)).get_frames_at(list(info.frame_indices))
        got = frames[row]
        got = got.transpose(1, 0, 2, 3) if layout == "BCTHW" else got.transpose(0, 3, 1, 2) if layout == "BTHWC" else got
        assert np.array_equal(got, want.numpy()), info.path


def test_store_raw_keeps_uint16_and_jpeg_refuses_depth(np, videos, tmp_path):
    folder = Path(videos["gray12"]).parent
    rep = reel.pack(folder, tmp_path / "raw", size="source", format="raw", color="gray", dtype="uint16")
    assert rep["packed"] == 2 and rep["failed"] == 0
    info = reel.store_info(tmp_path / "raw")
    assert info["color"] == "gray" and info["dtype"] == "uint16"
    recs = reel._reel.store_records(str(tmp_path / "raw"))
    assert [(r["channels"], r["bit_depth"]) for r in recs] == [(1, 12), (1, 12)]
    assert reel.store_verify(tmp_path / "raw")["bad"] == 0
    kw = dict(frames_per_clip=3, size=(H, W), crop=None, batch_size=2, color="gray", dtype="uint16",
              sampler="regular", shuffle=False, epochs=1)
    with reel.Loader(str(tmp_path / "raw"), **kw) as loader:
        stored = list(loader)
    with reel.Loader([str(videos["gray12"]), str(videos["gray12b"])], **kw) as loader:
        direct = list(loader)
    assert np.array_equal(stored[0].frames.numpy(), direct[0].frames.numpy())
    assert 255 < stored[0].frames.numpy().max() <= 4095
    # float over a stored 12-bit record: the codes over 4095, as on the video
    kw["dtype"] = "float32"
    with reel.Loader(str(tmp_path / "raw"), **kw) as loader:
        f = next(iter(loader)).frames.numpy()
    assert np.array_equal(f, direct[0].frames.numpy().astype(np.float32) / np.float32(4095))
    # jpeg: uint16 and gray refused by name; a 12-bit gray source refused naming it and its depth
    with pytest.raises(reel.InvalidArgumentError, match="jpeg records hold 8-bit RGB: dtype uint16 needs format raw"):
        reel.pack(folder, tmp_path / "j16", format="jpeg", dtype="uint16")
    with pytest.raises(reel.InvalidArgumentError, match="h264 records hold 8-bit RGB: color gray needs format raw"):
        reel.pack(folder, tmp_path / "h", format="h264", color="gray")
    rep = reel.pack(folder, tmp_path / "j", format="jpeg")
    assert rep["packed"] == 0 and rep["failed"] == 2
    for r in reel._reel.store_records(str(tmp_path / "j")):
        assert r["path"].endswith(".mp4") and "12-bit gray (gray12le) does not fit a jpeg record" in r["reason"]


def test_store_raw_rgb48(np, videos, tmp_path):
    folder = tmp_path / "v"
    folder.mkdir()
    (folder / "a.mp4").symlink_to(videos["yuv10"])
    reel.pack(folder, tmp_path / "st", size="source", format="raw", dtype="uint16", zstd_level=3)
    assert reel._reel.store_records(str(tmp_path / "st"))[0]["bit_depth"] == 16
    kw = dict(frames_per_clip=2, size=(H, W), crop=None, batch_size=1, dtype="uint16", sampler="regular",
              shuffle=False, epochs=1, layout="BTHWC")
    with reel.Loader(str(tmp_path / "st"), **kw) as loader:
        stored = next(iter(loader))
    with reel.Loader([str(folder / "a.mp4")], **kw) as loader:
        direct = next(iter(loader))
    assert np.array_equal(stored.frames.numpy(), direct.frames.numpy())


def test_bad_values_are_named(videos):
    with pytest.raises(ValueError, match=r"color='grey': expected one of 'rgb', 'gray'"):
        reel.VideoDecoder(videos["gray12"], color="grey")
    with pytest.raises(ValueError, match="dtype='int16': expected uint8, uint16"):
        reel.VideoDecoder(videos["gray12"], dtype="int16")
    with pytest.raises(ValueError, match="color='bgr'"):
        reel.Loader([str(videos["gray12"])], color="bgr")


def test_rotation_turns_gray_as_it_turns_rgb(np, ffmpeg, videos, tmp_path):
    rot = tmp_path / "rot.mp4"
    subprocess.run([ffmpeg, "-nostdin", "-v", "error", "-y", "-i", str(videos["gray12"]), "-c", "copy",
                    "-metadata:s:v:0", "rotate=90", str(rot)], check=True)
    turned = reel.VideoDecoder(rot, color="gray", dtype="uint16")
    assert turned.frame_shape == (1, W, H)
    plain = reel.VideoDecoder(videos["gray12"], color="gray", dtype="uint16")[0].numpy()[0]
    rgb = reel.VideoDecoder(rot, layout="HWC")[0].numpy()
    rgb0 = reel.VideoDecoder(videos["gray12"], layout="HWC")[0].numpy()
    k = next(k for k in (1, -1, 2) if np.array_equal(rgb, np.rot90(rgb0, k)))  # the way RGB turns
    assert np.array_equal(turned[0].numpy()[0], np.rot90(plain, k))


def test_cli_pack_color_and_dtype(np, videos, tmp_path):
    cli = os.environ.get("REEL_CLI")
    if not cli:
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    folder = str(Path(videos["gray12"]).parent)
    out = subprocess.run([cli, "pack", folder, str(tmp_path / "st"), "--size", "source", "--format", "raw",
                          "--color", "gray", "--dtype", "uint16"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert [r["bit_depth"] for r in reel._reel.store_records(str(tmp_path / "st"))] == [12, 12]
    out = subprocess.run([cli, "pack", folder, str(tmp_path / "j"), "--dtype", "uint16"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0 and "jpeg records hold 8-bit RGB: dtype uint16 needs format raw" in out.stderr
    out = subprocess.run([cli, "pack", folder, str(tmp_path / "b"), "--color", "grey"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "bad --color (rgb or gray)" in out.stderr


def test_rgb48_of_an_odd_width_8bit_picture_writes_its_last_column(np, ffmpeg, tmp_path):
    """FFmpeg 5.1's unscaled 4:2:0 -> RGB48 table converter leaves the last
    column of an odd-width, even-height picture unwritten (the CLI's rgb48le
    has zeros there). reel converts such a picture one column wider, so the
    last pixel gets the value the converter gives it from its own chroma
    sample: the reference is the CLI on the same planes made 322 wide by hand
    (luma padded by one column, chroma unchanged: (321 + 1) / 2 samples)."""
    w, h = 321, 240
    src = tmp_path / "odd.mkv"
    subprocess.run([ffmpeg, "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=322x240:r=10:d=0.1",
                    "-vf", f"scale={w}:{h},format=yuv420p", "-c:v", "ffv1", str(src)], check=True)
    got = reel.VideoDecoder(src, dtype="uint16", layout="HWC")[0].numpy().astype(np.int64)
    cli = ffmpeg_frames(np, ffmpeg, src, "rgb48le", "<u2").reshape(h, w, 3).astype(np.int64)
    assert np.array_equal(got[:, :-1], cli[:, :-1])  # every written column as the CLI's
    assert not cli[:, -1].any()  # the CLI's defect, which reel does not copy
    planes = ffmpeg_frames(np, ffmpeg, src, "yuv420p", np.uint8)
    cw = (w + 1) // 2
    y = planes[:w * h].reshape(h, w)
    chroma = planes[w * h:].reshape(2, h // 2, cw)
    wide = np.concatenate([np.concatenate([y, y[:, -1:]], axis=1).ravel(), chroma.ravel()])
    ref = subprocess.run([ffmpeg, "-nostdin", "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s",
                          f"{w + 1}x{h}", "-i", "-", "-pix_fmt", "rgb48le", "-f", "rawvideo", "-"],
                         input=wide.tobytes(), capture_output=True, check=True).stdout
    ref = np.frombuffer(ref, dtype="<u2").reshape(h, w + 1, 3).astype(np.int64)
    assert np.array_equal(got, ref[:, :w])
    assert got[:, -1].any()
