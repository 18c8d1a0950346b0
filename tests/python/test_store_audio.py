"""Audio in the packed store (issue 28): `reel pack --audio` keeps each
record's samples, and a Loader over the store gives the audio the Loader over
the videos gives (and the ffmpeg CLI's reference cut by s_r), at native rate
and at 16 kHz mono, with raw and h264 records; other audio settings, and a
store packed without audio, are refused by name; a video without audio
follows the loader's `missing`; damage to the stored samples is named."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import reel
import reel._testing
from audio_clips import MONO16K, NATIVE, cut, make_video, reference

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

CLIPS = dict(frames_per_clip=8, clips_per_video=2, frame_stride=2, size=(32, 48), crop=None, batch_size=2,
             seed=5, epochs=1, decode_threads=2)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Three videos with audio: one 0.25 s late."""
    d = tmp_path_factory.mktemp("store_audio")
    videos = d / "videos"
    videos.mkdir()
    make_video(videos, "a", 1)
    make_video(videos, "late", 2, delay=0.25)
    make_video(videos, "b", 3)
    for f in videos.glob("*_v.mp4"):  # the generator's video-only intermediates
        f.unlink()
    return videos


def _store(tmp_path_factory, folder, name, audio, **kw):
    out = tmp_path_factory.mktemp(name) / "st"
    reel.pack(folder, out, size=48, shard_size=1 << 16, audio=audio, **kw)
    return out


@pytest.fixture(scope="module")
def native_store(tmp_path_factory, folder):
    return _store(tmp_path_factory, folder, "native", True, format="raw")


@pytest.fixture(scope="module")
def mono_store(tmp_path_factory, folder):
    return _store(tmp_path_factory, folder, "mono", {"sample_rate": 16000, "channels": 1}, format="h264")


def _clips(source, settings, **kw):
    """{(path, clip): (frame_indices, audio [C, S], first_sample, valid)} of one epoch."""
    out = {}
    with reel.Loader(source, audio=settings, **{**CLIPS, **kw}) as ld:
        for b in ld:
            assert b.audio_sample_rate == settings["sample_rate"]
            plane, lengths, valid = np.asarray(b.audio), np.asarray(b.audio_lengths), np.asarray(b.audio_valid)
            assert plane.shape[:2] == (len(b.info), settings["channels"])
            for i, info in enumerate(b.info):
                out[(os.path.basename(info.path), info.clip)] = (
                    tuple(info.frame_indices), plane[i, :, :lengths[i]].copy(), info.audio_first_sample,
                    tuple(valid[i]))
    return out


