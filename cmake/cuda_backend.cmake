# The CUDA backend: a fat binary for Ampere, Hopper (sm_90a for wgmma/TMA)
# and PTX for newer GPUs. Only files under src/cuda/ see CUDA headers.
file(GLOB FMLP_CUDA_SRC CONFIGURE_DEPENDS src/cuda/*.cu src/cuda/*.c)
set(CMAKE_CUDA_ARCHITECTURES OFF)
target_sources(fmlp PRIVATE ${FMLP_CUDA_SRC})
set_source_files_properties(${FMLP_CUDA_SRC} PROPERTIES INCLUDE_DIRECTORIES "${CMAKE_SOURCE_DIR}/src")
target_compile_options(fmlp PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:
  -gencode=arch=compute_80,code=sm_80
  -gencode=arch=compute_90a,code=sm_90a
  -gencode=arch=compute_90,code=compute_90
  -Xcompiler=-Wall,-Wextra -O3>)
target_compile_definitions(fmlp PUBLIC FMLP_HAVE_CUDA=1)
target_link_libraries(fmlp PUBLIC CUDA::cudart_static CUDA::cublasLt CUDA::cupti)
