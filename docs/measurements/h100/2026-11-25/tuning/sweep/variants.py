#!/usr/bin/env python3
"""Makes and compiles variants of solution kernels: python3 gen.py [names...]"""
import os, subprocess, sys, concurrent.futures as cf
ROOT = '/work/main'; OUT = ROOT + '/build/tune'
D10 = ('d10', 'solutions/d10_gemm/kernel.cu', 'labs/d10_gemm/lab.h', 'shim_d10.inc')
D12 = ('d12', 'solutions/d12_prefill_attention/kernel.cu', 'labs/d12_prefill_attention/lab.h', 'shim_d12.inc')
S5 = 'constexpr int kWtBM = 128, kWtBN = 128, kWtBK = 8;'
S5LB = '__global__ void __launch_bounds__(kWtThreads, 2)'
M6 = 'constexpr int kMmaBM = 128, kMmaBN = 256, kMmaBK = 64, kMmaStages = 3;'
M6W = 'constexpr int kMmaWarpsM = 2, kMmaWarpsN = 4;'
M6LB = '__global__ void __launch_bounds__(kMmaThreads, 1)'
M6A = 'static_assert(kMmaSmemBytes <= 163 * 1024'
P1S = 'constexpr int kStages = 2; '
P1N = 'constexpr int block_n(int head_dim) { return head_dim == 128 ? 64 : 128; }'
P1LB = '__global__ void __launch_bounds__(kThreads, 1) prefill_1_mma_kernel'
ORDER_ = [('const int head = static_cast<int>(blockIdx.x), seq = static_cast<int>(blockIdx.y);', 'const int head = static_cast<int>(blockIdx.y), seq = static_cast<int>(blockIdx.z);'),
   ('gridDim.z - 1 - blockIdx.z', 'gridDim.x - 1 - blockIdx.x'),
   ('''const dim3 grid(static_cast<unsigned>(args.num_heads), static_cast<unsigned>(args.batch),
                  static_cast<unsigned>(course::ceil_div(args.max_seqlen_q, kBlockM)));''', '''const dim3 grid(static_cast<unsigned>(course::ceil_div(args.max_seqlen_q, kBlockM)), static_cast<unsigned>(args.num_heads), static_cast<unsigned>(args.batch));''')]
