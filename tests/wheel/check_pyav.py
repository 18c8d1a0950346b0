"""check_pyav.py FIRST SECOND: imports av and reel in that order in one process, then
decodes the same frame with both (each with its own FFmpeg) and prints what ran."""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

mods = {name: importlib.import_module(name) for name in sys.argv[1:3]}
av, reel = mods["av"], mods["reel"]
video = Path(os.environ["REEL_SHARED_VIDEOS"]) / "nasa_13013.mp4"
r = reel.VideoDecoder(video, layout="HWC").get_frames_at([0]).numpy()[0]
with av.open(str(video)) as c:
    s = next(st for st in c.streams if st.type == "video" and st.index == 3)
    f = next(c.decode(s)).to_ndarray(format="rgb24")
assert r.shape == f.shape, (r.shape, f.shape)
diff = int(abs(r.astype(int) - f.astype(int)).max())
print(f"av {av.__version__} (FFmpeg {av.library_versions['libavcodec']}), reel {reel.__version__} "
      f"(FFmpeg {reel.build_info()['ffmpeg']}); frame 0 max difference {diff}")
