# tests/python/test_shared_videos.py: the real-world videos in the shared set
# (REEL_SHARED_VIDEOS): frame counts against the manifest, first/middle/last
# frames decode, torchcodec's reference frames match bit for bit, and frame
# times match ffprobe's; keyframes that are not clean starting points are
# decoded through (cockatoo.mp4).
from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pytest

import reel


def manifest(shared: Path):
    path = shared / "MANIFEST.tsv"
    if not path.exists():
        pytest.skip("no MANIFEST.tsv in the shared videos")
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def load_ref(path: Path) -> bytes:
    """The raw bytes of a torch.save'd tensor (a zip with <name>/data/0), without torch."""
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith("/data/0"))
        return z.read(name)


def test_every_video(shared_videos):
    problems = []
    for row in manifest(shared_videos):
        p = shared_videos / row["file"]
        if not p.exists():
            continue
        try:
            d = reel.VideoDecoder(p, size=(48, 64))
            n = len(d)
            if row["nb_frames"].isdigit() and n != int(row["nb_frames"]):
                problems.append(f"{row['file']}: {n} frames, manifest says {row['nb_frames']}")
            f = d.get_frames_at([0, n // 2, -1])
            assert f.shape == (3, 3, 48, 64) and list(f.indices) == [0, n // 2, n - 1]
            assert d.metadata.codec == row["codec"]
        except reel.ReelError as exc:
            problems.append(f"{row['file']}: {exc}")
    assert not problems, "\n".join(problems)


def refs_dir(shared: Path, video: str) -> Path:
    d = shared / f"{video}.refs"
    if not d.is_dir():
        pytest.skip(f"no reference frames for {video}")
    return d


@pytest.mark.parametrize("stream,indices", [(3, [0, 1, 10, 35, 180, 386, 389]), (0, [0, 5, 9, 35])])
def test_torchcodec_reference_frames(shared_videos, stream, indices):
    refs = refs_dir(shared_videos, "nasa_13013.mp4")
    d = reel.VideoDecoder(shared_videos / "nasa_13013.mp4", stream=stream, layout="HWC")
    got = d.get_frames_at(indices)
    per = got.nbytes // len(indices)
    blob = got.tobytes()
    for k, i in enumerate(indices):
        want = load_ref(refs / f"nasa_13013.mp4.stream{stream}.frame{i:06d}.pt")
        assert blob[k * per:(k + 1) * per] == want, f"stream {stream} frame {i} differs"


def test_reference_filters(shared_videos):
    refs = refs_dir(shared_videos, "nasa_13013.mp4")
    path = shared_videos / "nasa_13013.mp4"
    # crop=300:200:50:35 and scale=240:135 run after the RGB conversion in the reference chain
    crop = reel.VideoDecoder(path, layout="HWC", crop=(35, 50, 200, 300), convert_path="after_rgb")
    for i in (0, 15, 200, 389):
        want = load_ref(refs / f"nasa_13013.mp4.crop_300_200_50_35_exact_1.stream3.frame{i:06d}.pt")
        assert crop[i].tobytes() == want, f"crop frame {i}"
    scale = reel.VideoDecoder(path, layout="HWC", size=(135, 240), convert_path="after_rgb")
    for i in (17, 230, 389):
        want = load_ref(refs / f"nasa_13013.mp4.scale_240_135_flags_bilinear.stream3.frame{i:06d}.pt")
        assert scale[i].tobytes() == want, f"scale frame {i}"


def test_reference_hdr(shared_videos):
    refs = refs_dir(shared_videos, "nasa_13013_hdr.mp4")
    d = reel.VideoDecoder(shared_videos / "nasa_13013_hdr.mp4", layout="HWC")
    f = d.get_frames_at([0, 5, 10])
    per = f.nbytes // 3
    for k, i in enumerate((0, 5, 10)):
        assert f.tobytes()[k * per:(k + 1) * per] == load_ref(refs / f"nasa_13013_hdr.mp4.stream0.frame{i:06d}.pt")


@pytest.mark.parametrize("video,stream", [("nasa_13013.mp4", 3), ("nasa_13013.mp4", 0),
                                          ("nasa_13013_rotated.mp4", 0), ("test_non_zero_start.mp4", 0)])
def test_frame_times(shared_videos, video, stream):
    refs = refs_dir(shared_videos, video)
    info = json.loads((refs / f"{video}.stream{stream}.all_frames_info.json").read_text())
    d = reel.VideoDecoder(shared_videos / video, stream=stream)
    table = d.frame_table()
    assert len(table) == len(info)
    for row, want in zip(table, info):
        assert row.pts_seconds == pytest.approx(float(want["pts_time"]), abs=1e-6)
        assert row.duration_seconds == pytest.approx(float(want["duration_time"]), abs=1e-6)
    mids = [float(w["pts_time"]) + float(w["duration_time"]) / 2 for w in info]
    assert list(d.get_frames_played_at(mids).indices) == list(range(len(info)))


@pytest.mark.parametrize("threads", [1, 2])
def test_unclean_keyframes_are_decoded_through(shared_videos, ffmpeg, threads):
    """cockatoo.mp4's IDRs at 76 and 145 decode with errors when decoding
    starts there; a fresh decoder asked for frames after them must still give
    ffmpeg's frames from a decode from the start, and say it restarted."""
    import subprocess

    p = shared_videos / "cockatoo.mp4"
    if not p.exists():
        pytest.skip("cockatoo.mp4 not in the shared videos")
    want = [145, 200, 279]
    expr = "+".join(f"eq(n\\,{i})" for i in want)
    ref = subprocess.run([ffmpeg, "-v", "error", "-noautorotate", "-i", str(p), "-map", "0:v:0",
                          "-vf", f"select='{expr}'", "-fps_mode", "passthrough", "-pix_fmt", "rgb24",
                          "-f", "rawvideo", "-"], capture_output=True, check=True).stdout
    fb = 1280 * 720 * 3
    assert len(ref) == len(want) * fb
    for k, i in enumerate(want):
        with reel.VideoDecoder(p, threads=threads, layout="HWC") as d:
            got = d.get_frames_at([i]).tobytes()
            st = d.stats
        assert got == ref[k * fb:(k + 1) * fb], f"frame {i} with {threads} thread(s)"
        assert st.key_restarts >= 1, st
        assert (st.keys_probed >= 1) == (threads > 1), st


@pytest.mark.slow
def test_loader_over_every_video_gives_the_decoders_frames(shared_videos, np):
    """The loader over all the shared videos (every codec, container, VFR,
    rotation, 10-bit, 4:4:4, a mid-stream size change): full coverage, and
    each clip's frames byte-equal to VideoDecoder's for the same indices and
    the same fused resize."""
    rows = [r for r in manifest(shared_videos) if (shared_videos / r["file"]).exists()]
    if not rows:
        pytest.skip("no shared videos")
    paths = [(str(shared_videos / r["file"]), i) for i, r in enumerate(rows)]
    kw = dict(size=(48, 64), layout="HWC")
    seen = 0
    with reel.Loader(paths, frames_per_clip=3, clips_per_video=2, size=(48, 64), crop=None, layout="BTHWC",
                     batch_size=5, decode_threads=2, seed=3, epochs=1) as loader:
        for b in loader:
            frames = b.frames.numpy()
            for k, info in enumerate(b.info):
                with reel.VideoDecoder(info.path, **kw) as d:
                    want = d.get_frames_at(list(info.frame_indices)).tobytes()
                assert frames[k].tobytes() == want, (info.path, info.frame_indices)
                seen += 1
        m = loader.metrics()
    assert m["coverage"] == 1.0, m["failures"]
    assert seen == 2 * len(rows)


@pytest.mark.slow
def test_frame_threads_never_fall_back_on_sound_videos(shared_videos):
    """The keyframe check (a keyframe out of the frame threads equals its
    decode alone, else the decoder goes on single-threaded) never fires on
    the shared videos: the only fallbacks are where a keyframe proved unclean
    and is decoded through (cockatoo.mp4), counted as a key restart too."""
    rows = [r for r in manifest(shared_videos) if (shared_videos / r["file"]).exists()]
    assert rows
    for r in rows:
        with reel.VideoDecoder(shared_videos / r["file"], threads=2, size=64) as d:
            n = len(d)
            for i in sorted({n // 3, n // 2, (2 * n) // 3, n - 1}):
                try:
                    d.get_frames_at([i])
                except reel.ReelError:
                    continue  # damage reported loudly is another test's business
                st = d.stats
                assert st.thread_fallbacks == 0 or st.key_restarts >= 1, (r["file"], i, st)


def test_an_edit_list_that_trims_the_first_keyframe(shared_videos, ffmpeg, tmp_path):
    """discard_first_keyframe.mp4 (torchcodec's): its edit list trims the
    first samples, the stream's first keyframe among them. ffmpeg shows 25
    frames at 0.04*i; the first 5 are decoded from the trimmed keyframe.
    reel gives those 25 frames bit for bit with their pts through the
    decoder (container index, scan and sidecar), the Loader and the store."""
    import shutil
    import subprocess

    src = shared_videos / "discard_first_keyframe.mp4"
    if not src.exists():
        pytest.skip("discard_first_keyframe.mp4 not in the shared videos")
    ref = subprocess.run([ffmpeg, "-v", "error", "-noautorotate", "-i", str(src), "-map", "0:v:0",
                          "-fps_mode", "passthrough", "-pix_fmt", "rgb24", "-f", "rawvideo", "-"],
                         capture_output=True, check=True).stdout
    fb = 64 * 64 * 3
    assert len(ref) == 25 * fb
    (tmp_path / "videos" / "a").mkdir(parents=True)
    p = tmp_path / "videos" / "a" / src.name
    shutil.copyfile(src, p)  # a sidecar beside it, not in the shared folder
    sources = []
    for kw in (dict(index_mode="off"), dict(index_mode="off", force_scan=True), dict(index_mode=True), dict(index_mode="read")):
        with reel.VideoDecoder(p, layout="HWC", **kw) as d:
            sources.append(d.metadata.index_source)
            assert len(d) == 25, kw
            assert d.metadata.begin_stream_seconds == 0.0
            assert [r.pts_seconds for r in d.frame_table()] == pytest.approx([0.04 * i for i in range(25)])
            assert d.keyframes == [5, 15], kw  # the keyframes shown, as ffprobe says
            f0 = d.get_frame_played_at(0.0)
            assert f0.indices == 0 and f0.tobytes() == ref[:fb]
            assert d.get_frames_at(list(range(25))).tobytes() == ref, kw
        for i in (0, 3, 4, 7, 24):  # cold, each from a fresh decoder
            with reel.VideoDecoder(p, layout="HWC", threads=2, **kw) as d:
                assert d.get_frames_at([i]).tobytes() == ref[i * fb:(i + 1) * fb], (kw, i)
    assert sources == ["container", "scan", "container", "sidecar"]
    loader_kw = dict(frames_per_clip=25, clips_per_video=1, size=(64, 64), crop=None, layout="BTHWC",
                     batch_size=1, decode_threads=1, seed=1, epochs=1)
    with reel.Loader([(str(p), 0)], **loader_kw) as loader:
        batches = list(loader)
    assert len(batches) == 1 and list(batches[0].info[0].frame_indices) == list(range(25))
    assert bytes(memoryview(batches[0].frames)) == ref
    store = tmp_path / "store"
    rep = reel.pack(tmp_path / "videos", store, size="source", format="raw")
    assert rep["packed"] == 1 and reel.store_info(store)["frames"] == 25
    with reel.Loader(store, **loader_kw) as loader:
        batches = list(loader)
    assert len(batches) == 1 and list(batches[0].info[0].frame_indices) == list(range(25))
    assert bytes(memoryview(batches[0].frames)) == ref
