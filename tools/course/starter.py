"""`course reset <day>`: put the untouched starter back, keeping the student's file as a backup.

The starter is the course's own version of labs/<lab>/kernel.cu, taken from git: the branch the
checkout tracks (or origin's), else the newest commit of the file's history that still holds
every TODO(dNN...) block the file ever had (a student who commits work removes some)."""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import subprocess
from typing import List, Optional, Tuple


class ResetError(Exception):
    pass


def _git(source_dir: str, *args: str) -> Optional[str]:
    try:
        p = subprocess.run(["git", "-C", source_dir, *args], capture_output=True, text=True,
                           errors="replace")
    except OSError:
        return None
    return p.stdout if p.returncode == 0 else None


def todo_ids(text: str, day: str) -> set:
    return set(re.findall(rf"TODO\({re.escape(day)}\.([0-9a-z]+)\)", text))


def find_starter(source_dir: str, rel_path: str, day: str) -> Tuple[str, str]:
    """(the starter's text, where it came from)."""
    if _git(source_dir, "rev-parse", "--git-dir") is None:
        raise ResetError(f"{source_dir} is not a git checkout, so the starter cannot be "
                         "recovered; download the course again and copy "
                         f"{rel_path} from it")
    for ref in ("@{upstream}", "origin/HEAD", "origin/main"):
        text = _git(source_dir, "show", f"{ref}:{rel_path}")
        if text is not None and todo_ids(text, day):
            return text, f"git {ref}"
    commits = (_git(source_dir, "log", "--format=%H", "--", rel_path) or "").split()
    versions: List[Tuple[str, str, set]] = []
    for c in commits:
        text = _git(source_dir, "show", f"{c}:{rel_path}")
        if text is not None:
            versions.append((c, text, todo_ids(text, day)))
    everything = set().union(*(ids for _, _, ids in versions)) if versions else set()
    for c, text, ids in versions:  # newest first
        if everything and ids == everything:
            return text, f"git commit {c[:10]}"
    raise ResetError(f"no version of {rel_path} in this checkout's history holds the starter's "
                     f"TODO({day}...) blocks")


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
