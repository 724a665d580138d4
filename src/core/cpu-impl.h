// Private to core/cpu.cc and core/cpu_target.cc: the x86 features lockstep knows, one row each.
#pragma once

// X(name, macro, leaf, subleaf, register, bit, state): `name` as the flags line of /proc/cpuinfo spells it, the macro
// GCC defines when compiling for the feature, where CPUID reports it, and the XCR0 bits the OS must have enabled for
// its registers (kYmm: AVX's, kZmm: AVX-512's, kAmx: the tiles'; 0: none). Rows cover x86-64-v2, x86-64-v3 and what
// -march=native adds on current CPUs (AVX-512, AMX): every feature a build of lockstep may be compiled for.
#define LOCKSTEP_CPU_FEATURES(X)                                 \
  X(pni, __SSE3__, 1, 0, ecx, 0, 0)                              \
  X(pclmulqdq, __PCLMUL__, 1, 0, ecx, 1, 0)                      \
  X(ssse3, __SSSE3__, 1, 0, ecx, 9, 0)                           \
  X(fma, __FMA__, 1, 0, ecx, 12, kYmm)                           \
  X(cx16, __GCC_HAVE_SYNC_COMPARE_AND_SWAP_16, 1, 0, ecx, 13, 0) \
  X(sse4_1, __SSE4_1__, 1, 0, ecx, 19, 0)                        \
  X(sse4_2, __SSE4_2__, 1, 0, ecx, 20, 0)                        \
  X(movbe, __MOVBE__, 1, 0, ecx, 22, 0)                          \
  X(popcnt, __POPCNT__, 1, 0, ecx, 23, 0)                        \
  X(aes, __AES__, 1, 0, ecx, 25, 0)                              \
  X(xsave, __XSAVE__, 1, 0, ecx, 26, 0)                          \
  X(avx, __AVX__, 1, 0, ecx, 28, kYmm)                           \
  X(f16c, __F16C__, 1, 0, ecx, 29, kYmm)                         \
  X(lahf_lm, __LAHF_SAHF__, 0x80000001, 0, ecx, 0, 0)            \
  X(abm, __LZCNT__, 0x80000001, 0, ecx, 5, 0)                    \
  X(bmi1, __BMI__, 7, 0, ebx, 3, 0)                              \
  X(avx2, __AVX2__, 7, 0, ebx, 5, kYmm)                          \
  X(bmi2, __BMI2__, 7, 0, ebx, 8, 0)                             \
  X(avx512f, __AVX512F__, 7, 0, ebx, 16, kZmm)                   \
  X(avx512dq, __AVX512DQ__, 7, 0, ebx, 17, kZmm)                 \
  X(adx, __ADX__, 7, 0, ebx, 19, 0)                              \
  X(avx512ifma, __AVX512IFMA__, 7, 0, ebx, 21, kZmm)             \
  X(avx512cd, __AVX512CD__, 7, 0, ebx, 28, kZmm)                 \
  X(sha_ni, __SHA__, 7, 0, ebx, 29, 0)                           \
  X(avx512bw, __AVX512BW__, 7, 0, ebx, 30, kZmm)                 \
  X(avx512vl, __AVX512VL__, 7, 0, ebx, 31, kZmm)                 \
  X(avx512vbmi, __AVX512VBMI__, 7, 0, ecx, 1, kZmm)              \
  X(avx512_vbmi2, __AVX512VBMI2__, 7, 0, ecx, 6, kZmm)           \
  X(gfni, __GFNI__, 7, 0, ecx, 8, 0)                             \
  X(vaes, __VAES__, 7, 0, ecx, 9, kYmm)                          \
  X(vpclmulqdq, __VPCLMULQDQ__, 7, 0, ecx, 10, kYmm)             \
  X(avx512_vnni, __AVX512VNNI__, 7, 0, ecx, 11, kZmm)            \
  X(avx512_bitalg, __AVX512BITALG__, 7, 0, ecx, 12, kZmm)        \
  X(avx512_vpopcntdq, __AVX512VPOPCNTDQ__, 7, 0, ecx, 14, kZmm)  \
  X(amx_bf16, __AMX_BF16__, 7, 0, edx, 22, kAmx)                 \
  X(avx512_fp16, __AVX512FP16__, 7, 0, edx, 23, kZmm)            \
  X(amx_tile, __AMX_TILE__, 7, 0, edx, 24, kAmx)                 \
  X(amx_int8, __AMX_INT8__, 7, 0, edx, 25, kAmx)                 \
  X(avx_vnni, __AVXVNNI__, 7, 1, eax, 4, kYmm)                   \
  X(avx512_bf16, __AVX512BF16__, 7, 1, eax, 5, kZmm)

// Whether lockstep's code is compiled for row i's feature: lockstep_cpu_compiled_for[i], defined in core/cpu_target.cc,
// which is compiled with the build's -march like the rest and holds data only (reading it runs no code).
extern "C" const bool lockstep_cpu_compiled_for[];
