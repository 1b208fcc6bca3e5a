#!/usr/bin/env python3
"""Build the lessons as a static site: MkDocs with the Material theme (docs/site.md).

    python3 tools/site/build_site.py [--out DIR] [--repo-url URL] [--ref REF]
                                     [--leaderboard PATH] [--serve]

Assembles a docs folder in a temporary directory that mirrors the repository's layout: every
lesson (lessons/*.md) with its figures and diagrams (lessons/figures/, lessons/diagrams/), and
each day's lab README and hints (labs/dNN_*/README.md, hints.md), linked rather than copied;
writes the home page (a table of the days) and a config that inherits tools/site/mkdocs.yml and
adds the navigation by day; then runs `mkdocs build --strict`, so that a broken link, a missing
figure or an anchor no heading makes fails the build. Links to files of the repository that are
not pages of the site (results/h100/..., solutions/..., a lab's kernel.cu) go to the
repository's URL for them: --repo-url (default: $COURSE_SITE_REPO_URL, else the git remote
`origin`, else file:// links into this checkout, which work on this machine only).

--leaderboard PATH (a folder holding leaderboard.html, or the file) publishes the page
`course leaderboard` wrote with the site, with a nav entry to it (docs/leaderboards.md).
--serve previews the site instead (`mkdocs serve`: rebuilt when a lesson or a lab file changes).

MkDocs empties --out before it writes (default: build/site), so a folder that holds anything
else than a site built here or leaderboard files is refused.

Exit 0: built; 1: MkDocs failed (its messages say which page and link); 2: usage; 77: MkDocs
or its theme is not installed here (`SKIPPED: ...`, with the line that installs them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent.parent
HERE = Path(__file__).resolve().parent
BASE_CONFIG = HERE / "mkdocs.yml"
HOOKS = HERE / "hooks.py"
REQUIREMENTS = "tools/site/requirements.txt"
INSTALL_HINT = (f"install them with `python3 -m venv .venv-site && .venv-site/bin/pip install "
                f"-r {REQUIREMENTS}` and run this script with .venv-site/bin/python")
MARKER = ".course-site"  # written into a built site, so that building again may empty it
LEADERBOARD_FILES = ("leaderboard.html", "leaderboard.json")
SKIP = 77
DAY_FILE = re.compile(r"^d(\d\d)_[a-z0-9_]+\.md$")


class Usage(Exception):
    """A wrong argument or a layout the build cannot use; the message says which."""


class Day:
    def __init__(self, number: int, stem: str, title: str, hints: bool):
        self.number, self.stem, self.title, self.hints = number, stem, title, hints

    @property
    def lesson(self) -> str:
        return f"lessons/{self.stem}.md"

    @property
    def lab(self) -> str:
        return f"labs/{self.stem}/README.md"

    @property
    def hints_page(self) -> str:
        return f"labs/{self.stem}/hints.md"


def find_days(root: Path) -> List[Day]:
    """Every lesson lessons/dNN_topic.md with its lab labs/dNN_topic/ (README.md required)."""
    days = []
    for lesson in sorted((root / "lessons").glob("d*.md")):
        m = DAY_FILE.match(lesson.name)
        if not m:
            continue
        lab = root / "labs" / lesson.stem
        if not (lab / "README.md").is_file():
            raise Usage(f"{lesson.relative_to(root)} has no lab README "
                        f"(labs/{lesson.stem}/README.md)")
        first = lesson.read_text(encoding="utf-8").lstrip().splitlines()[0:1]
        title = first[0].lstrip("#").strip() if first and first[0].startswith("# ") else ""
        days.append(Day(int(m.group(1)), lesson.stem, title or f"Day {int(m.group(1))}",
                        (lab / "hints.md").is_file()))
    if not days:
        raise Usage(f"no lessons (lessons/dNN_topic.md) under {root}")
    return days


def git(root: Path, *args: str) -> Optional[str]:
    try:
        p = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def web_url(remote: str) -> Optional[str]:
    """https://host/owner/name for a git remote (https or ssh), or None."""
    m = re.match(r"^(?:git@|ssh://git@)([^:/]+)[:/](.+?)(?:\.git)?/?$", remote)
    if m:
        return f"https://{m.group(1)}/{m.group(2)}"
    m = re.match(r"^https?://(?:[^@/]+@)?(.+?)(?:\.git)?/?$", remote)
    return f"https://{m.group(1)}" if m else None


