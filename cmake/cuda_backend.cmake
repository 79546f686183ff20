# The CUDA backend: a fat binary for Ampere (sm_80), Hopper (sm_90a) and PTX
# for newer GPUs. Only files under src/cuda/ (and the GPU benchmark's
# bench/cuda/limits.cu, below) see CUDA headers. The C files there build
# with the library's -Wall -Wextra -Werror; the .cu files get the same
# warnings from the host compiler and nvcc's own diagnostics as errors.
file(GLOB FMLP_CUDA_SRC CONFIGURE_DEPENDS src/cuda/*.cu src/cuda/*.c)
set_target_properties(fmlp_objects PROPERTIES CUDA_ARCHITECTURES OFF)
set(CMAKE_CUDA_STANDARD 17)
target_sources(fmlp_objects PRIVATE ${FMLP_CUDA_SRC})
set_source_files_properties(${FMLP_CUDA_SRC} PROPERTIES INCLUDE_DIRECTORIES "${CMAKE_SOURCE_DIR}/src")
set(FMLP_CUDA_GENCODE "-gencode=arch=compute_80,code=sm_80;-gencode=arch=compute_90a,code=sm_90a;-gencode=arch=compute_90,code=compute_90"
  CACHE STRING "nvcc -gencode flags for the CUDA backend (a device-only build may keep just sm_90a)")
target_compile_options(fmlp_objects PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${FMLP_CUDA_GENCODE}
  -Xcompiler=-Wall,-Wextra,-Werror -Werror=all-warnings -O3>)
target_compile_definitions(fmlp_objects PUBLIC FMLP_HAVE_CUDA=1)
target_link_libraries(fmlp_objects PUBLIC CUDA::cudart_static CUDA::cublasLt CUDA::cupti)
message(STATUS "fmlp: CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}; kernels for sm_80, sm_90a, PTX compute_90")

# The GPU benchmark driver (bench/cuda/device_full.sh runs it beside
# PyTorch). Its limits.cu times empty graphs and a plain weight read, so it
# is the one file outside src/cuda/ that this build compiles with nvcc.
if(EXISTS ${CMAKE_SOURCE_DIR}/bench/cuda/bench_cuda.c)
  add_executable(fmlp_bench_cuda ${CMAKE_SOURCE_DIR}/bench/cuda/bench_cuda.c ${CMAKE_SOURCE_DIR}/bench/cuda/limits.cu)
  set_target_properties(fmlp_bench_cuda PROPERTIES CUDA_ARCHITECTURES OFF)
  target_include_directories(fmlp_bench_cuda PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(fmlp_bench_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${FMLP_CUDA_GENCODE}
    -Xcompiler=-Wall,-Wextra,-Werror -Werror=all-warnings -O3>)
  target_link_libraries(fmlp_bench_cuda PRIVATE fmlp)
endif()
