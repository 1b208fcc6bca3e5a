// The C ABI of the course's kernels for Python (python/cuda_course loads it with ctypes): every
// entry point takes DLPack tensors (DLManagedTensor*, borrowed: the caller keeps the capsule
// alive and this library never calls the deleter) and the cudaStream_t of the caller's current
// stream, returns 0 on success, or 1 with a message course_last_error() returns. The Python side
// checks the arguments first and raises ValueError / TypeError; the checks here are the second
// line, for any other caller of the library.
//
// Days 2, 5, 6, 10 and 12 launch on the legacy default stream: their calls are bracketed by
// events so that they run after the work already queued on the caller's stream, and the caller's
// stream waits for them (lesson 14 §2.3). Day 14's kernels take the stream directly.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

#include "../../labs/d02_coalescing/lab.h"
#include "../../labs/d05_warp_programming/lab.h"
#include "../../labs/d06_reduction_norms/lab.h"
#include "../../labs/d10_gemm/lab.h"
#include "../../labs/d12_prefill_attention/lab.h"
#include "../../labs/d14_capstone/lab.h"
#include "course_launch.h"
#include "dlpack.h"

#define COURSE_PY_API extern "C" __attribute__((visibility("default")))

namespace {

using course::bfloat16;

thread_local std::string g_last_error;

struct ArgError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A checked view of one DLPack tensor.
struct View {
  const DLTensor* t = nullptr;
  std::string name;
  void* data() const { return static_cast<char*>(t->data) + t->byte_offset; }
  std::int64_t dim(int i) const { return t->shape[i]; }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
    return n;
  }
};

// dtype: 'b' bfloat16, 'i' int32, 'f' float32, 'h' float16.
View view(DLManagedTensor* m, const char* name, char dtype, int ndim) {
  if (m == nullptr) throw ArgError(std::string(name) + ": null tensor");
  View v{&m->dl_tensor, name};
  const DLTensor& t = m->dl_tensor;
  if (t.device.device_type != kDLCUDA)
    throw ArgError(v.name + ": must be on a CUDA device (DLPack device type 2), got " +
                   std::to_string(t.device.device_type));
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != t.device.device_id)
    throw ArgError(v.name + ": is on CUDA device " + std::to_string(t.device.device_id) +
                   " but the current device is " + std::to_string(current));
  const bool ok_type =
      t.dtype.lanes == 1 && ((dtype == 'b' && t.dtype.code == kDLBfloat && t.dtype.bits == 16) ||
                             (dtype == 'i' && t.dtype.code == kDLInt && t.dtype.bits == 32) ||
                             (dtype == 'f' && t.dtype.code == kDLFloat && t.dtype.bits == 32) ||
                             (dtype == 'h' && t.dtype.code == kDLFloat && t.dtype.bits == 16));
  if (!ok_type)
    throw ArgError(v.name + ": wrong dtype (code " + std::to_string(t.dtype.code) + ", bits " +
                   std::to_string(t.dtype.bits) + "), expected " +
                   (dtype == 'b'   ? "bfloat16"
                    : dtype == 'i' ? "int32"
                    : dtype == 'h' ? "float16"
                                   : "float32"));
  if (t.ndim != ndim)
    throw ArgError(v.name + ": expected " + std::to_string(ndim) + " dimensions, got " +
                   std::to_string(t.ndim));
  if (t.strides != nullptr) {  // must be compact row-major (size-1 dimensions may say anything)
    std::int64_t expected = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expected)
        throw ArgError(v.name + ": must be contiguous (row-major, no gaps)");
      expected *= t.shape[i];
    }
  }
  return v;
}

// The view() dtype code of x for Days 2 and 5, which take float32 ('f'), float16 ('h') or
// bfloat16 ('b'); their other arguments must then have the same dtype.
char float_dtype(DLManagedTensor* m, const char* name) {
  if (m == nullptr) throw ArgError(std::string(name) + ": null tensor");
  const DLDataType& d = m->dl_tensor.dtype;
  if (d.lanes == 1 && d.code == kDLFloat && d.bits == 32) return 'f';
  if (d.lanes == 1 && d.code == kDLFloat && d.bits == 16) return 'h';
  if (d.lanes == 1 && d.code == kDLBfloat && d.bits == 16) return 'b';
  throw ArgError(std::string(name) + ": wrong dtype (code " + std::to_string(d.code) + ", bits " +
                 std::to_string(d.bits) + "), expected float32, float16 or bfloat16");
}

