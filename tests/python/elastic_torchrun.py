# tests/python/elastic_torchrun.py: one rank of a torchrun job (gloo, CPU)
# for test_elastic.py. "save": read 1 batch, check that every rank holds
# the same state, save it; "resume": load it and read to the end of the
# epoch. Rank 0 writes the state and the all-gathered sample ids as JSON.
import json
import sys

import torch.distributed as dist

import reel.torch as rt

phase, folder, state_path, out_path = sys.argv[1:5]
dist.init_process_group("gloo")
ds = rt.VideoDataset(folder, frames_per_clip=2, size=32, resize=40, batch_size=2, seed=11, decode_threads=1)
dl = rt.StatefulDataLoader(ds)
if phase == "resume":
    with open(state_path) as f:
        dl.load_state_dict(json.load(f))
samples = []
for k, batch in enumerate(dl):
    samples += [(c.sample, bool(c.padded)) for c in batch.info]
    dist.barrier()  # a training step, in step on every rank
    if phase == "save" and k == 0:
        break
state = rt.check_state_across_ranks(dl.state_dict())
gathered = [None] * dist.get_world_size()
dist.all_gather_object(gathered, samples)
if dist.get_rank() == 0:
    with open(out_path, "w") as f:
        json.dump({"world_size": dist.get_world_size(), "state": state,
                   "samples": [s for rank in gathered for s in rank]}, f)
    if phase == "save":
        with open(state_path, "w") as f:
            json.dump(state, f)
dist.destroy_process_group()
