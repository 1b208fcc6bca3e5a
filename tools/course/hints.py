"""Hints kept with each lab (labs/dNN_topic/hints.md), revealed one at a time.

The file's format:

    # Hints: Day 2 — ...
    ## CoalescedCopy
    1. The first hint, one paragraph
       (it may span lines).

    2. The second hint.
    ## StridedCopy
    ...

What a student has revealed is kept in <build>/course-results/hints.json.
"""

from __future__ import annotations

import json
import os
import re
from typing import Dict, List

from . import results as R


class HintsError(Exception):
    pass


def parse(text: str, path: str = "hints.md") -> Dict[str, List[str]]:
    hints: Dict[str, List[str]] = {}
    exercise = None
    current: List[str] = []

    def close() -> None:
        if current and exercise is not None:
            hints[exercise].append(" ".join(l.strip() for l in current).strip())
        current.clear()

    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            close()
            exercise = line[3:].strip()
            if exercise in hints:
                raise HintsError(f"{path}:{number}: a second section for {exercise}")
            hints[exercise] = []
        elif re.match(r"^\d+\.\s", line):
            close()
            if exercise is None:
                raise HintsError(f"{path}:{number}: a hint before the first '## Exercise' line")
            expected = len(hints[exercise]) + 1
            if int(line.split(".", 1)[0]) != expected:
                raise HintsError(f"{path}:{number}: hint {line.split('.', 1)[0]} of {exercise} "
                                 f"should be numbered {expected}")
            current.append(line.split(".", 1)[1])
        elif not line.strip():
            close()
        elif current:
            current.append(line)
        elif exercise is not None and not line.startswith("#"):
            raise HintsError(f"{path}:{number}: text outside a numbered hint")
    close()
    return hints


def load(path: str) -> Dict[str, List[str]]:
    try:
        with open(path, encoding="utf-8") as f:
            return parse(f.read(), path)
    except OSError as e:
        raise HintsError(f"no hints for this day ({path}: {e.strerror})") from e


def state_path(results_dir: str) -> str:
    return os.path.join(results_dir, "hints.json")


def revealed(results_dir: str) -> Dict[str, Dict[str, int]]:
    path = state_path(results_dir)
    if not os.path.exists(path):
        return {}
    try:
        doc = R.read_json(path)
    except ValueError:
        return {}  # a broken state file forgets what was revealed, nothing else
    return {d: {e: int(n) for e, n in v.items()} for d, v in doc.items() if isinstance(v, dict)}


def reveal_next(results_dir: str, day: str, exercise: str, available: int) -> int:
    """Marks one more hint of (day, exercise) revealed; returns how many are revealed now."""
    state = revealed(results_dir)
    n = min(state.get(day, {}).get(exercise, 0) + 1, available)
    state.setdefault(day, {})[exercise] = n
    R.write_atomically(state_path(results_dir), json.dumps(state, indent=1) + "\n")
    return n
