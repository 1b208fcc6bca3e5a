# course_add_lab(): the one call that declares a day's lab.
#
#   course_add_lab(d02_coalescing
#     [PROGRAMS device_query.cu ...]   # small programs built against both variants
#     [CUDA_FLAGS ...]                 # extra nvcc flags for kernel.cu (both variants)
#     [BASELINE_SOURCES cub_baseline.cu ...]  # vendor baselines (CUB, cuBLAS) the benchmark
#                                      # times too: their own library, benchmarks only
#     [BASELINE_LIBRARIES CUDA::cublas ...]   # what those baselines link
#     [KERNEL_LIBRARIES CUDA::nvrtc ...])     # what both kernel.cu need beyond the harness
#                                      # (Day 13: NVRTC; Day 14: the earlier days' solutions)
#
# Everything else about the lab is in its manifest, labs/<name>/lab.json, the one place an
# exercise is described (docs/adding-a-lab.md; tools/course/labspec.py reads and checks it):
# the title, the exercises in order (id dNN.k, title, lesson sections, the test suites that grade
# it with their points, the benchmark rows a grader times), the suites that run on the host
# (host_suites) or alone on the GPU (serial_suites), the compute-sanitizer tools graded
# (sanitizers) and one test's time limit (timeout, default COURSE_TEST_TIMEOUT).
#
# For lab <name> = dNN_topic it builds, from labs/<name>/ and solutions/<name>/:
#   dNN_lab_kernel / dNN_solution_kernel      the two kernel.cu (the student's / the reference)
#   dNN_lab_tests  / dNN_solution_tests       test_dNN.cu linked against each
#   dNN_lab_bench  / dNN_solution_bench       bench_dNN.cu linked against each
# test_dNN.cu and bench_dNN.cu are compiled once, as host C++ (they include only lab.h and
# the harness), and linked twice, so what grades a student is exactly what grades the solution.
#
# How the tests reach ctest (docs/testing.md says why): each GoogleTest case is one ctest test,
# dNN.lab.Suite.Case / dNN.solution.Suite.Case, labelled dNN, lab|solution and gpu (host for the
# HOST_SUITES). But a test program is started once per day, not once per case: the ctest test
# dNN.<variant>.run runs every case in one process through the course's test runner
# (tools/course/runner.py), which restarts the process after a crash or a hang without the test
# that caused it, and records each case's result; each case's ctest test then reports that
# result (a fixture: ctest runs dNN.<variant>.run first, by itself if need be). SERIAL_SUITES get
# their own run, dNN.<variant>.run_serial: one such run at a time beside the rest of the suite
# (the largest allocations), or with the GPU to itself where one of them is a TIMING_SUITE.
# The cases are listed from the test program when ctest starts (`course _discover`,
# tools/course/testrun.py); a
# program that was not built (its kernel.cu does not compile or link) becomes one failing test
# per exercise that carries the compiler's message, never a missing day.
#
# Everything the course tool and the runner need to know about the labs goes to
# <build>/course_manifest.json (course_write_manifest(), at the end of the configure).

set(COURSE_TEST_BUDGET 1200 CACHE STRING
    "Seconds one day's test run may take in all (a test that hangs costs its time limit)")

