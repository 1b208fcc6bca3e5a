# The step-6 variants of this sweep: text substitutions of solutions/d10_gemm/kernel.cu as it was at
# e38410e (the "old" loop and loads, variant-old_*.txt) by the variant-*.txt texts. Excerpt of the
# session's generator (gen.py); M6, M6W, M6LB, M6A are the constants lines of the kernel, D10 the
# day's files; build() compiles each into its own namespace and links them with driver.cu.txt.
_OLD_LOOP = open('variant-old_loop.txt').read()
_NEW_LOOP = open('variant-new_loop.txt').read()
PIPE = [('const auto load_stage = [&](std::int64_t kt, int s) {', 'const auto load_stage = [&](std::int64_t kt, int s, int part) {'),
        ('    for (int i = 0; i < kMmaAStage / kChunkElems / kMmaThreads; ++i) {\n', '    for (int i = 0; i < kMmaAStage / kChunkElems / kMmaThreads; ++i) {\n      if (i * kMmaKSteps / (kMmaAStage / kChunkElems / kMmaThreads) != part) continue;\n'),
        ('    for (int i = 0; i < kMmaBStage / kChunkElems / kMmaThreads; ++i) {\n', '    for (int i = 0; i < kMmaBStage / kChunkElems / kMmaThreads; ++i) {\n      if (i * kMmaKSteps / (kMmaBStage / kChunkElems / kMmaThreads) != part) continue;\n'),
        (_OLD_LOOP, _NEW_LOOP)]
