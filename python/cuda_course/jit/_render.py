"""Jinja2 rendering of the kernel templates (templates/*.cu.jinja).

A JitSpec names one specialisation: a template and the values of its parameters. Rendering it
gives the complete CUDA source nvcc compiles: the course's own headers it includes
(`#include "course/..."`, from common/course/) are pasted in, once each, and a template may take
a solution's device code as it is (`{{ solution_device_code("d11_decode_attention") }}`), so the
rendered text is the whole translation unit apart from the CUDA and TVM-FFI headers, and the
cache key (the hash of that text) changes with the course's code. Nothing is copied into the
package: the course's checkout is found next to it, or where CUDA_COURSE_ROOT says.
"""

import json
import os
import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
_INCLUDE = re.compile(r'^#include "(course/[A-Za-z0-9_./]+)"\s*$', re.M)


def course_root():
    """The course's checkout (the folder holding common/course/ and solutions/): CUDA_COURSE_ROOT,
    else the folders above this package (python/cuda_course/jit in the checkout)."""
    candidates = [os.environ.get("CUDA_COURSE_ROOT", "")] + [str(p) for p in TEMPLATES.parents]
    for c in candidates:
        if c and os.path.isdir(os.path.join(c, "common", "course")) \
                and os.path.isdir(os.path.join(c, "solutions")):
            return c
    raise FileNotFoundError(
        "cuda_course.jit renders the course's own kernels and headers and cannot find the "
        "course's checkout (common/course/ and solutions/): set CUDA_COURSE_ROOT to it")


def inline_course_headers(text, seen=None):
    """`text` with every `#include "course/X"` replaced by common/course/X, recursively, each
    header once (as its #pragma once would)."""
    seen = set() if seen is None else seen
    common = os.path.join(course_root(), "common")

    def paste(m):
        name = m.group(1)
        if name in seen:
            return f"// {name}: pasted above"
        seen.add(name)
        with open(os.path.join(common, name), encoding="utf-8") as f:
            body = f.read().replace("#pragma once\n", "")
        return (f"// --- common/{name} ---\n" + inline_course_headers(body, seen).rstrip("\n")
                + f"\n// --- end of common/{name} ---")

    return _INCLUDE.sub(paste, text)


def solution_device_code(lab):
    """The device code of solutions/<lab>/kernel.cu as a template takes it: from its first
    `using course::` line to the line before `// Host side.`, the starter's markers dropped (the
    solution's side of every marked region kept)."""
    path = os.path.join(course_root(), "solutions", lab, "kernel.cu")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("using course::"))
    end = next(i for i, line in enumerate(lines) if line.startswith("// Host side."))
    out, skip = [], False
    for line in lines[start:end - 1]:
        s = line.strip()
        if s.startswith("// >>> STARTER"):
            skip = True
        elif s.startswith("// === SOLUTION"):
            skip = False
        elif s.startswith("// <<<") or skip:
            continue
        else:
            out.append(line)
    return "\n".join(out).rstrip("\n")

_env = None


def _environment():
    global _env
    if _env is None:
        try:
            import jinja2
        except ImportError as e:
            raise ImportError(
                "cuda_course.jit renders its kernels with Jinja2, which is not installed: "
                "pip install jinja2 (or: pip install -r python/requirements-jit.txt)"
            ) from e
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(TEMPLATES)),
            undefined=jinja2.StrictUndefined,  # a parameter the caller forgot is an error
            keep_trailing_newline=True,
            autoescape=False,
        )
        env.filters["cpp_string"] = json.dumps  # a JSON string is a valid C++ literal (ASCII)
        env.globals["solution_device_code"] = solution_device_code
        _env = env
    return _env


class JitSpec:
    """One specialisation: `name` (readable, unique per parameter set: it names the cache
    entry), `template` (a file of templates/), `params` (the template's values) and `exports`
    (the functions the module must have). Equal specs render equal sources."""

    def __init__(self, name, template, params, exports):
        self.name = name
        self.template = template
        self.params = dict(params)
        self.exports = tuple(exports)

    def spec_json(self):
        """The parameters as canonical JSON (the module returns it from its `spec` function)."""
        return json.dumps({"template": self.template, **self.params}, sort_keys=True)

    def render(self):
        """The CUDA source of this specialisation."""
        template = _environment().get_template(self.template)
        return inline_course_headers(template.render(**self.params, spec=self.spec_json()))

    def __repr__(self):
        return f"JitSpec({self.name!r}, {self.template!r}, {self.params!r})"

    def __eq__(self, other):
        return isinstance(other, JitSpec) and (self.name, self.template, self.params) == (
            other.name, other.template, other.params)

    def __hash__(self):
        return hash((self.name, self.template, json.dumps(self.params, sort_keys=True)))