// Whether the bytes of two tensors overlap (Day 5's softmax reads x while it writes y).
bool overlaps(const View& a, const View& b) {
  const auto* pa = static_cast<const char*>(a.data());
  const auto* pb = static_cast<const char*>(b.data());
  const std::int64_t bytes_a = a.numel() * (a.t->dtype.bits / 8);
  const std::int64_t bytes_b = b.numel() * (b.t->dtype.bits / 8);
  return bytes_a > 0 && bytes_b > 0 && pa < pb + bytes_b && pb < pa + bytes_a;
}

void same_shape(const View& a, const View& b) {
  if (a.t->ndim != b.t->ndim) throw ArgError(b.name + ": shape differs from " + a.name);
  for (int i = 0; i < a.t->ndim; ++i)
    if (a.dim(i) != b.dim(i)) throw ArgError(b.name + ": shape differs from " + a.name);
}

using course_py::gemm_bt;
using course_py::on_stream;

template <class F>
int guarded(F&& body) {
  try {
    body();
    g_last_error.clear();
    return 0;
  } catch (const std::exception& e) {
    g_last_error = e.what();
  } catch (...) {
    g_last_error = "unknown C++ exception";
  }
  return 1;
}

}  // namespace

COURSE_PY_API const char* course_last_error(void) { return g_last_error.c_str(); }

// The ABI version python/cuda_course checks (bump on any signature change).
COURSE_PY_API int course_abi_version(void) { return 1; }

// y = rmsnorm(x) * w; x, y [rows, hidden], w [hidden]. Day 6.
COURSE_PY_API int course_rmsnorm(DLManagedTensor* x, DLManagedTensor* w, DLManagedTensor* y,
                                 float eps, void* stream) {
  return guarded([&] {
    const View vx = view(x, "x", 'b', 2), vw = view(w, "weight", 'b', 1),
               vy = view(y, "out", 'b', 2);
    same_shape(vx, vy);
    if (vw.dim(0) != vx.dim(1)) throw ArgError("weight: must have x.shape[1] elements");
    on_stream(static_cast<cudaStream_t>(stream), [&] {
      d06::rmsnorm(static_cast<const bfloat16*>(vx.data()), static_cast<const bfloat16*>(vw.data()),
                   static_cast<bfloat16*>(vy.data()), vx.dim(0), vx.dim(1), eps);
    });
  });
}

// residual += x; y = rmsnorm(residual) * w. Day 6.
COURSE_PY_API int course_fused_add_rmsnorm(DLManagedTensor* x, DLManagedTensor* residual,
                                           DLManagedTensor* w, DLManagedTensor* y, float eps,
                                           void* stream) {
  return guarded([&] {
    const View vx = view(x, "x", 'b', 2), vr = view(residual, "residual", 'b', 2),
               vw = view(w, "weight", 'b', 1), vy = view(y, "out", 'b', 2);
    same_shape(vx, vr);
    same_shape(vx, vy);
    if (vw.dim(0) != vx.dim(1)) throw ArgError("weight: must have x.shape[1] elements");
    on_stream(static_cast<cudaStream_t>(stream), [&] {
      d06::fused_add_rmsnorm(static_cast<const bfloat16*>(vx.data()),
                             static_cast<bfloat16*>(vr.data()),
                             static_cast<const bfloat16*>(vw.data()),
                             static_cast<bfloat16*>(vy.data()), vx.dim(0), vx.dim(1), eps);
    });
  });
}

template <class T>
void add_bias_gelu_typed(const View& x, const View& bias, const View& y) {
  d02::add_bias_gelu_fused(static_cast<const T*>(x.data()), static_cast<const T*>(bias.data()),
                           static_cast<T*>(y.data()), x.dim(0), x.dim(1));
}

// y [rows, cols] = gelu(x + bias), bias [cols]; float32, float16 or bfloat16. Day 2, Exercise 6b
// (add_bias_gelu_fused).
COURSE_PY_API int course_add_bias_gelu(DLManagedTensor* x, DLManagedTensor* bias,
                                       DLManagedTensor* y, void* stream) {
  return guarded([&] {
    const char dtype = float_dtype(x, "x");
    const View vx = view(x, "x", dtype, 2), vb = view(bias, "bias", dtype, 1),
               vy = view(y, "out", dtype, 2);
    same_shape(vx, vy);
    if (vb.dim(0) != vx.dim(1)) throw ArgError("bias: must have x.shape[1] elements");
    on_stream(static_cast<cudaStream_t>(stream), [&] {
      if (dtype == 'f')
        add_bias_gelu_typed<float>(vx, vb, vy);
      else if (dtype == 'h')
        add_bias_gelu_typed<course::half>(vx, vb, vy);
      else
        add_bias_gelu_typed<bfloat16>(vx, vb, vy);
    });
  });
}

