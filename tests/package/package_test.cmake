# The install tree as an application sees it: installs the build into a scratch prefix, checks
# what is there (headers, libraries, package files, models without their bulky extras, the C
# library's exported symbols), then configures, builds and runs examples/select_gemm and
# examples/select_conv (C++, find_package(kselect)) and examples/select_gemm_c (C, find_package
# and pkg-config) against it.
# Without a GPU the examples select only. Run by CTest:
#   cmake -DBUILD_DIR=<build> -DSOURCE_DIR=<source> -DWORK_DIR=<scratch> -DGENERATOR=<generator>
#         -DC_COMPILER=<cc> -DCXX_COMPILER=<c++> [-DCOMPILER_LAUNCHER=<ccache>] -P package_test.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR C_COMPILER CXX_COMPILER)
  if(NOT ${var})
    message(FATAL_ERROR "package_test.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
string(TIMESTAMP started "%s")

# Runs a command; fails the test with its output when it fails. OUTPUT_VAR receives the output.
function(run_step name)
  cmake_parse_arguments(PARSE_ARGV 1 S "" "OUTPUT_VAR" "COMMAND")
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${S_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR seconds "${t1} - ${t0}")
  if(NOT rc EQUAL 0)
    list(JOIN S_COMMAND " " shown)
    message(FATAL_ERROR "${name} failed (${rc}): ${shown}\n${out}\n${err}")
  endif()
  message(STATUS "${name}: ok (${seconds} s)")
  if(S_OUTPUT_VAR)
    set(${S_OUTPUT_VAR} "${out}" PARENT_SCOPE)
  endif()
endfunction()

function(expect_contains name text needle)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: expected '${needle}' in its output:\n${text}")
  endif()
endfunction()

# ---------------------------------------------------------------------------------- install
run_step("cmake --install" COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(file include/kselect/selector.h include/kselect/c_api.h include/kselect/kernel_config.h
             include/kselect/providers/cublaslt/cublaslt_config.h
             include/kselect/providers/tile/tile_config.h lib/libkselect_base.a
             lib/libkselect_runtime.a lib/libkselect_c.so lib/cmake/kselect/kselectConfig.cmake
             lib/cmake/kselect/kselectConfigVersion.cmake lib/pkgconfig/kselect.pc bin/kselect
             share/kselect/models/h200_cublaslt_default/feature_spec.json
             share/kselect/rules/cublaslt/default.json)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install tree lacks ${file}")
  endif()
endforeach()
# ---------------------------------------------------------------------------- installed data
# The installed CLI reads its own data (share/kselect/), not the source tree it was built from:
# the installed H200 profile is changed so its clock shows in `log summarize`'s output, and an
# unknown rule set is looked for under the install's rules/ (issue 44).
set(installed_profile ${prefix}/share/kselect/hardware/nvidia-h200.json)
if(NOT EXISTS ${installed_profile})
  message(FATAL_ERROR "the install tree lacks share/kselect/hardware/nvidia-h200.json")
endif()
file(READ ${installed_profile} profile_text)
string(REPLACE "\"sm_clock_mhz\": 1980" "\"sm_clock_mhz\": 1755" profile_text "${profile_text}")
file(WRITE ${installed_profile} "${profile_text}")
set(clean_env ${CMAKE_COMMAND} -E env --unset=KSELECT_RULES_DIR --unset=KSELECT_DATA_DIR)
run_step("installed kselect log summarize (no --hw)"
         COMMAND ${clean_env} ${prefix}/bin/kselect log summarize
                 ${SOURCE_DIR}/tests/fixtures/gemm_logs/plain.csv
         OUTPUT_VAR summary)
expect_contains("installed kselect log summarize" "${summary}" "1755 MHz")
execute_process(COMMAND ${clean_env} ${prefix}/bin/kselect tile list --rules no_such_set
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_contains("installed kselect tile list" "${err}"
                "${prefix}/share/kselect/rules/tile/no_such_set.json")
run_step("installed kselect tile list --rules tiny"
         COMMAND ${clean_env} ${prefix}/bin/kselect tile list --rules tiny OUTPUT_VAR listed)
expect_contains("installed kselect tile list" "${listed}" "pipeline=small_m")

file(GLOB_RECURSE extras ${prefix}/share/kselect/models/*oof_predictions*
     ${prefix}/share/kselect/models/*.html)
if(extras)
  message(FATAL_ERROR "installed models carry files only people read: ${extras}")
endif()

# libkselect_c.so exports the C API and nothing else (no C++ symbol of kselect, libstdc++
# templates, nlohmann-json or cudart).
find_program(NM nm REQUIRED)
run_step("nm -D libkselect_c.so" COMMAND ${NM} -D --defined-only ${prefix}/lib/libkselect_c.so
         OUTPUT_VAR symbols)
string(REGEX MATCHALL "[^\n]+" lines "${symbols}")
set(exported 0)
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^.* " "" symbol "${line}")
  if(symbol MATCHES "^kselect_")
    math(EXPR exported "${exported} + 1")
  elseif(NOT line MATCHES " A ")  # version nodes
    message(FATAL_ERROR "libkselect_c.so exports '${symbol}' (only kselect_* should be)")
  endif()
endforeach()
if(exported LESS 20)
  message(FATAL_ERROR "libkselect_c.so exports only ${exported} kselect_* symbols:\n${symbols}")
endif()
message(STATUS "libkselect_c.so exports ${exported} symbols, all kselect_*")
# Like every kselect binary it must start on a host without a driver: libcuda is never linked
# (the driver API is resolved at run time), even though the toolkit's targets offer its stub.
find_program(READELF readelf REQUIRED)
run_step("readelf -d libkselect_c.so" COMMAND ${READELF} -d ${prefix}/lib/libkselect_c.so
         OUTPUT_VAR dynamic)
if(dynamic MATCHES "libcuda\\.so")
  message(FATAL_ERROR "libkselect_c.so needs libcuda:\n${dynamic}")
endif()
# An empty RUNPATH entry would search the current directory (the Python module ships this file).
if(dynamic MATCHES "R(UN)?PATH[^\n]*(\\[:|::|:\\])")
  message(FATAL_ERROR "libkselect_c.so's RUNPATH has an empty entry:\n${dynamic}")
endif()

# Every installed header compiles from the prefix alone (one translation unit).
file(GLOB headers RELATIVE ${prefix}/include ${prefix}/include/kselect/*.h)
set(all_headers "")
foreach(header IN LISTS headers)
  string(APPEND all_headers "#include \"${header}\"\n")
endforeach()
string(APPEND all_headers "int main() { return 0; }\n")
file(WRITE ${WORK_DIR}/all_headers.cpp "${all_headers}")
run_step("installed headers compile" COMMAND ${CXX_COMPILER} -std=c++20 -fsyntax-only
         -I${prefix}/include ${WORK_DIR}/all_headers.cpp)

# ---------------------------------------------------------------------------------- examples
set(model ${prefix}/share/kselect/models/h200_cublaslt_default)
set(common_args -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
if(COMPILER_LAUNCHER)
  list(APPEND common_args -DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER}
       -DCMAKE_C_COMPILER_LAUNCHER=${COMPILER_LAUNCHER})
endif()

run_step("configure examples/select_gemm"
         COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/select_gemm -B ${WORK_DIR}/select_gemm
                 ${common_args} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
run_step("build examples/select_gemm" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/select_gemm)
run_step("run select_gemm" COMMAND ${WORK_DIR}/select_gemm/select_gemm ${model}
         OUTPUT_VAR out)
message("${out}")
expect_contains("select_gemm" "${out}" "decided by: ")
expect_contains("select_gemm" "${out}" "prefill, MLP gate/up projection, 2048 tokens")
expect_contains("select_gemm" "${out}" "PASS")

run_step("configure examples/select_conv"
         COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/select_conv -B ${WORK_DIR}/select_conv
                 ${common_args} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
run_step("build examples/select_conv" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/select_conv)
set(conv_models)
foreach(direction fwd bwd_data bwd_weight)
  list(APPEND conv_models ${prefix}/share/kselect/models/h200_cudnn_conv_${direction})
endforeach()
run_step("run select_conv" COMMAND ${WORK_DIR}/select_conv/select_conv ${conv_models}
         OUTPUT_VAR out)
message("${out}")
expect_contains("select_conv" "${out}" "== bwd_weight model")
expect_contains("select_conv" "${out}" "MobileNetV2 depthwise 3x3, batch 4")
expect_contains("select_conv" "${out}" "decided by: model")
expect_contains("select_conv" "${out}" "PASS")

run_step("configure examples/select_gemm_c"
         COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/select_gemm_c
                 -B ${WORK_DIR}/select_gemm_c ${common_args} -DCMAKE_C_COMPILER=${C_COMPILER})
run_step("build examples/select_gemm_c" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/select_gemm_c)
run_step("run select_gemm_c" COMMAND ${WORK_DIR}/select_gemm_c/select_gemm_c ${model}
         OUTPUT_VAR out)
message("${out}")
expect_contains("select_gemm_c" "${out}" "decided by: ")
expect_contains("select_gemm_c" "${out}" "unknown data type 'bf17'")
expect_contains("select_gemm_c" "${out}" "PASS")

# The C example once more, built by hand from pkg-config's flags.
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  run_step("pkg-config kselect" COMMAND ${PKG_CONFIG} --cflags --libs kselect OUTPUT_VAR flags)
  run_step("pkg-config libdir" COMMAND ${PKG_CONFIG} --variable=libdir kselect OUTPUT_VAR libdir)
  string(STRIP "${flags}" flags)
  string(STRIP "${libdir}" libdir)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run_step("cc with pkg-config flags"
           COMMAND ${C_COMPILER} -std=c99 ${SOURCE_DIR}/examples/select_gemm_c/main.c ${flags} -lm
                   -Wl,-rpath,${libdir} -o ${WORK_DIR}/select_gemm_c_pkgconfig)
  run_step("run select_gemm_c (pkg-config)"
           COMMAND ${WORK_DIR}/select_gemm_c_pkgconfig ${model} OUTPUT_VAR out)
  expect_contains("select_gemm_c (pkg-config)" "${out}" "PASS")
else()
  message(STATUS "pkg-config not found: the pkg-config build was skipped")
endif()

string(TIMESTAMP finished "%s")
math(EXPR seconds "${finished} - ${started}")
message(STATUS "package test passed in ${seconds} s")
