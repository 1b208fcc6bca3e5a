"""Tests of the lessons' site (tools/site/build_site.py, docs/site.md): the real lessons, lab
READMEs and hints built with `mkdocs build --strict`, every link of the result followed, broken
links planted in a copy of the tree, and, when a Chromium is installed, a lesson page and the
search as a browser runs them.

    cd tests/tools && python3 -m unittest test_site

The build needs MkDocs with the Material theme (tools/site/requirements.txt) for this Python, or
for the one COURSE_SITE_PYTHON names (a virtual environment's python); without it those tests
are skipped, with the reason.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Dict, List, Optional
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent.parent
BUILD = ROOT / "tools" / "site" / "build_site.py"
sys.path.insert(0, str(ROOT / "tools" / "site"))
sys.path.insert(0, str(ROOT / "tools"))

import build_site as B  # noqa: E402
from course import hints as H  # noqa: E402

REPO = "https://github.com/example/cuda-course"
WORD = "zyzzyvaquux"  # a word no page holds but the planted one: what the search must find


def site_python() -> Optional[str]:
    """A Python that has MkDocs, the Material theme and pymdown-extensions, or None."""
    for python in (os.environ.get("COURSE_SITE_PYTHON"), sys.executable):
        if not python:
            continue
        try:
            p = subprocess.run([python, "-c", "import mkdocs, material, pymdownx"],
                               capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if p.returncode == 0:
            return python
    return None


SITE_PYTHON = site_python()
NO_MKDOCS = (f"MkDocs with the Material theme is not installed for {sys.executable} (pip install "
             "-r tools/site/requirements.txt, or set COURSE_SITE_PYTHON to a Python that has "
             "it): the site is not built")
needs_mkdocs = unittest.skipUnless(SITE_PYTHON, NO_MKDOCS)


def build(root: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SITE_PYTHON or sys.executable, str(BUILD), "--root", str(root),
                           "--out", str(out), *args],
                          capture_output=True, text=True, timeout=600)


FIXTURE = {
    "README.md": "# A fixture course\n",  # the home page links to it
    "lessons/d01_fixture.md": f"""# Day 1 — A fixture lesson

