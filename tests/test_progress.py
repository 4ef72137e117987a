"""The progress line on a terminal: stage number and count, files done of the stage's total (never
starting over for each batch), the time since the scan began, and a count that moves through the
verdicts. Driven with a fake terminal and a fake clock: nothing here depends on real time."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from archlint.engine import scan, timing
from archlint.engine.timing import Progress, stage_times
from archlint.model.scan import ScanOptions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


class FakeTerminal(io.StringIO):
    def __init__(self, tty: bool = True) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def frames(self) -> list[str]:
        """Each state of the line, as the terminal shows it; '' where it was cleared."""
        return [frame.removesuffix("\x1b[K") for frame in self.getvalue().split("\r")[1:]]


class FakeClock:
    def __init__(self, start: float = 100.0, step: float = 0.0) -> None:
        self.now, self.step = start, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_the_line_names_stage_number_count_and_time_since_the_scan_began():
    terminal, clock = FakeTerminal(), FakeClock()
    progress = Progress(terminal, clock)
    progress.start()
    progress.plan(["discover", "pylink", "facts", "index", "verdicts", "checks"])
    clock.now += 12.0
    progress.begin("facts", 1575, "files")
    clock.now += 0.4
    progress.part()(812, 1575)
    assert progress.text() == "archlint: [3/6] facts 812/1575 files 12.4 s"
    assert terminal.frames() == ["archlint: [3/6] facts 0/1575 files 12.0 s", "archlint: [3/6] facts 812/1575 files 12.4 s"]
    progress.end()
    assert terminal.frames()[-1] == ""  # the line is wiped when the stage ends


def test_batches_add_up_instead_of_starting_over():
    """The Python facts come in many small batches, one per question linking asks: the count is
    the stage's, so it never reads `facts 0/1 files` again."""
    terminal = FakeTerminal()
    progress = Progress(terminal, FakeClock(step=1.0))
    progress.begin("facts", None, "files")
    for size in (3, 1, 1, 2):
        report = progress.part()
        report(0, size)
        report(size, size)
    counts = [frame.split()[2] for frame in terminal.frames() if "/" in frame]
    assert counts == ["0/3", "3/3", "3/4", "4/4", "4/5", "5/5", "5/7", "7/7"]


def test_a_declared_total_holds_and_redraws_are_spaced():
    terminal, clock = FakeTerminal(), FakeClock()
    progress = Progress(terminal, clock)
    progress.begin("includes", 6737, "files")
    report = progress.part()
    for done in range(0, 3000, 100):  # all at one instant: drawn once (then every 0.1 s at most)
        report(done, 6737)
    clock.now += 0.5
    report(3000, 6737)
    report(6737, 6737)  # the last count is always drawn
    assert [frame.split()[2] for frame in terminal.frames()] == ["0/6737", "3000/6737", "6737/6737"]


def test_the_verdicts_count_gates_as_they_are_judged():
    terminal = FakeTerminal()
    progress = Progress(terminal, FakeClock(step=1.0))
    progress.plan(["facts", "verdicts"])
    progress.begin("verdicts", 3, "gates")
    for judged in (1, 2, 3):
        progress.update(judged, 3)
    assert [frame.split(" ", 1)[1] for frame in terminal.frames()][1:] == [
        "[2/2] verdicts 1/3 gates 2.0 s", "[2/2] verdicts 2/3 gates 3.0 s", "[2/2] verdicts 3/3 gates 4.0 s"]


def test_a_skipped_stage_leaves_the_count():
    progress = Progress(FakeTerminal(), FakeClock())
    progress.plan(["discover", "facts", "includes", "unit facts"])
    progress.skip("includes")
    progress.begin("unit facts", 4, "files")
    assert progress.text().startswith("archlint: [3/3] unit facts 0/4 files")


def test_nothing_is_drawn_off_a_terminal():
    terminal = FakeTerminal(tty=False)
    progress = Progress(terminal, FakeClock(step=1.0))
    progress.begin("facts", 10, "files")
    progress.part()(10, 10)
    progress.end()
    assert terminal.getvalue() == ""


@pytest.fixture
def fake_terminal(monkeypatch) -> FakeTerminal:
    terminal = FakeTerminal()
    monkeypatch.setattr(timing, "PROGRESS", Progress(terminal, FakeClock(step=1.0)))
    return terminal


LINE = re.compile(r"archlint: \[(?P<number>\d+)/(?P<count>\d+)\] (?P<name>[a-z ]+?)"
                  r"(?: (?P<done>\d+)/(?P<total>\d+) (?P<unit>files|gates))? (?P<seconds>\d+\.\d) s")


def test_a_cold_scan_numbers_its_stages_and_moves_through_the_verdicts(tmp_path, monkeypatch, fake_terminal):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path / "cache"))
    with stage_times(False):
        result = scan(ScanOptions(paths=(str(FIXTURES / "gate-flashinfer"),), jobs=1))
    lines = [LINE.fullmatch(frame) for frame in fake_terminal.frames() if frame]
    assert all(lines), fake_terminal.frames()
    names = list(dict.fromkeys((int(m["number"]), m["name"]) for m in lines))
    assert names == list(enumerate(("discover", "facts", "pylink", "outline", "includes", "unit facts", "index",
                                    "verdicts", "checks"), start=1))
    assert {m["count"] for m in lines} == {"9"}
    gates = len(result.gates)
    assert [(m["done"], m["total"]) for m in lines if m["name"] == "verdicts"] == [(str(n), str(gates)) for n in range(gates + 1)]
    for name in ("facts", "includes", "unit facts"):  # per stage, files done never go back
        done = [int(m["done"]) for m in lines if m["name"] == name and m["done"] is not None]
        assert done and done == sorted(done), name
    seconds = [float(m["seconds"]) for m in lines]
    assert seconds == sorted(seconds)  # the time since the scan began, not since each stage
    assert fake_terminal.getvalue().endswith("\r\x1b[K")  # the last line is wiped
