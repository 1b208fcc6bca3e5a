// What the GPU is, and what it can do: the facts later days size their kernels by, and the
// measured ceilings the benchmarks report against ("% of what this GPU can do").
#pragma once

#include <cstddef>
#include <string>

namespace course {

// True when a CUDA device is usable; otherwise *why says why not (no driver, no device...).
bool gpu_available(std::string* why = nullptr);

struct DeviceFacts {
  std::string name;
  int device = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int regs_per_sm = 0;
  std::size_t smem_per_block = 0;        // without opting in
  std::size_t smem_per_block_optin = 0;  // after cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
  std::size_t smem_per_sm = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_mem_bytes = 0;
  int memory_bus_bits = 0;
  int sm_clock_khz = 0;  // the SMs' highest clock (cudaDevAttrClockRate)
};

// Read once per process (cudaGetDeviceProperties is slow).
const DeviceFacts& device_facts(int device = 0);
std::string describe(const DeviceFacts& facts);

// Which Hopper a launcher needs: kAtLeast for instructions every GPU from 9.0 on has
// (cp.async.bulk, mbarrier transaction counts), kSm90a for code compiled for sm_90a only
// (wgmma, setmaxnreg), which runs on compute capability 9.0 and nothing else.
enum class Hopper { kAtLeast, kSm90a };

// Whether this GPU qualifies for `need`: what require_hopper checks, for code that picks a
// Hopper kernel where there is one and another kernel elsewhere (Day 14's layer, the benchmarks).
bool is_hopper(Hopper need = Hopper::kSm90a);

// Throws course::InvalidArgument "<who>: needs compute capability 9.0 (Hopper) for <what_for>;
// this GPU (<name>) is X.Y" unless the GPU qualifies: the launchers of Days 7, 10 and 12 call
// it before they launch a Hopper kernel (their tests skip, saying why, on other GPUs).
void require_hopper(const std::string& who, const std::string& what_for,
                    Hopper need = Hopper::kSm90a);

// What the arithmetic of a kernel runs on, for its compute ceiling (course/bench.h's floor).
enum class Math {
  kAny,         // the card's fastest: its 8-bit tensor-core rate (a floor no kernel can beat)
  kSimtFp32,    // fused multiply-adds of the CUDA cores, float32
  kTensorTf32,  // tensor cores, float32 inputs rounded to TF32 (the fastest a float32 GEMM may be)
  kTensor16,    // tensor cores, 16-bit inputs (half, bfloat16)
  kTensorFp8,   // tensor cores, 8-bit inputs (e4m3, e5m2)
};

// The card's peak rate for `math` in FLOP/s (a fused multiply-add is two): its SMs x their
// highest clock x what one SM does per clock, from the compute capability (the vendor's
// per-SM figures: sm_80 256 / 2048 / 2048, sm_90 256 / 4096 / 8192 FLOP per clock; TF32 is half
// the 16-bit rate). No kernel
// can be faster; benchmarks reject a time that would be (bench.h, floor_us).
double peak_flops_per_second(Math math, const DeviceFacts& facts = device_facts());

// The copy ceiling: bytes read + bytes written per second of a large device-to-device
// cudaMemcpy (median of several), in GB/s (1e9 bytes). Measured once per process.
double measured_copy_bandwidth_gbs();

}  // namespace course
