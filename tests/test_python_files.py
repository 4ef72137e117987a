"""The scan's Python files: which files spell a word, answered from the tables kept as each file is
read once, must be what a search of every file's bytes answers; a module's calls, kept pickled,
must read back as the walk made them."""

import pickle

import pytest

from archlint.discover import discover
from archlint.engine import pysource
from archlint.engine.pysource import PythonFiles, _as_read  # _as_read: a latin-1 file as the facts see it
from archlint.extract.files import Workers, extract_all
from archlint.extract.python.markers import markers
from archlint.knowledge.idioms import load_idioms
from archlint.extract.python.facts import extract_python
from archlint.link.python import PACKAGE_IMPORTS

_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

TREE = {
    "pkg/__init__.py": "from . import core\nfrom .ops import *\n",
    "pkg/core.py": (
        "import torch\n\n"
        "def run(x):\n    return x.runner.run_all(x)\n\n"
        "class Runner:\n    def run(self):\n        return self.compile()\n"
    ),
    "pkg/ops.py": "from pkg.core import Runner\n\ndef gemm():\n    r = Runner()\n    return r.run()  # a member call\n",
    "pkg/unicode_names.py": "# cafés\ndef café(x):\n    return x.naïve + naïve_total\n",
    "pkg/latin1.py": "# -*- coding: latin-1 -*-\nlabel = 'caf\xe9'\ndef compile_all():\n    return 1.e5\n",
    "pkg/prefix.py": "runner = 1\nrun_count = 2\nprefix_run = 3\n",
    "pkg/spaced.py": "value = obj. run(1)  # a member spelled apart from its dot\n",
}

WORDS = ["run", ".run", "runner", ".runner", "Runner", "compile", ".compile", "compile_all", "café", ".naïve",
         "naïve", "e5", ".e5", "torch", "core", *PACKAGE_IMPORTS, "import torch", "x.runner"]


def _spelled(text: bytes, needle: bytes) -> bool:
    """A whole-name (or phrase) occurrence, by a search of the bytes: the reference answer."""
    at = text.find(needle)
    while at != -1:
        start, end = at + (needle[:1] == b"."), at + len(needle)
        if (start == 0 or text[start - 1] not in _WORD) and (end >= len(text) or text[end] not in _WORD):
            return True
        at = text.find(needle, at + 1)
    return False


@pytest.fixture
def tree(tmp_path):
    for relative, text in TREE.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("latin-1" if "latin1" in relative else "utf-8"))
    return tmp_path


def _reader(root):
    discovery = discover((str(root),))
    python = [f for f in discovery.files if f.language == "python"]
    reader = PythonFiles(python, 1 << 22, lambda todo, outline: extract_all(todo, 1, 1 << 22, None, outline),
                         phrases=PACKAGE_IMPORTS)
    texts = {f.path: f for f in python}
    return reader, texts


@pytest.mark.parametrize("word", WORDS)
def test_the_files_spelling_a_word_are_those_a_byte_search_finds(tree, word):
    reader, files = _reader(tree)
    needle = word.encode("utf-8")
    expected = {path for path, file in files.items() if _spelled(_as_read(open(file.absolute, "rb").read()), needle)}
    assert reader.spelling([word]) == frozenset(expected)


def test_member_and_name_spellings_differ(tree):
    reader, _ = _reader(tree)
    members = reader.spelling([".run"])
    assert "pkg/ops.py" in members and "pkg/core.py" not in members  # `r.run()`; core: `.runner.run_all`, `def run`
    assert reader.spelling(["run"]) >= {"pkg/core.py", "pkg/ops.py"}
    assert "pkg/prefix.py" not in reader.spelling(["run"])  # `run_count`, `prefix_run` are other names
    assert reader.spelling(["from . import"]) == {"pkg/__init__.py"}


def test_read_in_the_workers_the_files_answer_as_read_here(tree, monkeypatch):
    (tree / "pkg" / "blob.py").write_bytes(b"run = 1\x00\x01")  # not a module: a gap among the positions
    discovery = discover((str(tree),))
    python = [f for f in discovery.files if f.language == "python"]
    prefilter = markers(load_idioms())
    here = PythonFiles(python, 1 << 22, None, prefilter, PACKAGE_IMPORTS)
    monkeypatch.setattr(pysource, "READ_APART_FROM", 1)
    with Workers(2) as workers:
        apart = PythonFiles(python, 1 << 22, None, prefilter, PACKAGE_IMPORTS, workers)
    assert "pkg/blob.py" not in apart.modules and apart.modules == here.modules and apart.marked == here.marked
    for word in WORDS:
        assert apart.spelling([word]) == here.spelling([word]), word
    assert apart.spelling(["run"]) >= {"pkg/core.py", "pkg/ops.py"}


def test_after_release_every_file_may_spell_a_word(tree):
    reader, _ = _reader(tree)
    reader.release()
    assert reader.spelling(["run"]) is None


SOURCE = b'''
from flashinfer.jit import gen_jit_spec, sm90a_nvcc_flags

def gen_gemm_module():
    flags = sm90a_nvcc_flags + ["-DENABLE_BF16"]
    return gen_jit_spec("gemm_sm90", ["gemm.cu"], extra_cuda_cflags=flags)

def run(x):
    y = torch.empty(x.shape, device=x.device)
    return kernel(y, stream=get_stream(x.device))
'''


def test_packed_calls_read_back_as_made_and_pick_by_callee_and_keyword():
    facts = extract_python("pkg/gemm.py", SOURCE)
    calls = facts.calls
    assert [c.callee for c in calls] == list(calls.callees)
    assert [c.function for c in calls] == list(calls.functions)
    assert {"extra_cuda_cflags", "device", "stream"} <= calls.keywords
    spec = calls.having(lambda callee, _: callee == "gen_jit_spec")
    assert [(c.callee, c.function, c.span.line) for c in spec] == [("gen_jit_spec", "gen_gemm_module", 6)]
    assert spec[0].kwargs()["extra_cuda_cflags"].text == "flags"
    assert calls.having(lambda callee, function: function == "nowhere") == []
    assert calls[len(calls) - 1] == list(calls)[-1]


def test_facts_with_packed_calls_survive_a_pickle_round_trip():
    facts = extract_python("pkg/gemm.py", SOURCE)
    again = pickle.loads(pickle.dumps(facts, protocol=5))
    assert again == facts and list(again.calls) == list(facts.calls)
