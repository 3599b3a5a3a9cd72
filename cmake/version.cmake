# Version and git commit, baked into tephra_core (tephra version prints them).
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                OUTPUT_VARIABLE TEPHRA_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT TEPHRA_GIT_COMMIT)
  set(TEPHRA_GIT_COMMIT "unknown")
endif()
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                OUTPUT_VARIABLE _dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(_dirty)
  set(TEPHRA_GIT_COMMIT "${TEPHRA_GIT_COMMIT}-dirty")
endif()
configure_file(${CMAKE_SOURCE_DIR}/core/src/version.cc.in ${CMAKE_BINARY_DIR}/generated/version.cc @ONLY)
