"""Prebuilt extension modules: the images a .so's fatbins carry, read from their headers, and the
verdicts of gates whose calls reach them. The libraries are built by nvcc in the test (skipped,
saying so, where nvcc is absent); the compatibility rows are checked without it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tracemalloc
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from archlint.cli import cli
from archlint.engine import scan
from archlint.extract.binary import extract_binary
from archlint.knowledge.binaries import image_rule, runs_on
from archlint.model.binary import Image
from archlint.model.files import SourceFile
from archlint.model.findings import EvidenceKind, Verdict
from archlint.model.scan import ScanOptions
from archlint.report.json import schema

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "ext-prebuilt"
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: the test libraries are built with it")

# A kernel, and the operator schemas a TORCH_LIBRARY block would hold as string literals.
_SOURCE = """
__global__ void scale(float* x) {{ x[threadIdx.x] *= 2.0f; }}
void launch(float* x) {{ scale<<<1, 32>>>(x); }}
extern "C" const char* const archlint_test_schemas[] = {{{schemas}}};
"""
LIBRARIES = {
    # name: (gencode flags, schemas)
    "_C": (["-gencode", "arch=compute_90a,code=sm_90a", "-gencode", "arch=compute_90a,code=compute_90a"],
           ['"scaled_mm(Tensor a, Tensor b) -> Tensor"']),
    "_moe_C": (["-gencode", "arch=compute_90a,code=sm_90a", "-gencode", "arch=compute_80,code=compute_80",
                "-gencode", "arch=compute_100f,code=sm_100f"],
               ['"topk_route(Tensor logits) -> Tensor"', '"permute_rows(Tensor x) -> Tensor"']),
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """The fixture with its two extension modules built beside its Python."""
    root = tmp_path_factory.mktemp("ext") / "ext-prebuilt"
    shutil.copytree(FIXTURE, root)
    jobs = []
    for name, (flags, schemas) in LIBRARIES.items():
        source = root.parent / f"{name}.cu"
        source.write_text(_SOURCE.format(schemas=", ".join(schemas)))
        out = root / "kernels_pkg" / f"{name}.abi3.so"
        jobs.append(subprocess.Popen([str(NVCC), "-shared", "-Xcompiler", "-fPIC", *flags, "-o", str(out), str(source)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    for job in jobs:
        output, _ = job.communicate(timeout=300)
        assert job.returncode == 0, output.decode()
    return root


@pytest.fixture(scope="module")
def gates(tree):
    result = scan(ScanOptions(paths=(str(tree),), targets=("sm_90a", "sm_100a", "sm_120a"), use_cache=False, jobs=1))
    return {g.function: {v.target: v for v in g.verdicts} for g in result.gates}, result


def _facts(path: Path):
    return extract_binary(SourceFile(path.name, str(path), "binary"))


@needs_nvcc
def test_the_images_each_module_carries_are_read_from_its_fatbin_headers(tree):
    moe = _facts(tree / "kernels_pkg" / "_moe_C.abi3.so").binary
    assert moe is not None
    assert {item.image.name for item in moe.images} == {"sm_90a", "compute_80", "sm_100f"}
    # cuobjdump lists the family-specific cubin as plain sm_100; the entry's flags say `f`
    assert Image(100, "f", "sass") in {item.image for item in moe.images}
    assert all(item.fatbins >= 1 for item in moe.images) and moe.fatbins >= 1
    assert set(moe.ops) == {"topk_route", "permute_rows"}
    plain = _facts(tree / "kernels_pkg" / "_C.abi3.so").binary
    assert plain is not None
    assert {item.image for item in plain.images} == {Image(90, "a", "sass"), Image(90, "a", "ptx")}
    assert plain.ops == ("scaled_mm",)


@needs_nvcc
def test_a_call_into_a_module_with_no_image_for_the_target_is_genuine(gates):
    by_function, _ = gates
    verdict = by_function["apply_linear"]["sm_120a"]
    assert verdict.verdict is Verdict.GENUINE
    assert verdict.reason.startswith("nothing built for sm_120a: kernels_pkg/_C.abi3.so carries sm_90a, compute_90a")
    hops = [hop for hop in verdict.evidence if hop.kind is EvidenceKind.IMAGES]
    assert hops and hops[0].source == "kernels_pkg/_C.abi3.so"
    assert any(hop.kind is EvidenceKind.CALL and hop.name == "torch.ops._C.scaled_mm.default" for hop in verdict.evidence)
    # its sm_90a image runs on 9.0: no more than "image present" there
    hopper = by_function["apply_linear"]["sm_90a"]
    assert hopper.verdict is Verdict.UNKNOWN and hopper.reason.startswith("image present:")


@needs_nvcc
def test_where_an_image_can_run_the_verdict_goes_no_further_than_image_present(gates):
    by_function, _ = gates
    hopper = by_function["route"]["sm_90a"]
    assert hopper.verdict is Verdict.UNKNOWN
    assert "image present: kernels_pkg/_moe_C.abi3.so carries compute_80, sm_90a for sm_90a" in hopper.reason
    # on 12.0 only the compute_80 PTX can run (the driver compiles it)
    blackwell = by_function["route"]["sm_120a"]
    assert blackwell.verdict is Verdict.UNKNOWN
    assert "carries compute_80 for sm_120a" in blackwell.reason and "settle by running" in blackwell.reason


@needs_nvcc
def test_a_call_through_an_imported_extension_module_is_linked(gates):
    by_function, _ = gates
    verdict = by_function["permute"]["sm_120a"]
    assert verdict.verdict is Verdict.UNKNOWN
    assert "kernels_pkg/_moe_C.abi3.so carries compute_80 for sm_120a" in verdict.reason
    call = [hop for hop in verdict.evidence if hop.name == "_moe_C.permute_rows"]
    assert call and call[0].location.line == 21  # the call, under the gate at line 20


@needs_nvcc
def test_the_reports_say_what_each_module_carries(tree):
    runner = CliRunner()
    out = runner.invoke(cli, ["scan", str(tree), "--target", "sm_120a", "--format", "json", "--no-cache", "--jobs", "1"])
    assert out.exit_code in (0, 1), out.output
    document = json.loads(out.output)
    jsonschema.Draft202012Validator(schema()).validate(document)
    modules = {item["path"]: item for item in document["extensions"]}
    assert modules["kernels_pkg/_C.abi3.so"]["runs_on"] == {"sm_120a": []}
    assert modules["kernels_pkg/_moe_C.abi3.so"]["runs_on"] == {"sm_120a": ["compute_80"]}
    text = runner.invoke(cli, ["scan", str(tree), "--target", "sm_120a", "--no-cache", "--jobs", "1"]).output
    assert "kernels_pkg/_C.abi3.so: sm_90a, compute_90a (" in text and "runs on sm_120a: none" in text


@needs_nvcc
def test_a_large_library_is_never_read_whole(tree, tmp_path):
    big = tmp_path / "big.abi3.so"
    shutil.copy(tree / "kernels_pkg" / "_moe_C.abi3.so", big)
    os.truncate(big, 600 << 20)  # sparse: the headers stay where they were, 600 MB in all
    tracemalloc.start()
    facts = _facts(big)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert facts.binary is not None and {item.image.name for item in facts.binary.images} == {"sm_90a", "compute_80", "sm_100f"}
    assert peak < 8 << 20


def test_a_file_that_is_no_library_gets_a_diagnostic(tmp_path):
    bad = tmp_path / "broken.so"
    bad.write_bytes(b"not an ELF file at all")
    facts = extract_binary(SourceFile("broken.so", str(bad), "binary"))
    assert facts.binary is None
    assert "not read as an extension module: not an ELF file" in facts.diagnostics[0].message
    result = scan(ScanOptions(paths=(str(tmp_path),), use_cache=False, jobs=1))
    assert any(d.path == "broken.so" for d in result.diagnostics)


@pytest.mark.parametrize(("image", "cc", "runs"), [
    (Image(80, "", "sass"), 86, True),  # same major, newer minor
    (Image(86, "", "sass"), 80, False),
    (Image(90, "", "sass"), 100, False),  # never across majors
    (Image(90, "a", "sass"), 90, True),
    (Image(100, "a", "sass"), 103, False),  # `a`: its own capability only
    (Image(100, "f", "sass"), 103, True),  # family 10.0 and 10.3
    (Image(100, "f", "sass"), 110, False),
    (Image(103, "f", "sass"), 100, False),
    (Image(120, "f", "sass"), 121, True),
    (Image(121, "f", "sass"), 120, False),
    (Image(80, "", "ptx"), 120, True),  # the driver compiles PTX for anything newer
    (Image(90, "a", "ptx"), 100, False),
    (Image(100, "f", "ptx"), 103, True),
    (Image(100, "f", "ptx"), 120, False),
])
def test_the_compatibility_rows(image, cc, runs):
    assert runs_on(image, cc) is runs
    rule = image_rule(image)
    assert rule is not None and rule.source.startswith("CUDA C++ Programming Guide")


@needs_nvcc
def test_a_gate_that_admits_a_target_the_module_carries_nothing_for_is_al105(gates):
    _, result = gates
    found = [f for f in result.findings if f.rule == "AL105" and f.symbol.endswith("fused_linear")]
    assert found, [f.message for f in result.findings]
    assert set(found[0].targets) == {"sm_100a", "sm_120a"}
    assert "calls `torch.ops._C.scaled_mm.default`, and nothing built for sm_100a: kernels_pkg/_C.abi3.so carries sm_90a, compute_90a" in found[0].message


def _module(path: str, ops: tuple[str, ...] = ()):
    from archlint.model.binary import BinaryFacts, ImageCount
    return BinaryFacts(path, 1, (ImageCount(Image(90, "a", "sass"), 1),), 0, ops)


def test_torch_ops_namespaces_name_a_module_or_a_package_that_ships_modules():
    from archlint.link.binary import ExtensionIndex
    files = {"vllm/__init__.py", "vllm/_C.abi3.so", "vllm/_moe_C.abi3.so", "sgl_kernel/__init__.py",
             "sgl_kernel/sm90/common_ops.abi3.so", "sgl_kernel/sm100/common_ops.abi3.so", "sgl_kernel/flash_ops.abi3.so"}
    index = ExtensionIndex.of([
        _module("vllm/_C.abi3.so", ("rms_norm",)), _module("vllm/_moe_C.abi3.so", ("topk_softmax",)),
        _module("sgl_kernel/sm90/common_ops.abi3.so", ("fp8_scaled_mm",)),
        _module("sgl_kernel/sm100/common_ops.abi3.so", ("fp8_scaled_mm",)),
        _module("sgl_kernel/flash_ops.abi3.so", ("fwd",)),
    ], files, ["/site-packages"])
    assert [m.path for m in index.operator("torch.ops._C.rms_norm")] == ["vllm/_C.abi3.so"]
    # one module per GPU generation, both defining the operator: both are candidates
    assert {m.path for m in index.operator("torch.ops.sgl_kernel.fp8_scaled_mm.default")} == {
        "sgl_kernel/sm90/common_ops.abi3.so", "sgl_kernel/sm100/common_ops.abi3.so"}
    assert [m.path for m in index.operator("torch.ops.sgl_kernel.fwd.default")] == ["sgl_kernel/flash_ops.abi3.so"]
    assert index.operator("torch.ops.sgl_kernel.not_shipped") == ()  # the modules hold schemas, none this one
    assert index.operator("torch.ops.aten.mm") == ()
    assert [m.path for m in index.module("vllm._moe_C")] == ["vllm/_moe_C.abi3.so"]
    assert all(m.ops == () for m in index.operator("torch.ops._C.rms_norm"))  # what a verdict carries


@needs_nvcc
def test_a_rebuilt_module_is_read_again_by_a_cached_scan(tree, tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "ext"
    shutil.copytree(tree, copy)

    def verdict():
        result = scan(ScanOptions(paths=(str(copy),), targets=("sm_120a",), jobs=1))
        return {g.function: g.verdicts[0] for g in result.gates if g.verdicts}["apply_linear"]

    assert verdict().verdict is Verdict.GENUINE
    assert verdict().verdict is Verdict.GENUINE  # the stored result
    source = tmp_path / "rebuilt.cu"
    source.write_text(_SOURCE.format(schemas='"scaled_mm(Tensor a, Tensor b) -> Tensor"'))
    subprocess.run([str(NVCC), "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90a,code=sm_90a",
                    "-gencode", "arch=compute_120a,code=sm_120a", "-o", str(copy / "kernels_pkg" / "_C.abi3.so"), str(source)],
                   check=True, capture_output=True)
    rebuilt = verdict()
    assert rebuilt.verdict is Verdict.UNKNOWN and "carries sm_120a for sm_120a" in rebuilt.reason


@needs_nvcc
def test_relocatable_device_code_kept_beside_the_linked_images_is_not_counted(tmp_path):
    source = tmp_path / "rdc.cu"
    source.write_text(_SOURCE.format(schemas='"op(Tensor x) -> Tensor"'))
    out = tmp_path / "rdc.so"
    subprocess.run([str(NVCC), "-shared", "-Xcompiler", "-fPIC", "-rdc=true", "-gencode", "arch=compute_90a,code=sm_90a",
                    "-gencode", "arch=compute_80,code=compute_80", "-o", str(out), str(source)], check=True, capture_output=True)
    facts = _facts(out).binary
    # the device-linked module holds sm_90a only; the compute_80 PTX sits in __nv_relfatbin, which
    # nothing loads (cuobjdump --list-ptx finds no PTX either)
    assert facts is not None and [item.image.name for item in facts.images] == ["sm_90a"]
    assert facts.sections == (".nv_fatbin",)


@needs_nvcc
def test_the_graph_links_a_gate_to_the_modules_its_code_calls(tree):
    out = CliRunner().invoke(cli, ["graph", str(tree), "--format", "json", "--no-cache"])
    assert out.exit_code == 0, out.output
    graph = json.loads(out.output)
    modules = {node["path"]: node for node in graph["nodes"] if node["kind"] == "extension"}
    assert modules["kernels_pkg/_C.abi3.so"]["images"] == "sm_90a,compute_90a"
    edges = [edge for edge in graph.get("edges", graph.get("links", [])) if edge["kind"] == "calls-extension"]
    assert {(edge["source"].rsplit(":", 2)[0], edge["name"]) for edge in edges} >= {
        ("gate:kernels_pkg/layers.py", "torch.ops._C.scaled_mm.default"), ("gate:kernels_pkg/layers.py", "_moe_C.permute_rows")}


@needs_nvcc
def test_a_damaged_fatbin_gets_a_diagnostic_and_the_scan_goes_on(tree, tmp_path):
    from archlint.extract.binary.elf import read_sections
    copy = tmp_path / "damaged.abi3.so"
    shutil.copy(tree / "kernels_pkg" / "_C.abi3.so", copy)
    with open(copy, "r+b") as handle:
        section = read_sections(handle).named(".nv_fatbin")
        assert section is not None
        handle.seek(section.offset)
        handle.write(b"\xff" * 8)  # the first container's magic and version
    facts = _facts(copy)
    assert facts.binary is not None and not facts.binary.has_device_code and not facts.binary.complete
    assert "fatbin read in part: .nv_fatbin: no fatbin header at offset 0x0" in facts.diagnostics[0].message
    # what could not be read is never taken as "nothing built"
    from archlint.judge.extensions import extension_hits
    from archlint.knowledge.arch import parse_target
    from archlint.model.binary import ExtensionCall
    missing, present = extension_hits((ExtensionCall("torch.ops._C.scaled_mm", (facts.binary,), ()),), parse_target("sm_120a"))
    assert not missing and "a damaged header stopped the reading" in present[0].message
