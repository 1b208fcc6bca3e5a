"""The labs of a build, as CMake described them in <build>/course_manifest.json
(cmake/course.cmake, course_write_manifest)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import results as R

MANIFEST = "course_manifest.json"
VARIANTS = ("lab", "solution")


class ManifestError(Exception):
    """The build has no usable manifest; the message says what to do."""


@dataclass
class SassCheck:
    name: str
    what: str
    lesson: str
    exercise: str = ""
    kernel: str = ".*"
    require: List[str] = field(default_factory=list)
    forbid: List[str] = field(default_factory=list)
    # {pattern: n}: at most n instructions matching pattern in each kernel (a count: loads that
    # must not be repeated)
    at_most: Dict[str, int] = field(default_factory=dict)
    solution_only: bool = False
    archs: List[str] = field(default_factory=list)  # only these architectures; empty: every one
    correctness: bool = False  # a test case of its exercise (correctness points), not performance


@dataclass
class Programs:
    """The files of one variant (the student's code or the solution) of a lab."""

    source: str  # its kernel.cu
    tests: str  # the GoogleTest program
    bench: str  # the Google Benchmark program
    kernel_lib: str  # the compiled kernel.cu (what the SASS checks read)


@dataclass
class Lab:
    day: str  # "d02"
    name: str  # "d02_coalescing"
    title: str
    exercises: List[str]  # the graded test suites, in order (lab.json's exercises' suites)
    host_suites: List[str]
    serial_suites: List[str]
    timeout: float
    lab: Programs
    solution: Programs
    sass_checks: List[SassCheck]
    sanitizers: List[str] = field(default_factory=list)  # compute-sanitizer tools graded
    grade_benchmarks: str = ""  # the benchmark rows a grader times ("" = all)
    hidden_tests: List[str] = field(default_factory=list)
    # Serial suites whose results are times: their run has the GPU to itself (ctest RUN_SERIAL);
    # the other serial suites run one at a time beside the rest (lab.json's timing_suites).
    timing_suites: List[str] = field(default_factory=list)
    points: Dict[str, float] = field(default_factory=dict)  # suite -> points (lab.json)
    spec: str = ""  # labs/<lab>/lab.json

    @property
    def number(self) -> int:
        return int(self.day[1:])

    def programs(self, variant: str) -> Programs:
        return self.lab if variant == "lab" else self.solution

    def kind_of(self, test_name: str) -> str:
        return "host" if R.suite_in(R.suite_of(test_name), self.host_suites) else "gpu"

    def is_serial(self, test_name: str) -> bool:
        return R.suite_in(R.suite_of(test_name), self.serial_suites)

    def is_timing(self, test_name: str) -> bool:
        return R.suite_in(R.suite_of(test_name), self.timing_suites)

    def exercise_of(self, test_name: str) -> str:
        return R.exercise_of(R.suite_of(test_name), self.exercises)

    def checks_for(self, variant: str) -> List[SassCheck]:
        return [c for c in self.sass_checks if variant == "solution" or not c.solution_only]


@dataclass
class Manifest:
    path: str
    source_dir: str
    binary_dir: str
    python: str
    cuobjdump: str
    cuda_architectures: str
    results_dir: str
    test_budget: float
    labs: List[Lab]
    # Set in the manifest the grader writes for a student (grade.py): {"sandbox": the command
    # line that runs a student's program in the sandbox (sandbox.py), [] for none; "verify":
    # true: every passing case is checked again in the reference program (testrun.py), unless
    # "replay": false (course grade --no-replay); "sanitize_seconds": a checker run's limit;
    # "sanitize_only_if_passed", "stop_at_first_failure": true when scoring planted bugs}.
    grading: Dict = field(default_factory=dict)

    def find(self, text: str) -> Optional[Lab]:
        """A lab from what a student types: d02, 02, 2, day2, D02 or d02_coalescing."""
        t = text.strip().lower()
        m = re.fullmatch(r"(?:d|day)?\s*0*(\d{1,2})(?:_.*)?", t)
        for lab in self.labs:
            if t == lab.name.lower() or (m and int(m.group(1)) == lab.number):
                return lab
        return None

    def next_after(self, lab: Lab) -> Optional[Lab]:
        i = self.labs.index(lab)
        return self.labs[i + 1] if i + 1 < len(self.labs) else None


def _programs(d: dict) -> Programs:
    return Programs(source=d["source"], tests=d["tests"], bench=d["bench"],
                    kernel_lib=d["kernel_lib"])


def parse(doc: dict, path: str = MANIFEST) -> Manifest:
    try:
        labs = []
        for d in doc["labs"]:
            labs.append(Lab(
                day=d["day"], name=d["name"], title=d["title"], exercises=list(d["exercises"]),
                host_suites=list(d.get("host_suites", [])),
                serial_suites=list(d.get("serial_suites", [])),
                timing_suites=list(d.get("timing_suites", [])), timeout=float(d["timeout"]),
                lab=_programs(d["lab"]), solution=_programs(d["solution"]),
                sass_checks=[SassCheck(**c) for c in d.get("sass_checks", [])],
                sanitizers=list(d.get("sanitizers", [])),
                grade_benchmarks=str(d.get("grade_benchmarks", "")),
                hidden_tests=list(d.get("hidden_tests", [])),
                points={str(k): float(v) for k, v in (d.get("points") or {}).items()},
                spec=str(d.get("spec", ""))))
        labs.sort(key=lambda lab: lab.day)
        return Manifest(path=path, source_dir=doc["source_dir"], binary_dir=doc["binary_dir"],
                        python=doc.get("python", "python3"), cuobjdump=doc.get("cuobjdump", ""),
                        cuda_architectures=str(doc.get("cuda_architectures", "")),
                        results_dir=doc["results_dir"],
                        test_budget=float(doc.get("test_budget", 1200)), labs=labs,
                        grading=dict(doc.get("grading") or {}))
    except (KeyError, TypeError, ValueError) as e:
        raise ManifestError(f"{path} is not a course manifest ({type(e).__name__}: {e}); "
                            "reconfigure the build to rewrite it") from e


def load(path: str) -> Manifest:
    if os.path.isdir(path):
        path = os.path.join(path, MANIFEST)
    if not os.path.exists(path):
        raise ManifestError(f"no course build here: {path} does not exist")
    try:
        doc = R.read_json(path)
    except ValueError as e:
        raise ManifestError(str(e)) from e
    return parse(doc, path)


def to_json(m: Manifest) -> dict:
    """The manifest as JSON again (the grader writes one per student)."""
    def programs(p: Programs) -> dict:
        return {"source": p.source, "tests": p.tests, "bench": p.bench,
                "kernel_lib": p.kernel_lib}

    return {
        "format": 1,
        "source_dir": m.source_dir,
        "binary_dir": m.binary_dir,
        "python": m.python,
        "cuobjdump": m.cuobjdump,
        "cuda_architectures": m.cuda_architectures,
        "results_dir": m.results_dir,
        "test_budget": m.test_budget,
        "grading": m.grading,
        "labs": [{
            "day": lab.day, "name": lab.name, "title": lab.title, "exercises": lab.exercises,
            "host_suites": lab.host_suites, "serial_suites": lab.serial_suites,
            "timing_suites": lab.timing_suites,
            "timeout": lab.timeout, "lab": programs(lab.lab),
            "solution": programs(lab.solution),
            "sass_checks": [vars(c) for c in lab.sass_checks],
            "sanitizers": lab.sanitizers, "grade_benchmarks": lab.grade_benchmarks,
            "hidden_tests": lab.hidden_tests, "points": lab.points, "spec": lab.spec,
        } for lab in m.labs],
    }
