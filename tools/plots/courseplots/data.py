"""The plots' inputs, read and checked with the standard library alone (no matplotlib here).

Three kinds of file:

  bench-dNN-*.json   Google Benchmark JSON from a lab's benchmark program. The rows to read are
                     those whose run_type is "iteration"; the counters are course::bench's
                     (common/course/bench.h): median_us, GB/s, %copy, TFLOP/s when the benchmark
                     gives its FLOPs, key = 1 on the day's headline row. context.copy_ceiling_GBps
                     is the copy rate measured in the same process (bytes read + written).
  leaderboard.json   `course leaderboard`'s boards (tools/course/leaderboard.py).
  gradebook.json     `course grade`'s class gradebook (tools/course/grade.py).

Anything that is not what it should be raises InputError with a message for people; the command
line prints it and exits 2.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

MAX_FILE_BYTES = 64 << 20  # a day's benchmark file is tens of kB; a gradebook a few MB

# Parts of a Google Benchmark name that the library adds (run options), not the lab's arguments.
_RUN_OPTION = re.compile(r"^(min_time|min_warmup_time|iterations|repeats):")
_RUN_FLAGS = {"manual_time", "real_time", "process_time"}


class InputError(Exception):
    """An input file or argument the plots cannot use; str(e) says which and why."""


Number = Union[int, float]


def load_json(path: str, what: str) -> object:
    """The parsed JSON of a file, or InputError saying why it cannot be read."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise InputError(f"{what} {path}: cannot be read ({e.strerror or e})") from None
    if os.path.isdir(path):
        raise InputError(f"{what} {path}: is a folder, not a file")
    if size > MAX_FILE_BYTES:
        raise InputError(f"{what} {path}: {size} bytes, larger than any {what} should be")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{what} {path}: cannot be read ({e})") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise InputError(f"{what} {path}: not valid JSON ({e})") from None


def _finite(v: object) -> Optional[float]:
    """v as a float when it is a finite number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def normalize_lab(text: str) -> str:
    """d02 from d02, d2, day2, 02 or d02_coalescing; "" when it is none of these."""
    m = re.match(r"^(?:day|d)?0*(\d{1,3})(?:_\w*)?$", str(text).strip(), re.I)
    return f"d{int(m.group(1)):02d}" if m else ""


def lab_of_path(path: str) -> str:
    """The lab named in a benchmark file's name (bench-d04-solution.json: d04), or ""."""
    m = re.search(r"(?:^|[^A-Za-z0-9])bench-(d\d\d)(?![0-9])", os.path.basename(path), re.I)
    return m.group(1).lower() if m else ""


