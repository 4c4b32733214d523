# Writes OUT from the template IN with @PROJECT_VERSION@ and @KSELECT_GIT_REVISION@ (the short
# HEAD of SOURCE_DIR's checkout, "unknown" outside one). Run at configure time and again at every
# build (target kselect_git_revision), so an incremental build records the commit it was built
# from, not the one it was configured at; configure_file leaves OUT untouched when nothing
# changed, so an unchanged revision recompiles nothing.
execute_process(
  COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE KSELECT_GIT_REVISION
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT KSELECT_GIT_REVISION)
  set(KSELECT_GIT_REVISION "unknown")
endif()
configure_file(${IN} ${OUT} @ONLY)
