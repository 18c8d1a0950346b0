# Stubs for reel._synth, the test-video generator (see reel._testing).
from typing import List, Union
import os

_Path = Union[str, "os.PathLike[str]"]

def write(
    path: _Path,
    *,
    codec: str = "h264",
    width: int = 160,
    height: int = 120,
    frames: int = 60,
    fps_num: int = 25,
    fps_den: int = 1,
    gop: int = 16,
    bframes: int = 2,
    vfr: bool = False,
    ten_bit: bool = False,
    yuv444: bool = False,
    start: float = 0.0,
    seed: int = 1,
) -> None: ...
def read_indices(data: bytes, height: int, width: int) -> List[int]: ...
