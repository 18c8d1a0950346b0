# tests/python/test_elastic.py: elastic resume (issue 16) from Python, in one
# process: 4 ranks read k batches and save the state (all equal), then 1, 2,
# 3 or 5 ranks (or another batch size) finish the epoch from it; the samples
# are the dataset exactly once (padding aside) and each has the frames, crop,
# flip and pixels of an uninterrupted one-rank run. Over videos, a packed
# store and a manifest by URL (nginx on 127.0.0.1); VideoDataset through
# StatefulDataLoader with 2 workers resumed with 3; refusals; and torchrun
# (gloo, CPU) 2 ranks -> 3 and 3 -> 2 with an all-gather of sample ids.
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import reel
from servers import nginx

KW = dict(frames_per_clip=4, size=(40, 48), resize=64, crop="random", flip="random", batch_size=2, seed=7,
          decode_threads=2)
CLASSES = ("archery", "bowling", "cooking")
N_VIDEOS = 11


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """11 short videos in a Kinetics layout, under www/ds (served by nginx in one test)."""
    root = tmp_path_factory.mktemp("elastic") / "www" / "ds"
    for i in range(N_VIDEOS):
        d = root / CLASSES[i % 3]
        d.mkdir(parents=True, exist_ok=True)
        reel._testing.write_video(str(d / f"v{i}.mp4"), width=80, height=64, frames=20 + i, gop=6, seed=i + 1)
    lines = ["path,label"] + [f"{CLASSES[i % 3]}/v{i}.mp4,{CLASSES[i % 3]}" for i in range(N_VIDEOS)]
    (root / "train.csv").write_text("\n".join(lines) + "\n")
    return root


def records(batch):
    """(requested, clip) -> what the clip is, for every clip of a batch."""
    out = []
    data = bytes(memoryview(batch.frames))
    row = len(data) // max(1, len(batch))
    for i, c in enumerate(batch.info):
        pixels = hashlib.sha1(data[i * row:(i + 1) * row]).hexdigest()
        out.append(((c.requested, c.clip), (c.sample, c.frame_indices, c.crop, c.flipped, pixels), c.padded))
    return out


def run(source, stop=None, state=None, **kw):
    """Records of one rank's epoch (or its first `stop` batches) and its state after them."""
    with reel.Loader(source, **{**KW, "epochs": 1, **kw}) as L:
        if state is not None:
            L.load_state_dict(state)
        out = []
        for k, b in enumerate(L):
            out += records(b)
            del b
            if stop is not None and k + 1 == stop:
                break
        return out, L.state_dict()


def check_elastic(source, n, k=1, **kw):
    ref, _ = run(source, **kw)
    reference = {key: what for key, what, padded in ref}
    assert len(reference) == n
    head, states = [], []
    for r in range(4):
        recs, st = run(source, stop=k, world_size=4, rank=r, **kw)
        head += recs
        states.append(st)
    assert all(s == states[0] for s in states)  # every rank saves the same state
    assert states[0]["samples_seen"] == k * 4 * KW["batch_size"] and states[0]["canonical_ranks"] == 4
    assert states[0]["topology"] == {"world_size": 4, "batch_size": KW["batch_size"], "num_workers": 1}
    state = json.loads(json.dumps(states[0]))  # a plain, JSON-able dict
    for world, batch in ((1, 2), (2, 2), (3, 2), (5, 2), (2, 3)):
        rest = []
        for r in range(world):
            recs, end = run(source, state=state, world_size=world, rank=r, batch_size=batch, **kw)
            rest += recs
            assert (end["epoch"], end["samples_seen"]) == (1, 0)  # the epoch is over
        delivered = Counter(key for key, _, padded in head + rest if not padded)
        assert delivered == Counter({key: 1 for key in reference}), (world, batch)
        for key, what, _ in head + rest:
            assert what == reference[key], (world, batch, key)
        left = n - state["samples_seen"]
        tail = left % (world * batch)
        assert sum(padded for _, _, padded in rest) == ((world - tail % world) % world if tail else 0)


def test_four_ranks_resume_on_other_world_and_batch_sizes_over_videos(folder):
    check_elastic(folder, N_VIDEOS, k=1)


