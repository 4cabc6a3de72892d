"""`index.html`: the matrix as one self-contained page that opens with no network.

The page opens with what to do, written into the HTML itself (it reads without script): the
verdict's headline (`caiconform.results.verdict`) and, per library, its defects most severe first, one
line each, linked to their rows in the catalogue and to the library's Markdown page, then each
library's conformance record page (`libraries/<name>.html`, `report.conformance`). It carries
the matrix as JSON in a `<script type="application/json">` block and a small inline script
draws the rest: a producer x consumer heatmap per check family (cells coloured by pass
fraction, counts in the cell and its tooltip), the scores, the findings with their rule IDs
linked to the rule text (embedded from the catalogue) and links to the reproducers, and the
environment of every run. Everything is inline; a Content-Security-Policy of `default-src 'none'`
makes the browser refuse any fetch, so the page provably needs no CDN, font or network. Data is
put into the DOM with `textContent` only, never parsed as HTML, so a message from a journal
cannot inject markup.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping
from string import Template
from typing import Any
from urllib.parse import quote

__all__ = [
    "render_html",
    "render_verdict",
    "render_migration",
    "render_libraries",
    "render_releases",
    "releases_page",
    "embed_json",
]

CSS = """
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #ffffff; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; padding: 1.5rem; max-width: 1400px; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem;
     margin-top: 2rem; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; margin: .4rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; vertical-align: top;
         text-align: left; }
th { background: var(--soft); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
              font-size: 12.5px; }
.heatmap td.cell { text-align: center; min-width: 5.5rem; cursor: pointer;
                   font-variant-numeric: tabular-nums; }