template <class T>
void softmax_typed(const View& x, const View& y) {
  d05::softmax_2_block_per_row(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), x.dim(0),
                               x.dim(1));
}

// y [rows, cols] = softmax of each row of x; float32, float16 or bfloat16; y must not overlap x.
// Day 5, Exercise 3 (softmax_2_block_per_row, the launcher choosing the block size).
COURSE_PY_API int course_softmax(DLManagedTensor* x, DLManagedTensor* y, void* stream) {
  return guarded([&] {
    const char dtype = float_dtype(x, "x");
    const View vx = view(x, "x", dtype, 2), vy = view(y, "out", dtype, 2);
    same_shape(vx, vy);
    if (overlaps(vx, vy)) throw ArgError("out: must not overlap x");
    on_stream(static_cast<cudaStream_t>(stream), [&] {
      if (dtype == 'f')
        softmax_typed<float>(vx, vy);
      else if (dtype == 'h')
        softmax_typed<course::half>(vx, vy);
      else
        softmax_typed<bfloat16>(vx, vy);
    });
  });
}

// c [M, N] = a [M, K] b^T, b [N, K]. Day 10 step 7 on compute capability 9.0, step 6 elsewhere.
COURSE_PY_API int course_gemm_bf16(DLManagedTensor* a, DLManagedTensor* b, DLManagedTensor* c,
                                   void* stream) {
  return guarded([&] {
    const View va = view(a, "a", 'b', 2), vb = view(b, "b", 'b', 2), vc = view(c, "out", 'b', 2);
    if (vb.dim(1) != va.dim(1)) throw ArgError("b: must be [N, K] with K = a.shape[1]");
    if (vc.dim(0) != va.dim(0) || vc.dim(1) != vb.dim(0)) throw ArgError("out: must be [M, N]");
    on_stream(static_cast<cudaStream_t>(stream), [&] {
      gemm_bt(static_cast<const bfloat16*>(va.data()), static_cast<const bfloat16*>(vb.data()),
              static_cast<bfloat16*>(vc.data()), va.dim(0), vb.dim(0), va.dim(1));
    });
  });
}

// Day 12 prefill attention over a packed batch: q [T, H, D], k, v [T, Hkv, D], o [T, H, D], lse
// float32 [H, T], cu_seqlens int32 [B + 1] (the same for queries and keys); `launch` is the
// kernel: Exercise 2's mma.sync one or Exercise 6's Hopper one (TMA + wgmma, head dim 128, sm_90a).
static int prefill(DLManagedTensor* q, DLManagedTensor* k, DLManagedTensor* v, DLManagedTensor* o,
                   DLManagedTensor* lse, DLManagedTensor* cu_seqlens, int max_seqlen, int causal,
                   float scale, void* stream, void (*launch)(const d12::PrefillArgs<bfloat16>&)) {
  return guarded([&] {
    const View vq = view(q, "q", 'b', 3), vk = view(k, "k", 'b', 3), vv = view(v, "v", 'b', 3),
               vo = view(o, "out", 'b', 3), vl = view(lse, "lse", 'f', 2),
               vc = view(cu_seqlens, "cu_seqlens", 'i', 1);
    same_shape(vq, vo);
    same_shape(vk, vv);
    if (vk.dim(0) != vq.dim(0) || vk.dim(2) != vq.dim(2))
      throw ArgError("k: must be [T, num_kv_heads, head_dim] with q's T and head_dim");
    if (vl.dim(0) != vq.dim(1) || vl.dim(1) != vq.dim(0)) throw ArgError("lse: must be [H, T]");
    d12::PrefillArgs<bfloat16> args;
    args.q = static_cast<const bfloat16*>(vq.data());
    args.k = static_cast<const bfloat16*>(vk.data());
    args.v = static_cast<const bfloat16*>(vv.data());
    args.o = static_cast<bfloat16*>(vo.data());
    args.lse = static_cast<float*>(vl.data());
    args.cu_seqlens_q = args.cu_seqlens_kv = static_cast<const std::int32_t*>(vc.data());
    args.batch = static_cast<int>(vc.dim(0) - 1);
    args.total_q = args.total_kv = vq.dim(0);
    args.max_seqlen_q = max_seqlen;
    args.num_heads = static_cast<int>(vq.dim(1));
    args.num_kv_heads = static_cast<int>(vk.dim(1));
    args.head_dim = static_cast<int>(vq.dim(2));
    args.scale = scale;
    args.causal = causal != 0;
    on_stream(static_cast<cudaStream_t>(stream), [&] { launch(args); });
  });
}