def test_shard_drop_on_the_remainder(folder):
    head, state = [], None
    for r in range(4):  # batches of 1: 4 seen, 7 left
        recs, state = run(folder, stop=1, world_size=4, rank=r, shard_mode="drop", batch_size=1)
        head += recs
    assert state["samples_seen"] == 4
    for world, delivered in ((3, 6), (5, 5), (7, 7)):  # 7 over 3 ranks of 2: one global batch, 1 dropped; ...
        rest = []
        for r in range(world):
            rest += run(folder, state=state, world_size=world, rank=r, shard_mode="drop")[0]
        assert len(rest) == delivered and not any(p for _, _, p in head + rest)
        assert len({k for k, _, _ in head + rest}) == len(head) + len(rest)  # nothing twice
    # with W=4 and batches of 2, drop mode ends the epoch after one global batch: the state says so
    for r in range(4):
        recs, state = run(folder, stop=1, world_size=4, rank=r, shard_mode="drop")
    assert (state["epoch"], state["samples_seen"]) == (1, 0)


def test_four_ranks_resume_over_a_packed_store(folder, tmp_path):
    reel.pack(folder, tmp_path / "st", size=64, shard_size=1 << 16)
    assert len(list((tmp_path / "st").glob("shard-*.bin"))) > 1  # the default order goes shard by shard
    check_elastic(tmp_path / "st", N_VIDEOS, k=1)


def test_four_ranks_resume_over_a_manifest_by_url(folder):
    with nginx(folder.parent) as base:
        check_elastic(f"{base}/ds/train.csv", N_VIDEOS, k=1)


def test_replacements_resume_the_same_way(folder, tmp_path):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"not a video")
    items = [str(p) for p in sorted(folder.rglob("*.mp4"))] + [str(bad)] * 2
    ref, _ = run(items, on_error="replace")
    assert any(what[0] != key[0] for key, what, _ in ref)  # replacements happened
    check_elastic(items, len(items), k=1, on_error="replace")


def test_refusals_name_the_reason(folder, tmp_path):
    _, state = run(folder, stop=1)
    with reel.Loader(folder, **dict(KW, seed=8)) as L, pytest.raises(ValueError, match="seed"):
        L.load_state_dict(state)
    with reel.Loader(folder, **dict(KW, shuffle_window=3)) as L, pytest.raises(ValueError, match="shuffle_window"):
        L.load_state_dict(state)
    other = [str(p) for p in sorted(folder.rglob("*.mp4"))][::-1]  # the same videos, another order
    with reel.Loader(other, **KW) as L, pytest.raises(ValueError, match="another dataset"):
        L.load_state_dict(state)
    with reel.Loader(folder, **KW) as L:
        with pytest.raises(ValueError, match="newer reel"):
            L.load_state_dict(dict(state, version=3))
        L.load_state_dict(state)  # the right one is fine, after the refusals
        assert L.state_dict() == state


def test_the_checkpoint_is_the_one_state(folder):
    """Issue 26: the checkpoint is the one resume API. A loader that starts
    at first_epoch loads its own mid-epoch state (the restore compared the
    epoch with `epochs` alone and refused it); a state of shuffle_window=0
    (no window, which C writes as null) loads back on its loader; the old
    same-topology form {version 1, epoch, position} is refused by name."""
    whole, _ = run(folder, first_epoch=3, epochs=2)  # epoch 3
    head, state = run(folder, stop=1, first_epoch=3, epochs=2)
    assert (state["epoch"], state["samples_seen"]) == (3, 2)
    tail, end = run(folder, state=state, first_epoch=3, epochs=2)
    assert head + tail == whole
    assert (end["epoch"], end["samples_seen"]) == (4, 0)
    _, state0 = run(folder, stop=1, shuffle_window=0)
    assert state0["shuffle_window"] is None
    with reel.Loader(folder, **dict(KW, shuffle_window=0)) as L:
        L.load_state_dict(state0)
        assert L.state_dict() == state0
    with reel.Loader(folder, **KW) as L, pytest.raises(ValueError, match="version 1"):
        L.load_state_dict({"version": 1, "epoch": 0, "position": 2})
    pytest.importorskip("torch")
    import reel.torch as rt
    with pytest.raises(ValueError, match="state must come from"):
        rt.VideoDataset(folder, **KW).load_state_dict({"epoch": 0, "position": 2})


