// The functions of course_py.cpp (the hand-written C ABI) exported with TVM-FFI instead:
// libcourse_py_tvm_ffi.so, loaded by python/cuda_course with tvm_ffi.load_module when
// apache-tvm-ffi is installed (lesson 14 §2). What TVM-FFI does that course_py.cpp does by hand:
//   - the calling convention: TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, f) exports __tvm_ffi_<name>,
//     which unpacks the arguments (tensors as TensorView, a view of the caller's DLTensor: no
//     copy, no capsule, no deleter to get right), checks their count and types, and calls f;
//   - errors: a TVM_FFI_THROW(ValueError) here arrives in Python as ValueError with its message
//     (course_py.cpp returns 1 and keeps the message for course_last_error());
//   - the stream: TVMFFIEnvGetStream returns the caller's current stream, which TVM-FFI takes
//     from PyTorch at the call (course_py.cpp takes it as an argument).
// The checks are the same as course_py.cpp's, in the same words; the Python side checks first.
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>

#include "../../labs/d02_coalescing/lab.h"
#include "../../labs/d05_warp_programming/lab.h"
#include "../../labs/d06_reduction_norms/lab.h"
#include "../../labs/d12_prefill_attention/lab.h"
#include "../../labs/d14_capstone/lab.h"
#include "../cuda_course/jit/templates/tvm_ffi_args.h"
#include "course_launch.h"

