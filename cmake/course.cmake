# course_add_lab(): the one call that declares a day's lab.
#
#   course_add_lab(d02_coalescing
#     TITLE     "Coalescing and 16-byte vectorized access"
#     EXERCISES CoalescedCopy VectorType VectorizedCopy GeluVectorized ...   # test suites, in order
#     [PROGRAMS device_query.cu ...]   # small programs built against both variants
#     [CUDA_FLAGS ...]                 # extra nvcc flags for kernel.cu (both variants)
#     [SERIAL_SUITES Timing ...]       # suites whose tests must have the GPU to themselves
#     [HOST_SUITES VectorType ...]     # suites that check the student's code on the host only
#     [TIMEOUT seconds])
#
# For lab <name> = dNN_topic it builds, from labs/<name>/ and solutions/<name>/:
#   dNN_lab_kernel / dNN_solution_kernel      the two kernel.cu (the student's / the reference)
#   dNN_lab_tests  / dNN_solution_tests       test_dNN.cu linked against each
#   dNN_lab_bench  / dNN_solution_bench       bench_dNN.cu linked against each
# test_dNN.cu and bench_dNN.cu are compiled once, as host C++ (they include only lab.h and
# the harness), and linked twice, so what grades a student is exactly what grades the solution.
# Every GoogleTest case becomes its own ctest test (one process each, with a timeout), named
# dNN.lab.Suite.Case / dNN.solution.Suite.Case and labelled dNN, lab|solution and gpu (host for
# the HOST_SUITES, which need no GPU: layouts and index maps of the student's code).

define_property(GLOBAL PROPERTY COURSE_MANIFEST_LINES
  BRIEF_DOCS "One line per lab for the course tool" FULL_DOCS "see course_write_manifest")

# Where the student's kernel.cu for <name> comes from: the submission folder if one is set
# and holds it, else the starter in labs/.
function(course_lab_source name out_var)
  set(source ${PROJECT_SOURCE_DIR}/labs/${name}/kernel.cu)
  if(COURSE_SUBMISSION_DIR)
    set(found "")
    foreach(candidate ${COURSE_SUBMISSION_DIR}/labs/${name}/kernel.cu
                      ${COURSE_SUBMISSION_DIR}/${name}/kernel.cu)
      if(EXISTS ${candidate} AND found STREQUAL "")
        set(found ${candidate})
      endif()
    endforeach()
    if(found STREQUAL "")
      message(WARNING "course: the submission in ${COURSE_SUBMISSION_DIR} has no ${name}/kernel.cu;"
                      " grading ${name} against the untouched starter")
    else()
      set(source ${found})
    endif()
  endif()
  set(${out_var} ${source} PARENT_SCOPE)
endfunction()