def link_bases(root: Path, repo_url: Optional[str], ref: Optional[str]) -> Tuple[str, str, str]:
    """(blob prefix, tree prefix, what the links point to in words) for links leaving the site."""
    url = repo_url or os.environ.get("COURSE_SITE_REPO_URL")
    if not url:
        remote = git(root, "remote", "get-url", "origin")
        url = web_url(remote) if remote else None
    if not url:
        local = root.as_uri() + "/"
        return local, local, f"this checkout ({local}; pass --repo-url to publish)"
    url = (web_url(url) or url).rstrip("/")  # https://github.com/o/r.git -> .../o/r
    if not re.match(r"^https?://", url):
        raise Usage(f"--repo-url {url}: give the repository's web address (https://...)")
    if not ref:
        branch = git(root, "rev-parse", "--abbrev-ref", "HEAD")
        ref = branch if branch and branch != "HEAD" else git(root, "rev-parse", "HEAD") or "main"
    gitlab = "/-" if "gitlab" in url.split("/")[2] else ""
    return (f"{url}{gitlab}/blob/{ref}/", f"{url}{gitlab}/tree/{ref}/",
            f"{url} at {ref}")


def home_page(days: Sequence[Day], leaderboard: bool) -> str:
    rows = []
    for d in days:
        topic = re.sub(r"^Day \d+\s*[—-]\s*", "", d.title)
        hints = f"[hints]({d.hints_page})" if d.hints else ""
        rows.append(f"| {d.number} | [{topic}]({d.lesson}) | [lab]({d.lab}) | {hints} |")
    text = [
        "# CUDA C++ course",
        "",
        f"{len(days)} days of CUDA C++, from a first kernel to a decoder layer. Each day is a "
        "lesson to read, then a lab: a `kernel.cu` to complete, whose tests say what is wrong "
        "and whose benchmark says how fast it runs. The hints of a lab are folded, to be opened "
        "one at a time.",
        "",
        "How to set up the course and check, time and reset a day's work "
        "(`course check dNN`) is in the repository's [README](README.md).",
        "",
        "| Day | Lesson | Lab | Hints |",
        "|---|---|---|---|",
        *rows,
        "",
    ]
    if leaderboard:
        text += ["The class's [leaderboards](leaderboard.html): the graded benchmark runs, "
                 "ranked per lab and GPU.", ""]
    return "\n".join(text)