namespace {

using course::bfloat16;
using course_ffi::check_dim;
using course_ffi::check_tensor;
using course_ffi::data;
using course_ffi::kBFloat16;
using tvm::ffi::TensorView;

// The course's launchers throw course::InvalidArgument (a std::invalid_argument) for a bad
// argument and std::runtime_error (course::CudaError) for a CUDA failure: ValueError and
// RuntimeError in Python.
template <class F>
void translated(const char* who, F&& body) {
  try {
    body();
  } catch (const std::invalid_argument& e) {
    TVM_FFI_THROW(ValueError) << who << ": " << e.what();
  } catch (const tvm::ffi::Error&) {
    throw;
  } catch (const std::exception& e) {
    TVM_FFI_THROW(RuntimeError) << who << ": " << e.what();
  }
}

void same_shape(const TensorView& a, const char* a_name, const TensorView& b, const char* b_name) {
  bool same = a.ndim() == b.ndim();
  for (int i = 0; same && i < a.ndim(); ++i) same = a.size(i) == b.size(i);
  if (!same) TVM_FFI_THROW(ValueError) << b_name << ": shape differs from " << a_name;
}

cudaStream_t stream_of(int device) { return course_ffi::env_stream(device); }

// The checks of a row operation (RMSNorm, add-bias + GeLU): x and out [rows, cols] of `dtype`,
// the same shape, and `vec` (the weight or the bias) [cols] of `dtype`.
void check_rows_and_vector(const TensorView& x, const TensorView& vec, const char* vec_name,
                           const TensorView& out, DLDataType dtype) {
  check_tensor(x, "x", dtype, 2);
  check_tensor(vec, vec_name, dtype, 1);
  check_tensor(out, "out", dtype, 2);
  same_shape(x, "x", out, "out");
  check_dim(vec, vec_name, 0, x.size(1), "x.shape[1]");
}

int abi_version() { return 1; }

// out = rmsnorm(x) * weight; x, out [rows, hidden], weight [hidden]. Day 6.
void rmsnorm(TensorView x, TensorView weight, TensorView out, double eps) {
  check_rows_and_vector(x, weight, "weight", out, kBFloat16);
  const int device = course_ffi::check_cuda(x, "x", weight, "weight", out, "out");
  translated("rmsnorm", [&] {
    course_py::on_stream(stream_of(device), [&] {
      d06::rmsnorm(data<const bfloat16>(x), data<const bfloat16>(weight), data<bfloat16>(out),
                   x.size(0), x.size(1), static_cast<float>(eps));
    });
  });
}

// residual += x; out = rmsnorm(residual) * weight. Day 6.
void fused_add_rmsnorm(TensorView x, TensorView residual, TensorView weight, TensorView out,
                       double eps) {
  check_rows_and_vector(x, weight, "weight", out, kBFloat16);
  check_tensor(residual, "residual", kBFloat16, 2);
  same_shape(x, "x", residual, "residual");
  const int device =
      course_ffi::check_cuda(x, "x", residual, "residual", weight, "weight", out, "out");
  translated("fused_add_rmsnorm", [&] {
    course_py::on_stream(stream_of(device), [&] {
      d06::fused_add_rmsnorm(data<const bfloat16>(x), data<bfloat16>(residual),
                             data<const bfloat16>(weight), data<bfloat16>(out), x.size(0),
                             x.size(1), static_cast<float>(eps));
    });
  });
}

// The element type of a tensor Days 2 and 5 take in any of their three: float32, float16 or
// bfloat16 (the other arguments must then have the same one).
DLDataType float_dtype(const TensorView& t, const char* name) {
  const DLDataType d = t.dtype();
  if (!course_ffi::same(d, course_ffi::kFloat32) && !course_ffi::same(d, course_ffi::kFloat16) &&
      !course_ffi::same(d, kBFloat16))
    TVM_FFI_THROW(TypeError) << name << ": expected dtype float32, float16 or bfloat16, got "
                             << course_ffi::dtype_name(d);
  return d;
}

// Whether the bytes of two tensors overlap (Day 5's softmax reads x while it writes y).
bool overlaps(const TensorView& a, const TensorView& b) {
  const char* pa = data<const char>(a);
  const char* pb = data<const char>(b);
  const std::int64_t bytes_a = a.numel() * (a.dtype().bits / 8);
  const std::int64_t bytes_b = b.numel() * (b.dtype().bits / 8);
  return bytes_a > 0 && bytes_b > 0 && pa < pb + bytes_b && pb < pa + bytes_a;
}

template <class T>
void add_bias_gelu_typed(const TensorView& x, const TensorView& bias, const TensorView& out) {
  d02::add_bias_gelu_fused(data<const T>(x), data<const T>(bias), data<T>(out), x.size(0),
                           x.size(1));
}

// out [rows, cols] = gelu(x + bias), bias [cols]; float32, float16 or bfloat16. Day 2, Exercise
// 6b (add_bias_gelu_fused).
void add_bias_gelu(TensorView x, TensorView bias, TensorView out) {
  const DLDataType dtype = float_dtype(x, "x");
  check_rows_and_vector(x, bias, "bias", out, dtype);
  const int device = course_ffi::check_cuda(x, "x", bias, "bias", out, "out");
  translated("add_bias_gelu", [&] {
    course_py::on_stream(stream_of(device), [&] {
      if (course_ffi::same(dtype, course_ffi::kFloat32))
        add_bias_gelu_typed<float>(x, bias, out);
      else if (course_ffi::same(dtype, course_ffi::kFloat16))
        add_bias_gelu_typed<course::half>(x, bias, out);
      else
        add_bias_gelu_typed<bfloat16>(x, bias, out);
    });
  });
}

template <class T>
void softmax_typed(const TensorView& x, const TensorView& out) {
  d05::softmax_2_block_per_row(data<const T>(x), data<T>(out), x.size(0), x.size(1));
}

// out [rows, cols] = softmax of each row of x; float32, float16 or bfloat16; out must not overlap
// x. Day 5, Exercise 3 (softmax_2_block_per_row, the launcher choosing the block size).
void softmax(TensorView x, TensorView out) {
  const DLDataType dtype = float_dtype(x, "x");
  check_tensor(x, "x", dtype, 2);
  check_tensor(out, "out", dtype, 2);
  same_shape(x, "x", out, "out");
  if (overlaps(x, out)) TVM_FFI_THROW(ValueError) << "out: must not overlap x";
  const int device = course_ffi::check_cuda(x, "x", out, "out");
  translated("softmax", [&] {
    course_py::on_stream(stream_of(device), [&] {
      if (course_ffi::same(dtype, course_ffi::kFloat32))
        softmax_typed<float>(x, out);
      else if (course_ffi::same(dtype, course_ffi::kFloat16))
        softmax_typed<course::half>(x, out);
      else
        softmax_typed<bfloat16>(x, out);
    });
  });
}

// out [M, N] = a [M, K] b^T, b [N, K]. Day 10 step 7 on compute capability 9.0, step 6 elsewhere.
void gemm_bf16(TensorView a, TensorView b, TensorView out) {
  check_tensor(a, "a", kBFloat16, 2);
  check_tensor(b, "b", kBFloat16, 2);
  check_tensor(out, "out", kBFloat16, 2);
  check_dim(b, "b", 1, a.size(1), "K = a.shape[1]");
  check_dim(out, "out", 0, a.size(0), "M = a.shape[0]");
  check_dim(out, "out", 1, b.size(0), "N = b.shape[0]");
  const int device = course_ffi::check_cuda(a, "a", b, "b", out, "out");
  translated("gemm_bf16", [&] {
    course_py::on_stream(stream_of(device), [&] {
      course_py::gemm_bt(data<const bfloat16>(a), data<const bfloat16>(b), data<bfloat16>(out),
                         a.size(0), b.size(0), a.size(1));
    });
  });
}

// Day 12 prefill attention over a packed batch: q [T, H, D], k, v [T, Hkv, D], out [T, H, D], lse
// float32 [H, T], cu_seqlens int32 [B + 1] (the same for queries and keys), by `launch`: Exercise
// 2's mma.sync kernel or Exercise 6's Hopper one (TMA + wgmma, head dim 128, sm_90a).
void prefill(const char* who, void (*launch)(const d12::PrefillArgs<bfloat16>&), TensorView q,
             TensorView k, TensorView v, TensorView out, TensorView lse, TensorView cu_seqlens,
             int64_t max_seqlen, bool causal, double scale) {
  check_tensor(q, "q", kBFloat16, 3);
  check_tensor(k, "k", kBFloat16, 3);
  check_tensor(v, "v", kBFloat16, 3);
  check_tensor(out, "out", kBFloat16, 3);
  check_tensor(lse, "lse", course_ffi::kFloat32, 2);
  check_tensor(cu_seqlens, "cu_seqlens", course_ffi::kInt32, 1);
  same_shape(q, "q", out, "out");
  same_shape(k, "k", v, "v");
  if (k.size(0) != q.size(0) || k.size(2) != q.size(2))
    TVM_FFI_THROW(ValueError) << "k: must be [T, num_kv_heads, head_dim] with q's T and head_dim";
  if (lse.size(0) != q.size(1) || lse.size(1) != q.size(0))
    TVM_FFI_THROW(ValueError) << "lse: must be [H, T]";
  const int device = course_ffi::check_cuda(q, "q", k, "k", v, "v", out, "out", lse, "lse",
                                            cu_seqlens, "cu_seqlens");
  d12::PrefillArgs<bfloat16> args;
  args.q = data<const bfloat16>(q);
  args.k = data<const bfloat16>(k);
  args.v = data<const bfloat16>(v);
  args.o = data<bfloat16>(out);
  args.lse = data<float>(lse);
  args.cu_seqlens_q = args.cu_seqlens_kv = data<const std::int32_t>(cu_seqlens);
  args.batch = static_cast<int>(cu_seqlens.size(0) - 1);
  args.total_q = args.total_kv = q.size(0);
  args.max_seqlen_q = static_cast<int>(max_seqlen);
  args.num_heads = static_cast<int>(q.size(1));
  args.num_kv_heads = static_cast<int>(k.size(1));
  args.head_dim = static_cast<int>(q.size(2));
  args.scale = static_cast<float>(scale);
  args.causal = causal;
  translated(who, [&] { course_py::on_stream(stream_of(device), [&] { launch(args); }); });
}

void prefill_attention(TensorView q, TensorView k, TensorView v, TensorView out, TensorView lse,
                       TensorView cu_seqlens, int64_t max_seqlen, bool causal, double scale) {
  prefill("prefill_attention", d12::prefill_1_mma, q, k, v, out, lse, cu_seqlens, max_seqlen,
          causal, scale);
}

// The same with the Hopper kernel; a wait on an mbarrier that gave up is reported by
// check_mbarrier_timeouts (it synchronises), not here.
void prefill_attention_hopper(TensorView q, TensorView k, TensorView v, TensorView out,
                              TensorView lse, TensorView cu_seqlens, int64_t max_seqlen,
                              bool causal, double scale) {
  prefill("prefill_attention_hopper", d12::prefill_2_wgmma, q, k, v, out, lse, cu_seqlens,
          max_seqlen, causal, scale);
}

// Waits for the GPU; raises if a Hopper kernel's wait on an mbarrier gave up since the last call.
void check_mbarrier_timeouts() {
  translated("check_mbarrier_timeouts", [] { d12::check_mbarrier_timeouts(); });
}

// Day 14 Exercise 1: qkv [T, (H + 2 Hkv) D] -> q [T, H, D], k, v [T, Hkv, D]; positions int32 [T].
void rope_qkv(TensorView qkv, TensorView positions, TensorView q, TensorView k, TensorView v,
              double theta) {
  check_tensor(qkv, "qkv", kBFloat16, 2);
  check_tensor(positions, "positions", course_ffi::kInt32, 1);
  check_tensor(q, "q", kBFloat16, 3);
  check_tensor(k, "k", kBFloat16, 3);
  check_tensor(v, "v", kBFloat16, 3);
  same_shape(k, "k", v, "v");
  const std::int64_t t = qkv.size(0), h = q.size(1), hkv = k.size(1), d = q.size(2);
  if (positions.size(0) != t || q.size(0) != t || k.size(0) != t || k.size(2) != d ||
      qkv.size(1) != (h + 2 * hkv) * d)
    TVM_FFI_THROW(ValueError)
        << "qkv: must be [T, (H + 2 Hkv) D] for q [T, H, D] and k, v [T, Hkv, D]";
  const int device =
      course_ffi::check_cuda(qkv, "qkv", positions, "positions", q, "q", k, "k", v, "v");
  translated("rope_qkv", [&] {
    d14::rope_qkv(data<const bfloat16>(qkv), data<const std::int32_t>(positions), data<bfloat16>(q),
                  data<bfloat16>(k), data<bfloat16>(v), t, static_cast<int>(h),
                  static_cast<int>(hkv), static_cast<int>(d), static_cast<float>(theta),
                  stream_of(device));
  });
}

// Day 14 Exercise 2: gate_up [T, 2 I] -> out [T, I].
void silu_and_mul(TensorView gate_up, TensorView out) {
  check_tensor(gate_up, "gate_up", kBFloat16, 2);
  check_tensor(out, "out", kBFloat16, 2);
  if (out.size(0) != gate_up.size(0) || 2 * out.size(1) != gate_up.size(1))
    TVM_FFI_THROW(ValueError) << "out: must be [T, I] for gate_up [T, 2 I]";
  const int device = course_ffi::check_cuda(gate_up, "gate_up", out, "out");
  translated("silu_and_mul", [&] {
    d14::silu_and_mul(data<const bfloat16>(gate_up), data<bfloat16>(out), gate_up.size(0),
                      out.size(1), stream_of(device));
  });
}

int64_t layer_workspace_bytes(int64_t hidden, int64_t num_heads, int64_t num_kv_heads,
                              int64_t head_dim, int64_t intermediate, int64_t batch,
                              int64_t seq_len) {
  d14::LayerConfig c;
  c.hidden = static_cast<int>(hidden);
  c.num_heads = static_cast<int>(num_heads);
  c.num_kv_heads = static_cast<int>(num_kv_heads);
  c.head_dim = static_cast<int>(head_dim);
  c.intermediate = static_cast<int>(intermediate);
  return static_cast<int64_t>(
      d14::layer_workspace_bytes(c, static_cast<int>(batch), static_cast<int>(seq_len)));
}

// Day 14 Exercise 3: the decoder layer. x, residual (in/out), out [B * L, hidden]; the weights as
// PyTorch Linear weights; workspace uint8 [layer_workspace_bytes(...)]. trace_path, when not
// None, gets the Chrome trace of the stages (this call then waits for the GPU).
void decoder_layer(TensorView x, TensorView residual, TensorView out, TensorView attn_norm,
                   TensorView w_qkv, TensorView w_o, TensorView mlp_norm, TensorView w_gate_up,
                   TensorView w_down, TensorView workspace, int64_t batch, int64_t seq_len,
                   int64_t num_heads, int64_t num_kv_heads, double eps, double rope_theta,
                   tvm::ffi::Optional<tvm::ffi::String> trace_path) {
  check_tensor(x, "x", kBFloat16, 2);
  check_tensor(residual, "residual", kBFloat16, 2);
  check_tensor(out, "out", kBFloat16, 2);
  check_tensor(attn_norm, "attn_norm", kBFloat16, 1);
  check_tensor(w_qkv, "w_qkv", kBFloat16, 2);
  check_tensor(w_o, "w_o", kBFloat16, 2);
  check_tensor(mlp_norm, "mlp_norm", kBFloat16, 1);
  check_tensor(w_gate_up, "w_gate_up", kBFloat16, 2);
  check_tensor(w_down, "w_down", kBFloat16, 2);
  check_tensor(workspace, "workspace", course_ffi::kUInt8, 1);
  same_shape(x, "x", residual, "residual");
  same_shape(x, "x", out, "out");
  d14::LayerConfig c;
  c.hidden = static_cast<int>(x.size(1));
  c.num_heads = static_cast<int>(num_heads);
  c.num_kv_heads = static_cast<int>(num_kv_heads);
  if (num_heads <= 0 || num_kv_heads <= 0 || w_qkv.size(0) % (num_heads + 2 * num_kv_heads) != 0)
    TVM_FFI_THROW(ValueError) << "w_qkv: rows must be (num_heads + 2 num_kv_heads) * head_dim";
  c.head_dim = static_cast<int>(w_qkv.size(0) / (num_heads + 2 * num_kv_heads));
  c.intermediate = static_cast<int>(w_gate_up.size(0) / 2);
  c.eps = static_cast<float>(eps);
  c.rope_theta = static_cast<float>(rope_theta);
  if (x.size(0) != batch * seq_len)
    TVM_FFI_THROW(ValueError) << "x: must have batch * seq_len rows";
  if (attn_norm.size(0) != c.hidden || mlp_norm.size(0) != c.hidden || w_qkv.size(1) != c.hidden ||
      w_o.size(0) != c.hidden || w_o.size(1) != num_heads * c.head_dim ||
      w_gate_up.size(1) != c.hidden || w_down.size(0) != c.hidden ||
      w_down.size(1) != c.intermediate)
    TVM_FFI_THROW(ValueError) << "weights: shapes do not fit hidden, heads and intermediate";
  const int device = course_ffi::check_cuda(
      x, "x", residual, "residual", out, "out", attn_norm, "attn_norm", w_qkv, "w_qkv", w_o, "w_o",
      mlp_norm, "mlp_norm", w_gate_up, "w_gate_up", w_down, "w_down", workspace, "workspace");
  const d14::LayerWeights w{data<const bfloat16>(attn_norm), data<const bfloat16>(w_qkv),
                            data<const bfloat16>(w_o),       data<const bfloat16>(mlp_norm),
                            data<const bfloat16>(w_gate_up), data<const bfloat16>(w_down)};
  const std::string trace = trace_path.has_value() ? std::string(*trace_path) : std::string();
  translated("decoder_layer", [&] {
    d14::StageRecorder recorder;
    d14::decoder_layer(c, w, data<const bfloat16>(x), data<bfloat16>(residual), data<bfloat16>(out),
                       static_cast<int>(batch), static_cast<int>(seq_len), data<char>(workspace),
                       static_cast<std::size_t>(workspace.size(0)), stream_of(device),
                       trace.empty() ? nullptr : &recorder);
    if (!trace.empty()) d14::write_trace(trace, recorder.collect());
  });
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(abi_version, abi_version);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(rmsnorm, rmsnorm);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(fused_add_rmsnorm, fused_add_rmsnorm);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_bias_gelu, add_bias_gelu);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(softmax, softmax);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(gemm_bf16, gemm_bf16);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(prefill_attention, prefill_attention);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(prefill_attention_hopper, prefill_attention_hopper);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(check_mbarrier_timeouts, check_mbarrier_timeouts);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(rope_qkv, rope_qkv);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(silu_and_mul, silu_and_mul);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(layer_workspace_bytes, layer_workspace_bytes);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(decoder_layer, decoder_layer);