The lab is [Day 1's](../labs/d01_fixture/README.md); the code is in [§1](#1-code).

## §1 Code

```cpp
__global__ void add_kernel(const float* a, float* b) {{ b[threadIdx.x] += a[threadIdx.x]; }}
```

![A figure](figures/fixture_figure.svg)

![A diagram](diagrams/fixture_diagram.svg)

Measured: [the log](../results/h100/d01/bench.log), in [the day's folder](../results/h100/d01/).

## §2 Think questions

1. Why does the answer under this question render?

   <details markdown><summary>Answer</summary>

   **Because** the site moves it to the margin: `{WORD}`.

   </details>

2. And an answer at the margin?

<details markdown><summary>Answer</summary>

*Also* rendered.

</details>
""",
    "labs/d01_fixture/README.md": """# Day 1 — A fixture lab

Read [the lesson's code](../../lessons/d01_fixture.md#1-code), then edit [kernel.cu](kernel.cu).
""",
    "labs/d01_fixture/hints.md": """# Hints: Day 1

## Add

1. The first hint.

2. The second hint, with `code`.
""",
    "labs/d01_fixture/kernel.cu": "// the student's file\n",
    "results/h100/d01/bench.log": "BM_add 1.0 us\n",
}
SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">'
       '<rect width="40" height="20" fill="#76b900"/></svg>\n')


def make_fixture(dest: Path) -> Path:
    """A small repository of one day: a lesson with a figure, a diagram, C++ code, links to a
    lab, its kernel and a result file, and two answers (under a question and at the margin)."""
    for name, text in FIXTURE.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(text, encoding="utf-8")
    for name in ("lessons/figures/fixture_figure.svg", "lessons/diagrams/fixture_diagram.svg"):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(SVG, encoding="utf-8")
    return dest


class Page(html.parser.HTMLParser):
    """The links, images, ids and folded blocks of one built page."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.path = path
        self.links: List[str] = []
        self.images: List[str] = []
        self.ids: set = set()
        self.details: List[Dict[str, object]] = []
        self._stack: List[Dict[str, object]] = []
        self._summary = False
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and a.get("href") is not None:
            self.links.append(a["href"])
        if tag == "link" and a.get("href") is not None:
            self.links.append(a["href"])
        if tag in ("img", "script") and a.get("src"):
            (self.images if tag == "img" else self.links).append(a["src"])
        if tag == "details":
            block = {"attrs": a, "summary": "", "tags": []}
            self.details.append(block)
            self._stack.append(block)
        elif self._stack:
            self._stack[-1]["tags"].append(tag)
        if tag == "summary":
            self._summary = True

    def handle_endtag(self, tag):
        if tag == "details" and self._stack:
            self._stack.pop()
        if tag == "summary":
            self._summary = False

    def handle_data(self, data):
        if self._summary and self._stack:
            self._stack[-1]["summary"] += data


def html_path(docs_path: str) -> str:
    """Where MkDocs writes a page (use_directory_urls: false; a README is its folder's index)."""
    return re.sub(r"\.md$", ".html", re.sub(r"(^|/)(README|index)\.md$", r"\1index.md", docs_path))


def local_target(page: Path, url: str) -> Optional[Path]:
    """The file a relative link of `page` names, or None for an external or same-page link."""
    scheme, netloc, path, _, _ = urlsplit(url)
    if scheme or netloc or not path:
        return None
    return (page.parent / unquote(path)).resolve()


class WithoutMkDocs(unittest.TestCase):
    """What the builder decides before MkDocs runs: these need nothing installed."""

    def test_every_lesson_has_its_lab(self):
        days = B.find_days(ROOT)
        lessons = sorted(p for p in (ROOT / "lessons").glob("d*.md") if B.DAY_FILE.match(p.name))
        self.assertEqual([d.lesson for d in days],
                         [p.relative_to(ROOT).as_posix() for p in lessons])
        for d in days:
            self.assertTrue(d.title.startswith(f"Day {d.number}"), d.title)

    def test_remotes_become_web_addresses(self):
        for remote, url in [
                ("git@github.com:owner/course.git", "https://github.com/owner/course"),
                ("https://github.com/owner/course.git", "https://github.com/owner/course"),
                ("ssh://git@gitlab.example.org/group/course.git",
                 "https://gitlab.example.org/group/course"),
                ("https://user@github.com/owner/course/", "https://github.com/owner/course")]:
            self.assertEqual(B.web_url(remote), url, remote)
        blob, tree, _ = B.link_bases(ROOT, "https://gitlab.example.org/g/course", "v1")
        self.assertEqual(blob, "https://gitlab.example.org/g/course/-/blob/v1/")
        self.assertEqual(tree, "https://gitlab.example.org/g/course/-/tree/v1/")

    def test_a_folder_of_other_files_is_not_emptied(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            B.check_out(out / "new", None)  # a new folder
            B.check_out(out, None)  # an empty one
            (out / "leaderboard.html").write_text("<html></html>")
            with self.assertRaisesRegex(B.Usage, "--leaderboard"):
                B.check_out(out, None)
            B.check_out(out, out)  # published with the site
            (out / "notes.txt").write_text("mine")
            with self.assertRaisesRegex(B.Usage, "not empty"):
                B.check_out(out, out)
            (out / B.MARKER).write_text("")
            B.check_out(out, None)  # a site built here

    def test_without_mkdocs_it_says_skipped(self):
        # -S: no site-packages, so MkDocs cannot be imported; PATH without an mkdocs program.
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([sys.executable, "-S", str(BUILD), "--out", tmp],
                               capture_output=True, text=True, timeout=120,
                               env={"PATH": "", "HOME": tmp})
        self.assertEqual(p.returncode, B.SKIP, p.stdout + p.stderr)
        self.assertIn("SKIPPED: mkdocs", p.stderr)
        self.assertIn("tools/site/requirements.txt", p.stderr)


@needs_mkdocs
class TheCourseSite(unittest.TestCase):
    """The repository's own lessons, labs and hints, built once, with a leaderboard."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="course-site-test-"))
        board = cls.tmp / "grades"
        board.mkdir()
        (board / "leaderboard.html").write_text("<!DOCTYPE html><title>Leaderboards</title>")
        cls.out = cls.tmp / "site"
        cls.built = build(ROOT, cls.out, "--repo-url", REPO, "--ref", "main",
                          "--leaderboard", str(board))
        cls.days = B.find_days(ROOT)
        cls.pages = {p: Page(p) for p in cls.out.rglob("*.html")} if cls.out.exists() else {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        if self.id().endswith("test_the_strict_build_passes"):
            return
        self.assertEqual(self.built.returncode, 0, "the build failed: its messages are in "
                         "test_the_strict_build_passes")

    def page(self, docs_path: str) -> Page:
        html = self.out / html_path(docs_path)
        self.assertIn(html, self.pages, f"{docs_path} was not built as {html}")
        return self.pages[html]

    def test_the_strict_build_passes(self):
        self.assertEqual(self.built.returncode, 0, self.built.stdout + self.built.stderr)
        self.assertNotIn("WARNING", self.built.stderr)
        self.assertIn(f"links to the repository's files go to {REPO} at main", self.built.stdout)

    def test_a_page_per_day_and_navigation_by_day(self):
        home = self.page("index.md")
        for d in self.days:
            lesson = self.page(d.lesson)
            wanted = [d.lesson, d.lab] + ([d.hints_page] if d.hints else [])
            for target in wanted:
                self.page(target)
                html = html_path(target)
                self.assertIn(html, home.links, f"the home page does not link to {target}")
                self.assertIn(os.path.relpath(self.out / html, lesson.path.parent),
                              lesson.links, f"{d.lesson}'s navigation lacks {target}")
            self.assertIn(f"<title>Day {d.number} lesson - ",
                          lesson.path.read_text(encoding="utf-8"))

    def test_every_link_and_image_of_the_site_resolves(self):
        missing = []
        for path, page in self.pages.items():
            if path.name == "404.html":
                continue  # served for any missing address, so its links are absolute (/assets/)
            for url in page.links + page.images:
                target = local_target(path, url)
                if target is None:
                    continue
                if not target.is_file():
                    missing.append(f"{path.relative_to(self.out)}: {url}")
                    continue
                fragment = urlsplit(url).fragment
                if fragment and target.suffix == ".html" and target in self.pages:
                    if unquote(fragment) not in self.pages[target].ids:
                        missing.append(f"{path.relative_to(self.out)}: {url} (no such anchor)")
        self.assertEqual(missing, [])

    def test_links_to_repository_files_go_to_the_repository(self):
        outside = 0
        for path, page in self.pages.items():
            for url in page.links:
                self.assertFalse(url.startswith("file:"), f"{path}: {url}")
                for kind in ("blob", "tree"):
                    prefix = f"{REPO}/{kind}/main/"
                    if url.startswith(prefix):
                        outside += 1
                        repo_path = ROOT / unquote(urlsplit(url).path[len(urlsplit(prefix).path):])
                        self.assertTrue(repo_path.is_file() if kind == "blob" else
                                        repo_path.is_dir(), f"{path}: {url}")
        self.assertGreater(outside, 0, "no page links to a file of the repository")
        d11 = self.page("lessons/d11_decode_attention.md")
        self.assertIn(f"{REPO}/blob/main/results/h100/d11/bench-d11-solution.log", d11.links)

    def test_every_figure_and_diagram_is_on_its_page(self):
        seen = 0
        for d in self.days:
            source = (ROOT / d.lesson).read_text(encoding="utf-8")
            page = self.page(d.lesson)
            images = {local_target(page.path, src) for src in page.images}
            for name in re.findall(r"!\[[^\]]*\]\(((?:figures|diagrams)/[^)\s]+)\)", source):
                seen += 1
                file = (self.out / "lessons" / name).resolve()
                self.assertIn(file, images, f"{d.lesson}: no <img> for {name}")
                self.assertTrue(file.is_file(), f"{d.lesson}: {name} was not published")
        self.assertGreater(seen, 0, "no lesson shows a figure")

    def test_answers_are_folded(self):
        for d in self.days:
            source = (ROOT / d.lesson).read_text(encoding="utf-8")
            page = self.page(d.lesson)
            self.assertEqual(len(page.details), source.count("<details markdown>"), d.lesson)
            for block in page.details:
                self.assertNotIn("open", block["attrs"], d.lesson)
                self.assertNotIn("markdown", block["attrs"], d.lesson)
                self.assertTrue(block["summary"].strip(), d.lesson)
                self.assertTrue({"p", "pre", "ul", "ol", "table"} & set(block["tags"]),
                                f"{d.lesson}: an answer's Markdown was not rendered")

    def test_hints_are_folded_one_by_one(self):
        for d in self.days:
            if not d.hints:
                continue
            hints = H.parse((ROOT / d.hints_page).read_text(encoding="utf-8"))
            page = self.page(d.hints_page)
            summaries = [b["summary"] for b in page.details]
            self.assertEqual(len(summaries), sum(len(v) for v in hints.values()), d.hints_page)
            self.assertTrue(all(re.fullmatch(r"Hint \d+", s) for s in summaries), summaries)

    def test_the_search_index_holds_every_page(self):
        index = json.loads((self.out / "search" / "search_index.json").read_text("utf-8"))
        locations = {doc["location"].split("#")[0] for doc in index["docs"]}
        for d in self.days:
            self.assertIn(f"lessons/{d.stem}.html", locations)
            self.assertIn(f"labs/{d.stem}/index.html", locations)
        text = " ".join(doc["text"] for doc in index["docs"])
        self.assertIn("grid-stride", text)

    def test_the_leaderboard_is_published_with_a_nav_entry(self):
        self.assertEqual((self.out / "leaderboard.html").read_text(),
                         "<!DOCTYPE html><title>Leaderboards</title>")
        lesson = self.page(self.days[0].lesson)
        self.assertIn("../leaderboard.html", lesson.links)
        self.assertIn("leaderboard.html", self.page("index.md").links)


@needs_mkdocs
class TheFixtureSite(unittest.TestCase):
    """The one-day fixture, built once: each kind of link, both places of an answer, the
    hints."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="course-site-test-"))
        cls.root = make_fixture(cls.tmp / "repo")
        cls.out = cls.tmp / "site"
        cls.built = build(cls.root, cls.out, "--repo-url", REPO + ".git", "--ref", "v1")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.built.returncode, 0, self.built.stdout + self.built.stderr)
        self.lesson = Page(self.out / "lessons" / "d01_fixture.html")

    def test_links_inside_the_site_stay_and_the_others_go_to_the_repository(self):
        self.assertIn("../labs/d01_fixture/index.html", self.lesson.links)
        self.assertIn("#1-code", self.lesson.links)
        self.assertIn(f"{REPO}/blob/v1/results/h100/d01/bench.log", self.lesson.links)
        self.assertIn(f"{REPO}/tree/v1/results/h100/d01", self.lesson.links)
        lab = Page(self.out / "labs" / "d01_fixture" / "index.html")
        self.assertIn("../../lessons/d01_fixture.html#1-code", lab.links)
        self.assertIn(f"{REPO}/blob/v1/labs/d01_fixture/kernel.cu", lab.links)

    def test_an_answer_renders_under_its_question_and_at_the_margin(self):
        self.assertEqual([b["summary"] for b in self.lesson.details], ["Answer", "Answer"])
        self.assertIn("strong", self.lesson.details[0]["tags"])
        self.assertIn("em", self.lesson.details[1]["tags"])
        text = self.lesson.path.read_text(encoding="utf-8")
        self.assertIn(f"<code>{WORD}</code>", text)
        self.assertIn('<ol start="2">', text)  # the question after the first answer keeps its 2

    def test_the_hints_are_folded(self):
        hints = Page(self.out / "labs" / "d01_fixture" / "hints.html")
        self.assertEqual([b["summary"] for b in hints.details], ["Hint 1", "Hint 2"])
        self.assertIn("code", hints.details[1]["tags"])

    def test_without_a_repository_url_the_links_go_into_the_checkout(self):
        out = self.tmp / "local"
        env = dict(os.environ, COURSE_SITE_REPO_URL="")
        p = subprocess.run([SITE_PYTHON, str(BUILD), "--root", str(self.root), "--out",
                            str(out)], capture_output=True, text=True, timeout=600, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("pass --repo-url to publish", p.stdout)
        lesson = Page(out / "lessons" / "d01_fixture.html")
        self.assertIn((self.root / "results/h100/d01/bench.log").as_uri(), lesson.links)

    def test_a_folder_with_other_files_is_refused(self):
        out = self.tmp / "busy"
        out.mkdir()
        (out / "notes.txt").write_text("mine")
        p = build(self.root, out)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("not empty", p.stderr)
        self.assertTrue((out / "notes.txt").exists())


@needs_mkdocs
class PlantedMistakes(unittest.TestCase):
    """The fixture with a mistake planted in its lesson: the strict build fails and names it."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="course-site-test-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.root = make_fixture(self.tmp / "repo")

    def assert_fails(self, text: str, message: str):
        with open(self.root / "lessons" / "d01_fixture.md", "a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
        p = build(self.root, self.tmp / "site")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn(message, p.stderr)
        self.assertIn("MkDocs failed", p.stderr)

    def test_the_fixture_itself_builds(self):
        p = build(self.root, self.tmp / "site")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_a_link_to_a_missing_file_fails(self):
        self.assert_fails("See [the log](../results/h100/d01/no-such-file.log).",
                          "'../results/h100/d01/no-such-file.log'")

    def test_a_missing_figure_fails(self):
        self.assert_fails("![A figure no one drew](figures/no_such_figure.svg)",
                          "'figures/no_such_figure.svg'")

    def test_a_link_to_a_missing_section_fails(self):
        self.assert_fails("As [§1](#1-no-such-section) says.",
                          "there is no such anchor on this page")

    def test_a_missing_lesson_fails(self):
        self.assert_fails("Read [lesson 99](d99_nothing.md).", "'d99_nothing.md'")


def find_browser() -> Optional[str]:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


# Reports the search results the page shows to the test's server, once there are any.
REPORTER = """<script>
const poll = setInterval(() => {
  const links = document.querySelectorAll(".md-search-result__item a");
  if (links.length) {
    clearInterval(poll);
    fetch("/report", {method: "POST",
                      body: JSON.stringify([...links].map(a => a.getAttribute("href")))});
  }
}, 100);
</script></body>"""


@needs_mkdocs
@unittest.skipUnless(find_browser(), "no Chromium or Chrome on PATH (Debian: apt-get install "
                     "chromium): the site is not rendered in a browser")
class InABrowser(unittest.TestCase):
    """The fixture's lesson (a figure, a diagram, an answer) as Chromium renders it; and the
    search, run by the site's own script in Chromium."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="course-site-test-"))
        cls.out = cls.tmp / "site"
        cls.built = build(make_fixture(cls.tmp / "repo"), cls.out)
        cls.browser = find_browser()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.built.returncode, 0, self.built.stdout + self.built.stderr)

    def chromium(self, url: str, *flags: str, dump: bool = True):
        profile = tempfile.mkdtemp(prefix="course-site-browser-")
        self.addCleanup(shutil.rmtree, profile, ignore_errors=True)
        command = [self.browser, "--headless", "--no-sandbox", "--disable-gpu",
                   f"--user-data-dir={profile}", *flags] + (["--dump-dom"] if dump else [])
        return command + [url]

    def test_a_lesson_as_a_browser_builds_it(self):
        page = self.out / "lessons" / "d01_fixture.html"
        try:
            p = subprocess.run(self.chromium(page.as_uri()), capture_output=True, text=True,
                               errors="replace", timeout=120)
        except subprocess.TimeoutExpired:
            self.skipTest(f"{self.browser} did not finish within 120 s here")
        except OSError as e:
            self.skipTest(f"{self.browser} could not start here: {e}")
        if p.returncode != 0 or "<html" not in p.stdout:
            self.skipTest(f"{self.browser} did not render the page here (exit {p.returncode}): "
                          f"{p.stderr.strip()[-500:]}")
        dom_file = self.tmp / "dom.html"
        dom_file.write_text(p.stdout, encoding="utf-8")
        dom = Page(dom_file)
        dom_file.unlink()
        sources = {(page.parent / src).resolve() for src in dom.images}
        for image in ("figures/fixture_figure.svg", "diagrams/fixture_diagram.svg"):
            self.assertIn((self.out / "lessons" / image).resolve(), sources, image)
        answers = [b for b in dom.details if b["summary"].strip() == "Answer"]
        self.assertEqual(len(answers), 2, "the answers are not <details> blocks")
        for answer in answers:
            self.assertNotIn("open", answer["attrs"])  # folded until the reader opens it
        self.assertIn("strong", answers[0]["tags"])
        self.assertIn("code", answers[0]["tags"])
        self.assertIn(f"<code>{WORD}</code>", p.stdout)
        # The C++ code is highlighted: Pygments' spans, "kt" for a type keyword such as void.
        self.assertTrue(re.search(r'<span class="kt">void</span>', p.stdout),
                        "no highlighted C++ in the lesson")

    def test_the_search_finds_a_page(self):
        index = self.out / "index.html"
        index.write_text(index.read_text(encoding="utf-8").replace("</body>", REPORTER),
                         encoding="utf-8")
        found: Dict[str, str] = {}

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                found["results"] = self.rfile.read(length).decode("utf-8")
                self.send_response(204)
                self.end_headers()

        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=str(self.out)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html?q={WORD}"
        try:
            browser = subprocess.Popen(self.chromium(url, dump=False),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError as e:
            self.skipTest(f"{self.browser} could not start here: {e}")
        try:
            deadline = time.monotonic() + 90
            while "results" not in found and time.monotonic() < deadline:
                if browser.poll() is not None:
                    self.skipTest(f"{self.browser} exited ({browser.returncode}) before the "
                                  "search showed anything")
                time.sleep(0.1)
        finally:
            browser.terminate()
            try:
                browser.wait(timeout=30)
            except subprocess.TimeoutExpired:
                browser.kill()
                browser.wait()
        self.assertIn("results", found, f"the search for {WORD} showed nothing within 90 s")
        results = json.loads(found["results"])
        self.assertTrue(results)
        self.assertEqual(urlsplit(results[0]).path, "/lessons/d01_fixture.html")


if __name__ == "__main__":
    unittest.main()