def test_out_of_range_and_mistyped_states_are_refused_by_name(folder):
    """Issue 25, defect 7: the state's numbers are read in C in full width
    before they narrow (canonical_ranks 2**32 + 3 was cut to 3, and the
    epoch followed another order); floats and strings are not truncated; a
    missing key or a state that is no dict is a ValueError naming it."""
    _, state = run(folder, stop=1)
    bad = [({**state, "canonical_ranks": 2**32 + 3}, "canonical_ranks 4294967299 is outside"),
           ({**state, "canonical_batch": 2**31}, "canonical_batch 2147483648 is outside"),
           ({**state, "epoch": 2**63}, "epoch 9223372036854775808 is outside"),
           ({**state, "epoch": -1}, "epoch -1 is outside"),
           ({**state, "samples_seen": 8.9}, "samples_seen must be an integer, not 8.9"),
           ({**state, "samples_seen": 2.0}, "samples_seen must be an integer, not 2.0"),
           ({**state, "samples_seen": "8"}, "samples_seen must be an integer, not a string"),
           ({**state, "samples_seen": True}, "samples_seen must be an integer, not true"),
           ({**state, "seed": "7"}, "seed must be an integer"),
           ({**state, "topology": [1]}, "topology must be an object"),
           ({**state, "topology": {"world_size": 2**32}}, "topology.world_size 4294967296 is outside"),
           ({k: v for k, v in state.items() if k != "samples_seen"}, "the key samples_seen is missing"),
           ({k: v for k, v in state.items() if k != "canonical_batch"}, "the key canonical_batch is missing"),
           ({k: v for k, v in state.items() if k != "version"}, "the key version is missing"),
           ([state], "not list"), (None, "not NoneType")]
    with reel.Loader(folder, **KW) as L:
        for st, message in bad:
            with pytest.raises(ValueError, match=message):
                L.load_state_dict(st)
        import numpy as np
        L.load_state_dict({**state, "samples_seen": np.int64(state["samples_seen"])})  # numpy ints are ints
        assert L.state_dict() == state
    pytest.importorskip("torch")
    import reel.torch as rt
    for st in (None, [state]):  # was TypeError
        with pytest.raises(ValueError, match="a loader state is the dict"):
            rt.VideoDataset(folder, **KW).load_state_dict(st)


def test_the_last_epoch_ends_an_endless_loader(folder):
    """Epoch 2**63 - 1 was accepted and the next one wrapped to -2**63
    (signed overflow in C); the state then saved was refused by its own
    load_state_dict. Now the last epoch is 2**63 - 2, the state after it is
    (2**63 - 1, 0) and loads back to a finished loader."""
    _, state = run(folder, stop=1)
    last = 2**63 - 1
    with reel.Loader(folder, **dict(KW, epochs=0)) as L:  # endless
        L.load_state_dict({**state, "epoch": last - 1})
        epochs = {b.epoch for _, b in zip(range(20), L)}
        assert epochs == {last - 1}
        after = L.state_dict()
        assert (after["epoch"], after["samples_seen"]) == (last, 0)
    with reel.Loader(folder, **dict(KW, epochs=0)) as L:
        L.load_state_dict(after)
        assert list(L) == []
        assert L.state_dict() == after


def test_the_same_dataset_elsewhere_keeps_its_fingerprint(folder, tmp_path):
    import shutil
    moved = tmp_path / "moved" / "ds"
    shutil.copytree(folder, moved)
    _, state = run(folder, stop=2)
    with reel.Loader(moved, **KW) as L:
        L.load_state_dict(state)  # another mount point: the same dataset
        assert L.state_dict()["samples_seen"] == 4


def test_epoch_order_and_stripe_plan_what_the_loader_reads(folder, tmp_path):
    reel.pack(folder, tmp_path / "st", size=64, shard_size=1 << 16)
    for source in (folder, tmp_path / "st"):
        _, state = run(source, stop=1, world_size=4, rank=0)
        order = reel.epoch_order(source, 0, seed=KW["seed"], canonical_ranks=state["canonical_ranks"],
                                 canonical_batch=state["canonical_batch"])
        assert sorted(order) == list(range(N_VIDEOS))
        for r in range(3):
            plan = reel.stripe(N_VIDEOS, KW["batch_size"], world_size=3, rank=r, samples_seen=state["samples_seen"])
            want = [(order[g % N_VIDEOS], g >= N_VIDEOS) for first, count, _ in plan for g in range(first, first + count)]
            got = [(key[0], padded) for key, _, padded in run(source, state=state, world_size=3, rank=r)[0]]
            assert got == want
            assert plan[-1][2] == N_VIDEOS  # the last batch ends the epoch
    with pytest.raises(ValueError):
        reel.stripe(10, 2, world_size=2, rank=2)