@pytest.mark.parametrize("which", ["native", "16k_mono"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_the_stores_audio_is_the_videos_and_the_clis(folder, native_store, mono_store, which, shuffle):
    settings, store = (NATIVE, native_store) if which == "native" else (MONO16K, mono_store)
    paths = sorted(str(p) for p in folder.glob("*.mp4"))
    from_videos = _clips(paths, settings, shuffle=shuffle)
    from_store = _clips(str(store), settings, shuffle=shuffle)
    assert sorted(from_store) == sorted(from_videos) and len(from_store) == 6
    refs = {os.path.basename(p): reference(p, settings) for p in paths}
    for key, (idx, got, first, valid) in from_store.items():
        v_idx, v_got, v_first, v_valid = from_videos[key]
        assert idx == v_idx  # the same clips (the store keeps every frame)
        assert (first, valid, got.shape) == (v_first, v_valid, v_got.shape)
        assert np.abs(got - v_got).max(initial=0) <= 1e-6
        assert np.abs(got - cut(refs[key[0]], first, got.shape[1])).max(initial=0) <= 1e-6
    for _idx, got, first, valid in from_store.values():  # before a0 (the late video's start): zeros, not valid
        assert valid[0] == max(0, min(-first, got.shape[1])) and not got[:, :valid[0]].any()


def test_the_store_records_its_audio(native_store, mono_store, folder, tmp_path):
    info = reel._reel.store_info(str(mono_store))
    assert info["version"] == 3 and info["audio"] == {"sample_rate": 16000, "channels": 1, "stream_index": -1}
    assert reel._reel.store_info(str(native_store))["audio"] == {"sample_rate": 0, "channels": 0, "stream_index": -1}
    for r in reel._reel.store_records(str(native_store)):  # the window of every frame, as the decoder gives it
        a = r["audio"]
        with reel.VideoDecoder(r["path"], audio=True) as dec:
            want = dec.get_audio_for_frames(list(range(100)))
        assert a["status"] == 0 and a["sample_rate"] == 48000 and a["channels"] == 2
        assert a["samples"] == want.num_samples == 4 * 48000  # 100 frames at 25 fps
        assert (a["first_sample"], a["valid"]) == (want.first_sample, want.valid)
        assert (a["first_sample"] < 0) == (os.path.basename(r["path"]) == "late.mp4")
    for store in (native_store, mono_store):
        v = reel._reel.store_verify(str(store))
        assert v["ok"] and v["bad"] == 0, v
    plain = tmp_path / "plain"
    reel.pack(folder, plain, size=48, shard_size=1 << 16)
    assert reel._reel.store_info(str(plain))["version"] == 1 and reel._reel.store_info(str(plain))["audio"] is None


def test_the_cli_packs_the_same_store(folder, mono_store, tmp_path):
    cli = os.environ.get("REEL_CLI") or shutil.which("reel")
    if not cli:
        pytest.skip("needs the reel CLI (REEL_CLI)")
    out = tmp_path / "cli"
    r = subprocess.run([cli, "pack", str(folder), str(out), "--size", "48", "--shard-size", "65536", "--format",
                        "h264", "--audio", "--audio-rate", "16000", "--audio-channels", "1", "--json",
                        "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["packed"] == 3
    names = sorted(n for n in os.listdir(mono_store) if n.startswith("shard-") or n == "store.idx")
    assert names == sorted(n for n in os.listdir(out) if n.startswith("shard-") or n == "store.idx")
    for n in names:  # deterministic: byte for byte the store reel.pack made
        assert (out / n).read_bytes() == (mono_store / n).read_bytes(), n
    r = subprocess.run([cli, "pack", str(folder), str(tmp_path / "x"), "--audio-rate", "16000"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "needs --audio" in r.stderr


def test_other_audio_settings_are_refused_by_name(folder, native_store, mono_store, tmp_path):
    kw = dict(frames_per_clip=4, size=32)
    with pytest.raises(ValueError, match=r"packed with audio at 16000 Hz, 1 channel \(the mean\), stream -1, and "
                                         r"the loader asks for 48000 Hz, 2 channels"):
        reel.Loader(str(mono_store), audio=NATIVE, **kw)
    with pytest.raises(ValueError, match="packed with audio at 16000 Hz.*the loader asks for 8000 Hz"):
        reel.Loader(str(mono_store), audio={"sample_rate": 8000, "channels": 1}, **kw)
    with pytest.raises(ValueError, match=r"packed with audio at each video's own rate, each video's own channels.*"
                                         r"1 channel \(the mean\)"):
        reel.Loader(str(native_store), audio={"sample_rate": 48000, "channels": 1}, **kw)
    with pytest.raises(ValueError, match="a.mp4's is 48000 Hz where the loader asks for 16000 Hz.*--audio-rate 16000"):
        reel.Loader(str(native_store), audio={"sample_rate": 16000, "channels": 2}, **kw)
    with pytest.raises(ValueError, match="stream -1, and the loader asks for .*stream 1"):
        reel.Loader(str(mono_store), audio={**MONO16K, "stream_index": 1}, **kw)
    plain = tmp_path / "plain"
    reel.pack(folder, plain, size=32, shard_size=1 << 16)
    with pytest.raises(ValueError, match="packed without --audio holds no audio"):
        reel.Loader(str(plain), audio=MONO16K, **kw)
    with pytest.raises(ValueError, match="unknown keys"):
        reel.pack(folder, tmp_path / "bad", audio={"rate": 16000})
    with pytest.raises(ValueError, match="audio.channels 2"):
        reel.pack(folder, tmp_path / "bad", audio={"channels": 2})
    with reel.Loader(str(native_store), **kw) as ld:  # video only: the store reads as before
        assert sum(len(b.info) for b in ld) == 3


def test_a_video_without_audio_follows_the_loaders_missing(folder, tmp_path):
    d = tmp_path / "videos"
    d.mkdir()
    shutil.copy(folder / "a.mp4", d / "a.mp4")
    reel._testing.write_video(str(d / "silent.mp4"), width=96, height=64, frames=30, gop=10)
    store = tmp_path / "st"
    reel.pack(d, store, size=32, shard_size=1 << 16, audio={"sample_rate": 16000, "channels": 1})
    recs = {os.path.basename(r["path"]): r for r in reel._reel.store_records(str(store))}
    assert recs["silent.mp4"]["status"] == 0  # its frames are stored
    assert recs["silent.mp4"]["audio"]["status"] == reel._reel.STATUS["NO_AUDIO_STREAM"]
    kw = dict(frames_per_clip=4, size=32, batch_size=2, shuffle=False, epochs=1)
    with reel.Loader(str(store), on_error="raise", audio=MONO16K, **kw) as ld:
        with pytest.raises(reel.ReelError, match="silent.mp4: no audio stream") as e:
            list(ld)
        assert e.value.status == reel._reel.STATUS["NO_AUDIO_STREAM"]
    zeros = {**MONO16K, "missing": "zeros"}
    got = {}
    for source in (str(store), [str(d / "a.mp4"), str(d / "silent.mp4")]):
        with reel.Loader(source, audio=zeros, **kw) as ld:
            (b,) = list(ld)
            got[isinstance(source, str)] = [(os.path.basename(i.path), i.audio_first_sample) for i in b.info], \
                np.asarray(b.audio).copy(), np.asarray(b.audio_lengths).copy(), np.asarray(b.audio_valid).copy()
    (si, sa, sl, sv), (vi, va, vl, vv) = got[True], got[False]
    assert si == vi and np.array_equal(sl, vl) and np.array_equal(sv, vv) and np.abs(sa - va).max() <= 1e-6
    k = [n for n, _ in si].index("silent.mp4")
    assert not sa[k].any() and sv[k, 0] == sv[k, 1]


def test_damaged_stored_audio_is_named(folder, tmp_path):
    store = tmp_path / "st"
    reel.pack(folder, store, size=32, shard_size=1 << 16, audio=MONO16K, format="raw")
    rec = reel._reel.store_records(str(store))[0]
    shard = store / rec["shard"]
    data = bytearray(shard.read_bytes())
    data[rec["offset"] + rec["length"] - 3] ^= 0x40  # a byte of its last stored sample: the record's tail
    shard.write_bytes(bytes(data))
    with reel.Loader(str(store), audio=MONO16K, frames_per_clip=4, size=32, shuffle=False, epochs=1,
                     on_error="raise") as ld:
        with pytest.raises(reel.ReelError, match="checksum mismatch in the stored audio") as e:
            list(ld)
        assert e.value.status == reel._reel.STATUS["CORRUPT"]
    v = reel._reel.store_verify(str(store))
    assert not v["ok"] and v["bad"] == 1 and "record checksum mismatch" in v["first_problem"]
    with reel.Loader(str(store), frames_per_clip=4, size=32, epochs=1) as ld:  # the frames still read
        assert sum(len(b.info) for b in ld) == 3


def test_reel_torch_carries_the_audio(mono_store):
    torch = pytest.importorskip("torch")
    rt = pytest.importorskip("reel.torch")
    kw = dict(frames_per_clip=4, size=32, batch_size=2, seed=2)
    want = {}
    with reel.Loader(str(mono_store), audio=MONO16K, epochs=1, **kw) as ld:
        for b in ld:
            plane, lengths, valid = np.asarray(b.audio), np.asarray(b.audio_lengths), np.asarray(b.audio_valid)
            for i, c in enumerate(b.info):
                want[c.sample] = (plane[i, :, :lengths[i]].copy(), tuple(valid[i]))
    with reel.Loader(str(mono_store), audio=MONO16K, epochs=1, **kw) as ld:  # TorchLoader: zero-copy views
        got = [(b.info, b.audio.clone(), b.audio_lengths.clone(), b.audio_valid.clone()) for b in rt.TorchLoader(ld)]
    ds = rt.VideoDataset(str(mono_store), audio=MONO16K, **kw)  # DataLoader workers: shared copies
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
    got += [(b.info, b.audio, b.audio_lengths, b.audio_valid) for b in dl]
    ds.close()
    seen = []
    for info, audio, lengths, valid in got:
        assert audio.dtype == torch.float32 and audio.shape[:2] == (len(info), 1)
        for i, c in enumerate(info):
            a, v = want[c.sample]
            assert np.array_equal(audio[i, :, :int(lengths[i])].numpy(), a) and not audio[i, :, int(lengths[i]):].any()
            assert tuple(int(x) for x in valid[i]) == v
            seen.append(c.sample)
    assert len(want) == 3 and sorted(set(seen)) == sorted(want) and len(seen) >= 6  # workers may pad a sample
    with reel.Loader(str(mono_store), epochs=1, **kw) as ld:  # without audio: the three-field TorchBatch
        batches = list(rt.TorchLoader(ld))
        assert batches and all(type(b) is rt.TorchBatch for b in batches)
        frames, labels, info = batches[0]
        assert len(info) == labels.shape[0]
