# Warning flags and release optimisation shared by every target.
add_library(vt_options INTERFACE)
target_compile_options(vt_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-sign-compare>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release>>:-O3 -march=x86-64-v2 -mtune=generic>)
if(VT_WERROR)
  target_compile_options(vt_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
