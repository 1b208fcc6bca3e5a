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


class BenchmarkFailed(Exception):
    """The benchmark program did not give results that can be read: it exited with an error,
    was killed, did not finish, wrote no results or more than one set. The message says which."""


def run_benchmark(exe: str, out_json: str, *, filter_: str = "", timeout: float = 900,
                  extra: Optional[List[str]] = None, env=None,
                  prefix: Optional[List[str]] = None) -> BenchRun:
    """Runs a benchmark program and returns its rows; a copy of its JSON goes to `out_json`.

    The JSON comes back through a pipe (--benchmark_out=/dev/fd/N, read while the program runs),
    never through a file the program could rewrite afterwards, and only the first JSON document
    counts: a program that writes more is not trusted (BenchmarkFailed). `prefix` (the sandbox)
    goes before the program. Without a GPU the program prints 'SKIPPED: <why>' and exits 0: the
    run is returned with .skipped set."""
    import signal  # noqa: PLC0415
    import threading  # noqa: PLC0415

    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    read_fd, write_fd = os.pipe()
    args = list(prefix or []) + [exe, "--benchmark_format=console", "--benchmark_out_format=json",
                                 f"--benchmark_out=/dev/fd/{write_fd}"]
    if filter_:
        args.append(f"--benchmark_filter={filter_}")
    args += extra or []
    chunks: List[bytes] = []

    def drain() -> None:
        total = 0
        while True:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                return
            total += len(chunk)
            if total <= MAX_RESULTS_BYTES:
                chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    try:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, pass_fds=(write_fd,), env=env,
                                start_new_session=True)
    except OSError as e:
        os.close(read_fd)
        os.close(write_fd)
        raise BenchmarkFailed(f"the benchmark program could not start: {e}") from e
    os.close(write_fd)
    reader.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        reader.join(timeout=10)
        os.close(read_fd)
        raise BenchmarkFailed(f"the benchmark program did not finish within {timeout:.0f} s "
                              "and was stopped")
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything it left behind holding the pipe
    except (ProcessLookupError, PermissionError):
        pass
    reader.join(timeout=30)
    os.close(read_fd)
    stdout = out.decode("utf-8", "replace")
    data = b"".join(chunks).decode("utf-8", "replace")
    m = re.search(r"^SKIPPED: (.*)$", stdout, re.M)
    if m and proc.returncode == 0:
        return BenchRun([], {}, skipped=m.group(1))
    if proc.returncode != 0:
        if proc.returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-proc.returncode).name}"
            except ValueError:
                how = f"was killed by signal {-proc.returncode}"
        else:
            how = f"exited with status {proc.returncode}"
        raise BenchmarkFailed(f"the benchmark program {how}: {stdout.strip()[-1500:]}")
    text = data.lstrip()
    if not text:
        raise BenchmarkFailed("the benchmark program wrote no results")
    try:
        doc, end = json.JSONDecoder().raw_decode(text)
    except ValueError as e:
        raise BenchmarkFailed(f"the benchmark program's results are not JSON ({e})") from e
    if text[end:].strip():
        raise BenchmarkFailed("the benchmark program wrote more than one set of results: they "
                              "cannot be trusted")
    if not isinstance(doc, dict):
        raise BenchmarkFailed("the benchmark program's results are not a JSON object")
    try:
        run = parse(doc)
    except ValueError as e:
        raise BenchmarkFailed(f"the benchmark program's results cannot be read: {e}") from e
    if run.context.get("course_skipped"):
        return BenchRun([], run.context, skipped=str(run.context["course_skipped"]))
    R.write_atomically(out_json, dumps(doc))
    return run


MAX_RESULTS_BYTES = 64 << 20


def fmt(v: Optional[float], digits: int = 0) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def to_json(run: BenchRun) -> dict:
    return {"context": run.context, "skipped": run.skipped,
            "rows": [r.to_json() for r in run.rows]}


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=1) + "\n"