# A JSON string literal for `value`. A ';' is written \u003b, so that JSON texts can be kept in
# CMake lists.
function(course_json_string out_var value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  string(REPLACE "\t" "\\t" value "${value}")
  string(REPLACE ";" "\\u003b" value "${value}")
  set(${out_var} "\"${value}\"" PARENT_SCOPE)
endfunction()

# A JSON array of strings for a CMake list.
function(course_json_array out_var)
  set(items "")
  foreach(item IN LISTS ARGN)
    course_json_string(quoted "${item}")
    list(APPEND items "${quoted}")
  endforeach()
  string(REPLACE ";" ", " items "${items}")
  set(${out_var} "[${items}]" PARENT_SCOPE)
endfunction()

# The strings of the JSON array at `path...` of `spec` as a CMake list (empty when absent).
function(course_spec_list out_var spec)
  set(items "")
  string(JSON n ERROR_VARIABLE missing LENGTH "${spec}" ${ARGN})
  if(NOT missing AND n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON item GET "${spec}" ${ARGN} ${i})
      list(APPEND items "${item}")
    endforeach()
  endif()
  set(${out_var} "${items}" PARENT_SCOPE)
endfunction()

# Reads labs/<name>/lab.json into LAB_TITLE, LAB_TIMEOUT, LAB_SANITIZERS, LAB_EXERCISES (the
# graded suites, in order), LAB_POINTS_JSON ({"suite": points, ...}), LAB_GRADE_BENCHMARKS (one
# Google Benchmark filter for every exercise's rows), LAB_HOST_SUITES, LAB_SERIAL_SUITES and
# LAB_TIMING_SUITES, in the caller's scope. The course tool checks the rest
# (tools/course/labspec.py; ctest tools.labs).
macro(course_read_lab_spec name spec_file)
  if(NOT EXISTS ${spec_file})
    message(FATAL_ERROR "course_add_lab(${name}): ${spec_file} is missing (docs/adding-a-lab.md)")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${spec_file})
  file(READ ${spec_file} lab_spec)
  string(JSON LAB_TITLE ERROR_VARIABLE lab_spec_error GET "${lab_spec}" title)
  if(lab_spec_error)
    message(FATAL_ERROR "course_add_lab(${name}): ${spec_file}: ${lab_spec_error}")
  endif()
  string(JSON LAB_TIMEOUT ERROR_VARIABLE lab_no_timeout GET "${lab_spec}" timeout)
  if(lab_no_timeout)
    set(LAB_TIMEOUT ${COURSE_TEST_TIMEOUT})
  endif()
  course_spec_list(LAB_SANITIZERS "${lab_spec}" sanitizers)
  course_spec_list(LAB_HOST_SUITES "${lab_spec}" host_suites)
  course_spec_list(LAB_SERIAL_SUITES "${lab_spec}" serial_suites)
  course_spec_list(LAB_TIMING_SUITES "${lab_spec}" timing_suites)
  set(LAB_EXERCISES "")
  set(LAB_POINTS_JSON "")
  set(lab_rows "")
  string(JSON lab_exercise_count LENGTH "${lab_spec}" exercises)
  math(EXPR lab_last_exercise "${lab_exercise_count} - 1")
  foreach(lab_i RANGE ${lab_last_exercise})
    string(JSON lab_suite_count LENGTH "${lab_spec}" exercises ${lab_i} suites)
    math(EXPR lab_last_suite "${lab_suite_count} - 1")
    foreach(lab_j RANGE ${lab_last_suite})
      string(JSON lab_suite GET "${lab_spec}" exercises ${lab_i} suites ${lab_j} name)
      string(JSON lab_points GET "${lab_spec}" exercises ${lab_i} suites ${lab_j} points)
      list(APPEND LAB_EXERCISES ${lab_suite})
      list(APPEND LAB_POINTS_JSON "\"${lab_suite}\": ${lab_points}")
    endforeach()
    course_spec_list(lab_exercise_rows "${lab_spec}" exercises ${lab_i} benchmarks)
    foreach(lab_row IN LISTS lab_exercise_rows)
      if(lab_rows)
        string(APPEND lab_rows "|")
      endif()
      string(APPEND lab_rows "${lab_row}")
    endforeach()
  endforeach()
  list(JOIN LAB_POINTS_JSON ", " LAB_POINTS_JSON)
  set(LAB_POINTS_JSON "{${LAB_POINTS_JSON}}")
  set(LAB_GRADE_BENCHMARKS "")
  if(lab_rows)
    set(LAB_GRADE_BENCHMARKS "^BM_(${lab_rows})/")
  endif()
endmacro()

