# tolerant_torchvision.py: importing PyPI's torchvision 0.28 beside CPU torch 2.13 for the
# references that import it (qwen-vl-utils in test_vlm.py, lerobot 0.4.4 in lerobot_data.py).
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def tolerant_register_fake() -> Iterator[None]:
    """While open, torch.library.register_fake tolerates operators that do
    not exist. PyPI's torchvision 0.28 is a CUDA build whose _C.so does not
    load beside CPU torch 2.13, so its operators (torchvision::nms...) are
    never defined and its import fails registering their fake kernels; with
    them skipped, its pure-Python parts (transforms) import and work. Import
    torchvision, or what imports it, inside the block."""
    import torch

    orig = torch.library.register_fake

    def tolerant(op: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            dec = orig(op, *args, **kwargs)
        except RuntimeError:  # "operator torchvision::nms does not exist"
            return args[0] if args else (lambda f: f)
        if args:
            return dec

        def wrap(f: Any) -> Any:
            try:
                return dec(f)
            except RuntimeError:
                return f

        return wrap

    torch.library.register_fake = tolerant
    try:
        yield
    finally:
        torch.library.register_fake = orig
