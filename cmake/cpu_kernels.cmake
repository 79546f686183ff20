# Each SIMD path lives in its own files, compiled with its own target flags;
# the dispatcher picks one at run time, so the library runs on any x86-64.
file(GLOB FMLP_AVX2_SRC CONFIGURE_DEPENDS src/cpu/simd/*_avx2.c)
file(GLOB FMLP_AVX512_SRC CONFIGURE_DEPENDS src/cpu/simd/*_avx512.c)
file(GLOB FMLP_AVX512BF16_SRC CONFIGURE_DEPENDS src/cpu/simd/*_avx512bf16.c)
file(GLOB FMLP_AMX_SRC CONFIGURE_DEPENDS src/cpu/simd/*_amx.c)
set_source_files_properties(${FMLP_AVX2_SRC} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
set_source_files_properties(${FMLP_AVX512_SRC} PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mfma;-mf16c")
set_source_files_properties(${FMLP_AVX512BF16_SRC} PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mfma;-mf16c")
set_source_files_properties(${FMLP_AMX_SRC} PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mamx-tile;-mamx-bf16;-mfma;-mf16c")
target_sources(fmlp_objects PRIVATE ${FMLP_AVX2_SRC} ${FMLP_AVX512_SRC} ${FMLP_AVX512BF16_SRC} ${FMLP_AMX_SRC})
target_compile_options(fmlp_objects PRIVATE -O3)