.heatmap td.cell.empty { background: repeating-linear-gradient(45deg, #fafafa, #fafafa 4px,
                         #eee 4px, #eee 8px); cursor: default; }
.heatmap td.cell.selected { outline: 3px solid #0969da; outline-offset: -3px; }
.heatmap th.row { text-align: right; }
.legend { display: flex; align-items: center; gap: .5rem; color: var(--muted); }
.legend .bar { width: 12rem; height: .8rem; border: 1px solid var(--line);
               background: linear-gradient(90deg, hsl(0,70%,52%), hsl(60,70%,52%),
               hsl(120,55%,40%)); }
.badge { display: inline-block; padding: 0 .4rem; border-radius: .6rem; font-size: 12px;
         color: #fff; background: #57606a; white-space: nowrap; }
.badge.crash, .badge.poisoned, .badge.hang { background: #6e2fbf; }
.badge.fail { background: #cf222e; }
.badge.accepted-invalid { background: #bc4c00; }
.badge.rejected { background: #9a6700; }
.badge.xfail { background: #57606a; }
tr.finding.expected { color: var(--muted); }
tr.finding.hidden { display: none; }
.filter { display: flex; gap: .5rem; align-items: center; margin: .5rem 0; }
.filter input[type=search] { width: 22rem; padding: .25rem .4rem; }
.rule-entry { border-left: 4px solid var(--line); padding: .2rem .8rem; margin: .6rem 0; }
.rule-entry:target { border-left-color: #0969da; background: #ddf4ff; }
.rule-entry .level { font-weight: 600; }
.warning { background: #fff8c5; border: 1px solid #d4a72c; padding: .4rem .7rem; }
.muted { color: var(--muted); }
details summary { cursor: pointer; color: var(--muted); }
#verdict .headline { font-size: 1.05rem; font-weight: 600; padding: .4rem .7rem;
                     border-left: 6px solid #1a7f37; background: var(--soft); }
#verdict .headline.fail { border-left-color: #cf222e; }
#verdict ul { margin: .2rem 0 .6rem; padding-left: 1.4rem; }
#verdict h3 { margin: .8rem 0 .2rem; }
.sev { display: inline-block; min-width: 7.5rem; font-weight: 600; }
.sev.corrupts { color: #cf222e; } .sev.crashes { color: #6e2fbf; }
.sev.refuses-valid { color: #bc4c00; } .sev.departs, .sev.accepts-invalid, .sev.portability { color: #57606a; }
tr.group:target { outline: 3px solid #0969da; }
"""

JS = r"""
"use strict";
const DATA = JSON.parse(document.getElementById("cai-data").textContent);
const SEVERITY = {crash: 0, poisoned: 1, hang: 2, fail: 3, "accepted-invalid": 4, rejected: 5};
const NONE = "\u2014";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
const name = (library) => (library === null || library === undefined ? NONE : library);
const pct = (f) => (f === null || f === undefined ? NONE : Math.round(100 * f) + "%");
function colour(fraction) {
  if (fraction === null) return "";
  // squared, so that 90% is already visibly off-green: a single failure must stand out
  const hue = fraction === 1 ? 120 : Math.round(100 * fraction * fraction);
  return "hsl(" + hue + ", " + (fraction === 1 ? 55 : 70) + "%, " + (fraction === 1 ? 40 : 52) + "%)";
}
function table(header, rows, cls) {
  const head = el("tr", {}, ...header.map((h) => el("th", {text: h})));
  return el("table", {class: cls}, el("thead", {}, head), el("tbody", {}, ...rows));
}

function drawSummary() {
  const s = DATA.summary;
  const parts = Object.entries(s.outcomes).map(([o, n]) => o + " " + n).join(", ");
  const severities = Object.entries(s.by_severity || {}).map(([k, n]) => n + " " + k).join(", ");
  const failOn = DATA.verdict ? (DATA.verdict.fail_on.join(",") || "none") : null;
  document.getElementById("summary").textContent =
    s.results + " results (" + parts + "); pass fraction " + pct(s.pass_fraction) + "; " +
    (s.defect_findings ?? s.catalogue_groups) + " defect(s), one per bug, in " +
    s.catalogue_groups + " group(s) (one library, role, rule and outcome each)" +
    (severities ? "; by severity: " + severities : "") +
    (failOn !== null ? "; " + s.failing_groups + " failing at --fail-on " + failOn : "") +
    (s.required_combinations ? "; coverage floor: " + s.not_exercised + " of " +
      s.required_combinations + " required combinations not exercised" : "") +
    (s.saturated_cells ? "; " + s.saturated_cells + (s.saturated_found_cells
      ? " cell(s), " + s.saturated_found_cells + " of them after meeting a failure, ended " +
        "their draws early (--saturate, --saturate-found): "
      : " pass-only cell(s) ended their draws early (--saturate): ") +
      s.unrun_examples + " drawn example(s) not run" : "") +
    (DATA.expectations && DATA.verdict
      ? "; " + DATA.verdict.entry_errors.length + " expectation entry error(s)."
      : ".");
  const warnings = document.getElementById("warnings");
  for (const w of DATA.warnings) warnings.append(el("p", {class: "warning", text: w}));
}

let selected = null;
function selectCell(td) {
  if (selected) selected.classList.remove("selected");
  if (selected === td) { selected = null; applyFilter(); return; }
  selected = td;
  td.classList.add("selected");
  applyFilter();
  document.getElementById("findings").scrollIntoView();
}

function drawHeatmaps() {
  const root = document.getElementById("heatmaps");
  const cells = new Map(DATA.cells.map((c) => [JSON.stringify([c.check, c.producer, c.consumer]), c]));
  for (const [check, axes] of Object.entries(DATA.families)) {
    const rows = axes.producers.map((producer) => {
      const tds = axes.consumers.map((consumer) => {
        const cell = cells.get(JSON.stringify([check, producer, consumer]));
        if (!cell) return el("td", {class: "cell empty", title: "not run"});
        const counts = Object.entries(cell.counts).map(([o, n]) => o + ": " + n).join("\n") +
          (cell.correct_rejections ? "\n(" + cell.correct_rejections + " rejected correctly)" : "");
        const bad = Object.entries(cell.findings);
        bad.sort((a, b) => SEVERITY[a[0]] - SEVERITY[b[0]]);
        const label = cell.tested ? cell.passed + "/" + cell.tested : "skip";
        const td = el("td", {
          class: "cell",
          "data-check": check, "data-producer": name(producer), "data-consumer": name(consumer),
          "data-passed": cell.passed, "data-tested": cell.tested, "data-total": cell.total,
          "data-fraction": cell.pass_fraction === null ? "" : cell.pass_fraction.toFixed(4),
          "data-worst": bad.length ? bad[0][0] : "",
          title: check + ": " + name(producer) + " \u2192 " + name(consumer) + "\npass fraction " +
            pct(cell.pass_fraction) + "\n" + counts,
        }, label, bad.length ? el("div", {class: "mono", text: bad[0][0] + ":" + bad[0][1]}) : null);
        const background = colour(cell.pass_fraction);
        if (background) { td.style.background = background; td.style.color = "#fff"; }
        else td.style.background = "#d0d7de";
        td.addEventListener("click", () => selectCell(td));
        return td;
      });
      return el("tr", {}, el("th", {class: "row", text: name(producer)}), ...tds);
    });
    const header = ["producer \\ consumer", ...axes.consumers.map(name)];
    root.append(el("h3", {id: "family-" + check, text: check}),
                table(header, rows, "heatmap"));
    root.lastChild.setAttribute("data-check", check);
  }
}

function drawScores() {
  const rows = Object.entries(DATA.scores).map(([library, roles]) => {
    const cells = ["producer", "consumer"].map((role) => {
      const s = roles[role];
      const td = el("td", {"data-role": role, "data-score": s.score === null ? "" : s.score.toFixed(4)},
                    s.tested ? pct(s.score) + " (" + s.passed + "/" + s.tested + ")" : NONE);
      if (s.score !== null) { td.style.background = colour(s.score); td.style.color = "#fff"; }
      return td;
    });
    return el("tr", {class: "score", "data-library": library}, el("th", {text: library}), ...cells);
  });
  document.getElementById("score-table").append(
    table(["library", "as producer", "as consumer"], rows, "scores"));
}

function applyFilter() {
  const text = document.getElementById("finding-filter").value.trim().toLowerCase();
  const hideExpected = document.getElementById("hide-expected").checked;
  let shown = 0;
  for (const row of document.querySelectorAll("tr.finding")) {
    let visible = !text || row.textContent.toLowerCase().includes(text);
    if (hideExpected && row.classList.contains("expected")) visible = false;
    if (selected) {
      for (const key of ["check", "producer", "consumer"]) {
        if (row.dataset[key] !== selected.dataset[key]) visible = false;
      }
    }
    row.classList.toggle("hidden", !visible);
    if (visible) shown += 1;
  }
  const pair = selected ? " in " + selected.dataset.check + ": " + selected.dataset.producer +
    " \u2192 " + selected.dataset.consumer + " (click the cell again to clear)" : "";
  document.getElementById("finding-count").textContent = shown + " shown" + pair;
}

function drawFindings() {
  const root = document.getElementById("finding-table");
  if (!DATA.findings.length) {
    root.append(el("p", {class: "no-findings", text: "None: every result passed or was skipped."}));
    return;
  }
  const rows = DATA.findings.map((f) => {
    const rule = f.rule && DATA.rules[f.rule]
      ? el("a", {class: "rule-link", href: "#rule-" + f.rule, text: f.rule})
      : el("span", {class: "mono", text: f.rule || NONE});
    const repros = el("td", {class: "repros"});
    f.repros.forEach((href, i) => {
      if (i) repros.append(" ");
      repros.append(el("a", {class: "repro", href: href, text: "repro " + (i + 1)}));
    });
    if (!f.repros.length) repros.textContent = NONE;
    const params = el("details", {}, el("summary", {text: "params"}),
                      el("pre", {class: "mono", text: JSON.stringify(f.params, null, 1)}));
    const expectation = f.expectation
      ? el("td", {class: "expectation"}, el("span", {class: "badge xfail", text: "expected"}), " ",
           f.expectation.link ? el("a", {href: f.expectation.link, text: f.expectation.reason})
                              : f.expectation.reason)
      : el("td", {});
    return el("tr", {
      class: "finding" + (f.expectation ? " expected" : ""),
      "data-rule": f.rule || "", "data-outcome": f.outcome, "data-check": f.check,
      "data-producer": name(f.producer), "data-consumer": name(f.consumer), "data-count": f.count,
    },
      el("td", {}, rule), el("td", {text: (DATA.rules[f.rule] || {}).level_text || f.level || NONE}),
      el("td", {text: f.check}),
      el("td", {text: name(f.producer) + " \u2192 " + name(f.consumer)}),
      el("td", {}, el("span", {class: "badge " + f.outcome, text: f.outcome})),
      el("td", {text: f.count}), el("td", {class: "mono", text: f.seen === null ? NONE : f.seen}),
      el("td", {class: "mono", text: f.expected === null ? NONE : f.expected}),
      el("td", {}, el("div", {text: f.message || NONE}), params), repros, expectation);
  });
  const header = ["rule", "level", "check", "producer \u2192 consumer", "outcome", "n", "seen",
                  "expected", "message", "reproducers", "expected failure"];
  root.append(table(header, rows, "findings"));
  document.getElementById("finding-filter").addEventListener("input", applyFilter);
  document.getElementById("hide-expected").addEventListener("change", applyFilter);
  applyFilter();
}

function drawRules() {
  const root = document.getElementById("rule-list");
  for (const [id, rule] of Object.entries(DATA.rules)) {
    root.append(el("div", {class: "rule-entry", id: "rule-" + id, "data-rule": id},
      el("div", {}, el("code", {text: id}), " ",
         el("span", {class: "level", text: rule.level_text || rule.level}),
         el("span", {class: "muted", text: " \u00b7 " + rule.side + " \u00b7 " + rule.spec_file +
                     " \u00a7 " + rule.section + " \u00b7 CAI versions " +
                     (rule.versions.length ? rule.versions.join(", ") : NONE)})),
      el("p", {class: "rule-text", text: rule.text})));
  }
  if (!Object.keys(DATA.rules).length) root.append(el("p", {class: "muted", text: "No rule cited."}));
}

function drawExpectations() {
  const section = document.getElementById("expectations");
  if (!DATA.expectations) { section.remove(); return; }
  const rows = DATA.expectations.map((s) => el("tr", {class: "expectation-entry",
      "data-status": s.status, "data-error": s.error ? "1" : "0"},
    el("td", {class: "mono", text: s.entry.source + ":" + s.entry.index}),
    el("td", {class: "mono", text: s.entry.rule}),
    el("td", {text: s.entry.producer + " \u2192 " + s.entry.consumer + " (" + s.entry.check + ")"}),
    el("td", {}, el("span", {class: "badge " + (s.error ? "fail" : "xfail"), text: s.status})),
    el("td", {text: s.covered}), el("td", {text: s.entry.reason + (s.note ? " [" + s.note + "]" : "")})));
  section.append(table(["entry", "rule", "scope", "status", "covered", "reason"], rows, "expectations"));
}

function drawSkips() {
  const section = document.getElementById("skips");
  const reasons = DATA.skip_reasons || [];
  if (!reasons.length) { section.append(el("p", {class: "muted", text: "Nothing was skipped."})); return; }
  const total = reasons.reduce((n, r) => n + r.count, 0);
  section.append(el("p", {class: "muted", text: total + " skipped result(s), for " + reasons.length +
    " reason(s), most results first; every cell is listed."}));
  const rows = reasons.map((r) => el("tr", {class: "skip-reason"},
    el("td", {text: r.reason || NONE}), el("td", {text: r.count}),
    el("td", {}, r.cells.length === 1 ? el("span", {class: "mono", text: r.cells[0]}) :
      el("details", {}, el("summary", {text: r.cells.length + " cells, e.g. " + r.cells[0]}),
         el("div", {class: "mono", text: r.cells.join(", ")})))));
  section.append(table(["reason", "results", "cells"], rows, "skips"));
}

function flatten(value, prefix, out) {
  for (const [key, inner] of Object.entries(value)) {
    if (inner && typeof inner === "object" && !Array.isArray(inner) && Object.keys(inner).length) {
      flatten(inner, prefix + key + ".", out);
    } else {
      out.push([prefix + key, typeof inner === "string" ? inner : JSON.stringify(inner)]);
    }
  }
  return out;
}

function drawEnvironment() {
  const root = document.getElementById("environment");
  for (const [runId, run] of Object.entries(DATA.runs)) {
    root.append(el("h3", {text: "Run " + runId + " (" + run.results + " results)"}));
    const rows = flatten(run.env, "", []).map(([k, v]) =>
      el("tr", {class: "env"}, el("th", {class: "mono", text: k}), el("td", {class: "mono", text: v})));
    root.append(rows.length ? table(["key", "value"], rows, "environment")
                            : el("p", {class: "muted", text: "No env.json was recorded."}));
  }
}

function drawCatalogue() {
  const section = document.getElementById("catalogue");
  const cat = DATA.catalogue;
  if (!cat) { section.append(el("p", {class: "muted", text: "This report predates the catalogue."})); return; }
  section.append(el("p", {class: "muted", text: cat.groups.length + " group(s), each library's " +
    "most severe first, " +
    cat.summary.must_groups + " at MUST level, " + cat.summary.ambiguous_groups +
    " without a single culprit, " + (cat.summary.unreproduced_groups || 0) +
    " not reproduced when run again."}));
  const again = (r) => r === true ? "yes" : r === false ? "no" : NONE;
  if (!cat.groups.length) return;
  const statuses = DATA.verdict ? DATA.verdict.status : [];
  const words = {new: "failing", expected: "expected", below: "below"};
  const rows = cat.groups.map((g, i) => {
    const repro = g.reproducer.href ? el("a", {href: g.reproducer.href, text: "min"}) : NONE;
    const lib = g.library ? g.library : "? (" + g.why + ")";
    const cond = [g.condition, g.contrast].filter((x) => x).join("; ");
    const sev = g.severity || (g.about_input ? "about the input" : NONE);
    return el("tr", {class: "group", id: "group-" + (i + 1), "data-severity": g.severity || "",
                     "data-status": statuses[i] || ""},
      el("td", {}, el("span", {class: "sev " + (g.severity || "input"), text: sev})),
      el("td", {text: words[statuses[i]] || NONE}),
      el("td", {text: lib}), el("td", {text: g.role || NONE}),
      el("td", {class: "mono", text: g.rule || (g.input_rule ? "given a dict that breaks " +
        g.input_rule : NONE)}), el("td", {text: g.level_text || g.level || NONE}),
      el("td", {text: g.outcome}), el("td", {text: g.count}),
      el("td", {text: again(g.reproduced)}), el("td", {text: g.cells.length}),
      el("td", {text: g.version || NONE}), el("td", {text: cond || NONE}), el("td", {}, repro));
  });
  section.append(table(["severity", "status", "library", "role", "rule", "level", "outcome", "n",
    "again", "cells", "version", "condition", "repro"], rows, "catalogue"));
}

function drawCoverage() {
  const section = document.getElementById("coverage");
  const cov = DATA.coverage;
  if (!cov || !Object.keys(cov.cells).length) {
    section.append(el("p", {class: "muted", text: "No coverage-floor records in this run."})); return;
  }
  const s = cov.summary;
  section.append(el("p", {text: s.required + " required combinations in " + s.cells + " cells; " +
    s.exercised + " exercised, " + s.not_exercised + " not exercised."}));
  for (const [key, c] of Object.entries(cov.cells)) {
    const body = [];
    const labels = Object.entries(c.labels).map(([k, v]) => k + ": " + v.join(", ")).join(" | ");
    body.push(el("p", {class: "muted", text: labels}));
    if (c.problems.length) body.push(table(["combination", "outcome", "rule"], c.problems.map((p) =>
      el("tr", {}, el("td", {class: "mono", text: p.combination}), el("td", {text: p.outcome}),
        el("td", {class: "mono", text: p.rule || NONE}))), "coverage"));
    if (c.skips.length) body.push(table(["skipped", "reason", "combinations"], c.skips.map((k) =>
      el("tr", {}, el("td", {text: k.count}), el("td", {text: k.reason}),
        el("td", {class: "mono", text: k.combinations.join("; ")}))), "coverage"));
    section.append(el("details", {}, el("summary", {text: key + ": " + c.exercised + "/" +
      c.planned + " exercised, " + c.passed + " passed, " + c.not_passed + " not passed, " +
      c.skipped + " skipped"}), ...body));
  }
}

drawSummary();
drawHeatmaps();
drawScores();
drawCatalogue();
drawFindings();
drawCoverage();
drawRules();
drawExpectations();
drawSkips();
drawEnvironment();
document.body.setAttribute("data-rendered", "1");
"""

PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="caiconform $version">
<title>$title</title>
<meta name="description" content="$description">
<style>$css</style>
</head>
<body>
<header>
<h1>$title</h1>
$headline
<p id="summary" class="muted"></p>
<div id="warnings"></div>
<noscript><p class="warning">This page draws the report with JavaScript, which is off.
matrix.md and matrix.json beside this file hold the same data.</p></noscript>
<nav><a href="#verdict">What to do</a>$libraries_nav<a href="#matrix">Matrix</a><a href="#scores">Scores</a><a href="#catalogue">Catalogue</a><a href="#findings">Findings</a><a href="#coverage">Coverage</a><a href="#rules">Rules</a><a href="#skips">Skipped</a><a href="#environment">Environment</a></nav>
</header>
$verdict
$libraries
$migration
$releases
<section id="matrix"><h2>Matrix</h2>
<div class="legend"><span>0%</span><span class="bar"></span><span>100% pass (of results not skipped);
grey: all skipped; hatched: not run. Click a cell to list its findings.</span></div>
<div id="heatmaps"></div></section>
<section id="scores"><h2>Scores</h2><div id="score-table"></div></section>
<section id="catalogue"><h2>Catalogue of non-conformances</h2></section>
<section id="findings"><h2>Findings</h2>
<div class="filter"><input id="finding-filter" type="search" placeholder="filter by rule, library, message">
<label><input id="hide-expected" type="checkbox"> hide expected failures</label>
<span id="finding-count" class="muted"></span></div>
<div id="finding-table"></div></section>
<section id="coverage"><h2>Coverage floor</h2></section>
<section id="expectations"><h2>Expectations</h2></section>
<section id="rules"><h2>Rules cited</h2><div id="rule-list"></div></section>
<section id="skips"><h2>Skipped</h2></section>
<section id="environment"><h2>Environment</h2></section>
<script id="cai-data" type="application/json">$data</script>
<script>$js</script>
</body>
</html>
""")


def embed_json(value: Any) -> str:
    """JSON safe inside a `<script>` element: `<`, `>` and `&` are escaped as \\u sequences, so
    no journal text can close the element or start a comment."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


#: groups at or above --fail-on listed per library at the top (the rest: counted, linked)
MAX_LINES_PER_LIBRARY = 12


def _group_item(group: dict[str, Any], index: int, status: str | None) -> str:
    from caiconform.results.wording import group_phrase, severity_word

    severity = html.escape(severity_word(group))
    css = html.escape(str(group.get("severity") or "input"))
    text = group_phrase(group, library=False)
    if group.get("condition"):
        text += f"; when {group['condition']}"
    mark = " · expected" if status == "expected" else ""
    return (
        f'<li class="defect" data-status="{html.escape(status or "")}">'
        f'<span class="sev {css}">{severity}</span> '
        f'<a href="#group-{index + 1}">{html.escape(text)}</a>{mark}</li>'
    )


def _severity_counts(groups: list[dict[str, Any]]) -> str:
    from caiconform.results.severity import SEVERITIES

    counts = Counter(str(g.get("severity")) for g in groups)
    return ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts.get(s))


def render_verdict(matrix: dict[str, Any]) -> tuple[str, str]:
    """(the headline paragraph, the "what to do" section) as HTML, escaped: the verdict's
    headline, then per library its defects most severe first (those at or above --fail-on
    one line each, linked to their catalogue rows; the rest counted), and a link to the
    library's Markdown page."""
    from caiconform.report.markdown import library_page
    from caiconform.results.wording import harness_lines, is_harness

    verdict = matrix.get("verdict") or {}
    headline = verdict.get("headline") or ""
    css = "headline" if verdict.get("ok", True) else "headline fail"
    top = f'<p id="headline" class="{css}">{html.escape(headline)}</p>' if headline else ""
    run_state = (matrix.get("run_state") or {}).get("line")
    if run_state:
        top = f'<p id="run-state" class="headline fail">{html.escape(run_state)}</p>\n{top}'
    statuses = verdict.get("status") or []
    groups = (matrix.get("catalogue") or {}).get("groups") or []
    by_library: dict[str | None, list[int]] = {}
    about_input = []  # information about the input: no one's defect, listed apart
    harness = []  # caiconform's own defects: charged to no library, listed first
    for index, group in enumerate(groups):
        if group.get("about_input"):
            about_input.append(index)
        elif is_harness(group):
            harness.append(index)
        elif group.get("folded_into"):
            continue  # one more rule of its lead's bug, listed with the lead
        else:
            by_library.setdefault(group.get("library"), []).append(index)
    parts = ['<section id="verdict"><h2>What to do</h2>']
    parts += [f'<p class="muted">{html.escape(e)}</p>' for e in verdict.get("entry_errors") or []]
    if harness:
        parts.append(
            '<div class="harness"><h3>caiconform\'s own defects (harness, charged to no '
            "library)</h3><p>An adapter made or read other memory than its library's own API "
            "would (selfcheck.json): file these against caiconform.</p><ul>"
        )
        parts += [
            f"<li>{html.escape(line)}</li>" for line in harness_lines(groups[i] for i in harness)
        ]
        parts.append("</ul></div>")
    if not groups:
        parts.append('<p class="muted">No defect: every result passed or was skipped.</p>')
    fail_on = ",".join(verdict.get("fail_on") or []) or "none"
    ordered = sorted(by_library.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))
    for library, indices in ordered:
        status = [statuses[i] if i < len(statuses) else None for i in indices]
        listed = [i for i, s in zip(indices, status, strict=True) if s in ("new", "expected")]
        below = [
            groups[i] for i, s in zip(indices, status, strict=True) if s not in ("new", "expected")
        ]
        failing = sum(s == "new" for s in status)
        name = html.escape(library) if library else "No single culprit"
        page = html.escape(library_page(library))
        parts.append(
            f'<div class="library-verdict" data-library="{html.escape(library or "")}">'
            f"<h3>{name}</h3><p>{len(indices)} defect(s) "
            f"({html.escape(_severity_counts([groups[i] for i in indices]))}); "
            f"<b>{failing} failing</b> at --fail-on {html.escape(fail_on)} · "
            f'<a href="{page}">all, with details</a></p><ul>'
        )
        parts += [
            _group_item(groups[i], i, statuses[i] if i < len(statuses) else None)
            for i in listed[:MAX_LINES_PER_LIBRARY]
        ]
        more = len(listed) - MAX_LINES_PER_LIBRARY
        if more > 0:
            parts.append(
                f'<li>… and {more} more at or above --fail-on: <a href="#catalogue">in the '
                f'catalogue</a>, <a href="{page}">{page}</a></li>'
            )
        if below:
            parts.append(
                f"<li>not failing (below --fail-on): {html.escape(_severity_counts(below))}"
                f' · <a href="{page}">{page}</a></li>'
            )
        parts.append("</ul></div>")
    if about_input:
        parts.append(
            '<div class="about-input"><h3>About the inputs (no library\'s defect)</h3><p>Dicts '
            "that break a rule the dict cannot show (memory a consumer cannot check from the "
            "dict, a handle that is no stream): what a consumer did with them fails no one.</p>"
            "<ul>"
        )
        from caiconform.results.wording import about_input_lines

        lines = about_input_lines(groups[i] for i in about_input)
        parts += [f"<li>{html.escape(line)}</li>" for line in lines]
        parts.append("</ul></div>")
    parts.append("</section>")
    return top, "\n".join(parts)


def render_migration(matrix: dict[str, Any]) -> str:
    """The "numba-cuda and numba-cuda-mlir" section (`report.migration`) as escaped HTML: the
    defect groups of a twin cell pair present with one implementation only; "" unless both
    implementations ran a pair."""
    rows = matrix.get("migration")
    if rows is None:
        return ""
    parts = [
        '<section id="migration"><h2>numba-cuda and numba-cuda-mlir</h2><p class="muted">'
        "Cells that differ only by the Numba implementation, both run: the defects found with "
        "one and not the other.</p>"
    ]
    if not rows:
        parts.append("<p>None: both implementations showed the same defects in every pair.</p>")
    else:
        header = ("only with", "numba-cuda cell", "numba-cuda-mlir cell", "library", "role")
        header += ("rule", "level", "outcome")
        parts.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>")
        for r in rows:
            values = (r["only_in"], r["numba_cell"], r["mlir_cell"], r["library"], r["role"])
            values += (r["rule"] or r["input_rule"], r["level_text"], r["outcome"])
            cells = "".join(f"<td>{html.escape(str(v or '-'))}</td>" for v in values)
            parts.append(f"<tr>{cells}</tr>")
        parts.append("</table>")
    parts.append("</section>")
    return "\n".join(parts)


def render_libraries(records: Mapping[str, Mapping[str, Any]]) -> str:
    """The "Libraries" section: each library's conformance record page (`report.conformance`,
    `libraries/<name>.html`, its Markdown and JSON beside it), with its latest release and how
    many of its examples passed per protocol and role; "" without records."""
    from caiconform.report.conformance_pages import record_file, summary_text
    from caiconform.report.markdown import LIBRARIES_DIR
    from caiconform.spec.protocols import get

    if not records:
        return ""
    parts = [
        '<section id="libraries"><h2>Libraries</h2><p class="muted">Each library\'s '
        "conformance record: per protocol and role, the rules its examples exercised, passed "
        "and failed, and the findings whose culprit it is, with their triage.</p><ul>"
    ]
    for library, record in records.items():
        latest = next((r for r in reversed(record["releases"]) if r), None)
        links = " · ".join(
            f'<a href="{html.escape(LIBRARIES_DIR + "/" + quote(record_file(library, suffix)))}"'
            f">{word}</a>"
            for suffix, word in ((".md", "Markdown"), (".json", "JSON"))
        )
        href = html.escape(f"{LIBRARIES_DIR}/{quote(record_file(library, '.html'))}")
        version = f" {html.escape(latest['version'])}" if latest and latest["version"] else ""
        roles = "; ".join(
            f"{get(p['protocol']).title} as {role['role']}: {summary_text(role['measured'][-1])}"
            for p in record["protocols"]
            for role in p["roles"]
        )
        parts.append(
            f'<li class="library-record" data-library="{html.escape(library)}">'
            f'<a href="{href}">{html.escape(library)}</a>{version} ({links}): '
            f"{len(record['findings'])} finding(s). "
            f'<span class="muted">{html.escape(roles)}</span></li>'
        )
    parts.append("</ul></section>")
    return "\n".join(parts)


def render_releases(charts: list[dict[str, Any]] | None) -> str:
    """The "across releases" sections (`report.releases`), one per chart, as escaped HTML: per
    finding, whether each release of the charted library showed it, since when and the release
    that fixed it; "" without a chart."""
    return "\n".join(_releases_section(chart) for chart in charts or [])


def _releases_section(chart: dict[str, Any]) -> str:
    from caiconform.report.releases import MARKS, listed_rows

    library = html.escape(str(chart.get("library")))
    versions = [str(v) for v in chart.get("versions") or []]
    parts = [
        f'<section class="releases" id="releases-{library}"><h2>{library} across releases</h2>'
        '<p class="muted">'
        "Each release run in an environment of its own, the other libraries fixed. ✓ found, — "
        "its cells ran and it was not found, not run: none of its cells ran, part run: some "
        "did.</p>",
        *(
            f'<p class="muted">{html.escape(str(r.get("version")))} would not load: '
            + html.escape("; ".join(f"{a}: {why}" for a, why in r["unavailable"].items()))
            + "</p>"
            for r in chart.get("releases") or []
            if r.get("unavailable")
        ),
        "<table><tr>"
        + "".join(
            f"<th>{html.escape(h)}</th>"
            for h in ("finding", "severity", "rule", *versions, "since", "fixed in")
        )
        + "</tr>",
    ]
    rows = listed_rows(chart)
    for row in rows:
        finding = f"{row.get('library') or '(ambiguous)'} ({row.get('role')}) {row.get('outcome')}"
        severity = "about input" if row.get("about_input") else row.get("severity")
        marks = [MARKS.get(s, s) for s in row.get("statuses") or []]
        values = (finding, severity, row.get("rule"), *marks, row.get("since"))
        values += (row.get("fixed_in"),)
        cells = "".join(f"<td>{html.escape(str(v or '-'))}</td>" for v in values)
        parts.append(f"<tr>{cells}</tr>")
    parts.append("</table>")
    steady = len(chart.get("rows") or []) - len(rows)
    if steady:
        parts.append(
            f'<p class="muted">Not listed: {steady} finding(s) of the other libraries, found in '
            "every release (releases.json lists every finding).</p>"
        )
    parts.append("</section>")
    return "\n".join(parts)


def releases_page(chart: dict[str, Any]) -> str:
    """releases.html: the across-releases section as a page of its own (no script, no
    network), in the report's style."""
    title = html.escape(f"{chart.get('library')} across releases")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">\n"
        f"<title>{title}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f"{_releases_section(chart)}\n</body>\n</html>\n"
    )


def render_html(
    matrix: dict[str, Any],
    title: str = "caiconform report",
    records: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The whole `index.html` text; with `records` (`report.conformance`), a section linking
    each library's record page."""
    from caiconform import __version__

    headline, verdict = render_verdict(matrix)
    return PAGE.substitute(
        version=html.escape(__version__),
        title=html.escape(title),
        description=html.escape(
            (matrix.get("run_state") or {}).get("line")
            or (matrix.get("verdict") or {}).get("headline")
            or ""
        ),
        headline=headline,
        verdict=verdict,
        libraries=render_libraries(records or {}),
        libraries_nav='<a href="#libraries">Libraries</a>' if records else "",
        migration=render_migration(matrix),
        releases=render_releases(matrix.get("releases")),
        css=CSS,
        data=embed_json(matrix),
        js=JS,
    )
