from archlint.extract.python.facts import extract_python


def facts(src: str, path: str = "pkg/mod.py"):
    return extract_python(path, src.encode())


def test_functions_calls_and_decorators():
    f = facts("class A:\n    @dec([90, 100])\n    def m(self, x):\n        return g(k=[9, 10])\n")
    method = next(fn for fn in f.functions if fn.qualname == "A.m")
    assert method.cls == "A" and method.params == ("self", "x")
    assert method.decorators[0].name == "dec"
    call = next(c for c in f.calls if c.callee == "g")
    assert call.function == "A.m" and call.span.line == 4
    assert call.kwargs()["k"].kind == "seq"


def test_relative_and_aliased_imports():
    f = facts("from ..jit import env as jit_env, core\nimport os.path\n")
    rel = f.imports[0]
    assert (rel.level, rel.module, rel.names, rel.aliases) == (2, "jit", ("env", "core"), ("jit_env", "core"))
    assert f.imports[1].aliases == ("os",)


def test_source_reference_with_root_and_parts():
    f = facts('def gen():\n    return spec([jit_env.CSRC / "nv" / "x.cu", os.path.join(D, "y.cuh"), "t.jinja"])\n')
    refs = {ref.name: ref for ref in f.sources}
    assert refs["x.cu"].root == "jit_env.CSRC" and refs["x.cu"].parts == ("nv", "x.cu")
    assert refs["y.cuh"].root == "D"
    assert refs["t.jinja"].template and refs["t.jinja"].root == ""
    assert all(ref.function == "gen" for ref in refs.values())


def test_constants_and_flags():
    f = facts('SM90_MAJORS = [9, 10]\ndef gen():\n    gen_jit_spec("m", [], extra_cuda_cflags=["-DENABLE_BF16", "-O3"])\n')
    assert f.constants[0].name == "SM90_MAJORS" and f.constants[0].values == (9, 10)
    assert f.flags[0].defines == ("-DENABLE_BF16",)


def test_assignments_and_calls_are_read_a_few_at_a_time_and_survive_pickling():
    import pickle

    src = ('MAJORS = [9, 10]\nFLAGS = ["-DSM90"] + EXTRA\n'
           'def gen(major):\n    flags = [f"-gencode={major}"]\n    return spec(flags=flags, cuda_cflags=FLAGS)\n')
    f = facts(src)
    loaded = pickle.loads(pickle.dumps(f))
    assert loaded == f
    assert [a.targets for a in loaded.assigns] == [("MAJORS",), ("FLAGS",), ("flags",)]
    local = loaded.assigns.having(lambda targets, function: function == "gen")
    assert [a.value.kind for a in local] == ["seq"] and local[0].line == 4
    # asked twice, the same object: the capability evaluator remembers values by identity
    assert loaded.assigns.having(lambda targets, function: "flags" in targets)[0] is local[0]
    assert loaded.assigns.reads[1] == ("EXTRA",)
    assert [c.callee for c in loaded.calls.passing({"cuda_cflags"})] == ["spec"]
    assert loaded.calls.keywords == {"flags", "cuda_cflags"}


def test_suppressions_trailing_own_line_and_not_in_strings():
    src = 'x = 1  # archlint: ignore[AL101]\n# archlint: ignore[policy-gate]\n\ny = f()\ns = "# archlint: ignore[AL102]"\n# archlint: file-ignore[AL203]\n'
    sups = facts(src).suppressions
    assert [(s.line, s.ids, s.file_level) for s in sups] == [
        (1, ("AL101",), False), (4, ("policy-gate",), False), (6, ("AL203",), True)
    ]


def test_latin1_and_syntax_errors_are_diagnosed_not_fatal():
    f = extract_python("bad.py", b"def f(:\n    x = 'caf\xe9'\n    g()\n")
    messages = " ".join(d.message for d in f.diagnostics)
    assert "latin-1" in messages and "syntax error" in messages
    assert f.partial_parse and any(c.callee == "g" for c in f.calls)


def test_deep_nesting_does_not_crash():
    src = "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n" + "".join("    " * i + "if a:\n" for i in range(400)) + "    " * 400 + "g()\n"
    f = facts(src)
    assert any(c.callee == "g" for c in f.calls)


def test_deterministic():
    src = "def f():\n    if is_sm90a_supported(d):\n        g()\n"
    assert facts(src) == facts(src)
