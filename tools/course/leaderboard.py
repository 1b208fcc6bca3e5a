"""`course leaderboard <paths...>`: leaderboards from graded benchmark runs (docs/leaderboards.md).

`course grade` times a student's day only after all of that day's tests passed, judges every
timed row itself against the reference solution's rows and physical floors (grade.judge_rows),
and writes what it decided to <grade-out>/students/<student>/bench-dNN.json: Google Benchmark's
shape, a row that may not be ranked carrying the reason as its error, "course_judged": "grader"
in its context. The student's program never writes there (its sandbox cannot see the grader's
output). This module reads those files (or any files and folders of them: in a folder, the
files named bench-dNN.json), ranks the rows the grader ranked, says why every other one is not
ranked, and writes three files:

  leaderboard.md    a table per board, then the students not ranked and why
  leaderboard.html  the same, one self-contained page (inline CSS, no external anything)
  leaderboard.json  the boards for plotting tools (format: docs/leaderboards.md)

A board is one (lab, GPU model, benchmark); the lab's headline benchmark (counter key = 1) is
its leaderboard, the other rows have boards of their own. A student appears once per board,
with the best (lowest) median of their eligible runs; ties go to the earlier run.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import html
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from . import bench as B
from . import results as R

EXIT_OK, EXIT_NOTHING_RANKED, EXIT_USAGE = 0, 1, 2

OUTPUT_NAMES = ("leaderboard.md", "leaderboard.html", "leaderboard.json")

# No kernel moves the bytes it must move faster than the device's copy rate measured on the same
# GPU (copy_ceiling_GBps: a large device-to-device copy, bytes read + written per second). A
# read-only kernel legitimately reaches about 103% of it (reads alone stream slightly better
# than a read+write mix), and the measurement has a few percent of noise; 125% leaves a wide
# margin above that. A row above it did not do the work it claims (a kernel that computes once
# and then returns at once, a timing bug), so it is rejected rather than ranked.
MAX_PCT_OF_COPY = 125.0

MAX_FILE_BYTES = 64 << 20  # a Google Benchmark file of a day is a few kB

REASON_ERROR = "output was wrong, not timed"
REASON_TESTS = "the day's tests did not all pass in the same grading run"
REASON_RECHECK = "the timed output was not re-checked"
REASON_NO_TIME = "no valid time (median_us missing or not positive)"
REASON_IMPOSSIBLE = "impossible: faster than the physical floor"
REASON_NOT_JUDGED = ("not judged by the grader: a time reported by the student's own program is "
                     "never ranked (grade the class with course grade)")
JUDGED = "grader"  # context course_judged of the files course grade writes
# In a folder, only the grader's benchmark files are read: students/<student>/bench-dNN.json,
# never what sits in a student's sandbox, raw output or the reference's folder.
BENCH_FILE = re.compile(r"^bench-d\d\d\.json$")
SKIPPED_FOLDERS = {"sandbox", "raw", "reference", "test-results", "build", "ctest", "cache"}


# ------------------------------------------------------------------------------- entries


@dataclass
class Entry:
    """One timed row of one graded run: a candidate for the board of (lab, gpu, benchmark)."""

    student: str
    lab: str
    gpu: str
    benchmark: str
    headline: bool  # the run's headline row (key = 1, or its first row when none has key)
    run: str  # the grading run's time, ISO-8601 UTC ("" when the file does not say)
    path: str
    median_us: Optional[float] = None
    gbs: Optional[float] = None
    pct_copy: Optional[float] = None
    tflops: Optional[float] = None
    reasons: List[str] = field(default_factory=list)  # why it may not be ranked ([]: eligible)

    @property
    def eligible(self) -> bool:
        return not self.reasons

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    @property
    def run_id(self) -> str:
        """The same grading run read from two copies of its file counts once."""
        return f"run:{self.run}" if self.run else f"file:{self.path}"


def clean_text(value: object) -> str:
    """A string for people: no control characters (a terminal escape in a student id must not
    reach the terminal), no lone surrogates (they cannot be written as UTF-8)."""
    text = str(value).encode("utf-8", "replace").decode("utf-8")
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", text).strip()


def normalize_lab(text: str) -> str:
    """d02 from d02, d2, 02, 2, day2 or d02_coalescing; "" when it is none of these."""
    m = re.match(r"^(?:day|d)?0*(\d{1,3})(?:_\w*)?$", text.strip(), re.I)
    return f"d{int(m.group(1)):02d}" if m else ""


def run_time(iso: str) -> float:
    """Seconds since the epoch of an ISO-8601 time (UTC when no zone is given); +inf when it is
    not one, so that a run of unknown time never wins a tie."""
    text = iso.strip()
    if not text:
        return math.inf
    try:
        t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        m = re.match(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d))?", text)
        if not m:
            return math.inf
        try:
            t = datetime.datetime(*(int(g or 0) for g in m.groups()))
        except ValueError:
            return math.inf
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.timestamp()


def _finite(v: Optional[float]) -> bool:
    return v is not None and math.isfinite(v)


def _gpu_of(context: Dict[str, str]) -> str:
    gpu = clean_text(context.get("course_gpu", ""))
    if not gpu:  # the harness's "NVIDIA H100 80GB HBM3 (sm_90): 132 SMs, ..."
        gpu = clean_text(context.get("device", "")).split(" (sm_")[0].split(":")[0].strip()
    return gpu or "unknown GPU"


def _fmt_value(v: str) -> str:
    return repr(clean_text(v)) if v else "missing"


def judge(row: B.Row, raw: dict, context: Dict[str, str], ceiling: Optional[float]) -> List[str]:
    """Every reason why this timed row may not be ranked ([] when it may)."""
    if context.get("course_judged") != JUDGED:
        return [REASON_NOT_JUDGED]
    if raw.get("error_occurred"):  # the grader's reason, verbatim
        return [clean_text(raw.get("error_message", "") or row.error) or REASON_ERROR]
    reasons = []
    if raw.get("error_occurred"):
        message = clean_text(raw.get("error_message", "") or row.error)
        reasons.append(REASON_ERROR + (f" ({message})" if message else ""))
    tests = context.get("course_tests", "")
    if tests != "passed":
        reasons.append(f"{REASON_TESTS} (course_tests: {_fmt_value(tests)})")

    if row.counters.get("recheck") != 1:
        reasons.append(REASON_RECHECK)
    median = row.median_us
    if not _finite(median) or median <= 0:
        reasons.append(REASON_NO_TIME)
        return reasons
    floor = row.counters.get("floor_us")
    pct = row.pct_copy
    if pct is None and _finite(row.gbs) and _finite(ceiling) and ceiling > 0:
        pct = row.gbs / ceiling * 100.0
    if _finite(floor) and floor > 0 and median < floor:
        reasons.append(f"{REASON_IMPOSSIBLE} ({median:.3g} µs measured, the floor is "
                       f"{floor:.3g} µs: the fewest bytes it must move at the measured copy rate)")
    elif pct is not None and not math.isnan(pct) and pct > MAX_PCT_OF_COPY:
        reasons.append(f"{REASON_IMPOSSIBLE} ({pct:.0f}% of the device's measured copy rate; "
                       f"no kernel exceeds {MAX_PCT_OF_COPY:.0f}%)")
    return reasons


# ------------------------------------------------------------------------------- reading


def find_json(paths: Iterable[str]) -> Tuple[List[Tuple[str, str]], List[str]]:
    """The JSON files to read: (path, folder it was found in, "" when named itself), and the
    paths that could not be searched, in words. Folders are searched recursively for the
    grader's bench-dNN.json files (not in a student's sandbox or raw output)."""
    found: List[Tuple[str, str]] = []
    problems: List[str] = []
    seen = set()

    def add(path: str, folder: str) -> None:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            found.append((path, folder))

    for p in paths:
        if os.path.isdir(p):
            def failed(e: OSError, top: str = p) -> None:
                problems.append(f"{e.filename or top}: cannot search this folder ({e.strerror})")

            for root, dirs, files in os.walk(p, onerror=failed):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
                for name in sorted(files):
                    if BENCH_FILE.match(name):
                        add(os.path.join(root, name), p)
        elif os.path.exists(p):
            add(p, "")
        else:
            problems.append(f"{p}: no such file or folder")
    return found, problems


@dataclass
class _Foreign:
    """Valid JSON found in a folder that is not Google Benchmark output (the grader's own
    grade.json, say): reported once per folder, by name, rather than once per file."""

    folder: str
    paths: List[str] = field(default_factory=list)


def read_file(path: str) -> Tuple[List[Entry], List[str], bool]:
    """The entries of one graded benchmark file, the problems found in it, and whether it was
    not Google Benchmark output at all (valid JSON of something else)."""
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return [], [f"{path}: {os.path.getsize(path) >> 20} MiB, too large for a benchmark "
                        "file; skipped"], False
        doc = R.read_json(path)
    except OSError as e:
        return [], [f"{path}: cannot read it ({e.strerror})"], False
    except RecursionError:
        return [], [f"{path} is not valid JSON (nested too deeply)"], False
    except ValueError as e:
        message = str(e)
        if message.endswith("is not a JSON object"):
            return [], [f"{path} is not a graded benchmark run: not Google Benchmark output "
                        "(not a JSON object)"], True
        return [], [message], False
    benchmarks = doc.get("benchmarks")
    context = doc.get("context", {})
    if not isinstance(benchmarks, list) or not isinstance(context, dict):
        return [], [f"{path} is not a graded benchmark run: not Google Benchmark output "
                    "(no \"benchmarks\" list)"], True
    if not clean_text(context.get("course_student", "")):
        return [], [f"{path} is not a graded benchmark run: no course_student in its "
                    "context"], False
    problems = []
    raws = []
    for i, b in enumerate(benchmarks):
        if isinstance(b, dict) and "name" in b:
            raws.append(b)
        else:
            problems.append(f"{path}: benchmark entry {i + 1} has no name; that entry is skipped")
    try:
        run = B.parse({"benchmarks": raws, "context": context})
    except (ValueError, TypeError) as e:
        return [], problems + [f"{path}: cannot read its benchmarks ({e})"], False
    raws = [b for b in raws if b.get("run_type", "iteration") == "iteration"]  # as B.parse does
    ctx = run.context
    student = clean_text(ctx["course_student"])
    lab = normalize_lab(ctx.get("course_lab", ""))
    if not lab:
        m = re.search(r"bench-(d\d+)\.json$", os.path.basename(path))
        lab = normalize_lab(m.group(1)) if m else ""
    if not lab:
        return [], problems + [f"{path} is not a graded benchmark run: no course_lab in its "
                               "context"], False
    if not run.rows:
        return [], problems + [f"{path} ({student}, {lab}): no benchmark was timed in it"], False
    heads = [r for r in run.rows if r.key]
    headline = (heads[0] if heads else run.rows[0]).name
    gpu = _gpu_of(ctx)
    when = clean_text(ctx.get("course_run", ""))
    entries = []
    for row, raw in zip(run.rows, raws):
        entries.append(Entry(
            student=student, lab=lab, gpu=gpu, benchmark=clean_text(row.name),
            headline=row.name == headline, run=when, path=path, median_us=row.median_us,
            gbs=row.gbs, pct_copy=row.pct_copy, tflops=row.tflops,
            reasons=judge(row, raw, ctx, run.ceiling_gbs)))
    return entries, problems, False


def read_all(found: Sequence[Tuple[str, str]]) -> Tuple[List[Entry], List[str]]:
    entries: List[Entry] = []
    problems: List[str] = []
    foreign: Dict[str, _Foreign] = {}
    for path, folder in found:
        got, said, not_benchmark = read_file(path)
        entries += got
        if not_benchmark and folder:
            foreign.setdefault(folder, _Foreign(folder)).paths.append(path)
        else:
            problems += said
    for f in foreign.values():
        if len(f.paths) == 1:
            problems.append(f"{f.paths[0]} is not a graded benchmark run: not Google Benchmark "
                            "output (no \"benchmarks\" list); skipped")
            continue
        by_name: Dict[str, List[str]] = {}
        for p in f.paths:
            by_name.setdefault(os.path.basename(p), []).append(p)
        names = [f"{n} ({len(ps)})" if len(ps) > 1 else os.path.relpath(ps[0], f.folder)
                 for n, ps in sorted(by_name.items(), key=lambda x: (-len(x[1]), x[0]))]
        more = f", and {len(names) - 20} more names" if len(names) > 20 else ""
        problems.append(f"{len(f.paths)} other JSON files under {f.folder} are not Google "
                        f"Benchmark output and were skipped: {', '.join(names[:20])}{more}")
    return entries, problems


def collect(paths: Iterable[str]) -> Tuple[List[Entry], List[str]]:
    """Every timed row of the graded benchmark files among `paths` (files, and folders searched
    recursively for *.json), each with its reasons for not being ranked (Entry.eligible), and
    the problems in words: files that are not valid JSON, not Google Benchmark output, not a
    graded run, or unreadable. Such a file is skipped; nothing else is lost."""
    found, problems = find_json(paths)
    entries, more = read_all(found)
    return entries, problems + more


# ------------------------------------------------------------------------------- boards


@dataclass
class Ranked:
    rank: int
    student: str
    median_us: float
    gbs: Optional[float]
    pct_copy: Optional[float]
    tflops: Optional[float]
    runs: int
    run: str

    def to_json(self) -> dict:
        def num(v: Optional[float]) -> Optional[float]:  # strict JSON has no NaN
            return v if _finite(v) else None

        return {"rank": self.rank, "student": self.student, "median_us": num(self.median_us),
                "GB/s": num(self.gbs), "%copy": num(self.pct_copy), "TFLOP/s": num(self.tflops),
                "runs": self.runs, "run": self.run}


@dataclass
class Board:
    lab: str
    gpu: str
    benchmark: str
    headline: bool
    entries: List[Ranked] = field(default_factory=list)
    rejected: List[Tuple[str, str]] = field(default_factory=list)  # students not ranked, why
    # Runs not counted of students who are ranked by another run (shown, not in the JSON).
    not_counted: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def has_tflops(self) -> bool:
        return any(e.tflops is not None for e in self.entries)

    def to_json(self) -> dict:
        return {"lab": self.lab, "gpu": self.gpu, "benchmark": self.benchmark,
                "headline": self.headline, "entries": [e.to_json() for e in self.entries],
                "rejected": [{"student": s, "reason": r} for s, r in self.rejected]}


def _reasons_of(runs: List[Entry]) -> str:
    """The reasons of a student's rejected runs of one benchmark, each once."""
    distinct: List[str] = []
    for e in runs:
        if e.reason not in distinct:
            distinct.append(e.reason)
    ids = {e.run_id for e in runs}
    text = "; ".join(distinct)
    return text if len(ids) == 1 else f"{len(ids)} runs: {text}"


