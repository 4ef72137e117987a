"""The HTML report: one self-contained page (inline CSS and JS, no fonts, images or requests; a
Content-Security-Policy forbids any) with the GPU support matrix, gates by targets, each cell
coloured by verdict and opening its evidence chain, and a summary line per target.

Everything that comes from a scanned file (gate text, reasons, paths, names) is escaped. Links to
files are relative to the folder the page is written to (Report.output_dir).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from html import escape
from pathlib import Path
from urllib.parse import quote

from archlint.model.findings import Evidence, Location
from archlint.model.gates import Reached
from archlint.report import Report
from archlint.report.matrix import (ADMITTED, CANNOT_WORK, NOT_EVALUATED, VERDICTS, Cell, Matrix, Row, TargetSummary,
                                    build_matrix, summary_line)

_LISTED = 12  # units, headers, kernels and constructs listed under a POLICY cell, before "+N more"
_INLINE = 3  # widenable gates named on a target's line; more get a list
_LETTER = {"POLICY": "P", "GENUINE": "G", "EMPTY": "E", "UNKNOWN": "?", ADMITTED: "\u2713", CANNOT_WORK: "!",
           NOT_EVALUATED: "\u00b7"}
_MEANING = {
    "POLICY": "could be widened: nothing it guards needs what the target lacks",
    "GENUINE": "a real reason: something it guards needs what the target lacks",
    "EMPTY": "without the gate, a kernel would compile to an empty body (or only trap)",
    "UNKNOWN": "archlint could not decide",
    ADMITTED: "the gate admits the target",
    CANNOT_WORK: "the gate admits the target, but the code it guards cannot work there (AL105)",
    NOT_EVALUATED: "not evaluated for this gate",
}

_CSS = """
:root { --policy:#f2c14e; --genuine:#5cb85c; --empty:#b07cc6; --unknown:#c8c8c8; --admitted:#dbe9f7; --broken:#e5534b;
  --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em; color: #1f2328; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
.meta { color: #57606a; margin: 0 0 1em; }
.legend span { display: inline-block; margin-right: 1em; }
.swatch { display: inline-block; width: 1.4em; text-align: center; border-radius: 3px; margin-right: .3em; }
ul.summary { padding-left: 1.2em; }
ul.summary li { margin: .15em 0; }
.why { color: #57606a; }
code.fn { font-weight: 600; }
table.matrix { border-collapse: separate; border-spacing: 0; border-top: 1px solid var(--line); border-left: 1px solid var(--line); }
table.matrix th, table.matrix td { border-bottom: 1px solid var(--line); border-right: 1px solid var(--line); padding: 3px 6px; }
thead th { position: sticky; top: 0; background: #f6f8fa; z-index: 3; white-space: nowrap; }
th.gate { position: sticky; left: 0; background: #fff; text-align: left; font-weight: normal; z-index: 2; min-width: 22em; max-width: 34em; }
thead th.gate { z-index: 4; background: #f6f8fa; }
tr.module th { text-align: left; background: #eef1f4; position: sticky; left: 0; }
.gatetext { color: #57606a; font-size: .85em; overflow-wrap: anywhere; }
td.cell { position: relative; text-align: center; min-width: 4.2em; }
td.v-policy, .swatch.v-policy { background: var(--policy); }
td.v-genuine, .swatch.v-genuine { background: var(--genuine); }
td.v-empty, .swatch.v-empty { background: var(--empty); }
td.v-unknown, .swatch.v-unknown { background: var(--unknown); }
td.v-admitted, .swatch.v-admitted { background: var(--admitted); color: #24527a; }
td.v-cannot-work, .swatch.v-cannot-work { background: var(--broken); color: #fff; }
.filter { margin: .4em 0 .8em; }
.filter select { font: inherit; }
.widen { margin: .1em 0 .5em; color: #57606a; }
.widen ul { margin: .1em 0; padding-left: 1.2em; columns: 34em auto; column-gap: 2em; }
.widen li { break-inside: avoid; }
.widen a { color: inherit; }
.archtest { color: #57606a; font-size: .85em; }
.hidden { display: none; }
td.v-none { color: #8c959f; }
summary { cursor: pointer; font-weight: 600; list-style: none; }
summary::-webkit-details-marker { display: none; }
details[open] > summary { text-decoration: underline; }
.chain { position: absolute; top: 100%; left: 0; z-index: 10; width: min(70ch, 90vw); text-align: left;
  background: #fff; color: #1f2328; border: 1px solid #8c959f; border-radius: 6px; padding: .6em .8em; box-shadow: 0 4px 14px rgba(0,0,0,.18);
  font-weight: normal; overflow-wrap: anywhere; }
td.right .chain { left: auto; right: 0; }
body.filtered td.right .chain { left: 0; right: auto; }
.chain ol, .chain ul { margin: .3em 0; padding-left: 1.4em; }
.chain p { margin: .3em 0; }
"""

_JS = """
document.addEventListener('toggle', function (event) {
  var opened = event.target;
  if (!opened.open || opened.tagName !== 'DETAILS') return;
  document.querySelectorAll('td.cell details[open]').forEach(function (other) { if (other !== opened) other.open = false; });
  history.replaceState(null, '', location.search + '#' + encodeURIComponent(opened.parentNode.id));
}, true);
function openFromHash() {
  var cell = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
  var details = cell && cell.querySelector('details');
  if (details) { details.open = true; cell.scrollIntoView({block: 'nearest', inline: 'nearest'}); }
}
window.addEventListener('hashchange', openFromHash);
document.addEventListener('keydown', function (event) {
  if (event.key === 'Escape') document.querySelectorAll('td.cell details[open]').forEach(function (d) { d.open = false; });
});
// The target filter: one target's column and line; gates that merely admit it stay hidden unless asked.
function showTarget() {
  var chosen = document.getElementById('target').value, admitted = document.getElementById('admitted').checked;
  document.body.classList.toggle('filtered', chosen !== '');
  document.querySelectorAll('[data-target]').forEach(function (element) {
    element.classList.toggle('hidden', chosen !== '' && element.dataset.target !== chosen);
  });
  var module = null, shown = 0;
  document.querySelectorAll('table.matrix tbody tr').forEach(function (row) {
    if (row.classList.contains('module')) {
      if (module) module.classList.toggle('hidden', shown === 0);
      module = row; shown = 0; return;
    }
    var cell = chosen && row.querySelector('td[data-target="' + chosen + '"]');
    var quiet = cell && !admitted && (cell.dataset.verdict === 'admitted' || cell.dataset.verdict === '');
    row.classList.toggle('hidden', Boolean(quiet));
    if (!quiet) shown += 1;
  });
  if (module) module.classList.toggle('hidden', shown === 0);
  var query = chosen ? '?target=' + encodeURIComponent(chosen) : '';
  history.replaceState(null, '', location.pathname + query + location.hash);
}
(function () {
  var select = document.getElementById('target');
  if (!select) return;
  var asked = new URLSearchParams(location.search).get('target');
  if (asked && select.querySelector('option[value="' + CSS.escape(asked) + '"]')) select.value = asked;
  select.addEventListener('change', showTarget);
  document.getElementById('admitted').addEventListener('change', showTarget);
  showTarget();
})();
openFromHash();
"""

_QUOTED = re.compile(r"`([^`]+)`")
_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def render(report: Report) -> str:
    matrix = build_matrix(report)
    links = _Links(report)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>archlint: GPU support matrix</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>GPU support matrix</h1>",
        f'<p class="meta">{_meta(report, matrix)}</p>',
        _legend(),
        _filter(matrix),
        _summaries(matrix),
        _table(matrix, links),
        f"<script>{_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


class _Links:
    """Hrefs to scanned files, relative to the folder the page is written to."""

    def __init__(self, report: Report):
        prefix = ""
        if report.root:
            try:
                relative = os.path.relpath(report.root, report.output_dir or os.getcwd())
                prefix = "" if relative == "." else quote(relative.replace(os.sep, "/"), safe="/") + "/"
            except ValueError:  # another drive: no relative path leads there
                prefix = Path(report.root).as_uri() + "/"
        self.prefix = prefix  # URL-quoted

    def place(self, location: Location) -> str:
        return self.file(location.path, f"{location.path}:{location.line}", location.line)

    def file(self, path: str, text: str, line: int = 0) -> str:
        href = self.prefix + quote(path, safe="/") + (f"#L{line}" if line else "")
        return f'<a href="{escape(href)}">{escape(text)}</a>'


def _meta(report: Report, matrix: Matrix) -> str:
    shown = [f for f in report.findings if not f.suppressed]
    levels = Counter(f.level.value for f in shown)
    by_level = ", ".join(f"{levels[level]} {level}" for level in ("error", "warning", "note") if levels[level])
    pieces = [
        f"archlint {escape(report.version)}" if report.version else "archlint",
        _plural(len(matrix.rows), "gate") + (f" listed ({matrix.unlisted} more exclude none of the targets: -v lists them)"
                                             if matrix.unlisted else ""),
        _plural(report.files_scanned, "file") + " scanned",
        _plural(len(shown), "finding") + (f" ({by_level})" if by_level else ""),
    ]
    return " \u00b7 ".join(pieces)


def _legend() -> str:
    items = [f'<span><span class="swatch {_css_class(state)}">{escape(_LETTER[state])}</span>'
             f"<b>{escape(state)}</b>: {escape(_MEANING[state])}</span>" for state in (*VERDICTS, ADMITTED, CANNOT_WORK)]
    return f'<p class="legend">{"".join(items)}</p>'


def _filter(matrix: Matrix) -> str:
    """The target filter: all targets, or one target's column and line (`?target=sm_120a` sets it)."""
    if len(matrix.targets) < 2:
        return ""
    options = "".join(f'<option value="{escape(target)}">{escape(target)}</option>' for target in matrix.targets)
    return ('<p class="filter"><label>Show <select id="target"><option value="">every target</option>'
            f'{options}</select></label> <label><input type="checkbox" id="admitted"> with the gates that admit it'
            "</label></p>")


def _summaries(matrix: Matrix) -> str:
    if not matrix.targets:
        return "<p>No target evaluated.</p>"
    lines = [f'<li data-target="{escape(s.target)}">{summary_html(s)}{_widenable(s)}</li>' for s in matrix.summaries]
    return '<h2>Per target</h2>\n<ul class="summary">\n' + "\n".join(lines) + "\n</ul>"


def _widenable(summary: TargetSummary) -> str:
    """The gates that could be widened for the target, each a link to its cell: on the line for up to
    three, else a list in columns."""
    if not summary.widenable:
        return ""
    links = []
    for row in summary.widenable:
        name = escape(row.function) if row.function else "module level"
        links.append(f'<a href="#{escape(quote(_anchor(row.gate.gate_id, summary.target)))}"><code>{name}</code> '
                     f"{escape(row.where)}</a>")
    if len(links) <= _INLINE:
        return f'<div class="widen">could be widened: {", ".join(links)}</div>'
    return f'<div class="widen">could be widened:<ul>{"".join(f"<li>{link}</li>" for link in links)}</ul></div>'


def summary_html(summary: TargetSummary) -> str:
    line = escape(summary_line(summary)).replace(escape(summary.target), f"<b>{escape(summary.target)}</b>", 1)
    if summary.unknown_reasons:
        why = "; ".join(f"{count} \u00d7 {escape(reason)}" for reason, count in summary.unknown_reasons)
        line += f' <span class="why">(unknown: {why})</span>'
    return line


def _table(matrix: Matrix, links: _Links) -> str:
    if not matrix.rows:
        return "<p>No gate found.</p>"
    head = "".join(f'<th scope="col" class="mono" data-target="{escape(target)}">{escape(target)}</th>'
                   for target in matrix.targets)
    lines = ['<table class="matrix">', f'<thead><tr><th class="gate" scope="col">gate</th>{head}</tr></thead>', "<tbody>"]
    module = None
    for row in matrix.rows:
        if row.module != module:
            module = row.module
            lines.append(f'<tr class="module"><th colspan="{len(matrix.targets) + 1}">{links.file(module, module)}</th></tr>')
        lines.append(_row_html(row, links, len(matrix.targets)))
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _row_html(row: Row, links: _Links, width: int) -> str:
    name = escape(row.function) if row.function else "<i>module level</i>"
    gate = (f'<th class="gate" scope="row"><code class="fn">{name}</code> {links.place(row.gate.location)}'
            f'<div class="gatetext mono">{escape(row.gate.text)}</div>{_arch_test(row, links)}</th>')
    cells = "".join(_cell_html(cell, row, links, index >= width // 2) for index, cell in enumerate(row.cells))
    return f'<tr class="gate" id="{escape(_anchor(row.gate.gate_id))}" data-gate="{escape(row.gate.gate_id)}">{gate}{cells}</tr>'


def _arch_test(row: Row, links: _Links) -> str:
    """Under a condition that names no architecture, the comparison it rests on and a link to it."""
    test = row.gate.arch_test
    if test is None:
        return ""
    return f'<div class="archtest">arch test <code>{escape(test.name)}</code> at {links.place(test.location)}</div>'


def _cell_html(cell: Cell, row: Row, links: _Links, right: bool) -> str:
    classes = f"cell {_css_class(cell.state)}" + (" right" if right else "")
    attributes = (f'id="{escape(_anchor(row.gate.gate_id, cell.target))}" class="{classes}" '
                  f'data-target="{escape(cell.target)}" data-verdict="{escape(cell.state)}"')
    letter = escape(_LETTER[cell.state])
    if cell.verdict is None and cell.finding is None:
        return f'<td {attributes} title="{escape(cell.target)}: {escape(_MEANING[cell.state])}">{letter}</td>'
    title = f"{cell.target}: {cell.state}"
    chain = _chain(cell, row, links) if cell.verdict is not None else _broken(cell, row, links)
    return f'<td {attributes}><details><summary title="{escape(title)}">{letter}</summary>{chain}</details></td>'


def _broken(cell: Cell, row: Row, links: _Links) -> str:
    """An admitted target where the code the gate guards cannot work: the AL105 finding and its chain."""
    finding = cell.finding
    assert finding is not None
    return (f"{_chain_head('admitted, but cannot work', cell, row, links)}"
            f'<p class="reason">{_prose(finding.message)} [AL105]</p>'
            f"<ol>{''.join(_hop(hop, links) for hop in finding.evidence)}</ol></div>")


def _chain_head(state: str, cell: Cell, row: Row, links: _Links) -> str:
    name = escape(row.function) if row.function else "module level"
    return (f'<div class="chain"><p><b>{escape(state)}</b> on <b>{escape(cell.target)}</b> for <code>{name}</code> '
            f"{links.place(row.gate.location)}</p>")


def _chain(cell: Cell, row: Row, links: _Links) -> str:
    verdict = cell.verdict
    assert verdict is not None
    parts = [_chain_head(cell.state, cell, row, links), f'<p class="reason">{_prose(verdict.reason)}</p>']
    if verdict.evidence:
        parts.append("<ol>" + "".join(_hop(hop, links) for hop in verdict.evidence) + "</ol>")
    others = [hop for hop in verdict.empty_kernels if hop not in verdict.evidence]
    if others:
        parts.append("<p>Kernels left empty or trapping:</p><ul>" + "".join(_hop(hop, links) for hop in others) + "</ul>")
    if verdict.reached is not None:
        parts.append(_checked(verdict.reached, links))
    parts.append("</div>")
    return "".join(parts)


def _hop(hop: Evidence, links: _Links) -> str:
    return f"<li>{links.place(hop.location)}: {_prose(hop.message)}</li>"


def _checked(reached: Reached, links: _Links) -> str:
    """What a POLICY verdict checked: units, headers, kernels and arch-sensitive constructs."""
    items = [f"<li>unit {links.file(unit, unit)}</li>" for unit in reached.units]
    items += [f"<li>kernel <code>{escape(hop.name)}</code> at {links.place(hop.location)}</li>" for hop in reached.kernels]
    for item in reached.constructs:
        under = f"under <code>{escape(item.guard)}</code> ({escape(item.holds)})" if item.guard else "with no arch guard"
        items.append(f"<li><code>{escape(item.hop.name)}</code> at {links.place(item.hop.location)} {under}; "
                     f"{escape(item.needs)} [{escape(item.requirement)}]</li>")
    shown = items[:_LISTED]
    if len(items) > _LISTED:
        shown.append(f"<li>+{len(items) - _LISTED} more (all of them in --format json)</li>")
    return "<ul>" + "".join(shown) + "</ul>"


def _prose(text: str) -> str:
    """A reason or evidence message, escaped, its `backquoted` names shown as code."""
    return _QUOTED.sub(r"<code>\1</code>", escape(text))


def _anchor(gate_id: str, target: str = "") -> str:
    """The element id of a gate's row, or of one of its cells (`#<gate id>@sm_120a` opens that cell)."""
    return "-".join(gate_id.split()) + (f"@{target}" if target else "")


def _css_class(state: str) -> str:
    return "v-" + state.lower().replace(" ", "-") if state else "v-none"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