def link(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(source, dest)


def assemble(root: Path, docs: Path, days: Sequence[Day], leaderboard: Optional[Path]) -> None:
    """The docs folder: the repository's pages and figures at their own paths (linked), the
    home page, and the leaderboard's files (copied: MkDocs empties --out, which may hold them)."""
    for lesson in sorted((root / "lessons").glob("*.md")):
        link(lesson, docs / "lessons" / lesson.name)
    for folder in ("figures", "diagrams"):
        for path in sorted((root / "lessons" / folder).rglob("*")):
            if path.is_file():
                link(path, docs / path.relative_to(root))
    for d in days:
        link(root / d.lab, docs / d.lab)
        if d.hints:
            link(root / d.hints_page, docs / d.hints_page)
    (docs / "index.md").write_text(home_page(days, leaderboard is not None), encoding="utf-8")
    if leaderboard is not None:
        for name in LEADERBOARD_FILES:
            if (leaderboard / name).is_file():
                shutil.copyfile(leaderboard / name, docs / name)


def leaderboard_folder(path: Optional[str]) -> Optional[Path]:
    if path is None:
        return None
    p = Path(path).resolve()
    folder = p.parent if p.name == "leaderboard.html" else p
    if not (folder / "leaderboard.html").is_file():
        raise Usage(f"--leaderboard {path}: no leaderboard.html there (write it with "
                    "`course leaderboard grades/students --out DIR`, docs/leaderboards.md)")
    return folder


def check_out(out: Path, leaderboard: Optional[Path]) -> None:
    """Refuse an --out that holds files MkDocs would delete and that are not a site built here
    (or the leaderboard's files, which the site publishes)."""
    if not out.exists():
        return
    if not out.is_dir():
        raise Usage(f"--out {out} is a file")
    entries = {p.name for p in out.iterdir()}
    if not entries or MARKER in entries:
        return
    if entries <= {"leaderboard.html", "leaderboard.json", "leaderboard.md"}:
        if leaderboard is None:
            raise Usage(f"--out {out} holds leaderboard files, which MkDocs would delete: add "
                        f"--leaderboard {out} to publish them with the site")
        return
    raise Usage(f"--out {out} is not empty and not a site built here: MkDocs empties the "
                "folder it builds into, so choose a new or empty one")


def mkdocs_command() -> List[str]:
    """How to run MkDocs with the Material theme, or raise SystemExit(77) saying why not."""
    missing = [m for m in ("mkdocs", "material", "pymdownx")
               if importlib.util.find_spec(m) is None]
    if not missing:
        return [sys.executable, "-m", "mkdocs"]
    found = shutil.which("mkdocs")
    if found and missing != ["mkdocs", "material", "pymdownx"]:
        found = None  # this Python has part of it: a mixed install, say what is missing
    if found:
        return [found]
    print(f"SKIPPED: {', '.join(missing)} not installed for {sys.executable}; {INSTALL_HINT}",
          file=sys.stderr)
    raise SystemExit(SKIP)


def write_config(path: Path, docs: Path, out: Path, days: Sequence[Day],
                 bases: Tuple[str, str, str], root: Path, leaderboard: bool,
                 serve: bool, repo_url: Optional[str]) -> None:
    nav: List[Dict[str, object]] = [{"Home": "index.md"}]
    for d in days:
        # "Day 9 lesson", not "Lesson": the title a browser tab and a search result show.
        pages: List[Dict[str, str]] = [{f"Day {d.number} lesson": d.lesson},
                                       {f"Day {d.number} lab": d.lab}]
        if d.hints:
            pages.append({f"Day {d.number} hints": d.hints_page})
        nav.append({d.title: pages})
    config: Dict[str, object] = {
        "INHERIT": str(BASE_CONFIG),
        "docs_dir": str(docs),
        "site_dir": str(out),
        "nav": nav,
        "hooks": [str(HOOKS)],
        "edit_uri": "",
        "extra": {"course_site": {"repo_root": str(root), "blob_url": bases[0],
                                  "tree_url": bases[1], "leaderboard": leaderboard}},
    }
    if repo_url:
        config["repo_url"] = repo_url
    if serve:  # the docs folder holds links: watch what they point to
        config["watch"] = [str(root / "lessons"), str(root / "labs")]
    # JSON is YAML: MkDocs reads this file as it is.
    path.write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build the lessons, lab READMEs and hints as a static site (MkDocs, "
                    "Material theme; docs/site.md).")
    parser.add_argument("--out", default=str(ROOT / "build" / "site"),
                        help="where the site goes (default: build/site); MkDocs empties it first")
    parser.add_argument("--repo-url", help="the repository's web address, for links to its "
                        "files (default: $COURSE_SITE_REPO_URL, else git remote origin)")
    parser.add_argument("--ref", help="the branch, tag or commit those links name (default: "
                        "the checked-out branch)")
    parser.add_argument("--leaderboard", metavar="PATH", help="publish leaderboard.html (a "
                        "folder holding it, or the file) with the site, with a nav entry")
    parser.add_argument("--serve", action="store_true", help="preview the site with `mkdocs "
                        "serve` instead of building it")
    parser.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)  # tests: a copy
    args = parser.parse_args(argv)

    root = Path(args.root).resolve()
    out = Path(args.out).resolve()
    try:
        leaderboard = leaderboard_folder(args.leaderboard)
        days = find_days(root)
        bases = link_bases(root, args.repo_url, args.ref)
        if not args.serve:
            check_out(out, leaderboard)
    except Usage as e:
        print(f"build_site: {e}", file=sys.stderr)
        return 2
    command = mkdocs_command()
    repo_url = bases[0].split("/blob/")[0].rstrip("/-") if bases[0].startswith("http") else None

    with tempfile.TemporaryDirectory(prefix="course-site-") as tmp:
        docs = Path(tmp) / "docs"
        assemble(root, docs, days, leaderboard)
        config = Path(tmp) / "mkdocs.yml"
        write_config(config, docs, out, days, bases, root, leaderboard is not None, args.serve,
                     repo_url)
        # NO_MKDOCS_2_WARNING: Material's notice about its successor, on every run, says
        # nothing about this build.
        env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
        if args.serve:
            return subprocess.call([*command, "serve", "-f", str(config)], env=env)
        p = subprocess.run([*command, "build", "--strict", "-f", str(config)], env=env)
        if p.returncode != 0:
            print(f"build_site: MkDocs failed (exit {p.returncode}): the messages above name "
                  "the page and the link", file=sys.stderr)
            return 1
    (out / MARKER).write_text("Built by tools/site/build_site.py; building again empties this "
                              "folder.\n", encoding="utf-8")
    print(f"site: {out / 'index.html'} ({len(days)} days; links to the repository's files go "
          f"to {bases[2]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