# ---------------------------------------------------------------- VideoDataset and StatefulDataLoader
def test_video_dataset_with_two_workers_resumed_with_three(folder):
    pytest.importorskip("torch")
    import reel.torch as rt

    kw = {k: v for k, v in KW.items() if k != "decode_threads"}

    def rows(items):
        out = []
        for b in items:
            for i, c in enumerate(b.info):
                pixels = hashlib.sha1(b.frames[i].contiguous().numpy().tobytes()).hexdigest()
                out.append(((c.requested, c.clip), (c.sample, c.frame_indices, c.crop, c.flipped, pixels),
                            c.padded, c.epoch))
        return out

    ref = rows(rt.StatefulDataLoader(rt.VideoDataset(folder, decode_threads=1, **kw), num_workers=0))
    reference = {key: what for key, what, _, _ in ref}

    dl = rt.StatefulDataLoader(rt.VideoDataset(folder, decode_threads=1, **kw), num_workers=2)
    it = iter(dl)
    head = rows([next(it) for _ in range(3)])
    state = dl.state_dict()
    del it
    assert (state["epoch"], state["samples_seen"]) == (0, 3 * KW["batch_size"])
    assert state["topology"]["num_workers"] == 2

    dl3 = rt.StatefulDataLoader(rt.VideoDataset(folder, decode_threads=1, **kw), num_workers=3)
    dl3.load_state_dict(state)
    assert dl3.state_dict() == state
    rest = rows(dl3)
    delivered = Counter(key for key, _, padded, _ in head + rest if not padded)
    assert delivered == Counter({key: 1 for key in reference})
    for key, what, _, epoch in head + rest:
        assert what == reference[key] and epoch == 0
    # 5 left over 3 workers of batches of 2: one global batch of 2 x ... padded to even out the workers
    assert sum(p for _, _, p, _ in rest) == (3 - (N_VIDEOS - 6) % 3) % 3
    assert dl3.state_dict()["epoch"] == 1 and dl3.state_dict()["samples_seen"] == 0
    nxt = rows(dl3)  # the next epoch, whole
    assert Counter(key for key, _, p, _ in nxt if not p) == Counter({key: 1 for key in reference})
    assert {e for *_, e in nxt} == {1}
    with pytest.raises(ValueError, match="seed"):
        rt.StatefulDataLoader(rt.VideoDataset(folder, **dict(kw, seed=1))).load_state_dict(state)


# ---------------------------------------------------------------- torchrun
def _torchrun(nproc: int, *args: str) -> None:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           str(Path(__file__).with_name("elastic_torchrun.py")), *args]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("before,after", [(2, 3), (3, 2)])
def test_torchrun_resumes_on_another_number_of_ranks(folder, tmp_path, before, after):
    pytest.importorskip("torch")
    state, first, second = tmp_path / "state.json", tmp_path / "first.json", tmp_path / "second.json"
    _torchrun(before, "save", str(folder), str(state), str(first))
    _torchrun(after, "resume", str(folder), str(state), str(second))
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    assert a["world_size"] == before and b["world_size"] == after
    ids = [s for s, padded in a["samples"] + b["samples"] if not padded]
    assert sorted(ids) == list(range(N_VIDEOS))  # each sample exactly once over both runs
    assert a["state"]["samples_seen"] == before * 2 and a["state"]["topology"]["world_size"] == before


# ---------------------------------------------------------------- the example and the docs
ROOT = Path(__file__).resolve().parents[2]


def test_the_example_and_the_docs_run():
    p = subprocess.run([sys.executable, str(ROOT / "examples" / "elastic_resume.py"), "--before", "4", "--after", "3"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "each exactly once" in p.stdout
    doc = (ROOT / "docs" / "python.md").read_text()
    section = doc[doc.index("## Resuming on another cluster size"):]
    code = section.split("```python\n")[2].split("```")[0]  # the runnable one
    exec(compile(code, "docs/python.md", "exec"), {})
