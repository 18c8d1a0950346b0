"""The Loader's audio (batch.audio, issue 28): each clip's samples equal
VideoDecoder.get_audio_for_frames of the clip's frames and the ffmpeg CLI's
reference cut by s_r, at native rate and at 16 kHz mono, shuffled or not,
in variable batches and after an exact resume; a video without audio
follows the error policy, and a store packed without audio is refused by
name (tests/python/test_store_audio.py: a store packed with it)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import reel
import reel._testing
from audio_clips import FPS, MONO16K, NATIVE, cut, make_video, reference

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("loader_audio")
    return {"a": make_video(d, "a", 1), "late": make_video(d, "late", 2, delay=0.25), "b": make_video(d, "b", 3),
            "mono16k": make_video(d, "mono16k", 4, rate=16000, channels=1)}


def _check_batches(batches, settings, refs, variable=False):
    """Every clip's audio against the decoder and the CLI; returns the clips seen."""
    seen = []
    decoders = {}
    for b in batches:
        assert b.audio_sample_rate == settings["sample_rate"]
        lengths, valid = np.asarray(b.audio_lengths), np.asarray(b.audio_valid)
        assert lengths.shape == (len(b.info),) and valid.shape == (len(b.info), 2)
        if isinstance(b.audio, list):
            rows = [np.asarray(a) for a in b.audio]
        else:
            plane = np.asarray(b.audio)
            assert plane.dtype == np.float32 and plane.shape == (len(b.info), settings["channels"], lengths.max())
            for i, n in enumerate(lengths):
                assert not plane[i, :, n:].any()  # zero-padded past the clip's own
            rows = [plane[i, :, :n] for i, n in enumerate(lengths)]
        for i, info in enumerate(b.info):
            if info.path not in decoders:
                # the decoder's channels: None (the stream's own) or 1 (the mean)
                dec_audio = {"sample_rate": settings["sample_rate"], "channels": 1 if settings["channels"] == 1 else None}
                decoders[info.path] = reel.VideoDecoder(info.path, audio=dec_audio)
            a = decoders[info.path].get_audio_for_frames(list(info.frame_indices))
            got = rows[i]
            assert got.shape == (settings["channels"], a.num_samples) and lengths[i] == a.num_samples
            assert info.audio_first_sample == a.first_sample
            assert tuple(valid[i]) == a.valid
            assert np.abs(got - np.asarray(a.data)).max(initial=0) <= 1e-6
            assert np.abs(got - cut(refs[info.path], a.first_sample, a.num_samples)).max(initial=0) <= 1e-6
            seen.append((info.sample, info.clip, tuple(info.frame_indices), got.copy()))
    for d in decoders.values():
        d.close()
    return seen


