# libfmlp.so: the same objects as libfmlp.a as a shared object, for programs
# that load the library at run time (the Python package does, through
# ctypes). Only the public API (fmlp_*) is exported; everything else,
# including a statically linked CUDA runtime, binds inside the library, so a
# process that has its own CUDA runtime loaded (PyTorch) keeps the two apart.
if(FMLP_FUZZ)
  return()
endif()
add_library(fmlp_shared SHARED)
target_link_libraries(fmlp_shared PRIVATE fmlp_objects)
set_target_properties(fmlp_shared PROPERTIES OUTPUT_NAME fmlp LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/fmlp.map)
target_link_options(fmlp_shared PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/fmlp.map -Wl,--no-undefined)
