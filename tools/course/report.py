"""Text for people: the check report of a day, tables, and the one-line summaries."""

from __future__ import annotations

import os
import sys
from typing import Dict, Iterable, List, Optional, Sequence

from . import results as R
from .manifest import Lab


def use_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and \
        os.environ.get("TERM") != "dumb"


def paint(text: str, code: str) -> str:
    return f"\033[{code}m{text}\033[0m" if use_color() else text


def green(t: str) -> str:
    return paint(t, "32")


def red(t: str) -> str:
    return paint(t, "31")


def bold(t: str) -> str:
    return paint(t, "1")


def table(header: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[int] = (),
          indent: str = "  ") -> str:
    rows = [list(map(str, r)) for r in rows]
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        out = []
        for i, c in enumerate(cells):
            out.append(c.rjust(widths[i]) if i in right else c.ljust(widths[i]))
        return (indent + "  ".join(out)).rstrip()

    lines = [fmt(header), indent + "-" * (sum(widths) + 2 * (len(widths) - 1))]
    lines += [fmt(r) for r in rows]
    return "\n".join(lines)


class ExerciseRow:
    def __init__(self, number: int, name: str):
        self.number, self.name = number, name
        self.tests = R.Tally()
        self.sass = R.Tally()

    @property
    def mark(self) -> str:
        if self.tests.failed or self.sass.failed:
            return "✗"
        if self.tests.passed and not self.tests.skipped:
            return "✓"
        if self.tests.passed or self.sass.passed:
            return "~"  # what ran passed, but something could not run here
        return "–"


def exercise_rows(lab: Lab, cases: List[R.Case]) -> List[ExerciseRow]:
    rows = [ExerciseRow(i + 1, e) for i, e in enumerate(lab.exercises)]
    by_name = {r.name: r for r in rows}
    day_wide = ExerciseRow(0, "(whole day)")
    other = ExerciseRow(0, "(other tests)")
    for c in cases:
        row = by_name.get(c.exercise)
        if row is None:
            row = day_wide if c.kind == "sass" else other
        (row.sass if c.kind == "sass" else row.tests).add(c)
    for extra in (day_wide, other):
        if extra.tests.total or extra.sass.total:
            rows.append(extra)
    return rows


def sass_cell(t: R.Tally) -> str:
    if not t.total:
        return "-"
    if t.failed:
        return f"{t.failed} of {t.total} failed"
    if t.passed == t.total:
        return f"{t.passed} ok"
    return f"{t.passed} ok, {t.skipped} skipped"


def exercise_table(lab: Lab, cases: List[R.Case]) -> str:
    rows = exercise_rows(lab, cases)
    total = R.tally(c for c in cases if c.kind != "sass")
    sass_total = R.tally(c for c in cases if c.kind == "sass")
    body = []
    for r in rows:
        label = f"{r.number} {r.name}" if r.number else r.name
        mark = {"✓": green("✓"), "✗": red("✗")}.get(r.mark, r.mark)
        body.append([mark, label, r.tests.passed, r.tests.failed, r.tests.skipped,
                     sass_cell(r.sass)])
    body.append(["", "total", total.passed, total.failed, total.skipped, sass_cell(sass_total)])
    return table(["", "exercise", "passed", "failed", "skipped", "SASS checks"], body,
                 right=(2, 3, 4))


def first_failure(lab: Lab, cases: List[R.Case]) -> Optional[R.Case]:
    """The first failing case of the first exercise that has one (tests before SASS checks)."""
    order = {e: i for i, e in enumerate(lab.exercises)}
    failing = [c for c in cases if R.is_failure(c.outcome)]
    failing.sort(key=lambda c: (order.get(c.exercise, len(order)), c.kind == "sass"))
    return failing[0] if failing else None


def indent(text: str, prefix: str = "    ", limit: int = 30) -> str:
    lines = text.rstrip().splitlines()
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n".join(prefix + l for l in lines)


def skip_summary(cases: Iterable[R.Case]) -> str:
    """'80 GPU tests (no GPU here: ...)' for the cases that skipped, grouped by reason."""
    by_reason: Dict[str, Dict[str, int]] = {}
    for c in cases:
        if c.outcome == R.SKIPPED:
            kinds = by_reason.setdefault(R.skip_reason(c.message), {})
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
    parts = []
    for reason, kinds in by_reason.items():
        what = ", ".join(f"{n} {'SASS checks' if k == 'sass' else k.upper() + ' tests'}"
                         for k, n in kinds.items())
        parts.append(f"{what} ({reason})")
    return "; ".join(parts)
