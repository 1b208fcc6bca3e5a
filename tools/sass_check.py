#!/usr/bin/env python3
"""Check properties of compiled device code without a GPU.

Disassembles a library or object (cuobjdump -sass), splits it into kernels per architecture,
and checks, for every architecture the code was built for:
  --kernel REGEX    which kernels the check is about (matched against the demangled name);
  --require REGEX   an instruction pattern that must appear in at least one of those kernels
                    (e.g. 'LDG\\.E\\.128' for 16-byte loads, 'MUFU\\.TANH', 'HMMA');
  --forbid REGEX    a pattern that must appear in none of them (e.g. 'LDL|STL': local memory,
                    which is what register spills become).
Exit 0 when every check holds, 1 with a message per failure, 77 (ctest: skipped) when
cuobjdump or nvdisasm is missing (scripts/setup.sh installs them).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def disassemble(path, cuobjdump):
    env = dict(os.environ)
    env["NVDISASM_PATH"] = os.path.dirname(os.path.abspath(cuobjdump))  # nvdisasm sits beside it
    env["PATH"] = env["NVDISASM_PATH"] + os.pathsep + env.get("PATH", "")
    out = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"sass_check: cuobjdump failed on {path}:\n{out.stderr}")
    return out.stdout


def normalise(name):
    """One spelling for template arguments, whichever demangler ran: cu++filt writes
    `kernel<float, (int)4>` and `(bool)1` where c++filt writes `kernel<float, 4>` and `true`."""
    name = re.sub(r"\(bool\)1\b", "true", name)
    name = re.sub(r"\(bool\)0\b", "false", name)
    return re.sub(r"\((?:unsigned )?(?:int|long|long long|short|char)\)(-?\d+)", r"\1", name)


def demangle(names, cufilt):
    if not cufilt or not names:
        return {n: n for n in names}
    out = subprocess.run([cufilt], input="\n".join(names), capture_output=True, text=True)
    lines = out.stdout.splitlines()
    if len(lines) != len(names):
        return {n: n for n in names}
    return {n: normalise(line) for n, line in zip(names, lines)}


def split_kernels(sass):
    """{(arch, mangled_name): [instruction lines]}"""
    kernels, arch, name = {}, "unknown", None
    for line in sass.splitlines():
        m = re.search(r"arch = (sm_\w+)", line)
        if m:  # a new cubin starts: what follows belongs to no kernel until its Function line
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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary")
    p.add_argument("--kernel", default=".*")
    p.add_argument("--require", action="append", default=[])
    p.add_argument("--forbid", action="append", default=[])
    p.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "")
    p.add_argument("--cufilt", default=shutil.which("cu++filt") or shutil.which("c++filt"))
    args = p.parse_args()
    tool_dir = os.path.dirname(args.cuobjdump)
    if not (args.cuobjdump and os.access(args.cuobjdump, os.X_OK)
            and os.access(os.path.join(tool_dir, "nvdisasm"), os.X_OK)):
        print("SKIPPED: cuobjdump and nvdisasm are needed to read compiled device code "
              "(scripts/setup.sh installs them); nothing was checked")
        return 77

    kernels = split_kernels(disassemble(args.binary, args.cuobjdump))
    names = demangle(sorted({n for _, n in kernels}), args.cufilt)
    archs = sorted({a for a, _ in kernels})
    failures = []
    if not kernels:
        failures.append(f"no device code found in {args.binary}")
    for arch in archs:
        chosen = {n: body for (a, n), body in kernels.items()
                  if a == arch and re.search(args.kernel, names[n])}
        if not chosen:
            failures.append(f"{arch}: no kernel matches /{args.kernel}/ "
                            f"(kernels: {', '.join(names[n] for (a, n) in kernels if a == arch)})")
            continue
        for pattern in args.require:
            if not any(re.search(pattern, line) for body in chosen.values() for line in body):
                failures.append(f"{arch}: no instruction matching /{pattern}/ in "
                                f"{', '.join(names[n] for n in chosen)}")
        for pattern in args.forbid:
            for n, body in chosen.items():
                hits = [line.strip() for line in body if re.search(pattern, line)]
                if hits:
                    failures.append(f"{arch}: {names[n]} contains /{pattern}/, e.g. {hits[0]}")
    for f in failures:
        print("FAIL", f)
    if not failures:
        print(f"ok: {len(archs)} architectures ({', '.join(archs)}), kernels /{args.kernel}/: "
              f"required {args.require or '-'}, forbidden {args.forbid or '-'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