def slug(text: str) -> str:
    """A file-name-safe form of text (letters, digits, '.', '-', '_')."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return s or "unnamed"


# ------------------------------------------------------------------------------- benchmark names


@dataclass(frozen=True)
class BenchName:
    """A benchmark's name, taken apart.

    BM_copy_2_vectorized<float>/n:67108864/offset:1/min_time:0.050/manual_time gives
    family BM_copy_2_vectorized, dtype float, args (("n", 67108864), ("offset", 1)).
    A bare number is an argument too, named #1, #2 by position (BM_vector_add/67108864);
    a bare word is a label (BM_math/ptx_exp2/...: labels ("ptx_exp2",)).
    """

    full: str  # the name without the library's run options
    family: str  # before the first '/', without a template argument
    dtype: str  # the template argument ("" when none), without a course:: namespace
    labels: Tuple[str, ...]
    args: Tuple[Tuple[str, Number], ...]

    def arg(self, key: str) -> Optional[Number]:
        return next((v for k, v in self.args if k == key), None)


def _number(text: str) -> Optional[Number]:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_name(name: str) -> BenchName:
    parts = str(name).split("/")
    head = parts[0]
    m = re.match(r"^([^<]*)<(.*)>$", head)
    family, dtype = (m.group(1), m.group(2)) if m else (head, "")
    dtype = re.sub(r"^(?:\w+::)+", "", dtype.strip())
    labels: List[str] = []
    args: List[Tuple[str, Number]] = []
    kept = [head]
    position = 0
    for p in parts[1:]:
        if not p or _RUN_OPTION.match(p) or p in _RUN_FLAGS:
            continue
        kept.append(p)
        key, sep, value = p.partition(":")
        if sep:
            v = _number(value)
            if v is not None:
                args.append((key, v))
                continue
            labels.append(p)
            continue
        v = _number(p)
        if v is not None:
            position += 1
            args.append((f"#{position}", v))
        else:
            labels.append(p)
    return BenchName("/".join(kept), family, dtype, tuple(labels), tuple(args))


# ------------------------------------------------------------------------------- benchmark files


@dataclass
class BenchRow:
    name: BenchName
    lab: str
    counters: Dict[str, float]

    @property
    def gbs(self) -> Optional[float]:
        return self.counters.get("GB/s")

    @property
    def pct_copy(self) -> Optional[float]:
        return self.counters.get("%copy")

    @property
    def tflops(self) -> Optional[float]:
        return self.counters.get("TFLOP/s")

    @property
    def median_us(self) -> Optional[float]:
        return self.counters.get("median_us")

    @property
    def key(self) -> bool:
        return self.counters.get("key") == 1


@dataclass
class BenchFile:
    path: str
    lab: str  # "" when neither the file name nor the context says
    gpu: str
    ceiling_gbs: Optional[float]
    rows: List[BenchRow]
    errors: List[str] = field(default_factory=list)  # rows not timed (error_occurred), in words

    def row(self, full_name: str) -> BenchRow:
        """The row of that name (without run options); InputError when there is none."""
        for r in self.rows:
            if r.name.full == full_name:
                return r
        raise InputError(f"{self.path}: no timed row named {full_name}")


def gpu_of_context(context: Dict[str, object]) -> str:
    """The GPU's model: context course_gpu, else the harness's device line up to ' (sm_'."""
    gpu = str(context.get("course_gpu", "") or "").strip()
    if not gpu:  # "NVIDIA H100 80GB HBM3 (sm_90): 132 SMs, ..."
        gpu = str(context.get("device", "") or "").split(" (sm_")[0].split(":")[0].strip()
    return gpu or "unknown GPU"


def load_bench(path: str, lab: str = "") -> BenchFile:
    """A benchmark file's timed rows. lab, when given, overrides what the file says."""
    doc = load_json(path, "benchmark file")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise InputError(f"benchmark file {path}: not Google Benchmark JSON "
                         "(no 'benchmarks' list)")
    context = doc.get("context", {})
    if not isinstance(context, dict):
        raise InputError(f"benchmark file {path}: 'context' is not an object")
    if lab:
        lab_name = normalize_lab(lab)
        if not lab_name:
            raise InputError(f"--lab {lab!r}: not a lab (write it as d01 .. d99)")
    else:
        lab_name = lab_of_path(path) or normalize_lab(str(context.get("course_lab", "")))
    ceiling = None
    if "copy_ceiling_GBps" in context:
        try:
            ceiling = float(context["copy_ceiling_GBps"])
        except (TypeError, ValueError):
            ceiling = None
        if ceiling is None or not math.isfinite(ceiling) or ceiling <= 0:
            raise InputError(f"benchmark file {path}: context.copy_ceiling_GBps is "
                             f"{context['copy_ceiling_GBps']!r}, not a positive number")
    rows: List[BenchRow] = []
    errors: List[str] = []
    for i, b in enumerate(doc["benchmarks"]):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            raise InputError(f"benchmark file {path}: entry {i} of 'benchmarks' has no name")
        if b.get("run_type", "iteration") != "iteration":
            continue  # aggregates of repetitions repeat the iterations' numbers
        name = parse_name(b["name"])
        if b.get("error_occurred"):
            errors.append(f"{name.full}: {b.get('error_message', 'error')}")
            continue
        counters = {}
        for k, v in b.items():
            f = _finite(v)
            if f is not None:
                counters[k] = f
        rows.append(BenchRow(name, lab_name, counters))
    return BenchFile(path, lab_name, gpu_of_context(context), ceiling, rows, errors)


def load_benches(paths: Sequence[str], lab: str = "") -> List[BenchFile]:
    files = [load_bench(p, lab) for p in paths]
    for f in files:
        if not any(r.gbs is not None for r in f.rows):
            raise InputError(f"benchmark file {f.path}: no timed row with a GB/s counter"
                             + (f" ({len(f.errors)} rows reported an error)" if f.errors else ""))
    return files


# ------------------------------------------------------------------------------- leaderboard


@dataclass
class BoardEntry:
    rank: int
    student: str
    median_us: float
    gbs: Optional[float]
    pct_copy: Optional[float]
    tflops: Optional[float]


@dataclass
class Board:
    lab: str
    gpu: str
    benchmark: str
    headline: bool
    entries: List[BoardEntry]
    rejected: List[Tuple[str, str]]


def _field(obj: dict, key: str, kind: type, where: str):
    v = obj.get(key)
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise InputError(f"{where}: '{key}' is missing or not a {kind.__name__}")
    return v