V = {
  'd10base': (D10, []),
  's5old': (D10, [('constexpr int kWtBM = 256, kWtBN = 128, kWtBK = 8;', S5), ('__global__ void __launch_bounds__(kWtThreads, 1)', S5LB)]),
  's5bk16': (D10, [(S5, 'constexpr int kWtBM = 128, kWtBN = 128, kWtBK = 16;')]),
  's5n256': (D10, [(S5, 'constexpr int kWtBM = 128, kWtBN = 256, kWtBK = 8;'), (S5LB, '__global__ void __launch_bounds__(kWtThreads, 1)')]),
  's5m256': (D10, [(S5, 'constexpr int kWtBM = 256, kWtBN = 128, kWtBK = 8;'), (S5LB, '__global__ void __launch_bounds__(kWtThreads, 1)')]),
  's5n256k16': (D10, [(S5, 'constexpr int kWtBM = 128, kWtBN = 256, kWtBK = 16;'), (S5LB, '__global__ void __launch_bounds__(kWtThreads, 1)')]),
  's5w32': (D10, [('constexpr int kWtWM = 64, kWtWN = 64;', 'constexpr int kWtWM = 64, kWtWN = 32;'), ('constexpr int kWtSubN = 4; ', 'constexpr int kWtSubN = 2; ')]),
  's5w32k16': (D10, [('constexpr int kWtWM = 64, kWtWN = 64;', 'constexpr int kWtWM = 64, kWtWN = 32;'), ('constexpr int kWtSubN = 4; ', 'constexpr int kWtSubN = 2; '), (S5, 'constexpr int kWtBM = 128, kWtBN = 128, kWtBK = 16;')]),
  'm6_128x128': (D10, [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 128, kMmaBK = 64, kMmaStages = 3;'), (M6W, 'constexpr int kMmaWarpsM = 2, kMmaWarpsN = 2;'), (M6LB, '__global__ void __launch_bounds__(kMmaThreads, 2)')]),
  'm6_bk32_4st': (D10, [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 256, kMmaBK = 32, kMmaStages = 4;'), ('static_assert(kMmaKChunks == 8, "a K-major row is one 128-byte line: chunk ^ (row & 7)");', '')]),
  'm6_bk32_5st': (D10, [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 256, kMmaBK = 32, kMmaStages = 5;'), ('static_assert(kMmaKChunks == 8, "a K-major row is one 128-byte line: chunk ^ (row & 7)");', '')]),
  'm6_4st': (D10, [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 256, kMmaBK = 64, kMmaStages = 4;'), (M6A, 'static_assert(kMmaSmemBytes <= 227 * 1024')]),
  'm6_256x128': (D10, [(M6, 'constexpr int kMmaBM = 256, kMmaBN = 128, kMmaBK = 64, kMmaStages = 3;'), (M6W, 'constexpr int kMmaWarpsM = 4, kMmaWarpsN = 2;')]),
  'm6_256x128_4st': (D10, [(M6, 'constexpr int kMmaBM = 256, kMmaBN = 128, kMmaBK = 64, kMmaStages = 4;'), (M6W, 'constexpr int kMmaWarpsM = 4, kMmaWarpsN = 2;'), (M6A, 'static_assert(kMmaSmemBytes <= 227 * 1024')]),
  'd12base': (D12, []),
  'r32f': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32f_kernel.txt').read())]),
  'r32e3': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32e_kernel.txt').read()), (P1S, 'constexpr int kStages = 3; ')]),
  'r32e': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32e_kernel.txt').read())]),
  'r32d': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32d_kernel.txt').read())]),
  'r32du1': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32du1_kernel.txt').read())]),
  'r32c': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32c_kernel.txt').read())]),
  'r32cu1': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32cu1_kernel.txt').read())]),
  'r32b': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32b_kernel.txt').read())]),
  'r32bu1': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_r32bu1_kernel.txt').read())]),
  'r32u1': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_rows32_kernel.txt').read().replace('''      float s_acc[kMTiles][kSTiles][4] = {};
#pragma unroll
      for (int kk = 0; kk < kQkSteps; ++kk) {''', '''      float s_acc[kMTiles][kSTiles][4] = {};
#pragma unroll 1
      for (int kk = 0; kk < kQkSteps; ++kk) {'''))]),
  'r32u2': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_rows32_kernel.txt').read().replace('''      float s_acc[kMTiles][kSTiles][4] = {};
#pragma unroll
      for (int kk = 0; kk < kQkSteps; ++kk) {''', '''      float s_acc[kMTiles][kSTiles][4] = {};
#pragma unroll 2
      for (int kk = 0; kk < kQkSteps; ++kk) {'''))]),
  'p1_bm64': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'),
                    ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'),
                    ('  return sizeof(std::uint16_t) * kHeadDim * (kBlockM + 2 * kStages * kBlockN<kHeadDim>);', '  return sizeof(std::uint16_t) * kHeadDim * (64 + 2 * kStages * kBlockN<kHeadDim>);'),
                    ('__global__ void __launch_bounds__(kThreads, 1) prefill_1_mma_kernel(const PrefillArgs<T> args) {', '''__global__ void __launch_bounds__(kThreads, 2) prefill_1_mma_kernel(const PrefillArgs<T> args) {
  constexpr int kBlockM = 64, kRowsPerWarp = 16;'''),
                    ('FIRST:  const unsigned grid = static_cast<unsigned>(course::ceil_div(args.max_seqlen_q, kBlockM)) *', '  const unsigned grid = static_cast<unsigned>(course::ceil_div(args.max_seqlen_q, 64)) *')]),
  'g1': (D12, [('constexpr int kGroupUnits = 16;', 'constexpr int kGroupUnits = 1;')]),
  'g4': (D12, [('constexpr int kGroupUnits = 16;', 'constexpr int kGroupUnits = 4;')]),
  'g8': (D12, [('constexpr int kGroupUnits = 16;', 'constexpr int kGroupUnits = 8;')]),
  'g32': (D12, [('constexpr int kGroupUnits = 16;', 'constexpr int kGroupUnits = 32;')]),
  'g128': (D12, [('constexpr int kGroupUnits = 16;', 'constexpr int kGroupUnits = 128;')]),
  'skip': (D12, [('      const T* kt_s = k_s + (t % kStages) * kN * kHeadDim;', '''      if (args.causal && t * kN > q0 + warp * kRowsPerWarp + kRowsPerWarp - 1 + offset) continue;
      const T* kt_s = k_s + (t % kStages) * kN * kHeadDim;''')]),
  'order': (D12, ORDER_),
  'order_3st': (D12, ORDER_ + [(P1S, 'constexpr int kStages = 3; ')]),
  'p1_nvmma': (D12, [('''    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16''', '''    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16'''), ('''    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16''', '''    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16''')]),
  'p1_rows32': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_rows32_kernel.txt').read())]),
  'p1_rows32_n32': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_rows32_kernel.txt').read()), (P1N, 'constexpr int block_n(int head_dim) { return head_dim == 128 ? 32 : 64; }')]),
  'p1_rows32_n32_3st': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_rows32_kernel.txt').read()), (P1N, 'constexpr int block_n(int head_dim) { return head_dim == 128 ? 32 : 64; }'), (P1S, 'constexpr int kStages = 3; ')]),
  'p1_rows32nv': (D12, [('constexpr int kWarps = 8;', 'constexpr int kWarps = 4;'), ('static_assert(kRowsPerWarp == 16,', 'static_assert(kRowsPerWarp == 32,'), ('KERNEL1', open('/work/tune/p1_rows32_kernel.txt').read()), ('''    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16''', '''    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16'''), ('''    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16''', '''    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16''')]),
  'p2_waitnext': (D12, [('''    for (int t = 1; t < range.tiles; ++t) {
      const int s = t % kHopperStages, prev = (t - 1) % kHopperStages;
      if (!mbarrier_wait_bounded(&full[s], (t / kHopperStages) % 2, 2 * kTileBytes)) return;
      rescale_and_pack();  // O and P_{t-1}, for O += P_{t-1} V_{t-1}
      my_turn();
      wgmma_fence();  // O and P_{t-1} were written since the last wgmma read them
      issue_s(k_s + s * kTileBytes);
      issue_pv(v_s + prev * kTileBytes);
      your_turn();
      wgmma_wait<1>();  // S_t has landed; P_{t-1} V_{t-1} may still run
      fence_registers(s_acc);
      softmax(t);
      wgmma_wait<0>();  // P_{t-1} V_{t-1} is done: O and P_{t-1} are free, and so is stage t - 1
      fence_registers(o_acc);
      release(prev);
    }
    // The last tile's P V.
    const int last = (range.tiles - 1) % kHopperStages;
    rescale_and_pack();''', '''    for (int t = 1; t < range.tiles; ++t) {
      const int s = t % kHopperStages, prev = (t - 1) % kHopperStages;
      if (!mbarrier_wait_bounded(&full[s], (t / kHopperStages) % 2, 2 * kTileBytes)) return;
      if (t >= 2) {
        wgmma_wait<0>();
        fence_registers(o_acc);
        release((t - 2) % kHopperStages);
      }
      rescale_and_pack();  // O and P_{t-1}, for O += P_{t-1} V_{t-1}
      my_turn();
      wgmma_fence();  // O and P_{t-1} were written since the last wgmma read them
      issue_s(k_s + s * kTileBytes);
      issue_pv(v_s + prev * kTileBytes);
      your_turn();
      wgmma_wait<1>();  // S_t has landed; P_{t-1} V_{t-1} may still run
      fence_registers(s_acc);
      softmax(t);
    }
    // The last tile's P V.
    const int last = (range.tiles - 1) % kHopperStages;
    if (range.tiles >= 2) {
      wgmma_wait<0>();
      fence_registers(o_acc);
      release((range.tiles - 2) % kHopperStages);
    }
    rescale_and_pack();''')]),
  'p2_pfence': (D12, [('''      wgmma_wait<0>();  // P_{t-1} V_{t-1} is done: O and P_{t-1} are free, and so is stage t - 1
      fence_registers(o_acc);''', '''      wgmma_wait<0>();  // P_{t-1} V_{t-1} is done: O and P_{t-1} are free, and so is stage t - 1
      fence_registers(o_acc);
      fence_registers(p_frag);''')]),
  'p2_fence': (D12, [('''      softmax(t);
      wgmma_wait<0>();''', '''      softmax(t);
      fence_registers(s_acc);
      asm volatile("" : "+f"(row_sum[0]), "+f"(row_sum[1]), "+f"(correction[0]), "+f"(correction[1]) :: "memory");
      wgmma_wait<0>();''')]),
  'p1_3st': (D12, [(P1S, 'constexpr int kStages = 3; ')]),
  'p1_n128': (D12, [(P1N, 'constexpr int block_n(int head_dim) { return 128; }')]),
  'p1_lb2': (D12, [(P1LB, '__global__ void __launch_bounds__(kThreads, 2) prefill_1_mma_kernel')]),
}
V['order_wn'] = (D12, ORDER_ + V['p2_waitnext'][1])
def build(name):
    (ns, kern, lab, shim), subs = V[name]
    d = f'{OUT}/{name}'; os.makedirs(d, exist_ok=True)
    src = open(f'{ROOT}/{kern}').read(); hdr = open(f'{ROOT}/{lab}').read()
    for old, new in subs:
        if old == 'KERNEL1':
            a = src.index('template <class T, int kHeadDim>\n__global__ void __launch_bounds__(kThreads, 1) prefill_1_mma_kernel')
            b = src.index('// ---------------------------------------------------------------------------------------------\n// Exercise 6')
            src = src[:a] + new + src[b:]
            continue
        if old.startswith('FIRST:'):
            old = old[6:]
            assert src.count(old) >= 1, (name, old)
            src = src.replace(old, new, 1)
            continue
        n = src.count(old) + hdr.count(old)
        assert n >= 1, (name, old)
        src = src.replace(old, new); hdr = hdr.replace(old, new)
    src += '\n' + open(shim).read()
    open(f'{d}/kernel.cu', 'w').write(src); open(f'{d}/lab.h', 'w').write(hdr)
    cmd = ['nvcc', '-I' + d, '-I' + ROOT + '/common', '-I/work/tune', '-O3', '-DNDEBUG',
           '--generate-code=arch=compute_90a,code=[sm_90a]', '-lineinfo', '-Xptxas=-v,-warn-spills',
           '-std=c++17', f'-D{ns}={ns}_{name}', f'-DTUNE_NAME="{name}"', '-c', f'{d}/kernel.cu', '-o', f'{d}/kernel.o']
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in r.stderr.splitlines() if 'gemm_5' in l or 'gemm_6' in l or 'prefill_1' in l or 'prefill_2' in l or 'spill' in l or 'error' in l or 'Used' in l]
    return name, r.returncode, r.stderr
names = sys.argv[1:] or list(V)
with cf.ThreadPoolExecutor(2) as ex:
    for name, rc, err in ex.map(build, names):
        open(f'{OUT}/{name}/ptxas.txt', 'w').write(err)
        print(name, 'rc', rc, flush=True)
        if rc: print(err[-3000:])
objs = [f'{OUT}/{n}/kernel.o' for n in names if os.path.exists(f'{OUT}/{n}/kernel.o')]
cmd = ['nvcc', '-O3', '-std=c++17', '-I' + ROOT + '/common', '-I/work/tune', '--generate-code=arch=compute_90a,code=[sm_90a]',
       'driver.cu', *objs, ROOT + '/build/hopper/common/libcourse_harness.a', '-lcublas', '-lcuda', '-o', ROOT + '/build/tune-bin/tune']
r = subprocess.run(cmd, capture_output=True, text=True); print('link rc', r.returncode, r.stderr[-3000:])
