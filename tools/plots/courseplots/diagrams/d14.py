"""Day 14's concept diagrams: the decoder layer's dataflow (stage, kernel, weight and tensor
shapes at the Llama-3-8B shape), the DLPack hand-off of a torch.Tensor to the course's C ABI,
and the events that order the legacy default stream after the caller's stream and back.

Everything drawn follows solutions/d14_capstone/kernel.cu (decoder_layer's eight stages and the
calls they make, LegacyStreamBridge), labs/d14_capstone/lab.h and layer_parts.h (the shapes and
the weights' [out_features, in_features] layout, gemm_bt), python/cuda_course/_dlpack.py and
python/csrc/course_py.cpp (the structures, the borrow, the checks).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from . import diagram
from .draw import EDGE, LIGHT, PALETTE, arrow, box, canvas, cell, label, legend_cells

GEMM, ELEMENTWISE, ATTENTION = LIGHT[0], LIGHT[1], LIGHT[2]

# hidden 4096, 32 query heads and 8 KV heads of 128, intermediate 14336 (Llama-3-8B).
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, INTER = 4096, 32, 8, 128, 14336
QKV = (HEADS + 2 * KV_HEADS) * HEAD_DIM  # 6144


@diagram("d14_layer_dataflow")
def layer_dataflow() -> Figure:
    fig, ax = canvas(36, 35.2, inches_per_unit=0.25,
                     title="The decoder layer: eight stages, the kernel of each, the tensors "
                     "between them (T tokens)")
    fs = 7.8
    stages = [
        ("add_rmsnorm_attn", "Day 6  d06::fused_add_rmsnorm",
         "residual += x;  h = rmsnorm(residual) * attn_norm", f"h [T, {HIDDEN}]", ELEMENTWISE),
        ("qkv_gemm", "Day 10 step 7  gemm_7_wgmma (TMA + wgmma)",
         f"qkv = h W_qkv^T,  W_qkv [{QKV}, {HIDDEN}]", f"qkv [T, {QKV}]\n= (32 + 2 x 8) x 128",
         GEMM),
        ("rope", "Day 14, Exercise 1  rope_qkv",
         "split, and rotate q and k by position", f"q [T, {HEADS}, {HEAD_DIM}]\n"
         f"k, v [T, {KV_HEADS}, {HEAD_DIM}]", ELEMENTWISE),
        ("attention", "Day 12  prefill_2_wgmma (TMA + wgmma)",
         "causal softmax(q k^T / sqrt(128)) v, 4 q heads per KV head",
         f"attn [T, {HEADS} x {HEAD_DIM} = {HIDDEN}]", ATTENTION),
        ("o_gemm", "Day 10  gemm_7_wgmma",
         f"proj = attn W_o^T,  W_o [{HIDDEN}, {HIDDEN}]", f"proj [T, {HIDDEN}]", GEMM),
        ("add_rmsnorm_mlp", "Day 6  d06::fused_add_rmsnorm",
         "residual += proj;  h = rmsnorm(residual) * mlp_norm", f"h [T, {HIDDEN}]",
         ELEMENTWISE),
        ("gate_up_silu", "Day 10  gemm_7_silu_mul",
         f"act = silu(h W_gate^T) * (h W_up^T),  [W_gate; W_up] [{2 * INTER}, {HIDDEN}]",
         f"act [T, {INTER}]\n(SiLU in the epilogue)", GEMM),
        ("down_gemm", "Day 10  gemm_7_wgmma",
         f"out = act W_down^T,  W_down [{HIDDEN}, {INTER}]", f"out [T, {HIDDEN}]", GEMM),
    ]
    x_stage, w_stage, x_out, h, step = 4.5, 21.0, 27.0, 2.9, 3.6
    box(ax, x_stage, 0, w_stage, 1.8, f"x [T, {HIDDEN}]  (the previous layer's out)",
        face="white", fontsize=fs)
    label(ax, 0.0, 0.9, f"residual\n[T, {HIDDEN}]", fontsize=fs)
    prev_bottom = 1.8
    for i, (name, kernel, what, out, face) in enumerate(stages):
        y = 2.8 + i * step
        arrow(ax, (x_stage + w_stage / 2, prev_bottom), (x_stage + w_stage / 2, y))
        box(ax, x_stage, y, w_stage, h, "", face=face)
        label(ax, x_stage + 0.3, y + 0.7, name, fontsize=fs + 0.4, weight="bold")
        label(ax, x_stage + w_stage - 0.3, y + 0.7, kernel, fontsize=fs, ha="right")
        label(ax, x_stage + 0.3, y + 2.05, what, fontsize=fs)
        arrow(ax, (x_stage + w_stage, y + h / 2), (x_out, y + h / 2))
        label(ax, x_out + 0.2, y + h / 2, out, fontsize=fs)
        prev_bottom = y + h
    # The residual stream: read and updated in place by the two fused add + RMSNorm stages.
    top, first, second = 1.8, 2.8 + 0 * step, 2.8 + 5 * step
    ax.plot([1.5, 1.5], [top, second + h / 2], color=PALETTE[4], linewidth=1.6)
    for y in (first, second):
        arrow(ax, (1.5, y + h / 2), (x_stage, y + h / 2), color=PALETTE[4])
    label(ax, 1.8, (first + second) / 2 + 1.5, "residual,\nupdated\nin place", fontsize=fs,
          color=PALETTE[4])
    end = 2.8 + 7 * step + h
    label(ax, 0.0, end + 1.5, "on return, out and residual are the next layer's (x, residual): "
          "the down GEMM's residual add happens there.\nThe GEMMs (gemm_bt) take PyTorch's "
          "Linear weights [out, in]: Day 10's step 7 on compute capability 9.0, step 6 elsewhere.",
          fontsize=fs)
    legend_cells(ax, 0.0, end + 3.3, [(GEMM, "GEMM: Tensor Cores")], fontsize=fs)
    legend_cells(ax, 13.0, end + 3.3, [(ELEMENTWISE, "element-wise: memory-bound")],
                 fontsize=fs)
    legend_cells(ax, 25.0, end + 3.3, [(ATTENTION, "attention")], fontsize=fs)
    return fig


@diagram("d14_dlpack_handoff")
def dlpack_handoff() -> Figure:
    fig, ax = canvas(36, 30.6, inches_per_unit=0.25,
                     title="A torch.Tensor handed to the course's C ABI through DLPack: "
                     "the same memory, no copy")
    fs = 7.8
    # Python: the tensor, its storage, the stream.
    box(ax, 0, 0, 13, 3.6, "torch.Tensor x\nbfloat16, shape (2048, 4096)\ndevice cuda:0",
        face=LIGHT[5], fontsize=fs)
    box(ax, 16, 0, 20, 3.6, "GPU memory: the tensor's storage (PyTorch's\ncaching allocator), "
        "2048 x 4096 x 2 bytes = 16 MiB,\nrow-major", face=LIGHT[2], fontsize=fs)
    arrow(ax, (13, 1.8), (16, 1.8), "owns", fontsize=fs)
    box(ax, 0, 4.8, 13, 2.6, "s = torch.cuda.current_stream()\n.cuda_stream  (a cudaStream_t)",
        face="white", fontsize=fs)
    arrow(ax, (6.5, 7.4), (6.5, 9.4), "x.__dlpack__(stream=s)", fontsize=fs)
    box(ax, 0, 9.4, 13, 3.0, "PyCapsule named \"dltensor\"\nkept alive by cuda_course's Arg",
        face=LIGHT[5], fontsize=fs)
    arrow(ax, (6.5, 12.4), (6.5, 14.4), "PyCapsule_GetPointer", fontsize=fs)
    box(ax, 0, 14.4, 13, 3.2, "DLManagedTensor*\n(an address; ctypes passes\nit as a void*)",
        face=LIGHT[3], fontsize=fs)
    # The structure it points to.
    label(ax, 16, 5.6, "DLManagedTensor, made by PyTorch", fontsize=fs, weight="bold")
    fields = [("dl_tensor.data", "device address of x[0, 0]"),
              ("dl_tensor.device", "{device_type 2 = kDLCUDA, device_id 0}"),
              ("dl_tensor.ndim", "2"),
              ("dl_tensor.dtype", "{code 4 = kDLBfloat, bits 16, lanes 1}"),
              ("dl_tensor.shape", "-> int64[2] = {2048, 4096}"),
              ("dl_tensor.strides", "-> int64[2] = {4096, 1}, in elements"),
              ("dl_tensor.byte_offset", "0 (start = data + byte_offset)"),
              ("manager_ctx, deleter", "PyTorch's: we borrow, never call it")]
    y0, rh = 6.4, 1.45
    for i, (name, value) in enumerate(fields):
        cell(ax, 16, y0 + i * rh, name, LIGHT[3], 7.5, rh, fontsize=7.3)
        cell(ax, 23.5, y0 + i * rh, value, "white", 12.5, rh, fontsize=7.3)
    arrow(ax, (29.75, y0), (29.75, 3.6), "same address", fontsize=fs, color=PALETTE[2])
    arrow(ax, (13, 16.0), (16, y0 + 4 * rh), color=EDGE)
    # The C side.
    arrow(ax, (6.5, 17.6), (6.5, 19.8))
    box(ax, 0, 19.8, 36, 3.6, "libcourse_py.so, extern \"C\": course_rmsnorm(DLManagedTensor* x, "
        "* weight, * out, float eps, cudaStream_t s)\nchecks: device type 2 and the current "
        "device, dtype code and bits, ndim, compact row-major strides\n(Python checked first and "
        "raised TypeError / ValueError naming the argument; returns 0, or 1 and a message)",
        face="white", fontsize=fs)
    arrow(ax, (18, 23.4), (18, 24.8))
    box(ax, 0, 24.8, 36, 2.6, "the launcher gets data + byte_offset as a bfloat16* and the "
        "sizes from shape: the kernel reads x's own memory\nDay 14's launchers queue on s itself; "
        "Days 6, 10 and 12 on the legacy stream, ordered after s by events",
        face=LIGHT[5], fontsize=fs)
    label(ax, 0, 29.2, "Nothing is copied. The capsule holds a reference to x's storage for as "
          "long as cuda_course holds the capsule (the call);\nthe kernels queued on s read x's "
          "memory later, asynchronously, while the caller still holds x.", fontsize=fs)
    return fig


@diagram("d14_stream_bridge")
def stream_bridge() -> Figure:
    fig, ax = canvas(36, 13.0, inches_per_unit=0.25,
                     title="LegacyStreamBridge: the layer on the legacy stream, ordered "
                     "inside the caller's stream")
    fs = 7.8
    label(ax, 0, 3.0, "caller's stream s\n(PyTorch's current,\nnon-blocking)", fontsize=fs)
    label(ax, 0, 9.0, "legacy default\nstream", fontsize=fs)
    ax.plot([7.5, 36], [3.0, 3.0], color=EDGE, linewidth=0.8, zorder=0)
    ax.plot([7.5, 36], [9.0, 9.0], color=EDGE, linewidth=0.8, zorder=0)
    box(ax, 8.0, 2.0, 6.5, 2.0, "earlier work:\nwrites x", face=LIGHT[5], fontsize=fs)
    cell(ax, 14.8, 2.4, "e", LIGHT[2], 1.2, 1.2, fontsize=fs)
    cell(ax, 16.0, 8.4, "wait e", LIGHT[2], 2.6, 1.2, fontsize=fs)
    arrow(ax, (15.4, 3.6), (17.3, 8.4), color=PALETTE[2])
    box(ax, 18.8, 7.9, 9.5, 2.2, "decoder_layer's kernels\n(all nine stages)", face=LIGHT[0],
        fontsize=fs)
    cell(ax, 28.5, 8.4, "e", LIGHT[2], 1.2, 1.2, fontsize=fs)
    cell(ax, 29.8, 2.4, "wait e", LIGHT[2], 2.6, 1.2, fontsize=fs)
    arrow(ax, (29.1, 8.4), (31.1, 3.6), color=PALETTE[2])
    box(ax, 32.6, 2.0, 3.4, 2.0, "later\nwork", face=LIGHT[5], fontsize=fs)
    label(ax, 0, 12.0, "cudaEventRecord(e, s); cudaStreamWaitEvent(legacy, e) on entry; "
          "cudaEventRecord(e, legacy); cudaStreamWaitEvent(s, e) in finish().\n"
          "The host never waits. The price: layers called on different streams all pass through the "
          "one legacy stream, so they no longer overlap.",
          fontsize=fs)
    return fig
