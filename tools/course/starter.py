"""`course reset <day>`: put the untouched starter back, keeping the student's file as a backup.

The starter is generated from the solution (tools/starters.py: solutions/<lab>/kernel.cu holds
what the student's file has instead of each solved region), so it is the course's own version
whatever the student committed."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import sys
from pathlib import Path
from typing import Optional, Tuple


class ResetError(Exception):
    pass


def find_starter(source_dir: str, rel_path: str, day: str) -> Tuple[str, str]:
    """(the starter's text, where it came from)."""
    sys.path.insert(0, os.path.join(source_dir, "tools"))
    try:
        import starters  # noqa: PLC0415 (tools/starters.py, the generator)
    finally:
        sys.path.pop(0)
    lab = Path(rel_path).parent.name
    solution = os.path.join("solutions", lab, "kernel.cu")
    if not os.path.exists(os.path.join(source_dir, solution)):
        raise ResetError(f"{solution} is missing from this checkout, and the starter is made from "
                         "it: download the course again")
    try:
        return starters.starter_of(Path(source_dir), lab), f"generated from {solution}"
    except starters.MarkerError as e:
        raise ResetError(f"the starter cannot be made from {solution}: {e}") from e


def reset(source_dir: str, rel_path: str, day: str, now: Optional[_dt.datetime] = None
          ) -> Tuple[str, str]:
    """Restores the starter; returns (backup path or "", where the starter came from)."""
    text, origin = find_starter(source_dir, rel_path, day)
    path = os.path.join(source_dir, rel_path)
    backup = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            current = f.read()
        if current == text:
            return "", origin
        stamp = (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
        backup_dir = os.path.join(os.path.dirname(path), "backups")
        os.makedirs(backup_dir, exist_ok=True)
        backup = os.path.join(backup_dir, f"kernel-{stamp}.cu")
        shutil.copy2(path, backup)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return backup, origin
