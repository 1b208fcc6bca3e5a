"""Checks of compiled device code, without a GPU: does the kernel use the instructions its
exercise is about (16-byte loads, MUFU.TANH, shuffles, HMMA...) and none it must not (local
memory)? cuobjdump disassembles the kernel library into SASS for every architecture it was
compiled for; each check is a sentence for the student when it fails:

  "VectorizedCopy: your d02::copy_2_vectorized_kernel<float, 4> must move 16 bytes per load and
   store, but on sm_90 it has no instruction matching LDG.E.128 (see lesson 2 §5)."
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import results as R
from .manifest import Lab, Manifest, SassCheck

SKIP = 77


class ToolMissing(Exception):
    pass


def find_tools(cuobjdump: str) -> Tuple[str, str]:
    """(cuobjdump, a demangler) or ToolMissing with how to get them."""
    exe = cuobjdump or shutil.which("cuobjdump") or ""
    if not (exe and os.access(exe, os.X_OK)
            and os.access(os.path.join(os.path.dirname(exe), "nvdisasm"), os.X_OK)):
        raise ToolMissing("cuobjdump and nvdisasm are needed to read compiled device code "
                          "(scripts/setup.sh installs them); nothing was checked")
    return exe, shutil.which("cu++filt") or shutil.which("c++filt") or ""


def normalise(name: str) -> str:
    """One spelling for template arguments, whichever demangler ran: cu++filt writes
    `kernel<float, (int)4>` and `(bool)1` where c++filt writes `kernel<float, 4>` and `true`."""
    name = re.sub(r"\(bool\)1\b", "true", name)
    name = re.sub(r"\(bool\)0\b", "false", name)
    return re.sub(r"\((?:unsigned )?(?:int|long|long long|short|char)\)(-?\d+)", r"\1", name)


def split_kernels(sass: str) -> Dict[Tuple[str, str], List[str]]:
    """{(arch, mangled name): instruction lines}"""
    kernels: Dict[Tuple[str, str], List[str]] = {}
    arch, name = "unknown", None
    for line in sass.splitlines():
        m = re.search(r"arch = (sm_\w+)", line)
        if m:  # a new cubin: what follows belongs to no kernel until its Function line
            arch, name = m.group(1), None
            continue
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            kernels[(arch, name)] = []
            continue
        if name is not None:
            kernels[(arch, name)].append(line)
    return kernels


@dataclass
class Disassembly:
    kernels: Dict[Tuple[str, str], List[str]]
    names: Dict[str, str]  # mangled -> demangled, normalised

    @property
    def archs(self) -> List[str]:
        return sorted({a for a, _ in self.kernels})


def disassemble(library: str, cuobjdump: str, cache_dir: Optional[str] = None) -> Disassembly:
    """cuobjdump -sass of `library`, kept in `cache_dir` by the library's content hash (every
    check of a day reads the same disassembly)."""
    exe, cufilt = find_tools(cuobjdump)
    with open(library, "rb") as f:
        digest = hashlib.sha1(f.read()).hexdigest()[:16]
    cached = os.path.join(cache_dir, f"{os.path.basename(library)}.{digest}.sass") \
        if cache_dir else ""
    if cached and os.path.exists(cached):
        with open(cached, encoding="utf-8", errors="replace") as f:
            text = f.read()
    else:
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(exe) + os.pathsep + env.get("PATH", "")
        out = subprocess.run([exe, "-sass", library], capture_output=True, text=True,
                             errors="replace", env=env)
        if out.returncode != 0:
            raise RuntimeError(f"cuobjdump failed on {library}:\n{out.stderr.strip()}")
        text = out.stdout
        if cached:
            R.write_atomically(cached, text)
    kernels = split_kernels(text)
    mangled = sorted({n for _, n in kernels})
    names = {n: n for n in mangled}
    if cufilt and mangled:
        d = subprocess.run([cufilt], input="\n".join(mangled), capture_output=True, text=True,
                           errors="replace")
        lines = d.stdout.splitlines()
        if d.returncode == 0 and len(lines) == len(mangled):
            names = {n: normalise(line) for n, line in zip(mangled, lines)}
    return Disassembly(kernels, names)


def short_name(demangled: str) -> str:
    """'void d02::copy_kernel<float, 4>(float const*, float*, long)' -> 'd02::copy_kernel<float,
    4>': the name a student recognises, without the return type and the parameters."""
    name = re.sub(r"^(?:void|static|__global__)\s+", "", demangled.strip())
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:i]
    return name


def pattern_words(pattern: str) -> str:
    """A regex as the instruction it stands for: 'LDG\\.E\\.128' -> 'LDG.E.128'."""
    return pattern.replace("\\.", ".").replace("\\", "")


@dataclass
class CheckResult:
    check: SassCheck
    ok: bool
    problems: List[str] = field(default_factory=list)  # sentences, one per failure
    detail: str = ""  # what was checked, when ok
    skipped: str = ""  # why nothing was checked (the build has none of the check's archs)


