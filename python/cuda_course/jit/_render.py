"""Jinja2 rendering of the kernel templates (templates/*.cu.jinja).

A JitSpec names one specialisation: a template and the values of its parameters. Rendering it
gives the complete CUDA source nvcc compiles (the templates paste in the helpers they include,
so the rendered text is the whole translation unit, apart from the CUDA and TVM-FFI headers).
"""

import json
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"

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
        return template.render(**self.params, spec=self.spec_json())

    def __repr__(self):
        return f"JitSpec({self.name!r}, {self.template!r}, {self.params!r})"

    def __eq__(self, other):
        return isinstance(other, JitSpec) and (self.name, self.template, self.params) == (
            other.name, other.template, other.params)

    def __hash__(self):
        return hash((self.name, self.template, json.dumps(self.params, sort_keys=True)))
