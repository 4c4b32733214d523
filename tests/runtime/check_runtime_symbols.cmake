# Fails when a runtime file (the kselect_runtime archive, a program linked with it alone) defines
# or references offline code: Arrow, Parquet or LightGBM symbols, or kselect's bench, dataset I/O,
# training and evaluation entry points. Run by CTest:
#   cmake -DNM=<nm> "-DFILES=<file>;<file>" -P check_runtime_symbols.cmake
set(KSELECT_OFFLINE_SYMBOLS
    "LGBM_" "LightGBM::" "arrow::" "parquet::" "kselect::RunBench(" "kselect::ReadDataset("
    "kselect::WriteDataset(" "kselect::TrainModel" "kselect::BuildCandidateSet("
    "kselect::EvaluateScores(")
if(NOT NM OR NOT FILES)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DFILES=<file>[;<file>...] -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
set(found "")
foreach(file IN LISTS FILES)
  execute_process(COMMAND ${NM} -C ${file} OUTPUT_VARIABLE symbols ERROR_VARIABLE errors
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${NM} -C ${file} failed (${result}): ${errors}")
  endif()
  string(LENGTH "${symbols}" length)
  if(length LESS 1000)
    message(FATAL_ERROR "${NM} -C ${file} listed almost nothing: is it the right file?")
  endif()
  foreach(pattern IN LISTS KSELECT_OFFLINE_SYMBOLS)
    string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" escaped "${pattern}")
    string(REGEX MATCHALL "[^\n]*${escaped}[^\n]*" hits "${symbols}")
    list(LENGTH hits count)
    if(count GREATER 0)
      list(SUBLIST hits 0 3 first)
      list(JOIN first "\n    " first)
      string(APPEND found "\n  ${file}: ${count} symbols with '${pattern}', such as\n    ${first}")
    endif()
  endforeach()
  message(STATUS "${file}: checked ${length} bytes of nm output")
endforeach()
if(found)
  message(FATAL_ERROR "offline symbols in the runtime:${found}")
endif()
