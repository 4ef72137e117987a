"""Sources FlashInfer's JIT writes at build time, rendered for one representative instance per gate.

Many FlashInfer specs do not compile the wheel's `.cu` files as they are: the spec function renders
Jinja templates from `data/csrc` (a `*_config.inc` with the types and sizes, kernel instantiation
files) into a folder of its own, copies the fixed sources beside them, and builds that folder. A
build of the wheel's copy alone misses the generated header, or compiles no kernel. For the gates in
such functions, the bench does what the spec function does for one call, with the arguments written
below (taken from the gate's own branch: the large-head decode gate gets a large-head NVFP4 cache, the
FA3 gate an FA3 module), renders with the engine FlashInfer uses (jinja2), and builds the folder.

A gate is found by the function that holds it (and, where one function holds several gates, by a
fragment of the gate's text); lines differ between releases, names do not.
"""

from __future__ import annotations

import ast
import hashlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class Render:
    template: str  # under data/csrc
    output: str  # file name in the generated folder
    kwargs: dict = field(default_factory=dict)  # on top of the instance's


@dataclass(frozen=True)
class Instance:
    """What one call of a spec function writes: rendered files, copied sources, and which of them it builds."""

    name: str
    renders: tuple[Render, ...]
    copies: tuple[str, ...]  # data/csrc files the spec copies into the folder
    kwargs: dict
    builds: tuple[str, ...]  # file names in the folder that are translation units


def _additional_params(tensors: tuple[tuple[str, str], ...], scalars: tuple[tuple[str, str], ...],
                       sm90: bool = False) -> dict:
    """flashinfer/jit/attention/utils.py generate_additional_params, for (dtype, name) pairs."""
    decl = "".join(f"{dtype}* {name};\n" for dtype, name in tensors)
    decl += "".join(f"{dtype} {name};\n" for dtype, name in scalars)
    func = "".join(f", Optional<ffi::Tensor> {name}" if name.startswith("maybe") else f", ffi::Tensor {name}"
                   for _, name in tensors)
    func += "".join(f", {dtype} {name}" for dtype, name in scalars)
    target = "params.additional_params" if sm90 else "params"
    setters = [f"{target}.{name} = {name} ? static_cast<{dtype}*>({name}.value().data_ptr()): nullptr;"
               if name.startswith("maybe") else f"{target}.{name} = static_cast<{dtype}*>({name}.data_ptr());"
               for dtype, name in tensors]
    setters += [f"{target}.{name} = {name};" for _, name in scalars]
    return {"additional_params_decl": decl, "additional_func_params": func,
            "additional_params_setter": " \\\n".join(setters)}


_MASK_MODES = ("MaskMode::kNone", "MaskMode::kCausal", "MaskMode::kCustom", "MaskMode::kMultiItemScoring")
_ROPE_SCALARS = (("double", "logits_soft_cap"), ("double", "sm_scale"), ("double", "rope_rcp_scale"),
                 ("double", "rope_rcp_theta"))


def _attention(dtype_kv: str, head_dim: int, **extra) -> dict:
    return {"dtype_q": "half", "dtype_kv": dtype_kv, "dtype_o": "half", "head_dim_qk": head_dim,
            "head_dim_vo": head_dim, "pos_encoding_mode": "PosEncodingMode::kNone", "use_sliding_window": "false",
            "use_logits_soft_cap": "false", **extra}


def _decode(family: str, dtype_kv: str, head_dim: int) -> Instance:
    """gen_single_decode_module / gen_batch_decode_module -> gen_customize_*_decode_module."""
    kwargs = _attention(dtype_kv, head_dim, idtype="int32_t",
                        variant_name="DefaultAttention<false, false, false, false>",
                        variant_decl="#include<flashinfer/attention/variants.cuh>",
                        **_additional_params((("float", "maybe_alibi_slopes"),), _ROPE_SCALARS))
    return Instance(
        name=f"{family}_decode_{dtype_kv}_{head_dim}",
        renders=(Render(f"{family}_decode_customize_config.jinja", f"{family}_decode_config.inc"),
                 Render(f"{family}_decode_kernel_inst.jinja", f"{family}_decode_kernel.cu")),
        copies=(f"{family}_decode.cu", f"{family}_decode_jit_binding.cu"), kwargs=kwargs,
        builds=(f"{family}_decode_kernel.cu", f"{family}_decode.cu", f"{family}_decode_jit_binding.cu"))