COURSE_PY_API int course_prefill_attention(DLManagedTensor* q, DLManagedTensor* k,
                                           DLManagedTensor* v, DLManagedTensor* o,
                                           DLManagedTensor* lse, DLManagedTensor* cu_seqlens,
                                           int max_seqlen, int causal, float scale, void* stream) {
  return prefill(q, k, v, o, lse, cu_seqlens, max_seqlen, causal, scale, stream,
                 d12::prefill_1_mma);
}

// The same with the Hopper kernel. A wait on an mbarrier that gives up is recorded on the GPU,
// not reported here (that needs a synchronisation): course_check_mbarrier_timeouts reports it.
COURSE_PY_API int course_prefill_attention_hopper(DLManagedTensor* q, DLManagedTensor* k,
                                                  DLManagedTensor* v, DLManagedTensor* o,
                                                  DLManagedTensor* lse, DLManagedTensor* cu_seqlens,
                                                  int max_seqlen, int causal, float scale,
                                                  void* stream) {
  return prefill(q, k, v, o, lse, cu_seqlens, max_seqlen, causal, scale, stream,
                 d12::prefill_2_wgmma);
}

// Waits for the GPU; fails, saying so, if a Hopper kernel's wait on an mbarrier gave up since the
// last call (a transaction count that never arrived: the kernel's output is not to be trusted).
COURSE_PY_API int course_check_mbarrier_timeouts() {
  return guarded([&] { d12::check_mbarrier_timeouts(); });
}

// Day 14 Exercise 1: qkv [T, (H + 2 Hkv) D] -> q [T, H, D], k, v [T, Hkv, D]; positions int32 [T].
COURSE_PY_API int course_rope_qkv(DLManagedTensor* qkv, DLManagedTensor* positions,
                                  DLManagedTensor* q, DLManagedTensor* k, DLManagedTensor* v,
                                  float theta, void* stream) {
  return guarded([&] {
    const View vqkv = view(qkv, "qkv", 'b', 2), vp = view(positions, "positions", 'i', 1),
               vq = view(q, "q", 'b', 3), vk = view(k, "k", 'b', 3), vv = view(v, "v", 'b', 3);
    same_shape(vk, vv);
    const std::int64_t t = vqkv.dim(0), h = vq.dim(1), hkv = vk.dim(1), d = vq.dim(2);
    if (vp.dim(0) != t || vq.dim(0) != t || vk.dim(0) != t || vk.dim(2) != d ||
        vqkv.dim(1) != (h + 2 * hkv) * d)
      throw ArgError("qkv: must be [T, (H + 2 Hkv) D] for q [T, H, D] and k, v [T, Hkv, D]");
    d14::rope_qkv(static_cast<const bfloat16*>(vqkv.data()),
                  static_cast<const std::int32_t*>(vp.data()), static_cast<bfloat16*>(vq.data()),
                  static_cast<bfloat16*>(vk.data()), static_cast<bfloat16*>(vv.data()), t,
                  static_cast<int>(h), static_cast<int>(hkv), static_cast<int>(d), theta,
                  static_cast<cudaStream_t>(stream));
  });
}

// Day 14 Exercise 2: gate_up [T, 2 I] -> out [T, I].
COURSE_PY_API int course_silu_and_mul(DLManagedTensor* gate_up, DLManagedTensor* out,
                                      void* stream) {
  return guarded([&] {
    const View vg = view(gate_up, "gate_up", 'b', 2), vo = view(out, "out", 'b', 2);
    if (vo.dim(0) != vg.dim(0) || 2 * vo.dim(1) != vg.dim(1))
      throw ArgError("out: must be [T, I] for gate_up [T, 2 I]");
    d14::silu_and_mul(static_cast<const bfloat16*>(vg.data()), static_cast<bfloat16*>(vo.data()),
                      vg.dim(0), vo.dim(1), static_cast<cudaStream_t>(stream));
  });
}