V['pipe'] = (D10, PIPE)
V['pipe_4st'] = (D10, PIPE + [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 256, kMmaBK = 64, kMmaStages = 4;'), (M6A, 'static_assert(kMmaSmemBytes <= 227 * 1024')])
V['pipe_256x128'] = (D10, PIPE + [(M6, 'constexpr int kMmaBM = 256, kMmaBN = 128, kMmaBK = 64, kMmaStages = 3;'), (M6W, 'constexpr int kMmaWarpsM = 4, kMmaWarpsN = 2;')])

V['pipe_k0'] = (D10, PIPE + [('      if (next < k_tiles) load_stage(next, ns, ks);', '      if (next < k_tiles && ks == 0)\n#pragma unroll\n        for (int p = 0; p < kMmaKSteps; ++p) load_stage(next, ns, p);')])
V['pipe_256x128_k0'] = (D10, V['pipe_256x128'][1] + [('      if (next < k_tiles) load_stage(next, ns, ks);', '      if (next < k_tiles && ks == 0)\n#pragma unroll\n        for (int p = 0; p < kMmaKSteps; ++p) load_stage(next, ns, p);')])

_OLD_LOAD = open('variant-old_load.txt').read()
_NEW_LOAD = open('variant-new_load.txt').read()
PIPE2 = [(_OLD_LOAD, _NEW_LOAD), (_OLD_LOOP, _NEW_LOOP)]
V['pipe2'] = (D10, PIPE2)
V['pipe2_4st'] = (D10, PIPE2 + [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 256, kMmaBK = 64, kMmaStages = 4;'), (M6A, 'static_assert(kMmaSmemBytes <= 227 * 1024')])
V['pipe2_256x128'] = (D10, PIPE2 + [(M6, 'constexpr int kMmaBM = 256, kMmaBN = 128, kMmaBK = 64, kMmaStages = 3;'), (M6W, 'constexpr int kMmaWarpsM = 4, kMmaWarpsN = 2;')])

V['load2'] = (D10, [(_OLD_LOAD, _NEW_LOAD.replace('int part) {', 'int part = -1) {').replace(' != part) continue;', ' != part && part >= 0) continue;'))])
V['pipe2_k0'] = (D10, PIPE2 + [('      if (next < k_tiles) load_stage(next, ns, ks);', '      if (next < k_tiles && ks == 0)\n#pragma unroll\n        for (int p = 0; p < kMmaKSteps; ++p) load_stage(next, ns, p);')])

V['pipe2_128x128'] = (D10, PIPE2 + [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 128, kMmaBK = 64, kMmaStages = 3;'), (M6W, 'constexpr int kMmaWarpsM = 2, kMmaWarpsN = 2;'), (M6LB, '__global__ void __launch_bounds__(kMmaThreads, 2)')])
V['pipe2_128x128_4st'] = (D10, PIPE2 + [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 128, kMmaBK = 64, kMmaStages = 4;'), (M6W, 'constexpr int kMmaWarpsM = 2, kMmaWarpsN = 2;'), (M6LB, '__global__ void __launch_bounds__(kMmaThreads, 2)')])

_LS = '      if (next < k_tiles) load_stage(next, ns, ks);'
K0 = [(_LS, '      if (next < k_tiles && ks == 0)\n#pragma unroll\n        for (int p = 0; p < kMmaKSteps; ++p) load_stage(next, ns, p);')]
ST4 = [(M6, 'constexpr int kMmaBM = 128, kMmaBN = 256, kMmaBK = 64, kMmaStages = 4;'), (M6A, 'static_assert(kMmaSmemBytes <= 227 * 1024')]
T256 = [(M6, 'constexpr int kMmaBM = 256, kMmaBN = 128, kMmaBK = 64, kMmaStages = 3;'), (M6W, 'constexpr int kMmaWarpsM = 4, kMmaWarpsN = 2;')]
T256_4 = [(M6, 'constexpr int kMmaBM = 256, kMmaBN = 128, kMmaBK = 64, kMmaStages = 4;'), (M6W, 'constexpr int kMmaWarpsM = 4, kMmaWarpsN = 2;'), (M6A, 'static_assert(kMmaSmemBytes <= 227 * 1024')]
V['k0_4st'] = (D10, PIPE2 + K0 + ST4)
V['k0_256x128'] = (D10, PIPE2 + K0 + T256)
V['k0_256x128_4st'] = (D10, PIPE2 + K0 + T256_4)
V['k1'] = (D10, PIPE2 + [(_LS, '      if (next < k_tiles && ks == 1)\n#pragma unroll\n        for (int p = 0; p < kMmaKSteps; ++p) load_stage(next, ns, p);')])
V['khalf'] = (D10, PIPE2 + [(_LS, '      if (next < k_tiles && ks % 2 == 0) {\n        load_stage(next, ns, ks);\n        load_stage(next, ns, ks + 1);\n      }')])
V['kafter'] = (D10, PIPE2 + [(_LS, ''), ('      mma_step(f[ks % 2]);\n    }\n  }', '      mma_step(f[ks % 2]);\n      if (next < k_tiles && ks == 0)\n#pragma unroll\n        for (int p = 0; p < kMmaKSteps; ++p) load_stage(next, ns, p);\n    }\n  }')])
V['kafter_4st'] = (D10, V['kafter'][1] + ST4)

_BMID = open('variant-new_loop_bmid.txt').read()
def bmid(split): return [(_OLD_LOAD, _NEW_LOAD), (_OLD_LOOP, _BMID.replace('SPLIT', str(split)))]
G = lambda g: [('constexpr int kMmaGroup = 8; ', f'constexpr int kMmaGroup = {g}; ')]
V['bmid2'] = (D10, bmid(2))
V['bmid1'] = (D10, bmid(1))
V['bmid3'] = (D10, bmid(3))
V['bmid4'] = (D10, bmid(4))
V['k0_g4'] = (D10, PIPE2 + K0 + G(4))
V['k0_g16'] = (D10, PIPE2 + K0 + G(16))
V['bmid2_g16'] = (D10, bmid(2) + G(16))

_NEW_LOAD_ALL = _NEW_LOAD.replace(' != part) continue;', ' != part && part >= 0) continue;')
K0B = [(_LS, '      if (next < k_tiles && ks == 0) load_stage(next, ns, -1);')]
V['k0b'] = (D10, [(_OLD_LOAD, _NEW_LOAD_ALL), (_OLD_LOOP, _NEW_LOOP)] + K0B)
V['k0c'] = (D10, [(_OLD_LOAD, _NEW_LOAD_ALL.replace('    asm volatile("" : "+r"(t));  // recomputed at every call: no address lives across the loop\n', '')), (_OLD_LOOP, _NEW_LOOP)] + K0B)

FAST = [(_OLD_LOAD, open('variant-fast_load.txt').read()), (_OLD_LOOP, open('variant-fast_loop.txt').read()),
        ('  const std::int64_t k_tiles = (K + kMmaBK - 1) / kMmaBK;', '  const int k_tiles = static_cast<int>((K + kMmaBK - 1) / kMmaBK);')]
V['fast'] = (D10, FAST)
V['fast_4st'] = (D10, FAST + ST4)
V['fast_256x128'] = (D10, FAST + T256)
V['fast_g16'] = (D10, FAST + G(16))

FASTNP = [(_OLD_LOAD, open('variant-fast_load.txt').read()),
        ('  const std::int64_t k_tiles = (K + kMmaBK - 1) / kMmaBK;', '  const int k_tiles = static_cast<int>((K + kMmaBK - 1) / kMmaBK);'),
        ('  for (std::int64_t kt = 0; kt < k_tiles; ++kt) {\n    cp_async_wait<kMmaStages - 2>();', '  for (int kt = 0; kt < k_tiles; ++kt) {\n    cp_async_wait<kMmaStages - 2>();'),
        ('    const std::int64_t next = kt + kMmaStages - 1;\n    if (next < k_tiles) load_stage(next, static_cast<int>(next % kMmaStages));', '    const int next = kt + kMmaStages - 1;\n    if (next < k_tiles) load_stage(next, next % kMmaStages);')]
V['fastnp'] = (D10, FASTNP)
V['fast_g4'] = (D10, FAST + G(4))

FAST2 = [(_OLD_LOAD, open('variant-fast2_load.txt').read())] + FAST[1:]
V['fast2'] = (D10, FAST2)
V['fast2_g16'] = (D10, FAST2 + G(16))
D10OLD = ('d10', 'variant-kernel_old.cu', 'labs/d10_gemm/lab.h', 'shim_d10.inc')
V['old'] = (D10OLD, [])
V['new'] = (D10, [])
