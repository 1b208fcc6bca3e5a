"""Google Benchmark results as rows (`course bench`, the GPU report, the grader, leaderboards).

The counters come from course::bench::measure (common/course/bench.h): median_us, GB/s,
%copy (of the copy ceiling measured on the GPU), TFLOP/s, spread_%, and key = 1 on the day's
headline benchmark. A benchmark whose output was wrong reports an error instead of a time."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import results as R


@dataclass
class Row:
    name: str
    key: bool = False
    median_us: Optional[float] = None
    gbs: Optional[float] = None
    pct_copy: Optional[float] = None
    tflops: Optional[float] = None
    spread: Optional[float] = None
    error: str = ""
    counters: Dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "key": self.key, "median_us": self.median_us,
                "GB/s": self.gbs, "%copy": self.pct_copy, "TFLOP/s": self.tflops,
                "spread_%": self.spread, "error_message": self.error}


@dataclass
class BenchRun:
    rows: List[Row]
    context: Dict[str, str]
    skipped: str = ""  # why nothing was timed (no GPU), "" when it ran

    @property
    def device(self) -> str:
        return str(self.context.get("device", ""))

    @property
    def ceiling_gbs(self) -> Optional[float]:
        try:
            return float(self.context["copy_ceiling_GBps"])
        except (KeyError, ValueError):
            return None


def clean_name(name: str) -> str:
    name = name.split("/manual_time")[0]
    return re.sub(r"/(min_time|repeats|iterations):[0-9.]+", "", name)


def _num(b: dict, key: str) -> Optional[float]:
    v = b.get(key)
    return float(v) if isinstance(v, (int, float)) else None


def parse(doc: dict) -> BenchRun:
    """Rows of a Google Benchmark JSON document; ValueError when it is not one."""
    if not isinstance(doc.get("benchmarks"), list) or not isinstance(doc.get("context", {}), dict):
        raise ValueError("not a Google Benchmark JSON file (no 'benchmarks' list)")
    rows = []
    for b in doc["benchmarks"]:
        if not isinstance(b, dict) or "name" not in b:
            raise ValueError("a benchmark entry without a name")
        if b.get("run_type", "iteration") != "iteration":
            continue  # aggregates (mean, median of repetitions) repeat the iterations
        counters = {k: float(v) for k, v in b.items() if isinstance(v, (int, float))}
        rows.append(Row(
            name=clean_name(str(b["name"])), key=b.get("key") == 1,
            median_us=_num(b, "median_us"), gbs=_num(b, "GB/s"), pct_copy=_num(b, "%copy"),
            tflops=_num(b, "TFLOP/s"), spread=_num(b, "spread_%"),
            error=str(b.get("error_message", "")) if b.get("error_occurred") else "",
            counters=counters))
    return BenchRun(rows, {str(k): str(v) for k, v in doc.get("context", {}).items()})


def load(path: str) -> BenchRun:
    return parse(R.read_json(path))


def run_benchmark(exe: str, out_json: str, *, filter_: str = "", timeout: float = 900,
                  extra: Optional[List[str]] = None, env=None) -> BenchRun:
    """Runs a benchmark program; its JSON goes to `out_json`. Without a GPU the program prints
    'SKIPPED: <why>' and exits 0: the run is returned with .skipped set."""
    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    tmp = f"{out_json}.tmp.{os.getpid()}"
    args = [exe, "--benchmark_format=console", "--benchmark_out_format=json",
            f"--benchmark_out={tmp}"]
    if filter_:
        args.append(f"--benchmark_filter={filter_}")
    args += extra or []
    proc = subprocess.run(args, capture_output=True, text=True, errors="replace",
                          timeout=timeout, env=env)
    m = re.search(r"^SKIPPED: (.*)$", proc.stdout, re.M)
    if m:
        if os.path.exists(tmp):
            os.remove(tmp)
        return BenchRun([], {}, skipped=m.group(1))
    if proc.returncode != 0:
        raise RuntimeError(f"{os.path.basename(exe)} exited with {proc.returncode}:\n"
                           f"{(proc.stdout + proc.stderr)[-3000:]}")
    if not os.path.exists(tmp):
        raise RuntimeError(f"{os.path.basename(exe)} wrote no JSON")
    run = load(tmp)
    os.replace(tmp, out_json)
    return run


def fmt(v: Optional[float], digits: int = 0) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def to_json(run: BenchRun) -> dict:
    return {"context": run.context, "skipped": run.skipped,
            "rows": [r.to_json() for r in run.rows]}


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=1) + "\n"
