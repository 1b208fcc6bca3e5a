"""Day 13's concept diagrams: the JIT's path from a source template to a launch (memory, disk,
NVRTC, the atomic write, the driver's load), a cache entry's header, what a reader can see of
a file written in place or through a temporary file and rename, and the autotuner.

Everything drawn follows solutions/d13_jit/kernel.cu and labs/d13_jit/lab.h: the memory key
(name expression + options, source compared), cache_key's fields, the 56-byte entry header,
write_file_atomically's steps, kTuneWarmup = 3, kTuneSamples = 15 and the six kGemmCandidates.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from . import diagram
from .draw import EDGE, LIGHT, MUTED, PALETTE, arrow, box, canvas, cell, label, legend_cells

MEMORY, DISK, COMPILE, LOAD = LIGHT[5], LIGHT[1], LIGHT[2], LIGHT[3]


@diagram("d13_jit_path")
def jit_path() -> Figure:
    fig, ax = canvas(36, 33, inches_per_unit=0.25,
                     title="The JIT's path: get_function(spec) at every launch")
    fs = 8.0
    # The specialisation: what the launcher hands the cache.
    box(ax, 0, 0, 14, 3.4, "source template\n(a string, kRmsNormSource)\ntemplate <class D, "
        "int kHidden,\nint kVec, int kThreads>", fontsize=fs)
    box(ax, 15.5, 0, 20.5, 3.4, "specialisation parameters\nname expression\n"
        "d13_rmsnorm_kernel<BF16, 4096, 8, 256>\noptions {-std=c++17}", fontsize=fs)
    arrow(ax, (7, 3.4), (10, 5.0))
    arrow(ax, (25.75, 3.4), (14, 5.0))

    # 1. Memory.
    box(ax, 0, 5.0, 22, 3.4, "1  memory: map[name expression + options]\nhit only if the "
        "stored source == spec.source\n(a map lookup and a memcmp, no hash)", face=MEMORY,
        fontsize=fs)
    arrow(ax, (22, 6.7), (25, 6.7), "hit", fontsize=fs)
    box(ax, 25, 5.0, 11, 3.4, "entry already\nloaded: its\nCUfunction", face=MEMORY,
        fontsize=fs)
    # The key, computed on a memory miss only.
    arrow(ax, (11, 8.4), (11, 9.8), "miss", fontsize=fs)
    box(ax, 0, 9.8, 22, 4.6, "key = SHA-256 of length-prefixed fields:\n"
        "\"d13-kernel-cache-key-v1\", source,\nname expression, option count, options,\n"
        "arch (sm_90a, from the device),\nNVRTC version", face="white", fontsize=fs)
    # 2. Disk.
    arrow(ax, (11, 14.4), (11, 15.8))
    box(ax, 0, 15.8, 22, 3.4, "2  disk: <cache dir>/<key>.cubin\ndecode_entry: magic, version, "
        "header,\npayload size, SHA-256 of the payload", face=DISK, fontsize=fs)
    arrow(ax, (22, 17.5), (25, 17.5), "hit", fontsize=fs)
    # 3. NVRTC.
    arrow(ax, (11, 19.2), (11, 20.6), "miss or corrupt (deleted)", fontsize=fs)
    box(ax, 0, 20.6, 22, 3.4, "3  NVRTC: compile_cubin\nthe name expression instantiates "
        "it;\nCUBIN (sm_90a SASS) + lowered name", face=COMPILE, fontsize=fs)
    arrow(ax, (22, 22.3), (25, 22.3))
    # The atomic write.
    arrow(ax, (11, 24.0), (11, 25.4), "store", fontsize=fs)
    box(ax, 0, 25.4, 22, 5.6, "atomic write of lowered name '\\n' CUBIN:\nencode_entry -> "
        "<key>.cubin.tmp.<pid>.<n>\n(O_CREAT | O_EXCL) -> write -> fsync\n-> rename over "
        "<key>.cubin -> fsync folder\n(a failure is ignored: compiled again later)",
        face=COMPILE, fontsize=fs, style="--")
    # The load and the launch.
    box(ax, 25, 15.8, 9.4, 8.2, "kept in memory;\nat its first\nlaunch, once:\n"
        "cuModule-\nLoadData\n(CUBIN),\ncuModule-\nGetFunction", face=LOAD, fontsize=fs)
    arrow(ax, (35.2, 8.4), (35.2, 28.0))
    arrow(ax, (29.7, 24.0), (29.7, 28.0))
    box(ax, 25, 28.0, 11, 3.0, "cuLaunchKernel\n(grid, block,\nargs)", face="white",
        fontsize=fs)
    legend_cells(ax, 0.2, 31.6, [(MEMORY, "this process's memory")], fontsize=7.5)
    legend_cells(ax, 9.5, 31.6, [(DISK, "disk, all processes")], fontsize=7.5)
    legend_cells(ax, 18.0, 31.6, [(COMPILE, "a miss: compile, store")], fontsize=7.5)
    legend_cells(ax, 27.5, 31.6, [(LOAD, "driver API")], fontsize=7.5)
    return fig


@diagram("d13_cache_entry")
def cache_entry() -> Figure:
    fig, ax = canvas(36, 10.6, inches_per_unit=0.25,
                     title="A cache entry (encode_entry): a 56-byte header, then the payload")
    # Widths: the header's byte ranges at 0.5 units per byte, the payload takes the rest.
    parts = [(0, 8, "magic\nD13KCACH", "bytes 0-7", "a foreign\nfile"),
             (8, 4, "version\n1", "8-11", "an old\nformat"),
             (12, 4, "header\nbytes\n56", "12-15", "another\nlayout"),
             (16, 8, "payload\nsize\n(u64)", "16-23", "cut short\nor too long"),
             (24, 32, "SHA-256 of the payload\n(32 bytes)", "24-55", "any changed bit"),
             (56, 0, "payload:\nlowered name,\n'\\n', CUBIN\n(or a tuning\nrecord)", "56-",
              "")]
    scale = 0.5
    x = 0.0
    for start, size, text, where, catches in parts:
        w = size * scale if size else 36 - x
        face = LIGHT[0] if start < 56 else LIGHT[2]
        cell(ax, x, 1.6, text, face, w, 4.0, fontsize=7.5)
        label(ax, x + w / 2, 0.9, where, fontsize=7.5, ha="center")
        if catches:
            arrow(ax, (x + w / 2, 7.0), (x + w / 2, 5.7), color=PALETTE[4])
            label(ax, x + w / 2, 7.2, catches, fontsize=7.5, ha="center", va="top",
                  color=PALETTE[4])
        x += w
    label(ax, 0, 9.6, "decode_entry accepts the bytes only when all five agree (beneath each "
          "field: the damage it catches).\nA rejected entry is a miss: DiskCache::load counts "
          "it, deletes the file, and the caller compiles a fresh one.", fontsize=8)
    return fig


@diagram("d13_atomic_write")
def atomic_write() -> Figure:
    fig, ax = canvas(36, 15.6, inches_per_unit=0.25,
                     title="What a reader that opens <key>.cubin can find while a writer "
                     "replaces it")
    steps = ["before", "open", "writing", "written", "after"]
    x0, w = 11.0, 5.0
    for i, s in enumerate(steps):
        label(ax, x0 + i * w + w / 2, 1.0, s, fontsize=8, ha="center", weight="bold")
    # In place: O_TRUNC then write.
    label(ax, 0, 3.2, "in place:\nopen(O_TRUNC), write", fontsize=8)
    label(ax, x0 - 0.3, 3.2, "<key>.cubin", fontsize=7.5, ha="right")
    inplace = [("old", LIGHT[0]), ("empty", "white"), ("partial", LIGHT[4]), ("new", LIGHT[2]),
               ("new", LIGHT[2])]
    for i, (t, f) in enumerate(inplace):
        cell(ax, x0 + i * w + 0.2, 2.2, t, f, w - 0.4, 2.0, fontsize=8)
    label(ax, 0, 5.6, "a reader in the open or writing column reads an empty or partial "
          "entry; a crash there leaves it so", fontsize=8, color=PALETTE[4])
    # Temp file + fsync + rename.
    label(ax, 0, 9.6, "temporary file, fsync,\nrename (the course)", fontsize=8)
    label(ax, x0 - 0.3, 8.8, "<key>.cubin", fontsize=7.5, ha="right")
    for i in range(5):
        cell(ax, x0 + i * w + 0.2, 7.8, "old" if i < 4 else "new",
             LIGHT[0] if i < 4 else LIGHT[2], w - 0.4, 2.0, fontsize=8)
    label(ax, x0 - 0.3, 11.8, "<key>.cubin.tmp.<pid>.<n>", fontsize=7.5, ha="right")
    tmp = [("empty", "white"), ("partial", LIGHT[4]), ("whole,\nfsync'd", LIGHT[2])]
    for i, (t, f) in enumerate(tmp):
        cell(ax, x0 + (i + 1) * w + 0.2, 10.8, t, f, w - 0.4, 2.0, fontsize=8)
    arrow(ax, (x0 + 3.9 * w, 10.8), (x0 + 4.5 * w, 9.8), "rename", fontsize=7.5,
          color=PALETTE[2])
    label(ax, 0, 14.4, "under the name: the old entry or the new one, never a mixture (rename "
          "is atomic within one file system);\na crash leaves the old entry and at worst a "
          "temporary file, which DiskCache::clear() removes", fontsize=8, color=PALETTE[2])
    return fig


@diagram("d13_autotune")
def autotune() -> Figure:
    fig, ax = canvas(36, 23, inches_per_unit=0.25,
                     title="Autotuning: each candidate timed once per device and shape, "
                     "the winner stored")
    cands = ["32 x 32, bk 8, 2 x 2", "64 x 64, bk 8, 4 x 4", "64 x 64, bk 16, 4 x 4",
             "128 x 64, bk 8, 8 x 4", "64 x 128, bk 8, 4 x 8", "128 x 128, bk 8, 8 x 8"]
    label(ax, 0, 0.8, "kGemmCandidates: bm x bn, bk, tm x tn", fontsize=8, weight="bold")
    label(ax, 10.3, 0.8, "warm-up", fontsize=8, weight="bold")
    label(ax, 14.8, 0.8, "15 timed launches", fontsize=8, weight="bold")
    for i, c in enumerate(cands):
        y = 1.6 + i * 1.7
        cell(ax, 0, y, c, "white", 10.0, 1.4, fontsize=8)
        for s in range(3):
            cell(ax, 10.3 + s * 1.1, y, "", LIGHT[7], 1.1, 1.4, lw=0.4)
        for s in range(15):
            cell(ax, 14.0 + s * 0.6, y, "", LIGHT[0], 0.6, 1.4, lw=0.4)
        cell(ax, 23.3, y, "median", LIGHT[5], 3.4, 1.4, fontsize=8)
    label(ax, 10.3, 12.1, "launch 1 compiles\nand loads: untimed", fontsize=7.5, va="top")
    label(ax, 17.0, 12.1, "each between two CUDA\nevents, default stream", fontsize=7.5,
          va="top")
    arrow(ax, (26.7, 6.5), (28.0, 6.5))
    box(ax, 28.0, 1.6, 8.0, 9.9, "fastest median\nwins\n\nrecord:\nconfig=...,\n"
        "median_us,\nkernel, shape\n\nin memory and\non disk as\n<SHA-256>.tune",
        face=LIGHT[2], fontsize=8)
    box(ax, 0, 14.6, 36, 3.4, "the record's key, a text: d13-tune-v1, device name and compute "
        "capability,\nkernel, shape (M N K; for the RMSNorm: dtype, rows, hidden, max_vec), "
        "NVRTC version,\nthe candidate list (in memory the text is the map key; on disk its "
        "SHA-256 names the file)", face="white", fontsize=8)
    box(ax, 0, 19.0, 36, 3.4, "a later call with the same key text, in this process or the "
        "next: memory, then disk -> found ->\nTuned::from_cache, stats().tuning_hits + 1: "
        "nothing timed, nothing compiled.\nAnother GPU, shape, compiler or candidate list is "
        "another key: tuned again.", face=LIGHT[5], fontsize=8)
    return fig
