# The CUDA backend: a fat binary for Ampere (sm_80), Hopper (sm_90a) and PTX
# for newer GPUs. Only files under src/cuda/ (and the GPU benchmark's
# bench/cuda/limits.cu, below) see CUDA headers. The C files there build
# with the library's -Wall -Wextra -Werror; the .cu files get the same
# warnings from the host compiler and nvcc's own diagnostics as errors.
file(GLOB FMLP_CUDA_SRC CONFIGURE_DEPENDS src/cuda/*.cu src/cuda/*.c)

# NCCL, for tensor parallelism (src/cuda/tp_*.c): NCCL_ROOT (as a CMake
# or environment variable: e.g. the nvidia-nccl wheel's folder, whose lib/
# holds only libnccl.so.2), else the CUDA toolkit's or the system's.
# FMLP_NCCL=OFF leaves it out.
file(GLOB FMLP_TP_SRC CONFIGURE_DEPENDS src/cuda/tp_*.c)
list(FILTER FMLP_CUDA_SRC EXCLUDE REGEX "src/cuda/tp_[a-z_]+\\.c$")
if(NOT FMLP_NCCL STREQUAL "OFF")
  find_path(FMLP_NCCL_INCLUDE nccl.h HINTS ${NCCL_ROOT}/include $ENV{NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
  find_library(FMLP_NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${NCCL_ROOT}/lib $ENV{NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR})
  if(FMLP_NCCL_INCLUDE AND FMLP_NCCL_LIBRARY)
    set(FMLP_HAVE_NCCL ON)
    list(APPEND FMLP_CUDA_SRC ${FMLP_TP_SRC})
    target_include_directories(fmlp_objects PRIVATE ${FMLP_NCCL_INCLUDE})
    target_link_libraries(fmlp_objects PUBLIC ${FMLP_NCCL_LIBRARY})
    target_compile_definitions(fmlp_objects PUBLIC FMLP_HAVE_NCCL=1)
    message(STATUS "fmlp: NCCL ${FMLP_NCCL_LIBRARY} (tensor parallelism)")
  elseif(FMLP_NCCL STREQUAL "ON")
    message(FATAL_ERROR "FMLP_NCCL=ON but no nccl.h and libnccl were found; set NCCL_ROOT")
  endif()
endif()
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

# A standalone CUDA probe bench/cuda/<src>.cu as target <name>, built for
# the library's architectures with its warnings as errors, against <link>.
function(fmlp_cuda_probe name src opt link)
  if(EXISTS ${CMAKE_SOURCE_DIR}/bench/cuda/${src}.cu)
    add_executable(${name} ${CMAKE_SOURCE_DIR}/bench/cuda/${src}.cu)
    set_target_properties(${name} PROPERTIES CUDA_ARCHITECTURES OFF)
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include)
    target_compile_options(${name} PRIVATE ${FMLP_CUDA_GENCODE} -Xcompiler=-Wall,-Wextra,-Werror -Werror=all-warnings ${opt})
    target_link_libraries(${name} PRIVATE ${link})
  endif()
endfunction()

# What each CUDA runtime call a forward makes costs the host; needs only the runtime.
fmlp_cuda_probe(fmlp_launch_cost launch_cost -O3 CUDA::cudart_static)
# The small-row floors measured as a forward is timed: graph replays of
# empty, cooperative and weight-reading kernels.
fmlp_cuda_probe(fmlp_read_floor read_floor -O3 CUDA::cudart_static)
# The ways a hidden-slice MLP's partial outputs can cross SMs, next to
# fmlp's own one-kernel forward.
fmlp_cuda_probe(fmlp_hidden_slice hidden_slice -O3 fmlp)
# Every GEMM kernel and tile configuration against a double reference and
# cuBLASLt (device_run.sh's first stage), and the gemv access patterns
# compared when the row gemv was designed: built here so that each compiles
# in every CUDA build.
fmlp_cuda_probe(fmlp_kernel_check kernel_check -O3 fmlp)
fmlp_cuda_probe(fmlp_gemv_patterns gemv_patterns -O3 CUDA::cudart_static)
# One GEMM shape's tiles and cuBLASLt's algorithms timed in turns (the
# tables of bench/results/*gemm*).
fmlp_cuda_probe(fmlp_gemm_one gemm_one -O3 fmlp)
# The fused forward's two GEMMs against the same GEMMs cut by rows, the
# down GEMMs on a second stream (bench/cuda/row_split.cu).
fmlp_cuda_probe(fmlp_row_split row_split -O3 fmlp)