def _fa3_attention(tensors, extra_scalars, **extra) -> dict:
    """fp16, head_dim 128, the default FA3 variant (no soft cap), with the spec's additional tensors
    and, after the three scalars every FA3 prefill spec passes, its own."""
    scalars = (("double", "logits_soft_cap"), ("double", "sm_scale"), ("double", "scale_v_scalar"), *extra_scalars)
    return _attention("half", 128, variant_name="DefaultAttention<false>",
                      variant_decl="#include<flashinfer/attention/hopper/variants.cuh>",
                      **_additional_params(tensors, scalars, sm90=True), **extra)


def _single_prefill_fa3() -> Instance:
    """gen_single_prefill_module(backend="fa3", fp16, head_dim 128): the FA3 branch of
    gen_customize_single_prefill_module, four mask modes."""
    kwargs = _fa3_attention((("float", "maybe_scale_v"),), ())
    masks = tuple(Render("single_prefill_sm90_kernel_inst.jinja", f"single_prefill_sm90_kernel_mask_{i}.cu",
                         {"mask_mode": mode}) for i, mode in enumerate(_MASK_MODES))
    return Instance(
        name="single_prefill_fa3_f16_128",
        renders=(Render("single_prefill_sm90_customize_config.jinja", "single_prefill_sm90_config.inc"), *masks),
        copies=("single_prefill_sm90.cu", "single_prefill_sm90_jit_binding.cu"), kwargs=kwargs,
        builds=(*(m.output for m in masks), "single_prefill_sm90.cu", "single_prefill_sm90_jit_binding.cu"))


def _batch_prefill_fa3() -> Instance:
    """gen_batch_prefill_module(backend="fa3", fp16, int32 indices, head_dim 128): the FA3 branch of
    gen_customize_batch_prefill_module. It renders a paged and a ragged kernel file per mask mode;
    the no-mask pair stands for them (the mask mode is a template argument of the same kernels)."""
    kwargs = _fa3_attention((("uint32_t", "maybe_prefix_len_ptr"), ("uint16_t", "maybe_token_pos_in_items_ptr"),
                             ("uint16_t", "maybe_max_item_len_ptr"), ("float", "maybe_scale_v")),
                            (("int64_t", "token_pos_in_items_len"),), idtype="int32_t")
    kernels = tuple(Render(f"batch_prefill_{kind}_sm90_kernel_inst.jinja", f"batch_prefill_{kind}_sm90_kernel_mask_0.cu",
                           {"mask_mode": _MASK_MODES[0]}) for kind in ("paged", "ragged"))
    fixed = ("batch_prefill_sm90.cu", "batch_prefill_sm90_jit_binding.cu")
    return Instance(
        name="batch_prefill_fa3_f16_128",
        renders=(Render("batch_prefill_sm90_customize_config.jinja", "batch_prefill_sm90_config.inc"), *kernels),
        copies=fixed, kwargs=kwargs, builds=(*(k.output for k in kernels), *fixed))


def _selective_state_update() -> Instance:
    """gen_selective_state_update*_module: bf16 state, input and weights, fp32 A, int32 indices,
    no state scale, dim 64, dstate 128, one token, no stochastic rounding."""
    kwargs = {"state_dtype": "nv_bfloat16", "input_dtype": "nv_bfloat16", "weight_dtype": "nv_bfloat16",
              "matrixA_dtype": "float", "stateIndex_dtype": "int32_t", "cu_seqlens_dtype": "int32_t",
              "num_accepted_tokens_dtype": "int32_t", "dim": 64, "dstate": 128, "ntokens_mtp": 1,
              "state_scale_type": "void", "philox_rounds": 0}
    sources = ("selective_state_update.cu", "selective_state_update_kernel_inst.cu", "flashinfer_mamba_binding.cu")
    return Instance(
        name="selective_state_update_bf16_64_128",
        renders=(Render("selective_state_update_customize_config.jinja", "selective_state_update_config.inc"),),
        copies=sources, kwargs=kwargs, builds=sources)


