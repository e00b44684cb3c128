# Sourced by scripts/setup.sh (llama-cpp-python) and scripts/llama_server.sh (llama-server): the CMake flags
# of every llama.cpp build here, in FLAGS, and the CPU variant they target, in VARIANT.
# Without -march=native: a native build here enables AMX, which segfaults on these virtual machines. It uses
# AVX-512 with VNNI where the CPU has it (prompt evaluation about 1.45x faster than AVX2 here, benchmarks in
# the README), AVX2 otherwise.
FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF"
VARIANT=avx2
# AVX-VNNI (the 256-bit form) is Intel's: AMD EPYC machines here have AVX-512 with VNNI and BF16 but not
# it, and still get the AVX-512 build, with AVX-VNNI only where the CPU lists it.
CPU_FLAGS=$(grep -m1 '^flags' /proc/cpuinfo)
AVX512='avx512f\|avx512bw\|avx512vl\|avx512vbmi\|avx512_vnni\|avx512_bf16'
if [ "$(echo "$CPU_FLAGS" | grep -ow "$AVX512" | sort -u | wc -l)" = 6 ]; then
  FLAGS="$FLAGS -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON"
  VARIANT=avx512
  if echo "$CPU_FLAGS" | grep -qw avx_vnni; then
    FLAGS="$FLAGS -DGGML_AVX_VNNI=ON"
    VARIANT=avx512-avxvnni
  fi
fi
# Tried and not kept (2026-11-28, AVX2 2-core AMD EPYC): -DGGML_CPU_REPACK=OFF, without ggml's repacked
# weight layout (its q4_K_8x8 kernels). Alone it evaluated 1,800-token prompts 16-35% faster (39.5-46.5
# against 33.0-37.9 tokens/s, five alternating pairs) and loaded the model in 0.7 s against 1.8 s, but the
# full suite was no faster (1,241 s; 1,070-1,257 s before), and a reply generated after a reused prompt
# prefix no longer matched the one generated from scratch (tests/test_streaming_local.py failed).
