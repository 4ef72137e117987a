import pathlib

from archlint.extract.python.facts import extract_python
from archlint.link.modules import module_name
from archlint.link.python import link_python

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


_CALLERS_TREE = {
    "pkg/__init__.py": "from .core import build as make\nfrom .core import Runner\n",
    "pkg/core.py": (
        "class Runner:\n"
        "    def __init__(self, cc):\n        self.cc = cc\n"
        "    def run(self):\n        return build(self.cc)\n\n"
        "class Tuned(Runner):\n"
        "    def __init__(self, cc):\n        super().__init__(cc)\n\n"
        "def build(cc):\n    return [f'-arch=sm_{cc}']\n"
    ),
    "pkg/ops/__init__.py": "",
    "pkg/ops/gemm.py": "from pkg import make, Runner\n\ndef gemm(cc):\n    Runner(cc).run()\n    return make(cc)\n",
    "pkg/ops/attention.py": (
        "from ..core import Tuned\n\ndef attention(runner):\n    return runner.run()\n\ndef tuned():\n    return Tuned(90)\n\n"
        "class Fast(Tuned):\n    def go(self):\n        return self.run()\n"
    ),
    "pkg/namesake.py": (
        "def build(cc):\n    return cc\n\ndef run():\n    def build(cc):\n        return cc + 1\n    return build(80)\n\n"
        "def later():\n    return build(89)\n"
    ),
    "pkg/star.py": "from pkg.core import *\n\ndef starred():\n    return build(100)\n",
}


def _demand_index(root: pathlib.Path, eager: bool):
    from archlint.discover import discover
    from archlint.engine.pysource import PythonFiles
    from archlint.extract.files import extract_all
    from archlint.link.python import PyIndex, link

    for relative, text in _CALLERS_TREE.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    discovery = discover((str(root),))
    python = [f for f in discovery.files if f.language == "python"]
    reader = PythonFiles(python, 1 << 22, lambda todo, outline: extract_all(todo, 1, 1 << 22, None, outline))
    index = PyIndex(reader.modules, [discovery.root], {f.path for f in discovery.files}, reader)
    if eager:
        index.load_all()
    return link(index)


def test_callers_read_on_demand_are_those_every_module_gives(tmp_path):
    demand, eager = _demand_index(tmp_path / "d", False), _demand_index(tmp_path / "e", True)
    # through `make`, and `from pkg.core import *` in pkg/star.py
    assert demand.callers("pkg.core.build") == ("pkg.core.Runner.run", "pkg.ops.gemm.gemm", "pkg.star.starred")
    assert demand.callers("pkg.core.Runner.run") == ("pkg.ops.attention.Fast.go",)  # `self.run()` in a subclass
    assert demand.callers("pkg.core.Runner.__init__") == ("pkg.ops.gemm.gemm",)
    assert demand.callers("pkg.core.Tuned.__init__") == ("pkg.ops.attention.tuned",)
    assert demand.callers("pkg.namesake.build") == ("pkg.namesake.later",)  # not core's namesake
    assert demand.callers("pkg.namesake.run.build") == ("pkg.namesake.run",)  # the nested one
    assert demand.callers("pkg.core") == ()  # no call names a module
    for name in ("pkg.core.build", "pkg.core.Runner.run", "pkg.core.Runner.__init__", "pkg.core.Tuned.__init__",
                 "pkg.namesake.build", "pkg.namesake.run.build", "pkg.core", "pkg.ops.gemm.gemm",
                 "pkg.ops.attention.Fast.go"):
        assert demand.callers(name) == eager.callers(name)
