# reel/_build.py: reel.build_info() and the bundled `reel` command. A wheel
# made by scripts/build_wheel.sh carries reel/_wheel_build.json (its FFmpeg's
# Debian source version, configure line and the bundled libraries) and the
# CLI binary reel/_bin/reel; a source build (`pip install .`) has the binary
# and no record.
from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any, Dict, List, Optional

from . import _reel


def _package_dir() -> str:
    """The directory that holds the extension (site-packages/reel, also for editable installs)."""
    spec = importlib.util.find_spec("reel._reel")
    origin = spec.origin if spec and spec.origin else __file__
    return os.path.dirname(os.path.abspath(origin))


def cli_path() -> Optional[str]:
    """The bundled `reel` binary, or None where this install has none."""
    exe = os.path.join(_package_dir(), "_bin", "reel")
    return exe if os.access(exe, os.X_OK) else None


def build_info() -> Dict[str, Any]:
    """What this reel was built with: FFmpeg's version, exact configure line and licence,
    libswresample's version, "audio_decoders" (audio codec -> the loaded decoder, or None),
    "hwdevice_types" and "hwaccels" (device type -> decoders that use it; "cuda": NVDEC),
    "cuda_kernels" (the CUDA kernel images libreel carries, e.g. ["sm_80", "sm_90",
    "compute_90"] in the wheel; [] in a default source build), the versions of libjpeg-turbo, zstd, libcurl and its TLS library (as linked), the
    bundled CLI's path, and under "wheel" the wheel's build record (None for a source build)."""
    info: Dict[str, Any] = json.loads(_reel.build_info())
    info["cli"] = cli_path()
    record = None
    for d in {_package_dir(), os.path.dirname(os.path.abspath(__file__))}:
        p = os.path.join(d, "_wheel_build.json")
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                record = json.load(f)
            break
    info["wheel"] = record
    return info


def main(argv: Optional[List[str]] = None) -> int:
    """The `reel` console script: runs the bundled binary with the same arguments."""
    args = sys.argv[1:] if argv is None else argv
    exe = cli_path()
    if exe is None:
        print("reel: this installation has no bundled reel binary (expected at %s); "
              "build it with `make` (build/reel) or install the wheel" % os.path.join(_package_dir(), "_bin", "reel"),
              file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, ["reel"] + list(args))
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
