"""`course status`: one line per day, from what `check` and `bench` recorded and from git.
It builds and runs nothing."""

from __future__ import annotations

import os
import subprocess
from typing import List, Optional

from . import check as C
from . import report
from .manifest import Lab, Manifest

STATES = {
    "not started": "never checked",
    "failing": "the last check did not build, or a test or check failed",
    "passing": "the last check ran every test and all passed",
    "compiled (no GPU)": "the code builds and what could run passed, but the GPU tests were "
                         "skipped on a machine without a GPU: not yet passed",
}


def untouched(m: Manifest, lab: Lab) -> Optional[bool]:
    """Whether the student's kernel.cu has no change in git; None when git cannot say."""
    src = lab.lab.source
    if not os.path.abspath(src).startswith(os.path.abspath(m.source_dir) + os.sep):
        return None
    try:
        p = subprocess.run(["git", "-C", m.source_dir, "status", "--porcelain",
                            "--untracked-files=all", "--", src], capture_output=True, text=True)
    except OSError:
        return None
    return None if p.returncode != 0 else not p.stdout.strip()


def state_of(record: Optional[dict], pristine: Optional[bool]) -> str:
    """A day's state from its last check: a day checked and failing is "failing" even when its
    kernel.cu is still the starter (it is started: the check says what to do first)."""
    verdict = (record or {}).get("verdict")
    if verdict == "passed":
        return "passing"
    if record is None:
        return "not started"
    if verdict in ("skipped", "partial"):
        return "compiled (no GPU)"
    return "failing"


def render(m: Manifest, tool: str) -> str:
    rows: List[List[str]] = []
    notes: List[str] = []
    problems: List[str] = []
    states = set()
    checked = False
    for lab in m.labs:
        try:
            rec = C.load_record(m, lab)
        except ValueError as e:
            problems.append(f"{lab.day}: {e} (ignored)")
            rec = None
        try:
            bench = C.load_record(m, lab, "bench")
        except ValueError as e:
            problems.append(f"{lab.day}: {e} (ignored)")
            bench = None
        pristine = untouched(m, lab)
        state = state_of(rec, pristine)
        states.add(state)
        last = "never"
        checked = checked or rec is not None
        if rec:
            t = rec.get("totals", {})
            when = str(rec.get("finished", ""))[:16].replace("T", " ") + " UTC"
            if rec.get("verdict") == "build_failed":
                last = f"{when}, did not build"
            else:
                last = (f"{when}, {t.get('passed', 0)} passed, {t.get('failed', 0)} failed, "
                        + (f"{t['not_run']} not run, " if t.get("not_run") else "")
                        + f"{t.get('skipped', 0)} skipped")
            if rec.get("kernel", {}).get("fingerprint") != C.fingerprint(lab.lab.source):
                notes.append(f"{lab.day}: kernel.cu changed since its last check: "
                             f"`{tool} check {lab.day}`")
        elif pristine is False:
            notes.append(f"{lab.day}: you edited labs/{lab.name}/kernel.cu but have not checked "
                         f"it yet: `{tool} check {lab.day}`")
        bench_cell = "-"
        if bench:
            bench_cell = bench.get("summary", bench.get("verdict", "-"))
        title = lab.title if len(lab.title) <= 48 else lab.title[:45] + "..."
        rows.append([lab.day, title, state, last, bench_cell])
    out = [report.table(["day", "title", "state", "last check", "bench"], rows, indent="")]
    if notes:
        out += [""] + notes
    if problems:
        out += [""] + problems
    out.append("")
    for state in ("compiled (no GPU)",):
        if state in states:
            out.append(f"{state}: {STATES[state]}.")
    if not checked:
        out.append(f"Nothing checked yet: start with `{tool} list`, then "
                   f"`{tool} check {m.labs[0].day if m.labs else 'd01'}` "
                   f"(or `{tool} watch`).")
    return "\n".join(out).rstrip()
