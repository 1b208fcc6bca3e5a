#!/usr/bin/env python3
"""Measures what each way of reaching the course's kernels from Python costs (the lesson
section on cuda_course.jit and the two bindings, lesson 14 §8):

  cold compile   JitCache.load of a specialisation not yet on disk: render, nvcc through ninja,
                 hash, rename, tvm_ffi.load_module (no GPU needed: --arch)
  warm load      the same in a new process with the entry on disk: render, key, SHA-256 check
                 of module.so, load_module (timed inside that process, without its start-up)
  memory hit     the same again in the same process (render + key + a dict lookup)
  per call       the host time of one call on a tiny tensor, averaged over --calls calls (GPU):
                 cuda_course.jit.rmsnorm, the TVM-FFI module's function alone, cuda_course.rmsnorm
                 through each binding (ctypes, tvm_ffi), and torch's rms_norm for scale

    python python/bench_jit.py --json jit.json                 # on a GPU machine: everything
    python python/bench_jit.py --arch sm_90a --json jit.json   # without a GPU: the host costs

Every number is a median of --repeat runs (compiles: of 3). Nothing is estimated: a row that
cannot be measured here (no GPU, no library) says why instead of a number.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def median_of(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def specs(jit):
    return {"rmsnorm bf16 h4096": jit.rmsnorm_spec("bfloat16", 4096, 8),
            "decode bf16 d128 g4": jit.decode_spec("bfloat16", 128, 4)}


def warm_load_in_new_process(root, arch, name, breakdown):
    """Seconds of `import tvm_ffi` and of the first JitCache.load in a fresh process; with
    `breakdown`, instead the parts of that load, each the first of its kind in the process:
    render (Jinja2's environment and template included), the key's other fields (nvcc
    --version), the entry's check (SHA-256 of module.so), tvm_ffi.load_module."""
    script = f"""
import sys, time
sys.path.insert(0, {HERE!r})
t0 = time.perf_counter()
import tvm_ffi
t1 = time.perf_counter()
from cuda_course import jit
spec = {{"rmsnorm bf16 h4096": lambda: jit.rmsnorm_spec("bfloat16", 4096, 8),
        "decode bf16 d128 g4": lambda: jit.decode_spec("bfloat16", 128, 4)}}[{name!r}]()
cache = jit.JitCache({root!r}, arch={arch!r})
if {breakdown!r}:
    t = [time.perf_counter()]
    source = spec.render(); t.append(time.perf_counter())
    cache.toolchain.key_fields({arch!r}); t.append(time.perf_counter())
    entry = cache.entry(spec, source=source)
    t.append(time.perf_counter())
    assert cache.check(entry) is None; t.append(time.perf_counter())
    tvm_ffi.load_module(str(entry.module_path(cache.toolchain))); t.append(time.perf_counter())
    parts = [t[1] - t[0], t[2] - t[1], t[4] - t[3], t[5] - t[4]]
    print(*parts)
else:
    t2 = time.perf_counter()
    cache.load(spec)
    t3 = time.perf_counter()
    assert cache.stats["compiles"] == 0, cache.stats
    print(t1 - t0, t3 - t2)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    return [float(v) for v in out.stdout.split()]


def host_costs(args, jit):
    arch = jit.normalize_arch(args.arch) if args.arch else jit.device_arch()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_jit_") as root:
        for name, spec in specs(jit).items():
            colds = []
            for i in range(args.compiles):
                jit.JitCache(root, arch=arch).clear()
                cache = jit.JitCache(root, arch=arch)
                start = time.perf_counter()
                cache.load(spec)
                colds.append(time.perf_counter() - start)
                assert cache.stats["compiles"] == 1
            warm = [warm_load_in_new_process(root, arch, name, False)
                    for _ in range(args.repeat)]
            parts = [warm_load_in_new_process(root, arch, name, True)
                     for _ in range(args.repeat)]
            cache = jit.JitCache(root, arch=arch)
            cache.load(spec)
            hit = median_of(lambda: cache.load(spec), args.repeat)
            rows += [
                {"what": "cold compile", "spec": name, "arch": arch,
                 "seconds": statistics.median(colds), "runs": len(colds)},
                {"what": "warm load (new process)", "spec": name, "arch": arch,
                 "seconds": statistics.median(w[1] for w in warm), "runs": len(warm)},
            ] + [
                {"what": f"  of which: {part}", "spec": name,
                 "seconds": statistics.median(p[i] for p in parts), "runs": len(parts)}
                for i, part in enumerate(("render (Jinja2)", "nvcc --version (for the key)",
                                          "check the entry (SHA-256 of module.so)",
                                          "tvm_ffi.load_module"))
            ] + [
                {"what": "import tvm_ffi (new process, before the load)", "spec": name,
                 "seconds": statistics.median(w[0] for w in warm), "runs": len(warm)},
                {"what": "memory hit", "spec": name, "arch": arch, "seconds": hit,
                 "runs": args.repeat},
            ]
    return rows


def per_call_costs(args, jit):
    import torch

    x = torch.randn(1, 4096, device="cuda").to(torch.bfloat16)
    w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    rows = []

    def timed(label, fn):
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        per = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            for _ in range(args.calls):
                fn()
            torch.cuda.synchronize()
            per.append((time.perf_counter() - start) / args.calls)
        rows.append({"what": f"per call: {label}", "seconds": statistics.median(per),
                     "calls": args.calls, "shape": "1 x 4096 bfloat16"})

    timed("cuda_course.jit.rmsnorm", lambda: jit.rmsnorm(x, w, out=out))
    module_fn = jit.default_cache().load(jit.rmsnorm_spec("bfloat16", 4096, 8)).rmsnorm
    timed("the JIT module's rmsnorm, called directly", lambda: module_fn(x, w, out, 1e-5))
    import cuda_course
    from cuda_course import _lib

    for binding in ("ctypes", "tvm_ffi"):
        os.environ["CUDA_COURSE_BINDING"] = binding
        _lib.reset_binding()
        path = _lib.tvm_ffi_library_path() if binding == "tvm_ffi" else _lib.library_path()
        if not path.is_file():
            rows.append({"what": f"per call: cuda_course.rmsnorm ({binding})",
                         "not_measured": f"{path} does not exist"})
            continue
        timed(f"cuda_course.rmsnorm ({binding})", lambda: cuda_course.rmsnorm(x, w, out=out))
    if hasattr(torch.nn.functional, "rms_norm"):
        timed("torch.nn.functional.rms_norm", lambda: torch.nn.functional.rms_norm(
            x, (4096,), w, 1e-5))
    timed("an empty CUDA launch, for scale (torch: out.zero_())", lambda: out.zero_())
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", help="compile for this architecture (default: the GPU's)")
    p.add_argument("--compiles", type=int, default=3, help="cold compiles per specialisation")
    p.add_argument("--repeat", type=int, default=7, help="runs per median")
    p.add_argument("--calls", type=int, default=2000, help="calls per per-call run")
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args()
    try:
        from cuda_course import jit
        from cuda_course.jit import _render, _toolchain

        _render._environment()
        _toolchain.tvm_ffi_info()
        _toolchain.find_ninja()
        _toolchain.find_nvcc()
    except (ImportError, RuntimeError) as e:
        needs.fail("bench_jit.py", f"needs the JIT's packages and nvcc: {e}",
                   "Install: python3 -m pip install -r python/requirements-jit.txt (and the "
                   "CUDA toolkit for nvcc)")
    gpu = None
    try:
        import torch

        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    except ImportError:
        pass
    if args.arch is None:
        try:
            args.arch = jit.device_arch()
        except RuntimeError:
            needs.fail("bench_jit.py", "no GPU to compile for (neither PyTorch nor nvidia-smi "
                       "sees one)", "Pass --arch sm_90a: the host costs need no GPU")
    rows = host_costs(args, jit)
    if gpu is not None:
        rows += per_call_costs(args, jit)
    else:
        rows.append({"what": "per call", "not_measured": "no CUDA GPU (PyTorch sees none)"})
    import platform

    import tvm_ffi

    result = {"gpu": gpu, "host": platform.node(), "cpus": os.cpu_count(),
              "nvcc": _toolchain.compiler_version(_toolchain.find_nvcc()),
              "tvm_ffi": tvm_ffi.__version__, "rows": rows}
    print(f"GPU: {gpu or 'none'}; {os.cpu_count()} CPUs; {result['nvcc']}; tvm_ffi "
          f"{result['tvm_ffi']}")
    for r in rows:
        label = f"{r['what']}" + (f" [{r['spec']}]" if "spec" in r else "")
        if "not_measured" in r:
            print(f"  {label:<72} not measured: {r['not_measured']}")
        elif r["seconds"] >= 0.1:
            print(f"  {label:<72} {r['seconds']:10.2f} s")
        elif r["seconds"] >= 1e-4:
            print(f"  {label:<72} {r['seconds'] * 1e3:10.3f} ms")
        else:
            print(f"  {label:<72} {r['seconds'] * 1e6:10.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