COURSE_PY_API std::int64_t course_layer_workspace_bytes(int hidden, int num_heads, int num_kv_heads,
                                                        int head_dim, int intermediate, int batch,
                                                        int seq_len) {
  d14::LayerConfig c;
  c.hidden = hidden;
  c.num_heads = num_heads;
  c.num_kv_heads = num_kv_heads;
  c.head_dim = head_dim;
  c.intermediate = intermediate;
  return static_cast<std::int64_t>(d14::layer_workspace_bytes(c, batch, seq_len));
}

// Day 14 Exercise 3: the decoder layer. x, residual (in/out), out [B * L, hidden]; the weights as
// PyTorch Linear weights; workspace uint8 [course_layer_workspace_bytes(...)]. trace_path, when
// not null, gets the Chrome trace of the stages (this call then waits for the GPU).
COURSE_PY_API int course_decoder_layer(DLManagedTensor* x, DLManagedTensor* residual,
                                       DLManagedTensor* out, DLManagedTensor* attn_norm,
                                       DLManagedTensor* w_qkv, DLManagedTensor* w_o,
                                       DLManagedTensor* mlp_norm, DLManagedTensor* w_gate_up,
                                       DLManagedTensor* w_down, DLManagedTensor* workspace,
                                       int batch, int seq_len, int num_heads, int num_kv_heads,
                                       float eps, float rope_theta, const char* trace_path,
                                       void* stream) {
  return guarded([&] {
    const View vx = view(x, "x", 'b', 2), vr = view(residual, "residual", 'b', 2),
               vo = view(out, "out", 'b', 2), van = view(attn_norm, "attn_norm", 'b', 1),
               vqkv = view(w_qkv, "w_qkv", 'b', 2), vwo = view(w_o, "w_o", 'b', 2),
               vmn = view(mlp_norm, "mlp_norm", 'b', 1), vgu = view(w_gate_up, "w_gate_up", 'b', 2),
               vd = view(w_down, "w_down", 'b', 2);
    if (workspace == nullptr || workspace->dl_tensor.device.device_type != kDLCUDA)
      throw ArgError("workspace: must be a CUDA tensor");
    same_shape(vx, vr);
    same_shape(vx, vo);
    d14::LayerConfig c;
    c.hidden = static_cast<int>(vx.dim(1));
    c.num_heads = num_heads;
    c.num_kv_heads = num_kv_heads;
    if (num_heads <= 0 || num_kv_heads <= 0 || vqkv.dim(0) % (num_heads + 2 * num_kv_heads) != 0)
      throw ArgError("w_qkv: rows must be (num_heads + 2 num_kv_heads) * head_dim");
    c.head_dim = static_cast<int>(vqkv.dim(0) / (num_heads + 2 * num_kv_heads));
    c.intermediate = static_cast<int>(vgu.dim(0) / 2);
    c.eps = eps;
    c.rope_theta = rope_theta;
    if (vx.dim(0) != static_cast<std::int64_t>(batch) * seq_len)
      throw ArgError("x: must have batch * seq_len rows");
    if (van.dim(0) != c.hidden || vmn.dim(0) != c.hidden || vqkv.dim(1) != c.hidden ||
        vwo.dim(0) != c.hidden || vwo.dim(1) != num_heads * c.head_dim || vgu.dim(1) != c.hidden ||
        vd.dim(0) != c.hidden || vd.dim(1) != c.intermediate)
      throw ArgError("weights: shapes do not fit hidden, heads and intermediate");
    const DLTensor& ws = workspace->dl_tensor;
    std::int64_t ws_bytes = ws.dtype.bits / 8 * ws.dtype.lanes;
    for (int i = 0; i < ws.ndim; ++i) ws_bytes *= ws.shape[i];
    const d14::LayerWeights w{
        static_cast<const bfloat16*>(van.data()), static_cast<const bfloat16*>(vqkv.data()),
        static_cast<const bfloat16*>(vwo.data()), static_cast<const bfloat16*>(vmn.data()),
        static_cast<const bfloat16*>(vgu.data()), static_cast<const bfloat16*>(vd.data())};
    d14::StageRecorder recorder;
    const bool trace = trace_path != nullptr && trace_path[0] != '\0';
    d14::decoder_layer(c, w, static_cast<const bfloat16*>(vx.data()),
                       static_cast<bfloat16*>(vr.data()), static_cast<bfloat16*>(vo.data()), batch,
                       seq_len, static_cast<char*>(ws.data) + ws.byte_offset,
                       static_cast<std::size_t>(ws_bytes), static_cast<cudaStream_t>(stream),
                       trace ? &recorder : nullptr);
    if (trace) d14::write_trace(trace_path, recorder.collect());
  });
}
