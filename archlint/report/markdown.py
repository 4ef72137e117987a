"""The markdown report: the GPU support matrix as a GitHub-flavoured table, with a summary line per
target, for $GITHUB_STEP_SUMMARY and pull-request comments.

GitHub takes at most 1 MiB of job summary per step and 65,536 characters per comment; rows past
`MAX_ROWS`, or past `MAX_BYTES` of output, are left out with a "... N more gates" line (the HTML
and JSON reports have them all).
"""

from __future__ import annotations

import re

from archlint.report import Report
from archlint.report.matrix import ADMITTED, CANNOT_WORK, NOT_EVALUATED, Matrix, Row, build_matrix, summary_line

MAX_ROWS = 300
MAX_BYTES = 900 * 1024  # under GitHub's 1 MiB job summary limit, with room for what else a job writes
_SYMBOL = {
    "POLICY": "\U0001f7e8 P",  # yellow square: could be widened
    "GENUINE": "\U0001f7e9 G",  # green square
    "EMPTY": "\U0001f7ea E",  # purple square
    "UNKNOWN": "\u2b1c ?",  # white square
    ADMITTED: "\u2713",
    CANNOT_WORK: "\U0001f7e5 !",  # red square: admitted, but the code it guards cannot work there
    NOT_EVALUATED: "",
}
_LEGEND = ("\U0001f7e8 P policy: could be widened \u00b7 \U0001f7e9 G genuine \u00b7 \U0001f7ea E empty kernel \u00b7 "
           "\u2b1c ? unknown \u00b7 \u2713 admitted \u00b7 \U0001f7e5 ! admitted, but the code it guards cannot work "
           "there (AL105)")


def render(report: Report, max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES) -> str:
    matrix = build_matrix(report)
    unlisted = f"; {matrix.unlisted} more exclude none of the targets" if matrix.unlisted else ""
    head = [f"### archlint: GPU support matrix ({_plural(len(matrix.rows), 'gate')}{unlisted}, "
            f"{_plural(report.files_scanned, 'file')} scanned)", ""]
    if not matrix.rows:
        return "\n".join([*head, "No gate found.", ""])
    lines = [*head, *_summary_lines(matrix), "", _LEGEND, "", *_table_head(matrix)]
    size = sum(len(line.encode()) + 1 for line in lines)
    shown = 0
    for row in matrix.rows:
        line = _row_line(row)
        if shown >= max_rows or size + len(line.encode()) + 1 > max_bytes - 200:
            break
        lines.append(line)
        size += len(line.encode()) + 1
        shown += 1
    if shown < len(matrix.rows):
        lines += ["", f"... {len(matrix.rows) - shown} more gates (`--format html` or `--format json` lists them all)"]
    lines += _cannot_work(matrix.rows[:shown])
    return "\n".join(lines) + "\n"


def _cannot_work(rows: tuple[Row, ...]) -> list[str]:
    """Below the table, why each \U0001f7e5 cell cannot work: the AL105 finding of its gate."""
    lines = []
    for row in rows:
        broken = [cell for cell in row.cells if cell.state == CANNOT_WORK]
        if not broken or broken[0].finding is None:
            continue
        _, but, problem = broken[0].finding.message.partition(", but ")
        name = _code(row.function) if row.function else "*module level*"
        targets = ", ".join(cell.target for cell in broken)
        lines.append(f"- {name} {_code(row.where)} on {targets}: {_inline(problem if but else broken[0].finding.message)}")
    return ["", "\U0001f7e5 admitted, but the code it guards cannot work there (AL105):", "", *lines] if lines else []


def _summary_lines(matrix: Matrix) -> list[str]:
    lines = []
    for summary in matrix.summaries:
        line = f"- {summary_line(summary)}"
        if summary.unknown_reasons:
            why = "; ".join(f"{count} \u00d7 {_inline(reason)}" for reason, count in summary.unknown_reasons)
            line += f" (unknown: {why})"
        lines.append(line)
    return lines


def _table_head(matrix: Matrix) -> list[str]:
    return ["| gate | where | " + " | ".join(matrix.targets) + " |",
            "| --- | --- | " + " | ".join(":-:" for _ in matrix.targets) + " |"]


def _row_line(row: Row) -> str:
    name = _code(row.function) if row.function else "*module level*"
    cells = " | ".join(_SYMBOL[cell.state] for cell in row.cells)
    return f"| {name} | {_code(row.where)} | {cells} |"


def _code(text: str) -> str:
    """`text` as a code span inside a table cell: pipes escaped, a fence longer than any backtick run in it."""
    text = " ".join(text.split()).replace("|", "\\|")
    runs = [len(run) for run in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _inline(text: str) -> str:
    """Plain text from a scanned tree, made inert in markdown: no markup, links, HTML or table breaks."""
    text = " ".join(text.split())
    return re.sub(r"([\\`*_{}\[\]<>()#+!|~])", r"\\\1", text)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
