#include "course/device.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/check.h"

namespace course {

// Why there is no GPU to run on, in words a student can act on (the CUDA error's own text,
// "CUDA driver version is insufficient for CUDA runtime version", reads like a driver to
// update when the machine simply has no NVIDIA driver, because it has no GPU).
std::string no_gpu_reason(cudaError_t err) {
  const std::string code = std::string(" (") + cudaGetErrorName(err) + ")";
  switch (err) {
    case cudaErrorInsufficientDriver:
      if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
        dlclose(driver);
        return "the NVIDIA driver on this machine is older than the CUDA runtime the course was "
               "built with: update the driver, or build with the toolkit that matches it" +
               code;
      }
      return "no GPU here: this machine has no NVIDIA driver (libcuda.so.1 not found)" + code;
    case cudaErrorNoDevice:
      return "no GPU here: the NVIDIA driver is installed but sees no GPU (check "
             "CUDA_VISIBLE_DEVICES and nvidia-smi)" +
             code;
    case cudaErrorDevicesUnavailable:
      return "the GPU is busy: it is in exclusive mode and another process holds it" + code;
    default:
      return std::string("no usable GPU: ") + cudaGetErrorString(err) + code;
  }
}

bool gpu_available(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = no_gpu_reason(err);
    cudaGetLastError();  // clear the error so later calls start clean
    return false;
  }
  if (count == 0) {
    if (why) *why = no_gpu_reason(cudaErrorNoDevice);
    return false;
  }
  return true;
}

const DeviceFacts& device_facts(int device) {
  static std::once_flag once;
  static DeviceFacts facts;
  std::call_once(once, [device] {
    cudaDeviceProp p{};
    COURSE_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    facts.name = p.name;
    facts.device = device;
    facts.cc_major = p.major;
    facts.cc_minor = p.minor;
    facts.sm_count = p.multiProcessorCount;
    facts.warp_size = p.warpSize;
    facts.max_threads_per_block = p.maxThreadsPerBlock;
    facts.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    facts.regs_per_sm = p.regsPerMultiprocessor;
    facts.smem_per_block = p.sharedMemPerBlock;
    facts.smem_per_block_optin = p.sharedMemPerBlockOptin;
    facts.smem_per_sm = p.sharedMemPerMultiprocessor;
    facts.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
    facts.global_mem_bytes = p.totalGlobalMem;
    facts.memory_bus_bits = p.memoryBusWidth;
    COURSE_CUDA_CHECK(cudaDeviceGetAttribute(&facts.sm_clock_khz, cudaDevAttrClockRate, device));
  });
  return facts;
}

double peak_flops_per_second(Math math, const DeviceFacts& f) {
  // FLOP per clock per SM: {float32 FMA, 16-bit tensor, 8-bit tensor}, dense. Architectures the
  // table does not know get the largest figures of any: a floor that is too low rejects
  // nothing honest.
  struct Rates {
    int major, minor;
    double fp32, tensor16, tensor8;
  };
  static constexpr Rates kRates[] = {
      {8, 0, 128, 2048, 2048},  // A100: no 8-bit tensor path of its own: 16-bit rate
      {8, 6, 256, 1024, 1024}, {8, 7, 256, 1024, 1024},
      {8, 9, 256, 1024, 2048}, {9, 0, 256, 4096, 8192},
  };
  Rates r{0, 0, 256, 8192, 16384};
  for (const Rates& k : kRates)
    if (k.major == f.cc_major && k.minor == f.cc_minor) r = k;
  const double per_clock = math == Math::kSimtFp32     ? r.fp32
                           : math == Math::kTensorTf32 ? r.tensor16 / 2
                           : math == Math::kTensor16   ? r.tensor16
                                                       : r.tensor8;
  return per_clock * f.sm_count * f.sm_clock_khz * 1e3;
}

std::string describe(const DeviceFacts& f) {
  std::ostringstream s;
  s << f.name << " (sm_" << f.cc_major << f.cc_minor << "): " << f.sm_count << " SMs, warp "
    << f.warp_size << ", L2 " << f.l2_bytes / (1024 * 1024) << " MiB, shared memory "
    << f.smem_per_block / 1024 << " KiB/block (" << f.smem_per_block_optin / 1024
    << " KiB opt-in), " << f.smem_per_sm / 1024 << " KiB/SM, "
    << f.global_mem_bytes / (1024 * 1024 * 1024) << " GiB global memory";
  return s.str();
}

bool is_hopper(Hopper need) {
  const DeviceFacts& f = device_facts();
  return need == Hopper::kSm90a ? (f.cc_major == 9 && f.cc_minor == 0) : f.cc_major >= 9;
}

void require_hopper(const std::string& who, const std::string& what_for, Hopper need) {
  const DeviceFacts& f = device_facts();
  require(is_hopper(need),
          who + ": needs compute capability 9.0 (Hopper" +
              (need == Hopper::kSm90a ? std::string(": H100, H200; compiled for sm_90a")
                                      : std::string(" or later")) +
              ") for " + what_for + "; this GPU (" + f.name + ") is " + std::to_string(f.cc_major) +
              "." + std::to_string(f.cc_minor));
}

double measured_copy_bandwidth_gbs() {
  static std::once_flag once;
  static double gbs = 0.0;
  std::call_once(once, [] {
    // Large enough that the L2 is no help (and each copy takes ~0.3 ms on an H100), small
    // enough for any GPU the course runs on.
    std::size_t free_bytes = 0, total_bytes = 0;
    COURSE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t bytes = std::min<std::size_t>(std::size_t{512} << 20, free_bytes / 4);
    DeviceBuffer<char> src(bytes), dst(bytes);
    COURSE_CUDA_CHECK(cudaMemset(src.data(), 1, bytes));
    cudaEvent_t start, stop;
    COURSE_CUDA_CHECK(cudaEventCreate(&start));
    COURSE_CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<float> ms;
    for (int i = 0; i < 23; ++i) {
      COURSE_CUDA_CHECK(cudaEventRecord(start));
      COURSE_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice));
      COURSE_CUDA_CHECK(cudaEventRecord(stop));
      COURSE_CUDA_CHECK(cudaEventSynchronize(stop));
      float t = 0;
      COURSE_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      if (i >= 3) ms.push_back(t);  // the first copies warm up clocks and TLBs
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    gbs = 2.0 * static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e-3) / 1e9;
  });
  return gbs;
}

}  // namespace course
