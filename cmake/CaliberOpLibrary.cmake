# caliber_add_op_library(<name> SOURCES <file>... [LINK <target or library>...])
#
# Builds an op library: a loadable module (lib<name>.so) that `caliber run --ops-lib` loads. Its
# sources use the public API (caliber::caliber: include/caliber, C++20) and register their ops with
# CALIBER_REGISTER_OP; the API's symbols resolve from the caliber binary at load time, so nothing
# of caliber is linked in. CUDA sources (.cu) are allowed once the project enables CUDA
# (project(... LANGUAGES CXX CUDA) or enable_language(CUDA)); link what they call with LINK
# (CUDA::cudart, CUDA::cublas, ...). docs/writing-ops.md walks through one.

# The public headers are C++20, in CUDA sources too. CMake 3.25 does not know nvcc 13's C++20
# flag; say it where CMake has none.
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION -std=c++20)
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION -std=c++20)
endif()

function(caliber_add_op_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "caliber_add_op_library(${name}): unknown arguments '${ARG_UNPARSED_ARGUMENTS}'; "
                        "allowed: SOURCES <file>..., LINK <library>...")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "caliber_add_op_library(${name}): SOURCES names no file")
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  foreach(src ${ARG_SOURCES})
    if(src MATCHES "\\.cu$" AND NOT "CUDA" IN_LIST languages)
      message(FATAL_ERROR "caliber_add_op_library(${name}): '${src}' is CUDA but the project has not "
                          "enabled CUDA; add CUDA to project(... LANGUAGES) or call enable_language(CUDA)")
    endif()
  endforeach()
  add_library(${name} MODULE ${ARG_SOURCES})
  if("CUDA" IN_LIST languages)
    set_target_properties(${name} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON)
  endif()
  target_link_libraries(${name} PRIVATE caliber::caliber ${ARG_LINK})
  # A benchmark of code built without optimization measures the flags, not the kernel (the docs'
  # plain loop ran 10x slower that way): with no build type given, build as Release would.
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(NOT multi_config AND NOT CMAKE_BUILD_TYPE)
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX,CUDA>:-O2>)
  endif()
  # Hidden symbols: two op libraries loaded into one process never stand in for each other.
  set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden
                                           VISIBILITY_INLINES_HIDDEN ON)
endfunction()