def load_leaderboard(path: str) -> Tuple[str, List[Board]]:
    """(generated, boards) of a leaderboard.json."""
    doc = load_json(path, "leaderboard file")
    if not isinstance(doc, dict) or not isinstance(doc.get("boards"), list):
        raise InputError(f"leaderboard file {path}: no 'boards' list (is it leaderboard.json "
                         "from `course leaderboard`?)")
    boards = []
    for i, b in enumerate(doc["boards"]):
        where = f"leaderboard file {path}, board {i + 1}"
        if not isinstance(b, dict):
            raise InputError(f"{where}: not an object")
        entries = []
        for j, e in enumerate(_field(b, "entries", list, where)):
            ew = f"{where}, entry {j + 1}"
            if not isinstance(e, dict):
                raise InputError(f"{ew}: not an object")
            median = _finite(e.get("median_us"))
            if median is None or median <= 0:
                raise InputError(f"{ew}: 'median_us' is missing or not a positive number")
            rank = e.get("rank")
            if isinstance(rank, bool) or not isinstance(rank, int):
                raise InputError(f"{ew}: 'rank' is missing or not an integer")
            entries.append(BoardEntry(rank, str(_field(e, "student", str, ew)), median,
                                      _finite(e.get("GB/s")), _finite(e.get("%copy")),
                                      _finite(e.get("TFLOP/s"))))
        rejected = []
        for r in b.get("rejected", []) or []:
            if isinstance(r, dict):
                rejected.append((str(r.get("student", "?")), str(r.get("reason", ""))))
        boards.append(Board(str(_field(b, "lab", str, where)), str(b.get("gpu", "") or ""),
                            str(_field(b, "benchmark", str, where)), bool(b.get("headline")),
                            sorted(entries, key=lambda x: (x.rank, x.median_us, x.student)),
                            rejected))
    return str(doc.get("generated", "") or ""), boards


# ------------------------------------------------------------------------------- gradebook

GRADED = "graded"
STATUS_WORDS = {"not_submitted": "not submitted", "build_failed": "did not build",
                "link_failed": "did not link"}


@dataclass
class Part:
    """One graded part of a student's day: an exercise, a check, the performance, the total."""

    name: str
    points: Optional[float]  # None: not run (neither earned nor lost)
    max_points: float

    @property
    def fraction(self) -> Optional[float]:
        if self.points is None or self.max_points <= 0:
            return None
        return self.points / self.max_points


@dataclass
class StudentDay:
    student: str
    day: str
    status: str
    parts: List[Part]  # exercises, then checks, then performance
    total: Part  # the day's points (tests + checks + performance)

    @property
    def graded(self) -> bool:
        return self.status == GRADED


def _part(obj: object, name_key: str, where: str) -> Part:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: not an object")
    name = obj.get(name_key, "")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: '{name_key}' is missing")
    mx = _finite(obj.get("max_points"))
    if mx is None or mx < 0:
        raise InputError(f"{where}: 'max_points' is missing or negative")
    pts = obj.get("points")
    if pts is not None:
        pts = _finite(pts)
        if pts is None:
            raise InputError(f"{where}: 'points' is not a number")
    return Part(name, pts, mx)


def load_gradebook(path: str) -> List[StudentDay]:
    """Every (student, day) of a gradebook.json, in the file's order."""
    doc = load_json(path, "gradebook")
    if not isinstance(doc, dict) or not isinstance(doc.get("students"), list):
        raise InputError(f"gradebook {path}: no 'students' list (is it gradebook.json from "
                         "`course grade`?)")
    if doc.get("format", 1) != 1:
        raise InputError(f"gradebook {path}: format {doc.get('format')!r}; this tool reads 1")
    out = []
    for i, s in enumerate(doc["students"]):
        where = f"gradebook {path}, student {i + 1}"
        if not isinstance(s, dict):
            raise InputError(f"{where}: not an object")
        student = s.get("student")
        if not isinstance(student, str) or not student:
            raise InputError(f"{where}: 'student' is missing")
        where = f"gradebook {path}, student {student}"
        for d in _field(s, "days", list, where):
            if not isinstance(d, dict):
                raise InputError(f"{where}: a day is not an object")
            day = normalize_lab(str(d.get("day", "")))
            if not day:
                raise InputError(f"{where}: a day without a valid 'day' ({d.get('day')!r})")
            dw = f"{where}, {day}"
            status = d.get("status")
            if not isinstance(status, str) or not status:
                raise InputError(f"{dw}: 'status' is missing")
            parts = [_part(e, "exercise", f"{dw}, exercise {j + 1}")
                     for j, e in enumerate(d.get("exercises", []) or [])]
            parts += [_part(c, "check", f"{dw}, check {j + 1}")
                      for j, c in enumerate(d.get("checks", []) or [])]
            perf = d.get("performance")
            total_pts = _finite(d.get("points"))
            total_max = _finite(d.get("max_points"))
            if total_max is None:
                raise InputError(f"{dw}: 'max_points' is missing")
            if isinstance(perf, dict):
                p = _part(dict(perf, name="performance"), "name", f"{dw}, performance")
                parts.append(p)
                total_max += p.max_points
                if total_pts is not None:
                    total_pts += p.points or 0.0
            if total_pts is None:
                total_pts = 0.0
            if status != GRADED:  # a day not graded earns nothing, whatever the file says
                parts = [Part(p.name, 0.0, p.max_points) for p in parts]
                total_pts = 0.0
            out.append(StudentDay(student, day, status, parts,
                                  Part("day total", total_pts, total_max)))
    if not out:
        raise InputError(f"gradebook {path}: no student has a day to plot")
    return out
