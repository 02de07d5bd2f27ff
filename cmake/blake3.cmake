# SPDX-License-Identifier: Apache-2.0
# The official BLAKE3 C implementation, compiled from source with its x86-64
# SIMD assembly (Debian ships the sources in librust-blake3-dev). The objects
# are folded into libcdc so that users need nothing but libcdc.
if(NOT CDC_BLAKE3_DIR)
  file(GLOB _blake3_dirs LIST_DIRECTORIES true /usr/share/cargo/registry/blake3-*/c)
  list(SORT _blake3_dirs COMPARE NATURAL ORDER DESCENDING)
  list(GET _blake3_dirs 0 _blake3_first)
  set(CDC_BLAKE3_DIR "${_blake3_first}" CACHE PATH "" FORCE)
endif()
if(NOT EXISTS "${CDC_BLAKE3_DIR}/blake3.h")
  message(FATAL_ERROR "BLAKE3 C sources not found (looked in '${CDC_BLAKE3_DIR}'). "
                      "Run scripts/install-deps.sh (Debian package librust-blake3-dev) or set CDC_BLAKE3_DIR.")
endif()
message(STATUS "BLAKE3 C sources: ${CDC_BLAKE3_DIR}")

set(_b3 "${CDC_BLAKE3_DIR}")
set(_b3_sources ${_b3}/blake3.c ${_b3}/blake3_dispatch.c ${_b3}/blake3_portable.c)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  list(APPEND _b3_sources
       ${_b3}/blake3_sse2_x86-64_unix.S ${_b3}/blake3_sse41_x86-64_unix.S
       ${_b3}/blake3_avx2_x86-64_unix.S ${_b3}/blake3_avx512_x86-64_unix.S)
else()
  add_compile_definitions(BLAKE3_NO_SSE2 BLAKE3_NO_SSE41 BLAKE3_NO_AVX2 BLAKE3_NO_AVX512)
endif()
add_library(cdc_blake3 OBJECT ${_b3_sources})
target_include_directories(cdc_blake3 PUBLIC $<BUILD_INTERFACE:${_b3}>)
# The assembly needs a non-executable stack note; sanitizers do not instrument it.
set_source_files_properties(${_b3}/blake3_sse2_x86-64_unix.S ${_b3}/blake3_sse41_x86-64_unix.S
  ${_b3}/blake3_avx2_x86-64_unix.S ${_b3}/blake3_avx512_x86-64_unix.S
  PROPERTIES COMPILE_OPTIONS "-Wa,--noexecstack")
