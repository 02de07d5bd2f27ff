# SPDX-License-Identifier: Apache-2.0
# cmake -DTARGET=name -DTARGET_DIR=dir -DBUILD_DIR=dir -DBINARY=file -DEXPECT=absent|present
#       -P check_link_interface.cmake
# Finds TARGET's link line in the generated build files (Ninja: build.ninja,
# Makefiles: CMakeFiles/<target>.dir/link.txt) and the shared libraries the
# built BINARY loads (ldd), and checks that PLplot is absent (or present, the
# control case that shows the check can see it).
foreach(v TARGET TARGET_DIR BUILD_DIR BINARY EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_link_interface: -D${v}=... is required")
  endif()
endforeach()

set(link_line "")
if(EXISTS "${TARGET_DIR}/CMakeFiles/${TARGET}.dir/link.txt")
  file(READ "${TARGET_DIR}/CMakeFiles/${TARGET}.dir/link.txt" link_line)
elseif(EXISTS "${BUILD_DIR}/build.ninja")
  file(STRINGS "${BUILD_DIR}/build.ninja" lines)
  set(in_block FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "^build .*_EXECUTABLE_LINKER__${TARGET}_")
      set(in_block TRUE)
      string(APPEND link_line "${line}\n")
    elseif(in_block)
      if(line MATCHES "^  ")
        string(APPEND link_line "${line}\n")
      else()
        set(in_block FALSE)
      endif()
    endif()
  endforeach()
else()
  message(FATAL_ERROR "no build.ninja or link.txt under ${BUILD_DIR}: unsupported generator")
endif()
if(link_line STREQUAL "" OR NOT link_line MATCHES "cdc")
  message(FATAL_ERROR "link line of ${TARGET} not found (or without the cdc library):\n${link_line}")
endif()

execute_process(COMMAND ldd "${BINARY}" OUTPUT_VARIABLE ldd_out RESULT_VARIABLE ldd_rc)
if(NOT ldd_rc EQUAL 0)
  message(FATAL_ERROR "ldd ${BINARY} failed (${ldd_rc})")
endif()

string(TOLOWER "${link_line}" link_lower)
string(TOLOWER "${ldd_out}" ldd_lower)
set(in_link FALSE)
set(in_ldd FALSE)
if(link_lower MATCHES "plplot")
  set(in_link TRUE)
endif()
if(ldd_lower MATCHES "plplot")
  set(in_ldd TRUE)
endif()

if(EXPECT STREQUAL "absent")
  if(in_link OR in_ldd)
    message(FATAL_ERROR "${TARGET} (linked with cdc::cdc only) depends on PLplot: the library must not.\n"
                        "link line:\n${link_line}\nldd:\n${ldd_out}")
  endif()
elseif(EXPECT STREQUAL "present")
  if(NOT in_link OR NOT in_ldd)
    message(FATAL_ERROR "${TARGET} should link PLplot (control case) but the check does not see it.\n"
                        "link line:\n${link_line}\nldd:\n${ldd_out}")
  endif()
else()
  message(FATAL_ERROR "EXPECT must be absent or present")
endif()
message(STATUS "${TARGET}: PLplot ${EXPECT}, as expected")
