"""MkDocs hooks of the lessons' site (tools/site/build_site.py writes the config that loads them).

- Links that leave the site: the pages link to files of the repository that are not pages of the
  site (`../results/h100/d11/bench-d11-solution.log`, `kernel.cu`, `../solutions/...`). The
  docs folder mirrors the repository's layout, so such a link names a path of the repository;
  when that path exists there, the link is rewritten to the repository's URL for it
  (`<repo>/blob/<ref>/<path>`, `tree/` for a folder, or `file://` into the checkout when no URL
  is known). A link to a path that exists neither in the site nor in the repository is left as
  it is, so MkDocs reports it and `--strict` fails the build.
- Hints: each numbered hint of `labs/*/hints.md` is folded (`<details>`, "Hint 1", ...), so a
  reader opens them one at a time, as `course hint` reveals them.
- Answers under a list item: a `<details markdown>` block indented under a think question is
  moved to the left margin, the only place where Python-Markdown renders Markdown inside HTML.
- The leaderboard: when the build publishes `leaderboard.html` with the site, a nav entry links
  to it.

The build passes its choices in `extra.course_site` of the config: `repo_root`, `blob_url` and
`tree_url` (prefixes that end in `/`), and `leaderboard` (true or false).
"""

from __future__ import annotations

import os
import posixpath
import re
import xml.etree.ElementTree as etree
from typing import Any, Dict, List, Optional
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import markdown
from mkdocs.structure.nav import Link

_STATE: Dict[str, Any] = {"page": None, "files": None, "site": {}}

_HINTS_PAGE = re.compile(r"^labs/[^/]+/hints\.md$")
_INDENTED_DETAILS = re.compile(r"^([ \t]+)<details markdown")
_BLOCKS = {"p", "pre", "ul", "ol", "div", "table", "blockquote", "details", "h1", "h2", "h3",
           "h4", "h5", "h6", "hr"}


def repo_url_for(src_uri: str, url: str, site: Dict[str, Any], in_site) -> Optional[str]:
    """The repository URL for a relative link `url` on the page `src_uri`, or None when MkDocs
    should judge the link itself (it is external, an anchor, a page or file of the site, or a
    path the repository does not have). `in_site(path)` says whether a docs path is in the site.
    """
    scheme, netloc, path, query, fragment = urlsplit(url)
    if scheme or netloc or not path or path.startswith(("/", "\\")):
        return None
    target = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), unquote(path)))
    if target == ".." or target.startswith("../") or in_site(target):
        return None
    local = os.path.join(site["repo_root"], *target.split("/"))
    if os.path.isdir(local):
        if any(in_site(posixpath.join(target, name)) for name in ("index.md", "README.md")):
            return None  # a folder the site has a page for: MkDocs asks for the page's file
        base = site["tree_url"]
    elif os.path.isfile(local):
        base = site["blob_url"]
    else:
        return None
    return base + quote(target) + urlunsplit(("", "", "", query, fragment))


class _RepoLinks(markdown.treeprocessors.Treeprocessor):
    """Rewrites the links that leave the site; folds the hints. Runs after the inline patterns
    (priority 20) and before MkDocs's own link resolution (`relpath`, priority 0)."""

    def run(self, root: etree.Element) -> None:
        page, files, site = _STATE["page"], _STATE["files"], _STATE["site"]
        if page is None or files is None:
            return
        src = page.file.src_uri

        def in_site(path: str) -> bool:
            return files.get_file_from_path(path) is not None

        for element in root.iter():
            key = {"a": "href", "img": "src"}.get(element.tag)
            url = element.get(key) if key else None
            if url:
                new = repo_url_for(src, url, site, in_site)
                if new is not None:
                    element.set(key, new)
        if _HINTS_PAGE.match(src):
            fold_hints(root)


def fold_hints(root: etree.Element) -> None:
    """Each item of a top-level numbered list becomes a folded `<details>` "Hint k"."""
    children: List[etree.Element] = []
    for element in list(root):
        if element.tag != "ol":
            children.append(element)
            continue
        for k, item in enumerate(element.findall("li"), start=int(element.get("start", "1"))):
            details = etree.Element("details", {"class": "hint"})
            etree.SubElement(details, "summary").text = f"Hint {k}"
            content = list(item)
            if any(child.tag in _BLOCKS for child in content):
                details.extend(content)  # a loose list: the item already holds paragraphs
            else:
                paragraph = etree.SubElement(details, "p")
                paragraph.text = item.text
                paragraph.extend(content)
            details.tail = "\n"
            children.append(details)
    for element in list(root):
        root.remove(element)
    root.extend(children)


class _RepoLinksExtension(markdown.Extension):
    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802 (Markdown's name)
        md.treeprocessors.register(_RepoLinks(md), "course_repo_links", 4)


def on_config(config, **kwargs):
    _STATE["site"] = dict(config.extra.get("course_site") or {})
    for key in ("repo_root", "blob_url", "tree_url"):
        if not _STATE["site"].get(key):
            raise ValueError(f"extra.course_site.{key} is not set: build the site with "
                             "tools/site/build_site.py")
    config.markdown_extensions.append(_RepoLinksExtension())
    return config


def lift_answers(text: str) -> str:
    """Moves each `<details markdown>` block that is indented under a list item (a think
    question's answer, as GitHub renders it) to the left margin, where md_in_html renders its
    Markdown: Python-Markdown reads raw HTML only there. The list goes on after it (sane_lists
    keeps its numbers). Fenced code is left alone."""
    lines = text.split("\n")
    fence = None
    i = 0
    while i < len(lines):
        stripped = lines[i].lstrip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        else:
            m = _INDENTED_DETAILS.match(lines[i])
            if m:
                indent = m.group(1)
                j = i
                while j < len(lines):
                    if lines[j].startswith(indent):
                        lines[j] = lines[j][len(indent):]
                    if lines[j].strip() == "</details>":
                        break
                    j += 1
                i = j
        i += 1
    return "\n".join(lines)


def on_page_markdown(markdown_text, page, config, files, **kwargs):
    _STATE["page"], _STATE["files"] = page, files
    return lift_answers(markdown_text)


def on_nav(nav, config, files, **kwargs):
    if _STATE["site"].get("leaderboard"):
        nav.items.append(Link("Leaderboards", "leaderboard.html"))
    return nav
