// float64 CPU reference for the matrix transpose (Day 4).
//
//   out[c, r] = in[r, c]   for 0 <= r < rows, 0 <= c < cols
//
// Both matrices are row-major: the input [rows, cols] holds element (r, c) at r * cols + c, the
// output [cols, rows] holds element (c, r) at c * rows + r. A transpose computes nothing, it only
// moves values, so a correct kernel reproduces the reference bit for bit.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace course::reference {

// The transpose of a row-major [rows, cols] matrix, as a row-major [cols, rows] matrix.
inline std::vector<double> transpose(const std::vector<double>& in, std::size_t rows,
                                     std::size_t cols) {
  if (in.size() != rows * cols)
    throw std::invalid_argument("transpose: in must hold rows * cols values");
  std::vector<double> out(in.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
  return out;
}

// Where output element i comes from, without building the transpose: flat index i of the output
// is out[i / rows, i % rows], which is in[(i % rows) * cols + i / rows]. Benchmarks check a sample
// of a large output with this instead of transposing 64 M elements on the CPU.
inline std::size_t transpose_source_index(std::size_t rows, std::size_t cols, std::size_t i) {
  // out[out_row, out_col] = in[out_col, out_row]
  const std::size_t out_row = i / rows, out_col = i % rows;
  return out_col * cols + out_row;
}

}  // namespace course::reference
