# Warning flags and release optimisation shared by every target.
# x86-64-v2 (SSE4.2, POPCNT: any x86 server since 2009) on x86; other processors (aarch64) get the compiler's default.
set(VT_TARGET_FLAGS "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(VT_TARGET_FLAGS -march=x86-64-v2 -mtune=generic)
endif()
add_library(vt_options INTERFACE)
target_compile_options(vt_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-sign-compare>
  "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release>>:-O3;${VT_TARGET_FLAGS}>")
if(VT_WERROR)
  target_compile_options(vt_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
