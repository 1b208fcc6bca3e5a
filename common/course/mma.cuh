// ldmatrix and mma.sync.m16n8k16: the Tensor Core instructions you write on Day 9 (lesson 9
// §4-§5); Days 10 and 12 use this copy.
//
// ldmatrix.x4 loads four 8 x 8 matrices of 16-bit values from shared memory: lanes 8i .. 8i + 7
// give the shared-memory addresses (smem_address) of the 8 rows (16 bytes each) of matrix i;
// lane l receives, of each matrix, row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 (one 32-bit
// register per matrix). .trans hands out the transposed matrix: lane l gets rows 2 (l % 4) and
// 2 (l % 4) + 1 of column l / 4.
//
// mma_16816<T>: d += a b for one 16 x 8 x 16 tile, T = bfloat16 or half. a is row-major 16 x 16,
// b "col" 16 x 8, d float32 16 x 8. With g = lane / 4 and t = lane % 4, every lane holds
// clang-format off
//   a[0] = A[g][2t, 2t+1]        a[1] = A[g+8][2t, 2t+1]
//   a[2] = A[g][2t+8, 2t+9]      a[3] = A[g+8][2t+8, 2t+9]
//   b0   = B[2t, 2t+1][g]        b1   = B[2t+8, 2t+9][g]
//   d[0], d[1] = D[g][2t, 2t+1]  d[2], d[3] = D[g+8][2t, 2t+1]
// clang-format on
// Not volatile: it only reads and writes registers, so the compiler may schedule it freely
// between the ldmatrix, which stay volatile (they read shared memory and keep their place after
// a barrier).
#pragma once

#include <cstdint>
#include <type_traits>

#include "course/dtype.h"

namespace course {

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr)
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr)
               : "memory");
}

template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const std::uint32_t (&a)[4],
                                          std::uint32_t b0, std::uint32_t b1) {
  static_assert(std::is_same_v<T, bfloat16> || std::is_same_v<T, half>, "bfloat16 or half");
  if constexpr (std::is_same_v<T, bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7},"
        " {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7},"
        " {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

}  // namespace course
