# examples/elastic_resume.py: elastic resume in one process. Four "ranks"
# read two batches each and save the loader state (every rank's is the
# same), then three "ranks" (or any other number, batch size, thread count)
# load it and finish the epoch: every sample of the epoch exactly once, each
# with the frames, crop and flip it would have had without the interruption.
#
#   python3 examples/elastic_resume.py [DATASET] [--before 4] [--after 3]
#
# DATASET: a folder (class/video.mp4), a manifest, a packed store or a URL;
# none: a small synthetic dataset. With torchrun the ranks are processes:
# see docs/python.md, "Resuming on another cluster size".
import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

import reel
import reel._testing


def demo_dataset() -> str:
    root = Path(tempfile.mkdtemp()) / "dataset"
    reel.set_ffmpeg_log_level(0)
    for v in range(19):  # private test helper: frames carry their index
        (root / f"class{v % 3}").mkdir(parents=True, exist_ok=True)
        reel._testing.write_video(str(root / f"class{v % 3}" / f"v{v}.mp4"), width=96, height=64,
                                  frames=24, gop=8, seed=v + 1)
    return str(root)


OPTS = dict(frames_per_clip=4, size=48, crop="random", flip="random", batch_size=2, seed=3, epochs=1)


def rank(source, world_size, rank, state=None, stop=None):
    """One rank's clips as (sample, frames, crop, flip, padded), and its state after them."""
    with reel.Loader(source, world_size=world_size, rank=rank, decode_threads=2, **OPTS) as loader:
        if state is not None:
            loader.load_state_dict(state)
        clips = []
        for k, batch in enumerate(loader):
            clips += [(c.sample, c.frame_indices, c.crop, c.flipped, c.padded) for c in batch.info]
            if stop is not None and k + 1 == stop:
                break
        return clips, loader.state_dict()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", nargs="?")
    ap.add_argument("--before", type=int, default=4)
    ap.add_argument("--after", type=int, default=3)
    args = ap.parse_args()
    source = args.dataset or demo_dataset()

    reference, _ = rank(source, 1, 0)  # the epoch uninterrupted, on one rank
    by_sample = {c[0]: c[:4] for c in reference}

    head, states = [], []
    for r in range(args.before):  # the job on `before` ranks: two steps, then a checkpoint
        clips, state = rank(source, args.before, r, stop=2)
        head += clips
        states.append(state)
    assert all(s == states[0] for s in states), "every rank saves the same state"
    state = json.loads(json.dumps(states[0]))  # e.g. written with the model's checkpoint
    print(f"saved on {args.before} ranks: epoch {state['epoch']}, samples_seen {state['samples_seen']}")

    rest = []
    for r in range(args.after):  # the job comes back on `after` ranks
        rest += rank(source, args.after, r, state=state)[0]
    seen = Counter(c[0] for c in head + rest if not c[4])
    assert seen == Counter({s: 1 for s in by_sample}), "each sample exactly once"
    assert all(c[:4] == by_sample[c[0]] for c in head + rest), "the same frames, crops and flips"
    padded = sum(c[4] for c in rest)
    print(f"resumed on {args.after} ranks: {len(rest) - padded} samples (+{padded} padded); "
          f"the epoch's {len(by_sample)} samples each exactly once, as an uninterrupted run decodes them")


if __name__ == "__main__":
    main()