def _order(e: Entry) -> tuple:
    return (e.median_us, run_time(e.run), e.run, e.path)


def build_boards(entries: Iterable[Entry], lab: str = "", gpu: str = "") -> List[Board]:
    """One board per (lab, GPU model, benchmark), filtered by lab (dNN) and by a substring of
    the GPU model (any case); headline boards first within a lab and GPU."""
    groups: Dict[Tuple[str, str, str], List[Entry]] = {}
    for e in entries:
        if lab and e.lab != lab:
            continue
        if gpu and gpu.lower() not in e.gpu.lower():
            continue
        groups.setdefault((e.lab, e.gpu, e.benchmark), []).append(e)
    boards = []
    for (b_lab, b_gpu, name), group in groups.items():
        board = Board(b_lab, b_gpu, name, headline=any(e.headline for e in group))
        by_student: Dict[str, List[Entry]] = {}
        for e in group:
            by_student.setdefault(e.student, []).append(e)
        best: List[Tuple[Entry, int]] = []
        for student, runs in by_student.items():
            ok = [e for e in runs if e.eligible]
            bad = [e for e in runs if not e.eligible]
            if ok:
                best.append((min(ok, key=_order), len({e.run_id for e in ok})))
                if bad:
                    board.not_counted.append((student, _reasons_of(bad)))
            else:
                board.rejected.append((student, _reasons_of(bad)))
        best.sort(key=lambda x: _order(x[0]) + (x[0].student,))
        board.entries = [Ranked(i + 1, e.student, e.median_us, e.gbs, e.pct_copy, e.tflops, n,
                                e.run) for i, (e, n) in enumerate(best)]
        board.rejected.sort()
        board.not_counted.sort()
        boards.append(board)
    boards.sort(key=lambda b: (b.lab, b.gpu, not b.headline, b.benchmark))
    return boards