function(course_add_lab name)
  cmake_parse_arguments(LAB "" "TITLE;TIMEOUT"
                        "EXERCISES;PROGRAMS;CUDA_FLAGS;SERIAL_SUITES;HOST_SUITES" ${ARGN})
  string(REGEX MATCH "^d[0-9][0-9]" day "${name}")
  if(NOT day)
    message(FATAL_ERROR "course_add_lab: '${name}' must start with dNN_")
  endif()
  if(NOT LAB_TIMEOUT)
    set(LAB_TIMEOUT ${COURSE_TEST_TIMEOUT})
  endif()
  set(lab_dir ${PROJECT_SOURCE_DIR}/labs/${name})
  set(solution_dir ${PROJECT_SOURCE_DIR}/solutions/${name})
  course_lab_source(${name} lab_source)

  # The host-side tests and benchmark: compiled once.
  foreach(kind test bench)
    set(src ${lab_dir}/${kind}_${day}.cu)
    set_source_files_properties(${src} PROPERTIES LANGUAGE CXX)
    add_library(${day}_${kind}_obj OBJECT ${src})
    target_include_directories(${day}_${kind}_obj PRIVATE ${lab_dir})
    target_link_libraries(${day}_${kind}_obj PRIVATE course_harness)
  endforeach()
  target_link_libraries(${day}_test_obj PRIVATE GTest::gtest)
  target_link_libraries(${day}_bench_obj PRIVATE benchmark::benchmark)

  foreach(variant lab solution)
    if(variant STREQUAL "lab")
      set(kernel_source ${lab_source})
    else()
      set(kernel_source ${solution_dir}/kernel.cu)
    endif()
    set(kernel ${day}_${variant}_kernel)
    add_library(${kernel} STATIC ${kernel_source})
    target_include_directories(${kernel} PUBLIC ${lab_dir})
    target_link_libraries(${kernel} PUBLIC course_harness)
    target_compile_options(${kernel} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:${COURSE_CUDA_FLAGS} ${LAB_CUDA_FLAGS}>)
    set_target_properties(${kernel} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                                               POSITION_INDEPENDENT_CODE ON)

    add_executable(${day}_${variant}_tests $<TARGET_OBJECTS:${day}_test_obj>)
    target_link_libraries(${day}_${variant}_tests PRIVATE ${kernel} course_test_main GTest::gtest)
    # Suites that time things (SERIAL_SUITES) run alone: another test sharing the GPU would
    # slow them down. Everything else may run in parallel.
    set(serial_filter "")
    foreach(suite ${LAB_SERIAL_SUITES})
      list(APPEND serial_filter "${suite}.*" "*/${suite}.*")
    endforeach()
    string(REPLACE ";" ":" serial_filter "${serial_filter}")
    set(parallel_filter "*")
    set(test_lists ${day}_${variant}_tests)
    if(serial_filter)
      set(parallel_filter "-${serial_filter}")
      gtest_discover_tests(${day}_${variant}_tests
        TEST_PREFIX "${day}.${variant}."
        TEST_FILTER "${serial_filter}"
        TEST_LIST ${day}_${variant}_serial_tests
        DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 30 NO_PRETTY_VALUES
        PROPERTIES TIMEOUT ${LAB_TIMEOUT} RUN_SERIAL TRUE)
      list(APPEND test_lists ${day}_${variant}_serial_tests)
    endif()
    gtest_discover_tests(${day}_${variant}_tests
      TEST_PREFIX "${day}.${variant}."
      TEST_FILTER "${parallel_filter}"
      TEST_LIST ${day}_${variant}_tests
      DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 30 NO_PRETTY_VALUES
      PROPERTIES TIMEOUT ${LAB_TIMEOUT})
    course_label_discovered_tests(${day} ${variant} "${test_lists}" "${LAB_HOST_SUITES}")

    add_executable(${day}_${variant}_bench $<TARGET_OBJECTS:${day}_bench_obj>)
    target_link_libraries(${day}_${variant}_bench PRIVATE ${kernel} course_bench_main
                                                          benchmark::benchmark)

    foreach(program ${LAB_PROGRAMS})
      get_filename_component(program_name ${program} NAME_WE)
      add_executable(${day}_${variant}_${program_name} ${lab_dir}/${program})
      target_link_libraries(${day}_${variant}_${program_name} PRIVATE ${kernel})
    endforeach()
  endforeach()

  add_custom_target(${day} DEPENDS ${day}_lab_tests ${day}_solution_tests
                                   ${day}_lab_bench ${day}_solution_bench)
  add_custom_target(${day}_lab DEPENDS ${day}_lab_tests ${day}_lab_bench)

  # No solution kernel may use local memory (spilled registers or arrays indexed at run time).
  course_add_sass_check(${name} no_local_memory FORBID "LDL|STL")

  string(REPLACE ";" "," exercises "${LAB_EXERCISES}")
  set_property(GLOBAL APPEND PROPERTY COURSE_MANIFEST_LINES
    "${day}\t${name}\t${LAB_TITLE}\t${exercises}\t${lab_source}")
endfunction()

