# Third-party libraries, all from Debian packages (scripts/setup.sh installs them). Nothing is downloaded.
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PNG REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
find_package(nlohmann_json REQUIRED)
# The figures (src/figures): cairo draws, pango lays out text with the system's fonts (fontconfig).
pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET cairo cairo-png cairo-svg cairo-pdf)
pkg_check_modules(PANGOCAIRO REQUIRED IMPORTED_TARGET pangocairo)

# OpenBLAS, the OpenMP build: it shares our OpenMP thread pool. The pthread build spins its own threads
# against ours and, measured on 2 cores, made a training step 5x slower. Linked by full path (with an RPATH),
# so Debian's libblas alternative does not matter. Debian puts it in the multiarch folders
# (x86_64-linux-gnu, aarch64-linux-gnu, ...), which CMake names CMAKE_LIBRARY_ARCHITECTURE.
if(NOT CMAKE_LIBRARY_ARCHITECTURE)
  message(FATAL_ERROR "No multiarch triplet (CMAKE_LIBRARY_ARCHITECTURE) to find Debian's OpenBLAS (OpenMP) with")
endif()
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
          NO_DEFAULT_PATH REQUIRED)
find_library(OPENBLAS_LIB openblas PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
             NO_DEFAULT_PATH REQUIRED)
add_library(vt_openblas INTERFACE)
target_include_directories(vt_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(vt_openblas INTERFACE ${OPENBLAS_LIB})

# OpenCV core + imgproc only. Debian's OpenCVConfig.cmake lives in libopencv-dev, which pulls imgcodecs and
# ~220 MB of codecs we do not want, so the two libraries are found directly.
find_path(OPENCV_INCLUDE_DIR opencv2/core.hpp PATHS /usr/include/opencv4 REQUIRED)
find_library(OPENCV_CORE_LIB opencv_core REQUIRED)
find_library(OPENCV_IMGPROC_LIB opencv_imgproc REQUIRED)
add_library(vt_opencv INTERFACE)
target_include_directories(vt_opencv SYSTEM INTERFACE ${OPENCV_INCLUDE_DIR})
target_link_libraries(vt_opencv INTERFACE ${OPENCV_IMGPROC_LIB} ${OPENCV_CORE_LIB})

if(VT_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