# ------------------------------------------------------------------------------- formats


def fmt_us(v: Optional[float]) -> str:
    if not _finite(v):
        return "-"
    return f"{v:.3f}" if v < 10 else f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 1000 \
        else f"{v:.0f}"


def fmt_num(v: Optional[float], digits: int) -> str:
    return "-" if not _finite(v) else f"{v:.{digits}f}"


def fmt_gbs(v: Optional[float]) -> str:
    return fmt_num(v, 0 if _finite(v) and v >= 100 else 1)


def md_cell(text: str) -> str:
    """A Markdown table cell showing `text` literally: no table break (|), no HTML (<, &), no
    emphasis, links or code."""
    return re.sub(r"([\\|<>&*\[\]`])", r"\\\1", clean_text(text))


def title(board: Board) -> str:
    return f"{board.lab} on {board.gpu}: {board.benchmark}"


def markdown_board(board: Board, level: int = 2) -> List[str]:
    h = "#" * level
    out = [f"{h} {md_cell(title(board))}" + (" (headline)" if board.headline else ""), ""]
    if board.entries:
        cols = ["rank", "student", "median µs", "GB/s", "% of copy ceiling"]
        cols += ["TFLOP/s"] if board.has_tflops else []
        cols += ["runs"]
        out += ["| " + " | ".join(cols) + " |",
                "|" + "|".join("---" if c == "student" else "---:" for c in cols) + "|"]
        for e in board.entries:
            cells = [str(e.rank), md_cell(e.student), fmt_us(e.median_us), fmt_gbs(e.gbs),
                     fmt_num(e.pct_copy, 1)]
            cells += [fmt_num(e.tflops, 2)] if board.has_tflops else []
            cells += [str(e.runs)]
            out.append("| " + " | ".join(cells) + " |")
    else:
        out.append("No eligible run.")
    if board.rejected:
        out += ["", f"{h}# Not ranked" if level < 6 else "**Not ranked**", "",
                "| student | reason |", "|---|---|"]
        out += [f"| {md_cell(s)} | {md_cell(r)} |" for s, r in board.rejected]
    if board.not_counted:
        out += ["", "Runs not counted (the student is ranked by another run):", ""]
        out += [f"- {md_cell(s)}: {md_cell(r)}" for s, r in board.not_counted]
    return out + [""]