function(course_add_lab name)
  cmake_parse_arguments(LAB "" ""
                        "PROGRAMS;CUDA_FLAGS;BASELINE_SOURCES;BASELINE_LIBRARIES;KERNEL_LIBRARIES"
                        ${ARGN})
  if(LAB_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "course_add_lab(${name}): unknown arguments ${LAB_UNPARSED_ARGUMENTS} "
            "(the title, exercises, suites, sanitizers, timeout and graded benchmarks are in "
            "labs/${name}/lab.json)")
  endif()
  string(REGEX MATCH "^d[0-9][0-9]" day "${name}")
  if(NOT day)
    message(FATAL_ERROR "course_add_lab: '${name}' must start with dNN_")
  endif()
  set(lab_dir ${PROJECT_SOURCE_DIR}/labs/${name})
  course_read_lab_spec(${name} ${lab_dir}/lab.json)
  if(NOT LAB_EXERCISES)
    message(FATAL_ERROR "course_add_lab(${name}): lab.json has no exercise")
  endif()
  set(solution_dir ${PROJECT_SOURCE_DIR}/solutions/${name})
  set(lab_source ${lab_dir}/kernel.cu)

  # The host-side tests and benchmark: compiled once.
  foreach(kind test bench)
    set(src ${lab_dir}/${kind}_${day}.cu)
    set_source_files_properties(${src} PROPERTIES LANGUAGE CXX)
    add_library(${day}_${kind}_obj OBJECT ${src})
    target_include_directories(${day}_${kind}_obj PRIVATE ${lab_dir})
    target_link_libraries(${day}_${kind}_obj PRIVATE course_harness)
  endforeach()
  target_link_libraries(${day}_test_obj PRIVATE GTest::gtest)
  # An instructor's hidden tests: COURSE_HIDDEN_TESTS_DIR/<lab name or dNN>/*.cu|*.cpp, host C++
  # like test_dNN.cu (lab.h and the harness only), compiled into the same test programs.
  set(hidden "")
  if(COURSE_HIDDEN_TESTS_DIR)
    file(GLOB hidden CONFIGURE_DEPENDS ${COURSE_HIDDEN_TESTS_DIR}/${name}/*.cu
         ${COURSE_HIDDEN_TESTS_DIR}/${name}/*.cpp ${COURSE_HIDDEN_TESTS_DIR}/${day}/*.cu
         ${COURSE_HIDDEN_TESTS_DIR}/${day}/*.cpp)
    if(hidden)
      set_source_files_properties(${hidden} PROPERTIES LANGUAGE CXX)
      target_sources(${day}_test_obj PRIVATE ${hidden})
      list(LENGTH hidden hidden_count)
      message(STATUS "course: ${day}: ${hidden_count} hidden test files from ${COURSE_HIDDEN_TESTS_DIR}")
    endif()
  endif()
  target_link_libraries(${day}_bench_obj PRIVATE benchmark::benchmark)

  # Vendor baselines (CUB, cuBLAS) the benchmark times next to the student's kernels: their own
  # library, linked into both benchmark programs only. They are not the student's code, so the
  # SASS checks (no local memory: CUB's kernels spill on sm_80) and -Xptxas=-warn-spills do not
  # apply to them.
  if(LAB_BASELINE_SOURCES)
    list(TRANSFORM LAB_BASELINE_SOURCES PREPEND ${lab_dir}/)
    add_library(${day}_baseline STATIC ${LAB_BASELINE_SOURCES})
    target_include_directories(${day}_baseline PRIVATE ${lab_dir})
    target_link_libraries(${day}_baseline PUBLIC course_harness ${LAB_BASELINE_LIBRARIES})
    target_compile_options(${day}_baseline PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    set_target_properties(${day}_baseline PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()

  foreach(variant lab solution)
    if(variant STREQUAL "lab")
      set(kernel_source ${lab_source})
    else()
      set(kernel_source ${solution_dir}/kernel.cu)
    endif()
    set(kernel ${day}_${variant}_kernel)
    add_library(${kernel} STATIC ${kernel_source})
    target_include_directories(${kernel} PUBLIC ${lab_dir})
    target_link_libraries(${kernel} PUBLIC course_harness ${LAB_KERNEL_LIBRARIES})
    target_compile_options(${kernel} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:${COURSE_CUDA_FLAGS} ${LAB_CUDA_FLAGS}>)
    set_target_properties(${kernel} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                                               POSITION_INDEPENDENT_CODE ON)

    # The harness and main() as object files before the kernel library (common/CMakeLists.txt
    # says why): a kernel.cu cannot replace what grades it.
    add_executable(${day}_${variant}_tests $<TARGET_OBJECTS:${day}_test_obj>)
    target_link_libraries(${day}_${variant}_tests PRIVATE course_harness_objects course_test_main
                                                          ${kernel} GTest::gtest)
    add_executable(${day}_${variant}_bench $<TARGET_OBJECTS:${day}_bench_obj>)
    target_link_libraries(${day}_${variant}_bench PRIVATE course_harness_objects
                                                          course_bench_main ${kernel}
                                                          benchmark::benchmark)
    if(LAB_BASELINE_SOURCES)
      target_link_libraries(${day}_${variant}_bench PRIVATE ${day}_baseline)
    endif()
    foreach(program ${LAB_PROGRAMS})
      get_filename_component(program_name ${program} NAME_WE)
      add_executable(${day}_${variant}_${program_name} ${lab_dir}/${program})
      target_link_libraries(${day}_${variant}_${program_name} PRIVATE ${kernel})
    endforeach()
    course_discover_lab_tests(${day} ${variant} ${day}_${variant}_tests)

    course_json_string(source_json "${kernel_source}")
    set(${variant}_json
        "{\"source\": ${source_json}, \"tests\": \"$<TARGET_FILE:${day}_${variant}_tests>\", \"bench\": \"$<TARGET_FILE:${day}_${variant}_bench>\", \"kernel_lib\": \"$<TARGET_FILE:${kernel}>\"}")
  endforeach()

  add_custom_target(${day} DEPENDS ${day}_lab_tests ${day}_solution_tests
                                   ${day}_lab_bench ${day}_solution_bench)
  add_custom_target(${day}_lab DEPENDS ${day}_lab_tests ${day}_lab_bench)

  # The early check of each kernel.cu: what it includes, defines and calls (tools/course/
  # objcheck.py; the grader refuses a day that fails it). Host only: it reads the objects.
  foreach(variant lab solution)
    add_test(NAME ${day}.${variant}.objcheck
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/bin/course _objcheck
                     --manifest ${PROJECT_BINARY_DIR}/course_manifest.json --day ${day}
                     --variant ${variant})
    set_tests_properties(${day}.${variant}.objcheck PROPERTIES
      LABELS "${day};${variant};host;objcheck" TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()

  # No kernel may use local memory (spilled registers or arrays indexed at run time).
  course_add_sass_check(${name} no_local_memory
    WHAT "keep every value in registers: no local memory (LDL/STL), which is what spilled registers and arrays indexed at run time become"
    LESSON "lesson 5 §9" FORBID "LDL|STL")

  course_json_string(title_json "${LAB_TITLE}")
  course_json_array(exercises_json ${LAB_EXERCISES})
  course_json_array(host_json ${LAB_HOST_SUITES})
  course_json_array(serial_json ${LAB_SERIAL_SUITES})
  course_json_array(timing_json ${LAB_TIMING_SUITES})
  course_json_array(sanitizers_json ${LAB_SANITIZERS})
  course_json_array(hidden_json ${hidden})
  course_json_string(grade_bench_json "${LAB_GRADE_BENCHMARKS}")
  course_json_string(spec_json "${lab_dir}/lab.json")
  set_property(GLOBAL APPEND PROPERTY COURSE_LABS ${day})
  set_property(GLOBAL PROPERTY COURSE_LAB_${day}_JSON
    "\"day\": \"${day}\", \"name\": \"${name}\", \"title\": ${title_json}, \"spec\": ${spec_json}, \"exercises\": ${exercises_json}, \"points\": ${LAB_POINTS_JSON}, \"host_suites\": ${host_json}, \"serial_suites\": ${serial_json}, \"timing_suites\": ${timing_json}, \"sanitizers\": ${sanitizers_json}, \"grade_benchmarks\": ${grade_bench_json}, \"hidden_tests\": ${hidden_json}, \"timeout\": ${LAB_TIMEOUT}, \"lab\": ${lab_json}, \"solution\": ${solution_json}")
endfunction()

# The ctest tests of one test program: a script that ctest includes when it starts lists the
# program's cases (`course _discover`, tools/course/testrun.py; again only when the program or
# the configuration changed) and registers the run fixtures and one test per case.
function(course_discover_lab_tests day variant target)
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/${day}_${variant}_ctest.cmake)
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${day}_${variant}_discover.cmake)
  file(GENERATE OUTPUT ${script} CONTENT
"# ctest includes this when it starts: the tests of ${target} (see cmake/course.cmake).
set(course_generated \"${generated}\")
if(NOT EXISTS \"\${course_generated}\"
   OR \"$<TARGET_FILE:${target}>\" IS_NEWER_THAN \"\${course_generated}\"
   OR \"${PROJECT_BINARY_DIR}/course_manifest.json\" IS_NEWER_THAN \"\${course_generated}\")
  execute_process(
    COMMAND \"${Python3_EXECUTABLE}\" \"${PROJECT_SOURCE_DIR}/tools/bin/course\" _discover
            --manifest \"${PROJECT_BINARY_DIR}/course_manifest.json\" --day ${day}
            --variant ${variant} --output \"\${course_generated}\"
    RESULT_VARIABLE course_rc OUTPUT_VARIABLE course_out ERROR_VARIABLE course_out)
  if(NOT course_rc EQUAL 0)
    add_test(${day}.${variant}.discovery \"${Python3_EXECUTABLE}\" -c
             \"import sys; print(sys.argv[1]); sys.exit(1)\"
             \"listing the tests of ${target} failed: \${course_out}\")
    set_tests_properties(${day}.${variant}.discovery PROPERTIES LABELS \"${day};${variant};gpu\")
    return()
  endif()
endif()
include(\"\${course_generated}\")
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()

# Labels for tests that are not a lab's (the harness's own, discovered by
# gtest_discover_tests): every test in the TEST_LIST variables `test_lists` gets `labels`.
# gtest_discover_tests' PROPERTIES argument flattens a list value (LABELS "a;b" arrives as
# LABELS a plus a bogus property b), so a script that ctest includes after discovery sets them.
function(course_label_tests name test_lists labels)
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
  file(WRITE ${script} "foreach(test_name IN LISTS ${test_lists})\n"
    "  set_tests_properties(\"\${test_name}\" PROPERTIES LABELS \"${labels}\")\nendforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()

# course_add_sass_check(<lab> <check_name> WHAT "<phrase>" LESSON "<where>" [EXERCISE <suite>]
#                       [KERNEL regex] [REQUIRE regex...] [FORBID regex...] [ARCHS sm_90a...]
#                       [SOLUTION_ONLY] [CORRECTNESS])
# A host test of compiled device code (tools/course/sass.py): disassembles a kernel library
# with cuobjdump and checks the instructions of the kernels KERNEL selects, on every
# architecture it was compiled for, or only on ARCHS (cuobjdump's names: a Hopper kernel's sm_80
# build is only a trap); a build that compiled none of ARCHS reports the check as skipped. The
# check goes into the manifest; the ctest tests are registered with the day's cases
# (`course _discover`, tools/course/testrun.py, the same code for a course build and for a
# graded student): dNN.lab.sass.<name> for the student's code and dNN.solution.sass.<name> for
# the solution's, labelled host and sass; SOLUTION_ONLY checks (code the starter gives complete,
# library baselines) only for the solution. A CORRECTNESS check sees a mistake that makes the
# kernel wrong, not slow (a missing fence: a race no test run is sure to show): the grader counts
# it as one of its exercise's test cases, not among the performance points.
# A failure reads: "<EXERCISE>: your <kernel> must <WHAT>, but ... (see <LESSON>)".
# Example: course_add_sass_check(d02_coalescing vectorized_copy EXERCISE VectorizedCopy
#            WHAT "move 16 bytes per load and store" LESSON "lesson 2 §5"
#            KERNEL "copy_2_vectorized" REQUIRE "LDG\\.E\\.128" "STG\\.E\\.128")
get_filename_component(course_cuda_bin ${CMAKE_CUDA_COMPILER} DIRECTORY)
# cuobjdump and nvdisasm: the toolkit's own, else the ones scripts/setup.sh puts in .tools/.
find_program(COURSE_CUOBJDUMP cuobjdump
             HINTS ${course_cuda_bin} ${PROJECT_SOURCE_DIR}/.tools/cuda/nvidia/cu13/bin)
if(NOT COURSE_CUOBJDUMP)
  message(STATUS "course: cuobjdump not found: the SASS checks will report as skipped")
  set(COURSE_CUOBJDUMP "")
endif()
function(course_add_sass_check lab check_name)
  cmake_parse_arguments(CHECK "SOLUTION_ONLY;CORRECTNESS" "KERNEL;EXERCISE;WHAT;LESSON"
                        "REQUIRE;FORBID;ARCHS;AT_MOST" ${ARGN})
  string(REGEX MATCH "^d[0-9][0-9]" day "${lab}")
  if(NOT CHECK_KERNEL)
    set(CHECK_KERNEL ".*")
  endif()
  if(NOT CHECK_WHAT OR NOT CHECK_LESSON)
    message(FATAL_ERROR "course_add_sass_check(${lab} ${check_name}): WHAT and LESSON are "
                        "required (the failure message is a sentence for the student)")
  endif()
  course_json_string(name_json "${check_name}")
  course_json_string(exercise_json "${CHECK_EXERCISE}")
  course_json_string(what_json "${CHECK_WHAT}")
  course_json_string(lesson_json "${CHECK_LESSON}")
  course_json_string(kernel_json "${CHECK_KERNEL}")
  course_json_array(require_json ${CHECK_REQUIRE})
  course_json_array(forbid_json ${CHECK_FORBID})
  course_json_array(archs_json ${CHECK_ARCHS})
  # AT_MOST pattern count [pattern count ...]: at most count matching instructions per kernel.
  set(at_most_json "")
  set(pending "")
  foreach(item IN LISTS CHECK_AT_MOST)
    if(pending STREQUAL "")
      set(pending "${item}")
    else()
      if(NOT item MATCHES "^[0-9]+$")
        message(FATAL_ERROR "course_add_sass_check(${lab} ${check_name}): AT_MOST takes pairs "
                            "of a pattern and a count, got '${item}' after '${pending}'")
      endif()
      course_json_string(quoted "${pending}")
      list(APPEND at_most_json "${quoted}: ${item}")
      set(pending "")
    endif()
  endforeach()
  if(NOT pending STREQUAL "")
    message(FATAL_ERROR "course_add_sass_check(${lab} ${check_name}): AT_MOST '${pending}' has no count")
  endif()
  string(REPLACE ";" ", " at_most_json "${at_most_json}")
  if(CHECK_SOLUTION_ONLY)
    set(solution_only true)
  else()
    set(solution_only false)
  endif()
  if(CHECK_CORRECTNESS)
    if(NOT CHECK_EXERCISE)
      message(FATAL_ERROR "course_add_sass_check(${lab} ${check_name}): CORRECTNESS needs EXERCISE")
    endif()
    set(correctness true)
  else()
    set(correctness false)
  endif()
  set_property(GLOBAL APPEND PROPERTY COURSE_LAB_${day}_SASS
    "{\"name\": ${name_json}, \"exercise\": ${exercise_json}, \"what\": ${what_json}, \"lesson\": ${lesson_json}, \"kernel\": ${kernel_json}, \"require\": ${require_json}, \"forbid\": ${forbid_json}, \"at_most\": {${at_most_json}}, \"solution_only\": ${solution_only}, \"archs\": ${archs_json}, \"correctness\": ${correctness}}")
endfunction()

# <build>/course_manifest.json: what the course tool, the test runner and the grader know
# about this build (tools/course/manifest.py reads it). Written when CMake generates, with the
# real paths of every program.
function(course_write_manifest)
  get_property(days GLOBAL PROPERTY COURSE_LABS)
  set(labs "")
  foreach(day IN LISTS days)
    get_property(fields GLOBAL PROPERTY COURSE_LAB_${day}_JSON)
    get_property(checks GLOBAL PROPERTY COURSE_LAB_${day}_SASS)
    string(REPLACE ";" ",\n        " checks "${checks}")
    list(APPEND labs "    {${fields},\n      \"sass_checks\": [\n        ${checks}]}")
  endforeach()
  string(REPLACE ";" ",\n" labs "${labs}")
  foreach(var PROJECT_SOURCE_DIR PROJECT_BINARY_DIR Python3_EXECUTABLE COURSE_CUOBJDUMP
              CMAKE_CUDA_ARCHITECTURES)
    course_json_string(${var}_json "${${var}}")
  endforeach()
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/course_manifest.json CONTENT
"{
  \"format\": 1,
  \"source_dir\": ${PROJECT_SOURCE_DIR_json},
  \"binary_dir\": ${PROJECT_BINARY_DIR_json},
  \"python\": ${Python3_EXECUTABLE_json},
  \"cuobjdump\": ${COURSE_CUOBJDUMP_json},
  \"cuda_architectures\": ${CMAKE_CUDA_ARCHITECTURES_json},
  \"results_dir\": \"${PROJECT_BINARY_DIR}/test-results\",
  \"test_budget\": ${COURSE_TEST_BUDGET},
  \"labs\": [
${labs}
  ]
}
")
  # After every ctest run in this build: one line that says what passed, failed and was
  # skipped, and why (ctest alone says "100% tests passed" when every GPU test was skipped).
  # The same file the grader writes for a student (tools/course/testrun.py, ctest_custom).
  execute_process(
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/bin/course _ctest-custom
            --build-dir ${PROJECT_BINARY_DIR} --output ${PROJECT_BINARY_DIR}/CTestCustom.cmake
    RESULT_VARIABLE course_custom_rc ERROR_VARIABLE course_custom_err)
  if(NOT course_custom_rc EQUAL 0)
    message(FATAL_ERROR "course: writing CTestCustom.cmake failed: ${course_custom_err}")
  endif()
endfunction()

# The Python tests of a folder (standard library unittest): one ctest test per file
# <folder>/test_*.py, named <prefix>.test_x, run by tools/unittest_run.py in that folder: a file
# whose cases all passed passes; one with a skipped case (a missing program, no GPU, no PyTorch)
# is reported skipped with the reasons, never passed; a failure fails. One test per file, so
# that the files run side by side. `env` is the tests' ENVIRONMENT (a list).
#   pythonpath  a folder to put first on PYTHONPATH ("" for none): prepended to the PYTHONPATH
#               ctest runs with, never replacing it, so that packages installed under a
#               PYTHONPATH (the GPU machine's wheels, say) stay importable in the tests.
#   FIRST regex the files (module names, e.g. test_jit_compile) that ctest -j must start at
#               once, beside the day programs: the long ones. See below.
#   LAST module a file of a second or less, run after the FIRST ones (required with FIRST).
#
# Why FIRST needs LAST: ctest -j orders the tests by their level of dependencies, deepest first,
# and by COST only within a level (cmCTestMultiProcessHandler::CreateParallelTestCostList). The
# day programs (dNN.<variant>.run) are fixtures that every case test requires, one level down,
# so a test nothing depends on starts only once every day program has started, whatever its
# COST: the long Python files, ending last, would set the suite's end. The LAST file DEPENDS on
# the FIRST ones (ordering only: it runs whatever their outcome), which puts them on the day
# programs' level, where their COST starts them first. The other files start once every day
# program has, before the case tests (COST again).
function(course_add_python_tests prefix folder labels timeout env pythonpath)
  cmake_parse_arguments(PARSE_ARGV 6 arg "" "FIRST;LAST" "")
  file(GLOB sources CONFIGURE_DEPENDS ${folder}/test_*.py)
  set(modification "")
  if(pythonpath)
    set(modification "PYTHONPATH=path_list_prepend:${pythonpath}")
  endif()
  set(first "")
  foreach(source ${sources})
    get_filename_component(module ${source} NAME_WE)
    add_test(NAME ${prefix}.${module}
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/unittest_run.py ${folder}
                     ${module}.py
             WORKING_DIRECTORY ${folder})
    set_tests_properties(${prefix}.${module} PROPERTIES
      LABELS "${labels}" TIMEOUT ${timeout} SKIP_RETURN_CODE 77 ENVIRONMENT "${env}"
      ENVIRONMENT_MODIFICATION "${modification}"
      # Before the tests of their dependency level under ctest -j (the case tests, the SASS
      # checks, the day programs for the FIRST files): a file of these can take half a minute
      # (compiles), longer than any of those. A COST set here is used as it is, measured times
      # (Testing/Temporary/CTestCostData.txt) only for tests without one.
      COST 1000)
    if(arg_FIRST AND module MATCHES "${arg_FIRST}")
      list(APPEND first ${prefix}.${module})
    endif()
  endforeach()
  if(arg_FIRST)
    if(NOT first)
      message(FATAL_ERROR "course_add_python_tests: FIRST ${arg_FIRST} matches no file of "
                          "${folder}")
    endif()
    if(NOT arg_LAST OR NOT TEST ${prefix}.${arg_LAST} OR arg_LAST MATCHES "${arg_FIRST}")
      message(FATAL_ERROR "course_add_python_tests: LAST must name a file of ${folder} that "
                          "FIRST does not match (got '${arg_LAST}')")
    endif()
    set_tests_properties(${prefix}.${arg_LAST} PROPERTIES DEPENDS "${first}")
  endif()
endfunction()
