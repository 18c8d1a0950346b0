"""reel.torch's clips with audio (issue 28): VideoDataset(clips=True) over a
loader with ``audio`` yields TorchAudioClip (TorchClip's fields, then the
clip's audio row, its length, valid range and first sample), whose values
are the Loader's batch.audio; DataLoader's default collation batches them,
with and without workers; without audio the plain TorchClip is unchanged;
StatefulDataLoader notes the state of audio clips and batches."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import reel
from audio_clips import MONO16K, NATIVE, make_video

torch = pytest.importorskip("torch")
rt = pytest.importorskip("reel.torch")

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

KW = dict(frames_per_clip=4, clips_per_video=2, frame_stride=3, size=32, batch_size=2, seed=4)


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("torch_audio")
    return [make_video(d, "a", 1), make_video(d, "late", 2, delay=0.25), make_video(d, "b", 3)]


def _loader_audio(paths, settings, kw=KW):
    """{(sample, clip): (audio [C, S_i], valid, first_sample, label)} of the Loader's one epoch."""
    want = {}
    with reel.Loader(paths, audio=settings, epochs=1, **kw) as ld:
        for b in ld:
            plane, lengths, valid = np.asarray(b.audio), np.asarray(b.audio_lengths), np.asarray(b.audio_valid)
            labels = list(memoryview(b.labels))
            for i, c in enumerate(b.info):
                want[(c.sample, c.clip)] = (plane[i, :, :lengths[i]].copy(), tuple(int(x) for x in valid[i]),
                                            c.audio_first_sample, labels[i])
    return want


@pytest.mark.parametrize("settings", [NATIVE, MONO16K], ids=["native", "16k_mono"])
@pytest.mark.parametrize("workers", [0, 2])
def test_audio_clips_collate_and_equal_the_loaders_audio(videos, settings, workers):
    want = _loader_audio(videos, settings)
    ds = rt.VideoDataset(videos, clips=True, audio=settings, **KW)
    # one DataLoader batch per reel batch: its clips' rows share the batch's S_max
    dl = torch.utils.data.DataLoader(ds, batch_size=KW["batch_size"] * KW["clips_per_video"], num_workers=workers,
                                     **({"multiprocessing_context": "fork"} if workers else {}))
    seen = []
    for b in dl:
        assert isinstance(b, rt.TorchAudioClip)
        n = len(b.sample)
        assert b.frames.shape[:2] == (n, KW["frames_per_clip"]) and b.frames.dtype == torch.uint8
        assert b.audio.dtype == torch.float32 and b.audio.shape[:2] == (n, settings["channels"])
        assert b.audio_length.shape == (n,) and b.audio_valid.shape == (n, 2)
        assert b.audio_first_sample.shape == (n,) and b.audio_valid.dtype == torch.int64
        assert int(b.audio_length.max()) == b.audio.shape[2]  # the batch's S_max
        for i in range(n):
            key = (int(b.sample[i]), int(b.clip[i]))
            audio, valid, first, label = want[key]
            s = int(b.audio_length[i])
            assert s == audio.shape[1] > 0
            assert np.array_equal(b.audio[i, :, :s].numpy(), audio) and not b.audio[i, :, s:].any()
            assert tuple(int(x) for x in b.audio_valid[i]) == valid
            assert int(b.audio_first_sample[i]) == first and int(b.label[i]) == label
            seen.append((key, bool(b.padded[i])))
    ds.close()
    # workers even out their shares with a repeated (padded) sample
    assert sorted(k for k, padded in seen if not padded) == sorted(want) and len(want) == 2 * len(videos)


def test_clips_without_audio_keep_the_plain_torchclip(videos):
    ds = rt.VideoDataset(videos, clips=True, **KW)
    clips = list(ds)
    ds.close()
    assert len(clips) == 2 * len(videos) and all(type(c) is rt.TorchClip for c in clips)
    assert rt.TorchClip._fields == rt.TorchAudioClip._fields[:len(rt.TorchClip._fields)]


@pytest.mark.parametrize("clips", [False, True])
def test_stateful_dataloader_notes_audio_items(videos, clips):
    """The state after the first item continues the epoch with what was not
    yet consumed, for audio batches and audio clips alike."""
    kw = dict(KW, batch_size=1, clips_per_video=1)
    every = sorted(_loader_audio(videos, MONO16K, kw))
    ds = rt.VideoDataset(videos, clips=clips, audio=MONO16K, **kw)
    dl = rt.StatefulDataLoader(ds, batch_size=1 if clips else None)
    it = iter(dl)
    first = next(it)
    state = dl.state_dict()
    assert state["samples_seen"] == 1, state
    ds2 = rt.VideoDataset(videos, clips=clips, audio=MONO16K, **kw)
    dl2 = rt.StatefulDataLoader(ds2, batch_size=1 if clips else None)
    dl2.load_state_dict(state)
    rest = list(dl2)
    ds.close()
    ds2.close()

    def keys(item):
        if clips:
            return [(int(item.sample[0]), int(item.clip[0]))]
        return [(c.sample, c.clip) for c in item.info]

    assert sorted(keys(first) + [k for r in rest for k in keys(r)]) == every
