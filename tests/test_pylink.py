import pathlib

from archlint.extract.python.facts import extract_python
from archlint.link.python import link_python, module_name

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "py-jitgate"


def index():
    files = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file())
    facts = [extract_python(f, (ROOT / f).read_bytes()) for f in files if f.endswith(".py")]
    return link_python(facts, ["pkg", "app"], files)


def test_module_names():
    files = {"pkg/__init__.py", "pkg/jit/__init__.py", "pkg/jit/comm.py", "src/tool.py"}
    assert module_name("pkg/jit/comm.py", files) == "pkg.jit.comm"
    assert module_name("pkg/jit/__init__.py", files) == "pkg.jit"
    assert module_name("src/tool.py", files) == "tool"
    assert module_name("jit/comm.py", {"__init__.py", "jit/__init__.py"}, ["/site-packages/flashinfer"]) == "flashinfer.jit.comm"


def test_calls_resolve_across_roots_and_relative_imports():
    idx = index()
    assert idx.callees("app.serve.build") == ("pkg.jit.comm.gen_comm_module", "pkg.utils.is_sm12x_supported")
    assert "pkg.jit.core.gen_jit_spec" in idx.callees("pkg.jit.comm.gen_comm_module")


def test_sources_resolved_through_definition_chain():
    sources = index().sources("pkg.jit.comm.gen_comm_module")
    assert [(s.path, s.how) for s in sources] == [
        ("pkg/data/csrc/allreduce.cu", "root"), ("pkg/data/csrc/allreduce_fusion.cu", "root"),
    ]


def test_template_and_unresolved_source():
    by_name = {s.ref.name: s for s in index().sources("pkg.jit.comm.gen_named_module")}
    assert by_name["kernel_inst.jinja"].path == "pkg/data/csrc/kernel_inst.jinja"
    assert by_name["missing.cu"].path is None and by_name["missing.cu"].how == "unresolved"


def test_basename_fallback():
    files = ["a/__init__.py", "a/m.py", "b/k.cu"]
    facts = [extract_python("a/__init__.py", b""), extract_python("a/m.py", b'def f():\n    load(sources=[ROOT / "k.cu"])\n')]
    (source,) = link_python(facts, ["a", "b"], files).sources("a.m.f")
    assert source.path == "b/k.cu" and source.how == "basename"
