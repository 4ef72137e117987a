"""The GPU support matrix: `--format html` (checked in a real headless Chromium) and `--format
markdown`, on fixtures/gate-flashinfer and on a tree whose names carry markup."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from click.testing import CliRunner
from conftest import inside_fixture

from archlint.cli.commands import cli
from archlint.model.findings import Evidence, EvidenceKind, Location, Verdict
from archlint.model.gates import GateReport, TargetVerdict
from archlint.report import Report
from archlint.report import markdown as markdown_report
from archlint.report.matrix import arch_sorted, build_matrix, local_function, reason_kind

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRTLLM_GATE = "flashinfer/jit/comm.py:7:18"  # gen_trtllm_comm_module's gate: EMPTY on sm_120a
XQA_GATE = "flashinfer/jit/comm.py:39:18"  # gen_xqa_module's gate: admits sm_120a, whose only kernel is empty there
ARCH_ORDER = ("sm_80", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a")

HOSTILE_FOLDER = "we`ird|<b>pkg"
HOSTILE_SOURCE = "<img src=x onerror=alert(1)>.cu"
HOSTILE_PY = f'''from pathlib import Path

CSRC = Path(__file__).parent.parent / "csrc"


def gen_comm_module():
    nvcc_flags = get_nvcc_flags_list(supported_major_versions=[9, 10])
    return gen_jit_spec("comm", [CSRC / "comm.cu"], extra_cuda_cflags=nvcc_flags)


def gen_missing_module():
    nvcc_flags = get_nvcc_flags_list(supported_major_versions=[9, 10])
    return gen_jit_spec("missing", [CSRC / "{HOSTILE_SOURCE}"], extra_cuda_cflags=nvcc_flags)
'''
KERNEL_CU = '''__global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
'''


def scan(args: list[str], cwd: Path) -> str:
    """Scan the fixture folder `args[0]` under `cwd` from inside it, as a repository of its own."""
    with inside_fixture(cwd / args[0]):
        result = CliRunner().invoke(cli, ["scan", ".", *args[1:], "--no-cache", "--jobs", "1"])
    assert result.exit_code in (0, 1), result.output
    return result.output


@pytest.fixture(scope="module")
def flashinfer_page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report" / "matrix.html"
    out.parent.mkdir()
    scan(["gate-flashinfer", "--format", "html", "-o", str(out)], FIXTURES)
    return out


class _Cells(HTMLParser):
    """Every matrix cell of a page: its id -> (class, data-verdict, whether its <details> is open)."""

    def __init__(self):
        super().__init__()
        self.cells: dict[str, dict[str, str]] = {}
        self.hrefs: list[str] = []
        self._cell: str | None = None

    def handle_starttag(self, tag, attrs):
        attributes = {name: value or "" for name, value in attrs}
        if tag == "td" and "cell" in attributes.get("class", "").split():
            self._cell = attributes["id"]
            self.cells[self._cell] = {**attributes, "open": "no"}
        elif tag == "details" and self._cell is not None and "open" in attributes:
            self.cells[self._cell]["open"] = "yes"
        elif tag == "a":
            self.hrefs.append(attributes["href"])

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None


def parse(page: str) -> _Cells:
    parser = _Cells()
    parser.feed(page)
    return parser


# ---------------------------------------------------------------- the matrix


def test_targets_in_arch_order_not_string_order():
    assert arch_sorted(["sm_121a", "sm_110a", "sm_80", "sm_120a", "sm_90a", "sm_100a", "sm_89", "sm_103a"]) == ARCH_ORDER
    assert arch_sorted(["sm_90a", "sm_90"]) == ("sm_90", "sm_90a")


def test_function_named_without_its_module():
    assert local_function("flashinfer.jit.comm.gen_trtllm_comm_module", "flashinfer/jit/comm.py") == "gen_trtllm_comm_module"
    assert local_function("flashinfer.jit.comm.gen_trtllm_comm_module", "src/flashinfer/jit/comm.py") == "gen_trtllm_comm_module"
    assert local_function("pkg.Builder.build", "pkg/__init__.py") == "Builder.build"
    assert local_function("flashinfer.decode.trtllm_batch_decode", "decode.py") == "trtllm_batch_decode"  # scanned from inside the package
    assert local_function("flashinfer.decode.decode.run", "decode.py") == "decode.run"
    assert local_function("flashinfer.jit.comm.gen_module", "jit/comm.py") == "gen_module"
    assert local_function("", "pkg/jit.py") == ""


def test_unknown_reasons_count_by_kind():
    assert reason_kind("possible blocker under a condition archlint cannot decide for sm_80: `mbarrier.x` needs sm_90") == (
        "possible blocker under a condition archlint cannot decide for the target")
    assert reason_kind('guarded sources could not be resolved (unresolved: CSRC / "x.cu")') == "guarded sources could not be resolved"


# ---------------------------------------------------------------- HTML


def test_page_is_self_contained(flashinfer_page):
    page = flashinfer_page.read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "the page must load nothing from the network"
    assert "@import" not in page and "url(" not in page


def test_page_holds_the_matrix(flashinfer_page):
    page = flashinfer_page.read_text()
    cells = parse(page).cells
    empty = cells[f"{TRTLLM_GATE}@sm_120a"]
    assert empty["data-verdict"] == "EMPTY" and "v-empty" in empty["class"].split()
    assert cells[f"{TRTLLM_GATE}@sm_110a"]["data-verdict"] == "POLICY"
    assert cells[f"{TRTLLM_GATE}@sm_90a"]["data-verdict"] == "admitted"
    assert cells["flashinfer/jit/comm.py:25:18@sm_120a"]["data-verdict"] == "GENUINE"
    assert cells["flashinfer/jit/comm.py:31:18@sm_120a"]["data-verdict"] == "UNKNOWN"
    header = re.search(r"<thead>(.*?)</thead>", page, re.S).group(1)
    assert re.findall(r">(sm_\d+a?)<", header) == list(ARCH_ORDER)
    assert "<code class=\"fn\">gen_trtllm_comm_module</code>" in page
    assert ("sm_120a</b>: 1 gate could be widened, 1 genuine, 1 empty, 1 unknown, 1 admitted, "
            "2 admitted but cannot work") in page
    assert "1 \u00d7 guarded sources could not be resolved" in page


def test_an_admitted_target_where_the_code_cannot_work_has_its_own_cell_and_reason(flashinfer_page):
    page = flashinfer_page.read_text()
    cells = parse(page).cells
    xqa = cells[f"{XQA_GATE}@sm_120a"]
    assert xqa["data-verdict"] == "cannot work" and "v-cannot-work" in xqa["class"].split()
    assert cells[f"{XQA_GATE}@sm_90a"]["data-verdict"] == "admitted"  # the build that works stays a plain tick
    cell = re.search(rf'<td id="{re.escape(XQA_GATE)}@sm_120a".*?</td>', page, re.S).group(0)
    assert "<summary" in cell and ">!</summary>" in cell
    assert "kernel <code>xqa_sm90_kernel</code>, the only kernel it guards, compiles to an empty body there" in cell
    assert "[AL105]" in cell and "xqa_sm90.cu#L5" in cell
    assert "the gate admits the target, but the code it guards cannot work there (AL105)" in page  # the legend


def test_each_target_line_names_the_gates_that_could_be_widened(flashinfer_page):
    page = flashinfer_page.read_text()
    widen = re.search(r'<li data-target="sm_110a">.*?<div class="widen">could be widened: (.*?)</div></li>', page, re.S).group(1)
    names = re.findall(r'<code>(\w+)</code> flashinfer/jit/comm.py:(\d+)</a>', widen)
    assert names == [("gen_trtllm_comm_module", "7"), ("gen_vec_dequant_module", "19"), ("gen_xqa_mha_module", "56")]
    assert f'href="#{quote(TRTLLM_GATE)}%40sm_110a"' in widen  # each a link to its cell


def test_the_page_has_a_target_filter(flashinfer_page):
    page = flashinfer_page.read_text()
    options = re.findall(r'<option value="(sm_\w+)">', re.search(r'<select id="target">(.*?)</select>', page, re.S).group(1))
    assert options == list(ARCH_ORDER)
    header = re.search(r"<thead>(.*?)</thead>", page, re.S).group(1)
    assert re.findall(r'data-target="(sm_\w+)"', header) == list(ARCH_ORDER)


def test_a_gate_excluding_no_target_gets_no_row_unless_verbose():
    route = "flashinfer/sampling.py:27:"
    page = scan(["gate-backend-routes", "--format", "html"], FIXTURES)
    assert route not in page and "2 gates listed (1 more exclude none of the targets: -v lists them)" in page
    verbose = scan(["gate-backend-routes", "--format", "html", "-v"], FIXTURES)
    assert route in verbose
    # a condition naming no architecture shows the comparison it rests on, linked
    assert ('<div class="archtest">arch test <code>major &gt;= 9</code> at '
            '<a href="flashinfer/sampling.py#L13">flashinfer/sampling.py:13</a></div>') in verbose
    table = scan(["gate-backend-routes", "--format", "markdown"], FIXTURES)
    assert "sampling.py:27" not in table and "(2 gates; 1 more exclude none of the targets," in table


def test_cell_opens_its_evidence_chain_with_links_that_resolve(flashinfer_page):
    page = flashinfer_page.read_text()
    cell = re.search(rf'<td id="{re.escape(TRTLLM_GATE)}@sm_120a".*?</td>', page, re.S).group(0)
    assert "<details>" in cell and "compiles to an empty body for sm_120a" in cell
    hrefs = parse(cell).hrefs
    for href in hrefs:
        path = unquote(href.split("#")[0])
        assert (flashinfer_page.parent / path).is_file(), href
    assert any(href.endswith("trtllm_allreduce.cuh#L9") for href in hrefs)


def test_names_from_the_scanned_tree_are_escaped(tmp_path):
    tree = tmp_path / "tree"
    (tree / HOSTILE_FOLDER).mkdir(parents=True)
    (tree / HOSTILE_FOLDER / "jit.py").write_text(HOSTILE_PY)
    (tree / "csrc").mkdir()
    (tree / "csrc" / "comm.cu").write_text(KERNEL_CU)
    page = scan([".", "--format", "html"], tree)
    assert "<img" not in page and "<b>pkg" not in page
    assert html.escape(HOSTILE_SOURCE) in page  # the UNKNOWN reason names it, escaped
    assert html.escape(f"{HOSTILE_FOLDER}/jit.py:7") in page
    cells = parse(page).cells
    assert cells[f"{HOSTILE_FOLDER}/jit.py:7:18@sm_120a"]["data-verdict"] == "POLICY"
    table = scan([".", "--format", "markdown"], tree)
    rows = [line for line in table.splitlines() if line.startswith("| `gen_")]
    assert len(rows) == 2
    for row in rows:  # a `|` in a path must not add a column
        assert len(re.split(r"(?<!\\)\|", row)) == len(ARCH_ORDER) + 4


# ---------------------------------------------------------------- markdown


def test_markdown_matrix(tmp_path):
    table = scan(["gate-flashinfer", "--format", "markdown"], FIXTURES)
    assert "- sm_120a: 1 gate could be widened, 1 genuine, 1 empty, 1 unknown, 1 admitted, 2 admitted but cannot work" in table
    header = next(line for line in table.splitlines() if line.startswith("| gate |"))
    assert header == "| gate | where | " + " | ".join(ARCH_ORDER) + " |"
    row = next(line for line in table.splitlines() if line.startswith("| `gen_trtllm_comm_module`"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "`flashinfer/jit/comm.py:7`"
    assert dict(zip(ARCH_ORDER, cells[2:])) == {
        "sm_80": "\U0001f7ea E", "sm_89": "\U0001f7ea E", "sm_90a": "\u2713", "sm_100a": "\u2713", "sm_103a": "\u2713",
        "sm_110a": "\U0001f7e8 P", "sm_120a": "\U0001f7ea E", "sm_121a": "\U0001f7ea E"}


def test_markdown_marks_an_admitted_target_that_cannot_work_and_says_why(tmp_path):
    table = scan(["gate-flashinfer", "--format", "markdown"], FIXTURES)
    row = next(line for line in table.splitlines() if line.startswith("| `gen_xqa_module`"))
    cells = dict(zip(ARCH_ORDER, [cell.strip() for cell in row.strip("|").split("|")][2:]))
    assert cells["sm_120a"] == "\U0001f7e5 !" and cells["sm_90a"] == "\u2713"
    assert ("- `gen_xqa_module` `flashinfer/jit/comm.py:39` on sm_100a, sm_103a, sm_120a, sm_121a: kernel "
            "\\`xqa\\_sm90\\_kernel\\`, the only kernel it guards, compiles to an empty body there") in table


def _many_gates(count: int) -> Report:
    gates = []
    for index in range(count):
        path = f"pkg/ops/module_{index:04d}.py"
        head = Evidence(Location(path, 12), "gate `get_nvcc_flags_list(supported_major_versions=[9, 10])` excludes sm_120a", EvidenceKind.GATE)
        verdict = TargetVerdict("sm_120a", Verdict.POLICY, "nothing reachable from 1 guarded source(s) needs what sm_120a lacks", (head,))
        gates.append(GateReport(f"{path}:12:18", "get_nvcc_flags_list(supported_major_versions=[9, 10])", Location(path, 12, 18),
                                ("sm_90a", "sm_100a"), (verdict,), (f"csrc/op_{index}.cu",), f"pkg.ops.module_{index:04d}.gen_op_module"))
    return Report(root="", findings=(), gates=tuple(gates), targets=("sm_90a", "sm_100a", "sm_120a"), files_scanned=count)


def test_markdown_caps_rows_with_a_count_of_the_rest():
    report = _many_gates(40)
    table = markdown_report.render(report, max_rows=25)
    assert len([line for line in table.splitlines() if line.startswith("| `gen_op_module`")]) == 25
    assert "... 15 more gates" in table
    assert "- sm_120a: 40 gates could be widened" in table  # the summary counts every gate


def test_markdown_stays_under_the_job_summary_limit():
    table = markdown_report.render(_many_gates(30000))
    assert len(table.encode()) < 1024 * 1024
    assert re.search(r"\.\.\. \d+ more gates", table)


# ---------------------------------------------------------------- in a real browser


def _chromium() -> str | None:
    return next((path for name in ("chromium", "chromium-browser") if (path := shutil.which(name))), None)


def _browse(browser: str, url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={profile}", "--window-size=1300,1000", *extra, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)")
def test_page_renders_in_chromium(flashinfer_page, tmp_path):
    """Chromium loads the page, runs its script (a `#cell` address opens that cell's evidence), and
    paints it: the DOM it dumps holds the cells, and the screenshot is a real picture."""
    browser = _chromium()
    assert browser is not None
    url = f"{flashinfer_page.as_uri()}#{TRTLLM_GATE}@sm_120a"
    dumped = _browse(browser, url, tmp_path / "profile", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    cells = parse(dumped.stdout).cells
    assert len(cells) == 7 * len(ARCH_ORDER)
    assert cells[f"{TRTLLM_GATE}@sm_120a"]["data-verdict"] == "EMPTY"
    assert "v-empty" in cells[f"{TRTLLM_GATE}@sm_120a"]["class"].split()
    assert cells[f"{TRTLLM_GATE}@sm_120a"]["open"] == "yes"  # the script ran
    assert cells[f"{TRTLLM_GATE}@sm_110a"]["open"] == "no"
    screenshot = tmp_path / "matrix.png"
    shot = _browse(browser, url, tmp_path / "profile", f"--screenshot={screenshot}")
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.is_file()
    data = screenshot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a blank 1300x1000 page compresses to a few kilobytes


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)")
def test_the_target_filter_shows_one_targets_column_and_lines_in_chromium(flashinfer_page, tmp_path):
    """`?target=sm_120a` (or choosing it in the select) leaves sm_120a's column and line, and hides the
    gates that merely admit it; a gate admitting it where its code cannot work stays."""
    browser = _chromium()
    assert browser is not None
    dumped = _browse(browser, f"{flashinfer_page.as_uri()}?target=sm_120a", tmp_path / "profile", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    cells = parse(dom).cells
    assert "hidden" not in cells[f"{TRTLLM_GATE}@sm_120a"]["class"].split()
    assert "hidden" in cells[f"{TRTLLM_GATE}@sm_110a"]["class"].split()
    rows = {row: bool(hidden) for hidden, row in re.findall(r'<tr class="gate( hidden)?" id="([^"]+)"', dom)}
    assert rows[XQA_GATE] is False  # admitted, but cannot work: shown
    assert rows["flashinfer/jit/comm.py:56:18"] is True  # admits sm_120a and works there: hidden
    lines = {target: bool(hidden) for target, hidden in re.findall(r'<li data-target="(sm_\w+)"( class="hidden")?', dom)}
    assert lines["sm_120a"] is False and lines["sm_110a"] is True
    assert re.search(r'<body class="filtered"', dom)  # a cell's chain opens rightwards from the one column
