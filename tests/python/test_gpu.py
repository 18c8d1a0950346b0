"""device="cuda" where there is no GPU (issue 30): a named error, never a
crash; the CPU only when asked (device_fallback="cpu"); a fake driver whose
cuInit finds no device; and scripts/device_check.sh run here, where it must
say what it cannot run and still write its JSON and table."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import reel

from conftest import ROOT

STUB = r"""
/* A libcuda.so.1 with no device: cuInit says CUDA_ERROR_NO_DEVICE. */
typedef int CUresult;
CUresult cuInit(unsigned f) { (void)f; return 100; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : "?"; return 0; }
#define STUB(name) CUresult name(void) { return 100; }
STUB(cuDriverGetVersion) STUB(cuDeviceGetCount) STUB(cuDeviceGet) STUB(cuDeviceGetName)
STUB(cuDeviceGetAttribute) STUB(cuDevicePrimaryCtxRetain) STUB(cuDevicePrimaryCtxRelease_v2)
STUB(cuCtxPushCurrent_v2) STUB(cuCtxPopCurrent_v2) STUB(cuModuleLoadData) STUB(cuModuleUnload)
STUB(cuModuleGetFunction) STUB(cuStreamCreate) STUB(cuStreamDestroy_v2) STUB(cuStreamSynchronize)
STUB(cuStreamWaitEvent) STUB(cuEventCreate) STUB(cuEventRecord) STUB(cuEventDestroy_v2)
STUB(cuMemAlloc_v2) STUB(cuMemFree_v2) STUB(cuMemGetInfo_v2) STUB(cuMemcpyHtoDAsync_v2)
STUB(cuMemcpyDtoHAsync_v2) STUB(cuMemcpyDtoDAsync_v2) STUB(cuEventSynchronize) STUB(cuLaunchKernel)
"""


def _have_driver() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


needs_no_driver = pytest.mark.skipif(_have_driver(), reason="an NVIDIA driver is here (scripts/device_check.sh runs the GPU)")


@needs_no_driver
def test_cuda_without_a_driver_is_a_named_error(video):
    with pytest.raises(reel.ReelError) as e:
        reel.VideoDecoder(video, device="cuda")
    assert e.value.status == reel._reel.STATUS["CUDA"]
    msg = str(e.value)
    assert "CUDA" in msg and "libcuda.so.1" in msg and 'device_fallback="cpu"' in msg
    with pytest.raises(reel.ReelError) as e:
        reel.VideoDecoder(video, device="cuda:1")
    assert e.value.status == reel._reel.STATUS["CUDA"]


def test_a_bad_device_is_refused_by_name(video):
    for bad in ("gpu", "cuda:", "cuda:x", "CUDA"):
        with pytest.raises(reel.InvalidArgumentError, match="device"):
            reel.VideoDecoder(video, device=bad)
    with pytest.raises(reel.InvalidArgumentError, match="device_fallback"):
        reel.VideoDecoder(video, device="cuda", device_fallback="gpu")


def test_the_cpu_serves_only_when_asked(video, np):
    want = reel.VideoDecoder(video, size=(48, 64))[0:5]
    got = reel.VideoDecoder(video, size=(48, 64), device="cuda", device_fallback="cpu")[0:5]
    assert want.numpy().shape == (5, 3, 48, 64) and np.array_equal(want.numpy(), got.numpy())
    cpu = reel.VideoDecoder(video, device="cpu")
    assert cpu.metadata.num_frames == 60


@needs_no_driver
def test_a_driver_without_a_device_says_so(video, tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler to build the stub driver")
    src = tmp_path / "stub.c"
    src.write_text(STUB)
    lib = tmp_path / "libcuda.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    code = textwrap.dedent(
        f"""
        import reel
        try:
            reel.VideoDecoder({video!r}, device="cuda")
        except reel.ReelError as e:
            print(e.status == reel._reel.STATUS["CUDA"], str(e))
        """
    )
    env = dict(os.environ, REEL_LIBCUDA=str(lib))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True "), out.stdout
    assert "no CUDA device" in out.stdout and "CUDA_ERROR_NO_DEVICE" in out.stdout and str(lib) in out.stdout


@needs_no_driver
def test_device_check_reports_what_it_cannot_run(tmp_path):
    """scripts/device_check.sh here: no GPU, so every GPU part is reported as
    skipped with its reason, and the JSON and the table are still written."""
    script = ROOT / "scripts" / "device_check.sh"
    env = dict(os.environ, REEL_DEVICE_CHECK_OUT=str(tmp_path), REEL_DEVICE_CHECK_QUICK="1")
    out = subprocess.run(["bash", str(script), "--no-build"], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads((tmp_path / "device_check.json").read_text())
    assert report["gpu"] is None
    assert "no GPU" in out.stdout
    skipped = {c["name"]: c for c in report["checks"] if c["status"] == "skipped"}
    for name in ("nvdec_yuv_equals_cpu", "gpu_kernel_equals_cpu", "nvdec_decode_fps", "gpu_loader_equals_cpu",
                 "gpu_loader_fps", "gpu_store_equals_cpu", "gpu_store_fps", "gpu_vlm_equals_cpu",
                 "torch_dlpack_frames", "torch_dlpack_batch", "torch_wrappers_no_copy"):
        assert name in skipped and skipped[name]["why"], report
        # each skipped check is printed with its reason, not only written
        assert f"device_check: {name}: skipped ({skipped[name]['why']})" in out.stdout, out.stdout
    # the torch checks say why torch cannot run them as well (a CPU build here, or no torch)
    assert re.search(r"torch .* is a CPU build|no torch|sees no GPU", skipped["torch_dlpack_frames"]["why"]), report
    table = Path(tmp_path / "device_check.md").read_text()
    assert "| check |" in table and "skipped" in table


@needs_no_driver
def test_the_loader_refuses_cuda_by_name_and_falls_back_when_asked(video, np):
    with pytest.raises(reel.ReelError) as e:
        reel.Loader([video], frames_per_clip=4, size=32, batch_size=1, device="cuda")
    assert e.value.status == reel._reel.STATUS["CUDA"] and "libcuda.so.1" in str(e.value)
    with pytest.raises(reel.InvalidArgumentError, match="device"):
        reel.Loader([video], frames_per_clip=4, size=32, batch_size=1, device="tpu")
    batches = []
    for kw in ({}, {"device": "cuda", "device_fallback": "cpu"}):
        with reel.Loader([video], frames_per_clip=4, size=32, batch_size=1, epochs=1, seed=3, **kw) as ld:
            batches.append([b.frames.numpy().copy() for b in ld])
    assert len(batches[0]) == 1 and all(np.array_equal(a, b) for a, b in zip(*batches))