_MIXED_COMM_KERNELS = {"allreduce_kernel": (2, 1), "allgather_kernel": (1, 2), "reducescatter_kernel": (1, 2),
                       "fused_allreduce_allgather_kernel": (2, 2), "fused_reducescatter_allreduce_kernel": (2, 2)}


def _mixed_comm() -> Instance:
    """gen_mixed_comm_module: each of its five kernels in the wait-optimised unicast and multicast modes
    (multicast is where the kernels use `multimem`), bf16, with local TP/DP sizes its is_valid_op
    admits, no inter-node ranks, block_size_y 1. The JIT writes one file per (kernel, mode); these
    go in one file, so each target is one build."""
    instantiations = [
        {"kernel_name": kernel, "block_size_y": 1, "local_tp_size": tp, "local_dp_size": dp, "use_inter_tp": "false",
         "use_inter_dp": "false", "mode": mode, "dtype": "nv_bfloat16"}
        for kernel, (tp, dp) in _MIXED_COMM_KERNELS.items() for mode in ("OPT_WAITS_UC", "OPT_WAITS_MC")]
    output = "mixed_comm_waits_inst.cu"
    return Instance(name="mixed_comm_waits", renders=(Render("mixed_comm_kernel_inst.jinja", output),),
                    copies=("mixed_comm.cu",), kwargs={"instantiations": instantiations},
                    builds=(output, "mixed_comm.cu"))


# gen_gemm_sm100_module_cutlass_nvfp4_svdquant renders one kernel file per tile shape (eight); two
# stand for them, a 1-SM and a 2-SM tactic (the two cluster kinds the CUTLASS collective takes).
_SVDQUANT_CONFIGS = ("Tactic1Sm128x128x128Config", "Tactic2Sm256x128x256Config")
_SVDQUANT_FIXED = ("nvfp4_svdquant_gemm_cutlass_sm100.cu", "nvfp4_smooth_quantize_sm100.cu")


def _svdquant(root: Path, workdir: Path) -> list[str]:
    """The spec's fixed sources, built where they are, and two of its rendered kernel files (the
    fixed GEMM source holds the dispatch, no kernel)."""
    instance = Instance(
        name="nvfp4_svdquant_gemm",
        renders=tuple(Render("nvfp4_svdquant_gemm_cutlass_sm100.jinja", f"nvfp4_svdquant_gemm_cutlass_{config}.cu",
                             {"config": config}) for config in _SVDQUANT_CONFIGS),
        copies=(), kwargs={},
        builds=tuple(f"nvfp4_svdquant_gemm_cutlass_{config}.cu" for config in _SVDQUANT_CONFIGS))
    csrc = root / "data" / "csrc"
    return render_instance(instance, csrc, workdir) + [str(csrc / name) for name in _SVDQUANT_FIXED]


def _rendered(*instances: Instance):
    def units(root: Path, workdir: Path) -> list[str]:
        return [u for instance in instances for u in render_instance(instance, root / "data" / "csrc", workdir)]
    return units


def _fmha_v2_sm120(root: Path, workdir: Path) -> list[str]:
    """gen_trtllm_fmha_v2_sm120_module: the kernels it lists from enumerate_kernels, and its binding."""
    generated = run_fmha_v2_generator(root, workdir, "enumerate_kernels") / "generated"
    spec = (root / "jit" / "attention" / "modules.py").read_text(encoding="utf-8")
    listed = sorted(set(re.findall(r'"(fmha_v2_flash_attention_\w+_sm120\.cu)"', spec)))
    return [str(generated / name) for name in listed if (generated / name).is_file()] + [
        str(root / "data" / "csrc" / "trtllm_fmha_v2_binding.cu")]


