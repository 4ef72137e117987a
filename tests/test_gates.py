import pathlib

import pytest

from archlint.extract.python.facts import extract_python
from archlint.gates.detect import find_gates, parse_arch_string
from archlint.link.python import link_python

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "py-jitgate"


@pytest.fixture(scope="module")
def gates():
    files = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file())
    facts = [extract_python(f, (ROOT / f).read_bytes()) for f in files if f.endswith(".py")]
    index = link_python(facts, ["pkg", "app"], files)
    return {(g.path, g.line): g for g in find_gates(index)}


def test_nvcc_flags_literal(gates):
    gate = gates[("pkg/jit/comm.py", 8)]
    assert gate.kind == "nvcc-flags" and gate.admits == (90, 100, 103) and gate.exact
    assert gate.majors_literal == (9, 10) and gate.unit == "major" and gate.list_span == (9, 34, 9, 41)
    assert gate.suffix == "a"  # read from the project's own _normalize_cuda_arch
    assert [s.name for s in gate.sources] == ["allreduce.cu", "allreduce_fusion.cu"]
    assert gate.defines == ("-DENABLE_BF16",)
    assert gate.guards == ("pkg.jit.comm.gen_comm_module",)


def test_nvcc_flags_named_constant(gates):
    gate = gates[("pkg/jit/comm.py", 22)]
    assert gate.admits == (90, 100, 103) and gate.list_span == (4, 15, 4, 22)


def test_decorator(gates):
    gate = gates[("pkg/ops.py", 7)]
    assert gate.kind == "decorator" and gate.admits == (90, 100, 103) and gate.guards == ("pkg.ops.fused_allreduce",)


def test_predicate_early_raise_summarised_from_body(gates):
    gate = gates[("pkg/ops.py", 13)]
    assert gate.kind == "predicate-call" and gate.admits == (90,) and gate.exact
    assert gate.guards == ("pkg.ops.fused_allreduce",)


def test_capability_comparisons(gates):
    assert gates[("pkg/ops.py", 20)].admits == (100, 103, 110, 120, 121)
    assert gates[("pkg/ops.py", 22)].admits == (90, 100, 103)


def test_predicate_across_packages(gates):
    gate = gates[("app/serve.py", 6)]
    assert gate.admits == (120, 121) and gate.guards == ("pkg.jit.comm.gen_comm_module",)


def test_build_flags(gates):
    gate = gates[("app/serve.py", 8)]
    assert gate.kind == "build-flags" and gate.admits == (120,) and gate.suffix == "a"


def test_parse_arch_string():
    assert parse_arch_string("-gencode=arch=compute_90a,code=sm_90a", "") == ((90, "a"),)
    assert parse_arch_string("9.0a 10.0a", "os.environ[TORCH_CUDA_ARCH_LIST]") == ((90, "a"), (100, "a"))
    assert parse_arch_string("90a", "dict-key") == ()
