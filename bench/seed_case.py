"""The field report's gate, checked on the real FlashInfer wheels (needs network for the download).

On 0.6.16.post4, `gen_trtllm_comm_module` passes `supported_major_versions=[9, 10]` and its header
compiles `lamport_style_one_shot_all_reduce_norm_kernel` to an empty body for sm_120: archlint must
say AL103 (EMPTY) with the header line as evidence, never AL101. On 0.6.17 the gate admits 12 and
the `< 1200` bounds are gone: no AL101/AL103 on that gate.

    python bench/seed_case.py [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

FOLDERS = ("flashinfer/jit", "flashinfer/data/csrc", "flashinfer/data/include")
GATE_SOURCE = "data/csrc/trtllm_allreduce.cu"


def fetch(version: str, workdir: Path) -> Path:
    target = workdir / f"fi-{version}"
    if (target / "flashinfer").is_dir():
        return target
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"flashinfer-python=={version}",
                    "-d", str(workdir)], check=True)
    wheel = next(workdir.glob(f"flashinfer_python-{version}-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target, [n for n in archive.namelist() if n.startswith(FOLDERS)])
    return target


def comm_findings(tree: Path) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "archlint", "scan", *FOLDERS, "--target", "sm_120", "--no-cache",
                          "--format", "json"], cwd=tree, capture_output=True, text=True)
    data = json.loads(out.stdout)
    # Paths are reported from the working directory (the tree), so they start with `flashinfer/`.
    gates = [g for g in data["gates"] if _in_package(g["path"]) == "jit/comm.py"
             and GATE_SOURCE in {_in_package(source) for source in g.get("sources", [])}]
    lines = {g["line"] for g in gates}
    return [f for f in data["findings"] if _in_package(f["path"]) == "jit/comm.py" and f["line"] in lines]


def _in_package(path: str) -> str:
    return path.removeprefix("flashinfer/")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "archlint-seed")
    workdir = parser.parse_args().workdir
    workdir.mkdir(parents=True, exist_ok=True)
    ok = True
    old = comm_findings(fetch("0.6.16.post4", workdir))
    rules = sorted({f["rule"] for f in old})
    empty = [f for f in old if f["rule"] == "AL103"]
    named = any("trtllm_allreduce.cuh" in e["path"] and "< 1200" in e["message"] for f in empty for e in f["evidence"])
    print(f"0.6.16.post4: {rules}; header line with `__CUDA_ARCH__ < 1200` in the evidence: {named}")
    ok &= bool(empty) and named and "AL101" not in rules
    new = sorted({f["rule"] for f in comm_findings(fetch("0.6.17", workdir))})
    print(f"0.6.17: {new}")
    ok &= "AL101" not in new and "AL103" not in new
    print("seed case: " + ("as expected" if ok else "NOT as expected"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