# Labels for the tests gtest_discover_tests finds. Its PROPERTIES argument flattens a list
# value (LABELS "d02;lab;gpu" arrives as LABELS d02 plus a bogus property "lab"), so the labels
# are set by a script that ctest includes after the discovery scripts: it walks the TEST_LIST
# variables discovery filled and labels each test gpu or host by its suite.
function(course_label_discovered_tests day variant test_lists host_suites)
  string(REPLACE ";" "|" host_regex "${host_suites}")
  set(body "  set(where gpu)\n")
  if(host_suites)
    string(APPEND body "  if(test_name MATCHES \"^${day}\\\\.${variant}\\\\.([^./]+/)?(${host_regex})\\\\.\")\n"
                       "    set(where host)\n  endif()\n")
  endif()
  string(APPEND body "  set_tests_properties(\"\${test_name}\" PROPERTIES LABELS \"${day};${variant};\${where}\")\n")
  course_for_each_discovered_test(${day}_${variant} "${test_lists}" "${body}")
endfunction()

# Labels for tests that are not a lab's (the harness's own): every test in the TEST_LIST
# variables `test_lists` gets `labels`.
function(course_label_tests name test_lists labels)
  course_for_each_discovered_test(${name} "${test_lists}"
    "  set_tests_properties(\"\${test_name}\" PROPERTIES LABELS \"${labels}\")\n")
endfunction()

# Writes a script that runs `body` (CMake code seeing ${test_name}) for every test in the
# TEST_LIST variables `test_lists`, and has ctest include it after the discovery scripts.
function(course_for_each_discovered_test name test_lists body)
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
  file(WRITE ${script} "foreach(test_name IN LISTS ${test_lists})\n${body}endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()

# The course tool reads build/course_manifest.tsv to learn the days: one line per lab,
# day <TAB> name <TAB> title <TAB> exercises (comma-separated test suites) <TAB> student source.
function(course_write_manifest)
  get_property(lines GLOBAL PROPERTY COURSE_MANIFEST_LINES)
  set(text "# day\tname\ttitle\texercises\tlab_source\n")
  foreach(line IN LISTS lines)
    string(APPEND text "${line}\n")
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/course_manifest.tsv "${text}")
endfunction()

# course_add_sass_check(<lab> <check_name> [KERNEL regex] [REQUIRE regex...] [FORBID regex...])
# A host test (label: host, sass, <day>) that disassembles the SOLUTION's kernel library and
# checks its instructions on every architecture it was compiled for; see tools/sass_check.py.
# Example: course_add_sass_check(d02_coalescing vectorized_copy KERNEL "copy_2_vectorized"
#                                REQUIRE "LDG\\.E\\.128" "STG\\.E\\.128")
find_package(Python3 COMPONENTS Interpreter)
get_filename_component(course_cuda_bin ${CMAKE_CUDA_COMPILER} DIRECTORY)
# cuobjdump and nvdisasm: the toolkit's own, else the ones scripts/setup.sh puts in .tools/.
find_program(COURSE_CUOBJDUMP cuobjdump
             HINTS ${course_cuda_bin} ${PROJECT_SOURCE_DIR}/.tools/cuda/nvidia/cu13/bin)
if(NOT COURSE_CUOBJDUMP)
  message(STATUS "course: cuobjdump not found: the SASS checks will report as skipped")
  set(COURSE_CUOBJDUMP "")
endif()
function(course_add_sass_check lab check_name)
  cmake_parse_arguments(CHECK "SOLUTION_ONLY" "KERNEL;EXERCISE;WHAT;LESSON" "REQUIRE;FORBID" ${ARGN})
  string(REGEX MATCH "^d[0-9][0-9]" day "${lab}")
  if(NOT CHECK_KERNEL)
    set(CHECK_KERNEL ".*")
  endif()
  set(args --kernel "${CHECK_KERNEL}")
  foreach(pattern ${CHECK_REQUIRE})
    list(APPEND args --require "${pattern}")
  endforeach()
  foreach(pattern ${CHECK_FORBID})
    list(APPEND args --forbid "${pattern}")
  endforeach()
  add_test(NAME ${day}.solution.sass.${check_name}
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/sass_check.py
                   $<TARGET_FILE:${day}_solution_kernel> ${args}
                   "--cuobjdump=${COURSE_CUOBJDUMP}")
  set_tests_properties(${day}.solution.sass.${check_name} PROPERTIES
                       LABELS "${day};solution;host;sass" TIMEOUT 120 SKIP_RETURN_CODE 77)
endfunction()
