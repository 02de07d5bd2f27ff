# SPDX-License-Identifier: Apache-2.0
# Runs at build time (cmake -P): the definitions of every command from the
# built cdc (which asks its helpers for theirs), then the man pages and the
# completions from them.
#   cmake -DTOOL=... -DDOCGEN=... -DOUT=... -P generate.cmake
execute_process(COMMAND "${TOOL}" --cli-definitions OUTPUT_FILE "${OUT}/definitions.json"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TOOL} --cli-definitions failed (${rc})")
endif()
file(REMOVE_RECURSE "${OUT}/man1" "${OUT}/completions")
execute_process(COMMAND "${DOCGEN}" "${OUT}/definitions.json" "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${DOCGEN} failed (${rc})")
endif()
file(TOUCH "${OUT}/stamp")