def markdown(boards: List[Board], problems: List[str], generated: str,
             headline_only: bool = False) -> str:
    out = ["# Leaderboards", "",
           f"Generated {generated}. Only runs that passed every rule enter a board "
           "(docs/leaderboards.md): the day's tests passed in the same grading run, judged by "
           "the grader, the timed outputs re-checked, a time above the physical floor.", ""]
    shown = [b for b in boards if b.headline or not headline_only]
    for b in [b for b in shown if b.headline] + [b for b in shown if not b.headline]:
        out += markdown_board(b)
    if problems:
        out += ["## Problems (files skipped)", ""]
        out += [f"- {md_cell(p)}" for p in problems]
        out.append("")
    return "\n".join(out)


_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;
max-width:68em;padding:0 1em;color:#1d1f23;background:#fff}
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ccd}
h3{font-size:1.05em}code{font:0.95em ui-monospace,Menlo,Consolas,monospace}
table{border-collapse:collapse;margin:0.5em 0 1em}
th,td{padding:0.25em 0.7em;border-bottom:1px solid #e3e5ea;text-align:right;vertical-align:top}
th{background:#f3f4f7;cursor:pointer;user-select:none}
th,td{white-space:nowrap}td.s,th.s,td.r,th.r{text-align:left}
td.s,td.r{white-space:normal;overflow-wrap:anywhere}td.r{max-width:40em}
tr.first td{font-weight:600}
.bar{display:inline-block;height:0.6em;background:#6a8fd8;margin-right:0.4em;vertical-align:middle}
.rejected{background:#fbf6ee;border-left:4px solid #d9a441;padding:0.2em 1em;margin:0.5em 0 1em}
.note,.problems li{color:#555}nav li{margin:0.15em 0}
details{margin:0.5em 0 1em}summary{cursor:pointer;font-weight:600}
@media (prefers-color-scheme:dark){body{background:#15171b;color:#e2e4e8}
th{background:#23262c}th,td{border-color:#30343b}.rejected{background:#2a2418}
.note,.problems li{color:#aaa}a{color:#8fb3ff}}
"""

# Sorts a table by the column whose header is clicked (numbers by their data-v). Every entry is
# in the HTML already: the page reads the same without JavaScript. Only this exact script may
# run (the page's Content-Security-Policy names its hash).
_SCRIPT = """
document.documentElement.setAttribute("data-sortable", "1");
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var up = th.getAttribute("data-dir") !== "up";
      th.setAttribute("data-dir", up ? "up" : "down");
      rows.sort(function (a, b) {
        var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
        var r = (x !== null && y !== null) ? parseFloat(x) - parseFloat(y)
                : a.cells[col].textContent.localeCompare(b.cells[col].textContent);
        return up ? r : -r;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def esc(text: object) -> str:
    return html.escape(clean_text(text), quote=True)


def _slug(board: Board) -> str:
    raw = f"{board.lab}-{board.gpu}-{board.benchmark}"
    return re.sub(r"[^A-Za-z0-9]+", "-", raw).strip("-").lower() or "board"


def _num_td(v: Optional[float], text: str) -> str:
    if not _finite(v):
        return f'<td data-v="-1">{esc(text)}</td>'
    return f'<td data-v="{v!r}">{esc(text)}</td>'


def html_board(board: Board, slug: str, level: int) -> List[str]:
    h = f"h{level}"
    out = [f'<section class="board" id="{esc(slug)}">',
           f"<{h}>{esc(title(board))}{' (headline)' if board.headline else ''}</{h}>"]
    if board.entries:
        cols = ["rank", "student", "median µs", "GB/s", "% of copy ceiling"]
        cols += ["TFLOP/s"] if board.has_tflops else []
        cols += ["runs", "best run"]
        out.append('<table class="sortable"><thead><tr>' + "".join(
            f'<th{" class=s" if c == "student" else ""} scope="col">{esc(c)}</th>'
            for c in cols) + "</tr></thead><tbody>")
        for e in board.entries:
            pct = e.pct_copy
            bar = (f'<span class="bar" style="width:{min(max(pct, 0.0), 100.0) * 0.6:.1f}px">'
                   "</span>" if _finite(pct) else "")
            cells = [f'<td data-v="{e.rank}">{e.rank}</td>', f'<td class="s">{esc(e.student)}</td>',
                     _num_td(e.median_us, fmt_us(e.median_us)), _num_td(e.gbs, fmt_gbs(e.gbs)),
                     (f'<td data-v="{pct!r}">{bar}{esc(fmt_num(pct, 1))}</td>' if _finite(pct)
                      else '<td data-v="-1">-</td>')]
            if board.has_tflops:
                cells.append(_num_td(e.tflops, fmt_num(e.tflops, 2)))
            cells += [f'<td data-v="{e.runs}">{e.runs}</td>', f'<td>{esc(e.run)}</td>']
            out.append(f'<tr{" class=first" if e.rank == 1 else ""}>' + "".join(cells) + "</tr>")
        out.append("</tbody></table>")
    else:
        out.append('<p class="note">No eligible run.</p>')
    if board.rejected:
        out += ['<div class="rejected">', f"<h{level + 1}>Not ranked</h{level + 1}>",
                '<table><thead><tr><th class="s" scope="col">student</th>'
                '<th class="r" scope="col">reason</th></tr></thead><tbody>']
        out += [f'<tr><td class="s">{esc(s)}</td><td class="r">{esc(r)}</td></tr>'
                for s, r in board.rejected]
        out += ["</tbody></table>", "</div>"]
    if board.not_counted:
        out.append('<p class="note">Runs not counted (the student is ranked by another run):</p>'
                   '<ul class="note">')
        out += [f"<li>{esc(s)}: {esc(r)}</li>" for s, r in board.not_counted]
        out.append("</ul>")
    return out + ["</section>"]


def render_html(boards: List[Board], problems: List[str], generated: str) -> str:
    script_hash = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode()
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    slugs: Dict[int, str] = {}
    used: Dict[str, int] = {}
    for i, b in enumerate(boards):
        s = _slug(b)
        used[s] = used.get(s, 0) + 1
        slugs[i] = s if used[s] == 1 else f"{s}-{used[s]}"
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>Leaderboards</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
           "<h1>Leaderboards</h1>",
           f'<p class="note">Generated {esc(generated)}. Only runs that passed every rule enter a '
           "board: the day's tests passed in the same grading run, judged by the grader, "
           "the timed outputs re-checked, a time above the physical floor. Ranked by median time; "
           "each student once, with their best run. Click a column to sort.</p>"]
    heads = [(i, b) for i, b in enumerate(boards) if b.headline]
    if heads:
        out.append("<nav><ul>")
        out += [f'<li><a href="#{esc(slugs[i])}">{esc(title(b))}</a> '
                f"({len(b.entries)} ranked, {len(b.rejected)} not ranked)</li>" for i, b in heads]
        out.append("</ul></nav>")
    # Per lab and GPU: the headline board, then the lab's other benchmarks.
    pairs: List[Tuple[str, str]] = []
    for b in boards:
        if (b.lab, b.gpu) not in pairs:
            pairs.append((b.lab, b.gpu))
    for lab, gpu in pairs:
        mine = [(i, b) for i, b in enumerate(boards) if (b.lab, b.gpu) == (lab, gpu)]
        for i, b in mine:
            if b.headline:
                out += html_board(b, slugs[i], 2)
        others = [(i, b) for i, b in mine if not b.headline]
        if others:
            out.append(f"<details><summary>{esc(lab)} on {esc(gpu)}: the other benchmarks "
                       f"({len(others)})</summary>")
            for i, b in others:
                out += html_board(b, slugs[i], 3)
            out.append("</details>")
    if problems:
        out += ['<section class="problems"><h2>Problems (files skipped)</h2><ul>']
        out += [f"<li>{esc(p)}</li>" for p in problems]
        out += ["</ul></section>"]
    out += [f"<script>{_SCRIPT}</script>", "</body>", "</html>", ""]
    return "\n".join(out)


def to_json(boards: List[Board], problems: List[str], generated: str) -> dict:
    return {"generated": generated, "boards": [b.to_json() for b in boards],
            "problems": list(problems)}


# ------------------------------------------------------------------------------- command


def _say(text: str) -> None:
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:
        enc = sys.stdout.encoding or "ascii"
        sys.stdout.write(text.encode(enc, "replace").decode(enc, "replace"))
    sys.stdout.flush()


def plural(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="course leaderboard",
        description="Leaderboards from graded benchmark runs (course grade's "
                    "<grade-out>/students/<student>/bench-dNN.json): one board per lab, GPU "
                    "model and benchmark, ranked by median time. Writes leaderboard.md, "
                    "leaderboard.html and leaderboard.json. The rules: docs/leaderboards.md.",
        epilog="Exit codes: 0 boards written (problems, if any, are listed), 1 no eligible run "
               "(nothing written), 2 usage error or no input files.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="benchmark JSON files, or folders searched recursively for *.json")
    p.add_argument("--out", default=".", metavar="DIR",
                   help="where the three files go (default: the current folder)")
    p.add_argument("--lab", metavar="dNN", help="only this lab's boards (d02, 2, d02_coalescing)")
    p.add_argument("--gpu", metavar="SUBSTRING",
                   help="only boards whose GPU model contains this (any case), e.g. H100")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2): argparse has said why
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    lab = ""
    if args.lab:
        lab = normalize_lab(args.lab)
        if not lab:
            p.print_usage(sys.stderr)
            print(f"course leaderboard: --lab {args.lab!r} is not a day (d02, 2, d02_coalescing)",
                  file=sys.stderr)
            return EXIT_USAGE
    out_dir = args.out
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        print(f"course leaderboard: --out {out_dir} is a file, not a folder", file=sys.stderr)
        return EXIT_USAGE
    outputs = {os.path.realpath(os.path.join(out_dir, n)) for n in OUTPUT_NAMES}
    found, problems = find_json(args.paths)
    # Our own earlier output is no benchmark file: never read it back as one.
    found = [(f, d) for f, d in found if os.path.realpath(f) not in outputs]
    if not found:
        for line in problems:
            print(f"course leaderboard: {line}", file=sys.stderr)
        print("course leaderboard: no graded benchmark runs in " + ", ".join(args.paths)
              + " (course grade writes students/<student>/bench-dNN.json for each day it timed: "
              "was the class graded with benchmarks, on a GPU?)", file=sys.stderr)
        return EXIT_USAGE
    entries, more = read_all(found)
    problems += more
    boards = build_boards(entries, lab=lab, gpu=args.gpu or "")
    generated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ranked = sum(len(b.entries) for b in boards)
    if not ranked:
        _say(markdown(boards, problems, generated, headline_only=True))
        what = " ".join(x for x in (f"--lab {lab}" if lab else "",
                                    f"--gpu {args.gpu}" if args.gpu else "") if x)
        _say(f"\nNo eligible run in {plural(len(found), 'graded benchmark file')}"
             f"{' with ' + what if what else ''}: nothing written.\n")
        return EXIT_NOTHING_RANKED
    paths = [os.path.join(out_dir, n) for n in OUTPUT_NAMES]
    try:
        R.write_atomically(paths[0], markdown(boards, problems, generated))
        R.write_atomically(paths[1], render_html(boards, problems, generated))
        R.write_atomically(paths[2], json.dumps(to_json(boards, problems, generated), indent=1,
                                                ensure_ascii=False) + "\n")
    except OSError as e:
        print(f"course leaderboard: cannot write to {out_dir} ({e.strerror})", file=sys.stderr)
        return EXIT_USAGE
    _say(markdown(boards, problems, generated, headline_only=True))
    heads = sum(1 for b in boards if b.headline)
    _say(f"\n{plural(ranked, 'ranked entry', 'ranked entries')} on {plural(len(boards), 'board')} "
         f"({heads} headline); wrote {', '.join(paths)}\n")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
