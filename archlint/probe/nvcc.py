"""Finding nvcc and the folder compile probes cache their answers in."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path


def find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "nvcc"), os.X_OK):
            return os.path.join(root, "bin", "nvcc")
    return None


@lru_cache(maxsize=8)
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    match = re.search(r"release [\d.]+, V[\d.]+", out)
    return match.group(0) if match else out.strip().splitlines()[-1:][0] if out.strip() else "unknown"


def default_cache_dir() -> Path:
    explicit = os.environ.get("ARCHLINT_CACHE_DIR")
    if explicit:
        return Path(explicit) / "probe"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "archlint" / "probe"