def _fmha_v2_packed_bf16(root: Path, workdir: Path) -> list[str]:
    """gen_fmha_v2_module("packed_qkv", bfloat16) for 9.0 and 12.0: its plain head-size-128 kernel of each
    architecture, and the two fixed sources it copies beside them (they include the generated API header)."""
    folder = run_fmha_v2_generator(root, workdir, "packed_qkv:bf16") / "fmha_v2"
    kernels = sorted(p.name for p in folder.glob("fmha_v2_flash_attention_bf16_*_S_qkv_128_output_bf16*.cu"))
    for name in ("fmha_v2_run.cu", "fmha_v2_jit_binding.cu"):
        text = (root / "data" / "csrc" / name).read_bytes()
        if not (folder / name).is_file() or (folder / name).read_bytes() != text:
            (folder / name).write_bytes(text)
    return [str(folder / name) for name in (*kernels, "fmha_v2_run.cu", "fmha_v2_jit_binding.cu")]


# (function holding the gate, fragment of the gate's text or "", release folder fragment or "", units)
GENERATED = (
    ("gen_customize_single_prefill_module", "sm90a_nvcc_flags", "", _rendered(_single_prefill_fa3())),
    ("gen_customize_batch_prefill_module", "sm90a_nvcc_flags", "", _rendered(_batch_prefill_fa3())),
    # 0.7.2: an NVFP4 cache with head_dim > 256 keeps decode on 10.x-12.x; 0.6.16 kept every one-byte
    # cache there, and its decode kernels know no NVFP4: an fp8 cache.
    ("_fa2_head_dim_nvcc_flags", "[10, 11, 12]", "0.6.",
     _rendered(*(_decode(f, "__nv_fp8_e4m3", 512) for f in ("single", "batch")))),
    ("_fa2_head_dim_nvcc_flags", "[10, 11, 12]", "",
     _rendered(*(_decode(f, "__nv_fp4x2_e2m1", 512) for f in ("single", "batch")))),
    ("_fa2_head_dim_nvcc_flags", "[8, 9, 10, 11, 12]", "",
     _rendered(*(_decode(f, "half", 512) for f in ("single", "batch")))),
    ("gen_selective_state_update_module", "", "", _rendered(_selective_state_update())),
    ("gen_selective_state_update_sm90_module", "", "", _rendered(_selective_state_update())),
    ("gen_selective_state_update_sm100_module", "", "", _rendered(_selective_state_update())),
    ("gen_mixed_comm_module", "", "", _rendered(_mixed_comm())),
    ("gen_gemm_sm100_module_cutlass_nvfp4_svdquant", "", "", _svdquant),
    ("gen_trtllm_fmha_v2_sm120_module", "", "", _fmha_v2_sm120),
    ("gen_fmha_v2_module", "", "", _fmha_v2_packed_bf16),
)


def enclosing_function(python_file: Path, line: int) -> str:
    """The innermost function of a Python file (read, not run) that holds a line; "" if none."""
    best, best_start = "", -1
    for name, start, end in _functions(python_file):
        if start <= line <= end and start > best_start:
            best, best_start = name, start
    return best