@pytest.mark.parametrize("settings", [NATIVE, MONO16K], ids=["native", "16k_mono"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_loader_audio_equals_the_decoder_and_the_cli(videos, settings, shuffle):
    paths = [videos["a"], videos["late"], videos["b"]] + ([videos["mono16k"]] if settings["channels"] == 1 else [])
    refs = {p: reference(p, settings) for p in paths}
    with reel.Loader(paths, frames_per_clip=8, clips_per_video=2, frame_stride=2, size=(32, 48), crop=None,
                     batch_size=2, shuffle=shuffle, seed=5, epochs=1, decode_threads=2, audio=settings) as ld:
        seen = _check_batches(list(ld), settings, refs)
        m = ld.metrics()
    assert len(seen) == 2 * len(paths)
    assert m["audio_samples"] == sum(s[3].shape[1] for s in seen) and m["audio_decode_seconds"] > 0
    # the late audio starts 0.25 s after the video: a clip at its start is zeros before a0
    late = [s for s in seen if paths[s[0]] == videos["late"] and s[2][0] * settings["sample_rate"] // FPS
            < settings["sample_rate"] // 4]
    for _, _, idx, got in late:
        assert not got[:, :max(0, settings["sample_rate"] // 4 - idx[0] * settings["sample_rate"] // FPS - 2)].any()


def test_variable_batches_give_per_clip_views_or_a_padded_plane(videos):
    paths = [videos["a"], videos["late"], videos["mono16k"]]
    refs = {p: reference(p, MONO16K) for p in paths}
    for pad in (False, True):
        with reel.Loader(paths, sampler="fps", fps=2.0, max_frames=6, size_policy={"min_pixels": 28 * 28, "max_pixels": 64 * 56},
                         batch_size=3, shuffle=False, epochs=1, pad=pad, audio=MONO16K) as ld:
            batches = list(ld)
            assert isinstance(batches[0].audio, list) != pad
            assert len(_check_batches(batches, MONO16K, refs)) == 3


def test_exact_resume_gives_the_same_audio(videos):
    paths = [videos["a"], videos["late"], videos["b"]]
    kw = dict(frames_per_clip=4, size=32, crop="center", batch_size=1, shuffle=True, seed=9, epochs=1,
              audio=MONO16K)
    with reel.Loader(paths, **kw) as ld:
        full = [(b.info[0].sample, np.asarray(b.audio).copy()) for b in ld]
    with reel.Loader(paths, **kw) as ld:
        it = iter(ld)
        next(it)
        state = ld.state_dict()
    with reel.Loader(paths, **kw) as ld:
        ld.load_state_dict(state)
        rest = [(b.info[0].sample, np.asarray(b.audio).copy()) for b in ld]
    assert [s for s, _ in rest] == [s for s, _ in full[1:]]
    for (_, a), (_, b) in zip(rest, full[1:]):
        assert np.array_equal(a, b)


def test_a_video_without_audio_follows_the_error_policy(videos, tmp_path):
    silent = tmp_path / "silent.mp4"
    reel._testing.write_video(str(silent), width=96, height=64, frames=30, gop=10)
    paths = [videos["a"], str(silent)]
    kw = dict(frames_per_clip=4, size=32, batch_size=2, shuffle=False, epochs=1)
    with reel.Loader(paths, on_error="skip", audio=MONO16K, **kw) as ld:
        (b,) = list(ld)
        assert len(b.info) == 1 and b.num_failed == 1 and b.info[0].path == videos["a"]
        m = ld.metrics()
        assert m["failures_by_cause"].get("no audio stream") == 1, m["failures_by_cause"]
    with reel.Loader(paths, on_error="raise", audio=MONO16K, **kw) as ld:
        with pytest.raises(reel.ReelError, match="silent.mp4: no audio stream") as e:
            list(ld)
        assert e.value.status == reel._reel.STATUS["NO_AUDIO_STREAM"]
    with reel.Loader(paths, audio={**NATIVE, "missing": "zeros"}, **kw) as ld:
        (b,) = list(ld)
        plane, valid = np.asarray(b.audio), np.asarray(b.audio_valid)
        k = [i.path for i in b.info].index(str(silent))
        assert plane.shape[1] == 2 and not plane[k].any() and valid[k, 0] == valid[k, 1]
        assert np.asarray(b.audio_lengths)[k] == 4 * 48000 // FPS
    # stereo asked of a mono video: named, under the error policy
    with reel.Loader([videos["mono16k"]], on_error="raise", audio=NATIVE, **kw) as ld:
        with pytest.raises(reel.ReelError, match="1 channel where the loader's audio.channels is 2"):
            list(ld)


def test_audio_settings_are_checked_by_name(videos, tmp_path):
    with pytest.raises(ValueError, match="audio.sample_rate 0"):
        reel.Loader([videos["a"]], audio={"channels": 1})
    with pytest.raises(ValueError, match="audio.channels 0"):
        reel.Loader([videos["a"]], audio={"sample_rate": 16000})
    with pytest.raises(ValueError, match="unknown keys"):
        reel.Loader([videos["a"]], audio={"rate": 16000})
    folder = tmp_path / "vids"
    folder.mkdir()
    shutil.copy(videos["a"], folder / "a.mp4")
    reel.pack(folder, tmp_path / "st", size=32, shard_size=1 << 16)
    with pytest.raises(ValueError, match="packed without --audio"):
        reel.Loader(str(tmp_path / "st"), frames_per_clip=4, size=32, audio=MONO16K)
