// Day 2 — coalescing and 16-byte vectorized access.
//
// The interface the tests and the benchmark call. Pointers are device pointers. Every launcher
// is a template over the element type T = float, course::half or course::bfloat16 (kernel.cu
// instantiates each one for those three), computes in float32 whatever T is, and checks its
// arguments: it throws course::InvalidArgument (a message, never an illegal address) or
// course::CudaError. Exercises are numbered as in README.md and the lesson.
//
// max_blocks: every kernel of the day walks its data with a grid-stride loop. The launcher sizes
// a 1-D grid to one full wave (as many blocks as fit on the GPU at once), and a row kernel's grid
// to one pass (every group of consecutive rows its own blocks; lesson 2 §7.3), never more than the
// data needs. max_blocks > 0 caps the grid further: the tests pass 1 or 3 so that every thread
// goes round its loop many times, even on small inputs. 0 = the launcher's choice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "course/dtype.h"  // course::half, course::bfloat16

namespace d02 {

// ---------------------------------------------------------------------------------------------
// Exercise 1: y[i] = x[i], coalesced: the 32 lanes of a warp copy 32 consecutive elements.
template <class T>
void copy_1_coalesced(const T* x, T* y, std::int64_t n, int max_blocks = 0);

// Exercise 2: the same copy, strided: the array is read as a row-major [ceil(n / stride), stride]
// matrix, one column at a time, so that consecutive lanes touch elements `stride` apart.
// stride = 1 is the coalesced copy. stride >= 1.
template <class T>
void copy_1_strided(const T* x, T* y, std::int64_t n, std::int64_t stride, int max_blocks = 0);

// ---------------------------------------------------------------------------------------------
// Exercise 3: the 16-byte vector type Vec16<T> = Vec<T, 16 / sizeof(T)>, written in kernel.cu.
// Given (they test your type): its size and alignment as the compiler sees them, and a kernel
// that loads each 16-byte vector of x, reverses the order of its elements and stores it to y.
// x and y must be 16-byte aligned; `vectors` is the number of 16-byte vectors (n = vectors * 16
// / sizeof(T) elements).
struct VecLayout {
  std::size_t bytes = 0;      // sizeof(Vec16<T>)
  std::size_t alignment = 0;  // alignof(Vec16<T>)
};
template <class T>
VecLayout vec16_layout();
template <class T>
void reverse_within_vectors(const T* x, T* y, std::int64_t vectors);

// ---------------------------------------------------------------------------------------------
// Exercise 4: y[i] = x[i] with 16-byte loads and stores, and the last n % (16 / sizeof(T))
// elements (the tail) one by one. When x or y is not 16-byte aligned, the launcher first copies
// the few elements before the next 16-byte boundary (the head) one by one, when that aligns both;
// when x and y are misaligned by different amounts, everything goes element by element.
template <class T>
void copy_2_vectorized(const T* x, T* y, std::int64_t n, int max_blocks = 0);

// ---------------------------------------------------------------------------------------------
// Exercise 5: y[i] = gelu(x[i]) with the tanh approximation,
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// 16-byte accesses where the pointers allow (the same head / body / tail split as Exercise 4).
template <class T>
void gelu(const T* x, T* y, std::int64_t n, int max_blocks = 0);

// ---------------------------------------------------------------------------------------------
// Exercise 6: y[r, c] = gelu(x[r, c] + bias[c]) for a row-major x and y of [rows, cols] and a
// bias of [cols]. 16-byte accesses when cols is a multiple of 16 / sizeof(T) and x, bias and y
// are 16-byte aligned; element by element otherwise.
//
// 6a. One step of the unfused chain: y[r, c] = x[r, c] + bias[c], rounded to T.
template <class T>
void add_bias(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t cols,
              int max_blocks = 0);
// Given: the unfused chain, two kernels through DRAM: tmp = add_bias(x, bias), y = gelu(tmp).
// tmp must hold rows * cols elements; it is left holding x + bias.
template <class T>
void add_bias_gelu_unfused(const T* x, const T* bias, T* tmp, T* y, std::int64_t rows,
                           std::int64_t cols, int max_blocks = 0);
// 6b. The fused kernel: one read of x, one write of y, nothing in between.
template <class T>
void add_bias_gelu_fused(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t cols,
                         int max_blocks = 0);

// ---------------------------------------------------------------------------------------------
// Exercise 7: the activation of a gated MLP (Llama, Mistral): input is row-major [rows, 2 d]
// with the gate in columns [0, d) and the up projection in [d, 2 d); out is [rows, d]:
//   out[r, c] = silu(input[r, c]) * input[r, d + c],   silu(g) = g / (1 + exp(-g)).
// 16-byte accesses when d is a multiple of 16 / sizeof(T) and both pointers are 16-byte aligned.
template <class T>
void silu_and_mul(const T* input, T* out, std::int64_t rows, std::int64_t d, int max_blocks = 0);

}  // namespace d02