@lru_cache(maxsize=64)
def _functions(python_file: Path) -> tuple[tuple[str, int, int], ...]:
    """(name, first line, last line) of every function of a file, parsed once for all its gates."""
    try:
        tree = ast.parse(python_file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple((node.name, node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _maker(root: Path, gate_id: str, gate_text: str):
    """How to write the sources of the spec function a gate sits in (None: it builds wheel sources)."""
    path, line = gate_id.split(":")[:2]
    function = enclosing_function(root / path, int(line))
    text = " ".join(gate_text.split())
    release = str(root)
    for name, fragment, release_fragment, make in GENERATED:
        if name == function and fragment in text and release_fragment in release:
            return make
    return None


def render_instance(instance: Instance, csrc: Path, workdir: Path) -> list[str]:
    """Write the instance's folder as its spec function would and return the units to build."""
    import jinja2

    texts = {}
    for render in instance.renders:
        template = jinja2.Template((csrc / render.template).read_text(encoding="utf-8"),
                                   undefined=jinja2.StrictUndefined)
        texts[render.output] = template.render(**instance.kwargs, **render.kwargs)
    for name in instance.copies:
        texts[name] = (csrc / name).read_text(encoding="utf-8")
    digest = hashlib.sha256(repr(sorted(texts.items())).encode()).hexdigest()[:12]
    folder = workdir / "generated" / f"{instance.name}-{digest}"
    if not folder.is_dir():
        scratch = folder.with_name(folder.name + ".partial")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        for name, text in texts.items():
            (scratch / name).write_text(text, encoding="utf-8")
        scratch.rename(folder)
    return [str(folder / name) for name in instance.builds]


def generated_units(root: Path, gate_id: str, gate_text: str, workdir: Path) -> tuple[str, ...] | None:
    """The units to build for a gate whose spec generates its sources; None when it does not."""
    import jinja2

    make = _maker(root, gate_id, gate_text)
    if make is None:
        return None
    try:
        return tuple(make(root, workdir))
    except (OSError, jinja2.TemplateError, subprocess.SubprocessError) as error:
        print(f"warning: {gate_id}: the sources its spec generates could not be written ({error}); "
              "building the wheel's files instead")
        return None


# ---------------------------------------------------------------- fmha_v2: the wheel's own generator

# The fmha_v2 specs write their kernels with FlashInfer's generator modules (jit/attention/fmha_v2,
# standard-library Python and jinja2), far too many shapes to restate here. The bench runs a copy of
# those modules in a subprocess, with the three JIT modules they import (`jit.env`, `jit.utils`,
# `compilation_context`) replaced by stand-ins, and `subprocess` inside them replaced so that the
# generator's own nvcc call and the helper binary it runs (kernel traits for a cubin header the JIT
# builds do not use) never start.
_GENERATOR_SCRIPT = r'''
import pathlib, sys, types
work, data, call = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(work / "pkg"))
env = types.ModuleType("stubpkg.jit.env")
env.FLASHINFER_CSRC_DIR, env.FLASHINFER_GEN_SRC_DIR = data / "csrc", work / "gen"
utils = types.ModuleType("stubpkg.jit.utils")
def write_if_different(path, content):
    path = pathlib.Path(path); path.parent.mkdir(parents=True, exist_ok=True); path.write_text(content)
utils.write_if_different = write_if_different
context = types.ModuleType("stubpkg.compilation_context")
class CompilationContext:
    TARGET_CUDA_ARCHS = [(9, 0), (12, 0)]
context.CompilationContext = CompilationContext
sys.modules.update({"stubpkg.jit.env": env, "stubpkg.jit.utils": utils, "stubpkg.compilation_context": context})
class _Quiet:
    def __init__(self, *args, **kwargs): pass
    def communicate(self, *args, **kwargs): return b"", b""
import stubpkg.jit.attention.fmha_v2.generator_utils as generator_utils
generator_utils.subprocess = types.SimpleNamespace(Popen=_Quiet, PIPE=None)
if call == "enumerate_kernels":
    from stubpkg.jit.attention.fmha_v2.generate_kernels import enumerate_kernels
    try:
        enumerate_kernels(data / "csrc" / "fmha_v2", work / "gen")
    except Exception as error:  # the kernel files are written before the traits step
        print(f"generator stopped after the kernels: {error!r}")
else:
    from stubpkg.jit.attention.fmha_v2.fmha_library import generate_jit_sources
    layout, dtype = call.split(":")
    generate_jit_sources("fmha_v2", layout, dtype, dtype, compilation_context=CompilationContext)
'''


def run_fmha_v2_generator(root: Path, workdir: Path, call: str) -> Path:
    """Run the wheel's fmha_v2 generator for one call (`enumerate_kernels` or `<layout>:<dtype>`) and
    return the folder it wrote (kept: a rerun reuses it)."""
    package = root / "jit" / "attention" / "fmha_v2"
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(package.glob("*.py")))).hexdigest()[:12]
    work = workdir / "generated" / f"fmha_v2-{call.replace(':', '-')}-{digest}"
    if (work / "done").is_file():
        return work / "gen"
    shutil.rmtree(work, ignore_errors=True)
    target = work / "pkg" / "stubpkg" / "jit" / "attention" / "fmha_v2"
    shutil.copytree(package, target, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in (target.parent, target.parent.parent, target.parent.parent.parent):
        (folder / "__init__.py").touch()
    subprocess.run([sys.executable, "-c", _GENERATOR_SCRIPT, str(work), str(root / "data"), call],
                   check=True, cwd=work, timeout=600)
    (work / "done").touch()
    return work / "gen"