def run_check(check: SassCheck, dis: Disassembly, variant: str) -> CheckResult:
    who = "your " if variant == "lab" else "the solution's "
    found: Dict[str, List[str]] = {}  # sentence -> the architectures it holds on

    def problem(arch: str, sentence: str) -> None:
        found.setdefault(sentence, []).append(arch)

    if not dis.kernels:
        return CheckResult(check, False, ["the library holds no device code at all"])
    archs = [a for a in dis.archs if not check.archs or a in check.archs]
    if not archs:
        return CheckResult(check, False, skipped=(
            f"checked only on {', '.join(check.archs)}, and this build compiled "
            f"{', '.join(dis.archs)}: nothing was checked (build for {check.archs[0]} to run it)"))
    for arch in archs:
        chosen = {n: body for (a, n), body in dis.kernels.items()
                  if a == arch and re.search(check.kernel, dis.names[n])}
        if not chosen:
            names = sorted({short_name(dis.names[n]) for (a, n) in dis.kernels if a == arch})
            # The kernels of the same name with other template arguments say the most: a
            # template instance that is never launched is never compiled.
            base = pattern_words(check.kernel).split("<")[0].strip(".*^ ")
            alike = [n for n in names if base and base in n]
            listed = alike or names
            more = f", and {len(listed) - 12} more" if len(listed) > 12 else ""
            problem(arch, f"{who}code has no compiled kernel whose name matches /{check.kernel}/, "
                          f"the kernel that must {check.what}: a kernel (or a template instance) "
                          f"that is never launched is never compiled; was it renamed or removed? "
                          f"({'compiled instead' if alike else 'kernels'}: "
                          f"{', '.join(listed[:12])}{more})")
            continue
        shown = ", ".join(sorted(short_name(dis.names[n]) for n in chosen))
        missing = [pattern_words(p) for p in check.require
                   if not any(re.search(p, line) for body in chosen.values() for line in body)]
        if missing:
            problem(arch, f"{who}{shown} must {check.what}, but "
                          + ("they have" if len(chosen) > 1 else "it has")
                          + " no instruction matching " + " nor ".join(missing))
        for pattern in check.forbid:
            for n, body in sorted(chosen.items()):
                hits = [line.strip() for line in body if re.search(pattern, line)]
                if hits:
                    first = re.sub(r"/\*[0-9a-f]+\*/", "", hits[0]).strip(" ;")
                    problem(arch, f"{who}{short_name(dis.names[n])} must {check.what}, but it "
                                  f"has {len(hits)} instruction(s) matching "
                                  f"{pattern_words(pattern)}, e.g. `{first}`")
        for pattern, limit in check.at_most.items():
            for n, body in sorted(chosen.items()):
                hits = sum(1 for line in body if re.search(pattern, line))
                if hits > limit:
                    problem(arch, f"{who}{short_name(dis.names[n])} must {check.what}, but it "
                                  f"has {hits} instructions matching {pattern_words(pattern)} "
                                  f"where {limit} do it")
    if found:
        return CheckResult(check, False, [f"{sentence} (on {', '.join(archs)})"
                                          for sentence, archs in found.items()])
    return CheckResult(check, True, detail=(
        f"{len(archs)} architecture{'s' if len(archs) > 1 else ''} ({', '.join(archs)}), "
        f"kernels /{check.kernel}/"))


def describe(result: CheckResult, lab: Lab) -> str:
    """The sentence a student reads."""
    where = f"{result.check.exercise}: " if result.check.exercise else f"{lab.day}: "
    if result.ok:
        return f"{where}{result.check.name}: ok ({result.detail})"
    body = "; ".join(result.problems)
    return f"{where}{body} (see {result.check.lesson})."


def check_case(m: Manifest, lab: Lab, variant: str, check: SassCheck,
               dis: Optional[Disassembly] = None) -> R.Case:
    """A SASS check as a test case: passed, failed, or skipped without tools. Kind "sass" (its
    points are performance points), or "host" for a CORRECTNESS check (one of its exercise's
    cases)."""
    name = f"sass.{check.name}"
    kind = "host" if check.correctness else "sass"
    try:
        if dis is None:
            dis = disassemble(lab.programs(variant).kernel_lib, m.cuobjdump,
                              os.path.join(m.binary_dir, "sass-cache"))
    except ToolMissing as e:
        return R.Case(name, R.SKIPPED, message=str(e), exercise=check.exercise, kind=kind)
    except (OSError, RuntimeError) as e:
        return R.Case(name, R.NOT_RUN, message=f"not run: {e}", exercise=check.exercise,
                      kind=kind)
    result = run_check(check, dis, variant)
    if result.skipped:
        return R.Case(name, R.SKIPPED, message=result.skipped, exercise=check.exercise,
                      kind=kind)
    return R.Case(name, R.PASSED if result.ok else R.FAILED, message=describe(result, lab),
                  exercise=check.exercise, kind=kind)
