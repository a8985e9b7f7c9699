# CUDA toolkit detection. With VT_CUDA=AUTO the CUDA backend is built when nvcc exists (CI compiles it;
# tests that need a GPU skip themselves with a reason when none is present).
set(VT_HAS_CUDA OFF)

# Rejects architectures the kernels cannot be compiled for (below 80) and warns about those that fail today
# (80-89). A build folder configured before the
# architectures could be set holds nvcc's default (75, written by CMake with its own doc string): that one
# becomes 90.
function(vt_check_cuda_architectures)
  get_property(doc CACHE CMAKE_CUDA_ARCHITECTURES PROPERTY HELPSTRING)
  foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
    if(arch MATCHES "^([0-9]+)" AND CMAKE_MATCH_1 LESS 80)
      if(doc STREQUAL "CUDA architectures")
        message(STATUS "vitrain: CMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES} is nvcc's default from an "
                       "older configure of this folder; using 90")
        set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures to compile for" FORCE)
        return()
      endif()
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES}: the CUDA kernels need sm_80 or "
                          "newer (cp.async, ldmatrix, bf16 tensor-core MMA); e.g. -DCMAKE_CUDA_ARCHITECTURES=90")
    endif()
  endforeach()
endfunction()
if(NOT VT_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # GPU architectures to compile for: 90 (H100/H200) unless given, e.g. -DCMAKE_CUDA_ARCHITECTURES="80;90".
    # The kernels need sm_80 or newer (cp.async, ldmatrix, bf16 tensor-core MMA). Set before enable_language,
    # which would otherwise pick nvcc's default.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
      set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures to compile for")
    endif()
    enable_language(CUDA)
    vt_check_cuda_architectures()
    set(CMAKE_CUDA_STANDARD 17)
    find_package(CUDAToolkit REQUIRED)
    set(VT_HAS_CUDA ON)
  elseif(VT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "VT_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
if(VT_HAS_CUDA)
  message(STATUS "vitrain: CUDA backend ON, architectures ${CMAKE_CUDA_ARCHITECTURES}")
else()
  message(STATUS "vitrain: CUDA backend OFF")
endif()
