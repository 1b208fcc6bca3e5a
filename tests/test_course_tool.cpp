// Tests of the course tool's logic (tools/course): the JSON and XML readers, ctest's JUnit
// results, day arguments, grouping tests into exercises, the decisions behind `course check`,
// `course bench` and `course status`, and the command line itself on a fake build. Host only:
// they run in CI, without a GPU, a build of the labs or ctest.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_report.h"
#include "check_report.h"
#include "commands.h"
#include "ctest_results.h"
#include "files.h"
#include "json.h"
#include "manifest.h"
#include "status_report.h"
#include "subprocess.h"
#include "text.h"
#include "xml.h"

namespace {

using namespace course::tool;

// ---------------------------------------------------------------------------- fixtures
// Real files, generated on the development machine (CMake 3.25.1, GoogleTest 1.12.1, Google
// Benchmark 1.7.1) and pasted verbatim.

// ctest --output-junit of Day 1's starter tests on a machine without a GPU (4 of the 40 tests).
const char* const kJunitDay1NoGpu = R"fixture(<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)"
	tests="4"
	failures="0"
	disabled="0"
	skipped="4"
	hostname=""
	time="0"
	timestamp="2026-11-22T18:49:42"
	>
	<testcase name="d01.lab.Timing.HostClockWithoutSyncMeasuresOnlyTheLaunch" classname="d01.lab.Timing.HostClockWithoutSyncMeasuresOnlyTheLaunch" time="0.00507792" status="notrun">
		<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
		<system-out>[ course   ] no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): GPU tests will be reported as SKIPPED, not passed
[ course   ] random seed 15639137404788343353 (set COURSE_SEED to repeat)
Note: Google Test filter = Timing.HostClockWithoutSyncMeasuresOnlyTheLaunch
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from Timing
[ RUN      ] Timing.HostClockWithoutSyncMeasuresOnlyTheLaunch
/work/main/common/course/testing.h:28: Skipped
no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): this test needs a CUDA GPU
[  SKIPPED ] Timing.HostClockWithoutSyncMeasuresOnlyTheLaunch (0 ms)
[----------] 1 test from Timing (0 ms total)

[----------] Global test environment tear-down
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] Timing.HostClockWithoutSyncMeasuresOnlyTheLaunch
</system-out>
	</testcase>
	<testcase name="d01.lab.VectorAddBounds.DoesNotWritePastTheEnd" classname="d01.lab.VectorAddBounds.DoesNotWritePastTheEnd" time="0.00459617" status="notrun">
		<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
		<system-out>[ course   ] no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): GPU tests will be reported as SKIPPED, not passed
[ course   ] random seed 18184618180251489969 (set COURSE_SEED to repeat)
Note: Google Test filter = VectorAddBounds.DoesNotWritePastTheEnd
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from VectorAddBounds
[ RUN      ] VectorAddBounds.DoesNotWritePastTheEnd
/work/main/common/course/testing.h:28: Skipped
no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): this test needs a CUDA GPU
[  SKIPPED ] VectorAddBounds.DoesNotWritePastTheEnd (0 ms)
[----------] 1 test from VectorAddBounds (0 ms total)

[----------] Global test environment tear-down
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] VectorAddBounds.DoesNotWritePastTheEnd
</system-out>
	</testcase>
	<testcase name="d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31" classname="d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31" time="0.00387798" status="notrun">
		<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
		<system-out>[ course   ] no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): GPU tests will be reported as SKIPPED, not passed
[ course   ] random seed 15908822530772743277 (set COURSE_SEED to repeat)
Note: Google Test filter = Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from Sizes/VectorAdd
[ RUN      ] Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31
/work/main/common/course/testing.h:28: Skipped
no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): this test needs a CUDA GPU
[  SKIPPED ] Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31 (0 ms)
[----------] 1 test from Sizes/VectorAdd (0 ms total)

[----------] Global test environment tear-down
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31
</system-out>
	</testcase>
	<testcase name="d01.lab.Grids/Saxpy.IsCorrectForAnyGrid/n1_grid3x64" classname="d01.lab.Grids/Saxpy.IsCorrectForAnyGrid/n1_grid3x64" time="0.00400619" status="notrun">
		<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
		<system-out>[ course   ] no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): GPU tests will be reported as SKIPPED, not passed
[ course   ] random seed 14031467994930611615 (set COURSE_SEED to repeat)
Note: Google Test filter = Grids/Saxpy.IsCorrectForAnyGrid/n1_grid3x64
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from Grids/Saxpy
[ RUN      ] Grids/Saxpy.IsCorrectForAnyGrid/n1_grid3x64
/work/main/common/course/testing.h:28: Skipped
no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): this test needs a CUDA GPU
[  SKIPPED ] Grids/Saxpy.IsCorrectForAnyGrid/n1_grid3x64 (0 ms)
[----------] 1 test from Grids/Saxpy (0 ms total)

[----------] Global test environment tear-down
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] Grids/Saxpy.IsCorrectForAnyGrid/n1_grid3x64
</system-out>
	</testcase>
</testsuite>
)fixture";

// ctest --output-junit of a small GoogleTest program built on the harness's comparisons
// (common/src/compare.cpp), named like a lab's tests: harness failure messages, an
// EXPECT_EQ failure, a pass, a test killed by its 2 s timeout and a segfault. The names keep
// GoogleTest's pretty values ("  # GetParam() = 31"), which the course turns off, to show that
// parsing survives them.
const char* const kJunitFailures = R"fixture(<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)"
	tests="6"
	failures="5"
	disabled="0"
	skipped="0"
	hostname=""
	time="2"
	timestamp="2026-11-22T18:51:42"
	>
	<testcase name="d01.lab.Saxpy.IsCorrectForAnyGrid" classname="d01.lab.Saxpy.IsCorrectForAnyGrid" time="0.00701313" status="fail">
		<failure message=""/>
		<system-out>Running main() from ./googletest/src/gtest_main.cc
Note: Google Test filter = Saxpy.IsCorrectForAnyGrid
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from Saxpy
[ RUN      ] Saxpy.IsCorrectForAnyGrid
/tmp/gfix/t.cpp:16: Failure
Failed
The first 97 elements of y (grid of 1 blocks of 32 threads) are right, but from 97 on they are wrong: check the tail handling (the elements left over after the vectorized or tiled part).
  relative L2 error 0.17320508 (allowed 1e-05); 3 mismatched, 0 never written, 0 NaN/Inf, of 100 elements
  first bad element 97: expected 2, got 0
  worst elements: 97 expected 2 got 0; 98 expected 2 got 0; 99 expected 2 got 0;
  (random inputs from seed 42; rerun with COURSE_SEED=42 to get the same ones)
[  FAILED  ] Saxpy.IsCorrectForAnyGrid (0 ms)
[----------] 1 test from Saxpy (0 ms total)

[----------] Global test environment tear-down
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  FAILED  ] 1 test, listed below:
[  FAILED  ] Saxpy.IsCorrectForAnyGrid

 1 FAILED TEST
</system-out>
	</testcase>
	<testcase name="d01.lab.DeviceQuery.AgreesWithTheDriver" classname="d01.lab.DeviceQuery.AgreesWithTheDriver" time="0.00810948" status="fail">
		<failure message=""/>
		<system-out>Running main() from ./googletest/src/gtest_main.cc
Note: Google Test filter = DeviceQuery.AgreesWithTheDriver
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from DeviceQuery
[ RUN      ] DeviceQuery.AgreesWithTheDriver
/tmp/gfix/t.cpp:20: Failure
Expected equality of these values:
  sm
    Which is: 0
  132
sm_count: cudaDeviceProp::multiProcessorCount
[  FAILED  ] DeviceQuery.AgreesWithTheDriver (0 ms)
[----------] 1 test from DeviceQuery (0 ms total)

[----------] Global test environment tear-down
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  FAILED  ] 1 test, listed below:
[  FAILED  ] DeviceQuery.AgreesWithTheDriver

 1 FAILED TEST
</system-out>
	</testcase>
	<testcase name="d01.lab.Timing.EventsMeasureTheKernel" classname="d01.lab.Timing.EventsMeasureTheKernel" time="0.00649364" status="run">
		<system-out>Running main() from ./googletest/src/gtest_main.cc
Note: Google Test filter = Timing.EventsMeasureTheKernel
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from Timing
[ RUN      ] Timing.EventsMeasureTheKernel
[       OK ] Timing.EventsMeasureTheKernel (0 ms)
[----------] 1 test from Timing (0 ms total)

[----------] Global test environment tear-down
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 1 test.
</system-out>
	</testcase>
	<testcase name="d01.lab.Timing.Hangs" classname="d01.lab.Timing.Hangs" time="2.00643" status="fail">
		<failure message=""/>
		<system-out>Running main() from ./googletest/src/gtest_main.cc
Note: Google Test filter = Timing.Hangs
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from Timing
[ RUN      ] Timing.Hangs
</system-out>
	</testcase>
	<testcase name="d01.lab.Timing.Crashes" classname="d01.lab.Timing.Crashes" time="0.00475818" status="fail">
		<failure message=""/>
		<system-out>Running main() from ./googletest/src/gtest_main.cc
Note: Google Test filter = Timing.Crashes
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from Timing
[ RUN      ] Timing.Crashes
</system-out>
	</testcase>
	<testcase name="d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31  # GetParam() = 31" classname="d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31  # GetParam() = 31" time="0.00435251" status="fail">
		<failure message=""/>
		<system-out>Running main() from ./googletest/src/gtest_main.cc
Note: Google Test filter = Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31
[==========] Running 1 test from 1 test suite.
[----------] Global test environment set-up.
[----------] 1 test from Sizes/VectorAdd
[ RUN      ] Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31
/tmp/gfix/t.cpp:9: Failure
Failed
No element of output was written: the kernel did not run or wrote somewhere else. Is the TODO still there? Did the launch fail (grid of 0 blocks, too many threads)?
  relative L2 error 0 (allowed 1e-05); 0 mismatched, 31 never written, 0 NaN/Inf, of 31 elements
  first bad element 0: expected 1.5, got &lt;never written&gt;
  (random inputs from seed 42; rerun with COURSE_SEED=42 to get the same ones)
[  FAILED  ] Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31, where GetParam() = 31 (0 ms)
[----------] 1 test from Sizes/VectorAdd (0 ms total)

[----------] Global test environment tear-down
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  FAILED  ] 1 test, listed below:
[  FAILED  ] Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31, where GetParam() = 31

 1 FAILED TEST
</system-out>
	</testcase>
</testsuite>
)fixture";

// ctest's console output of the same run.
const char* const kConsoleFailures = R"fixture(Internal ctest changing into directory: /tmp/gfix/b
Test project /tmp/gfix/b
    Start 1: d01.lab.Saxpy.IsCorrectForAnyGrid
    Start 2: d01.lab.DeviceQuery.AgreesWithTheDriver
1/6 Test #1: d01.lab.Saxpy.IsCorrectForAnyGrid ................................................***Failed    0.01 sec
    Start 3: d01.lab.Timing.EventsMeasureTheKernel
2/6 Test #2: d01.lab.DeviceQuery.AgreesWithTheDriver ..........................................***Failed    0.01 sec
    Start 4: d01.lab.Timing.Hangs
3/6 Test #3: d01.lab.Timing.EventsMeasureTheKernel ............................................   Passed    0.01 sec
    Start 5: d01.lab.Timing.Crashes
4/6 Test #5: d01.lab.Timing.Crashes ...........................................................***Exception: SegFault  0.00 sec
    Start 6: d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31  # GetParam() = 31
5/6 Test #6: d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31  # GetParam() = 31 ...***Failed    0.00 sec
6/6 Test #4: d01.lab.Timing.Hangs .............................................................***Timeout   2.01 sec

17% tests passed, 5 tests failed out of 6

Total Test time (real) =   2.02 sec

The following tests FAILED:
	  1 - d01.lab.Saxpy.IsCorrectForAnyGrid (Failed)
	  2 - d01.lab.DeviceQuery.AgreesWithTheDriver (Failed)
	  4 - d01.lab.Timing.Hangs (Timeout)
	  5 - d01.lab.Timing.Crashes (SEGFAULT)
	  6 - d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31  # GetParam() = 31 (Failed)
Errors while running CTest
Output from these tests are in: /tmp/gfix/b/Testing/Temporary/LastTest.log
Use "--rerun-failed --output-on-failure" to re-run the failed cases verbosely.
)fixture";

// ctest --output-junit for tests that did not run: DISABLED, a missing executable, and
// SKIP_RETURN_CODE 77.
const char* const kJunitNotRun = R"fixture(<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)"
	tests="3"
	failures="0"
	disabled="1"
	skipped="2"
	hostname=""
	time="1"
	timestamp="2026-11-22T18:40:14"
	>
	<testcase name="d09.lab.Disabled.Off" classname="d09.lab.Disabled.Off" time="0" status="disabled">
		<system-out>Disabled</system-out>
	</testcase>
	<testcase name="d09.lab.Missing.Exe" classname="d09.lab.Missing.Exe" time="0" status="notrun">
		<skipped message="Unable to find executable"/>
		<system-out>Unable to find executable: /nonexistent/binary</system-out>
	</testcase>
	<testcase name="d09.lab.Skip77.Code" classname="d09.lab.Skip77.Code" time="0.00255834" status="notrun">
		<skipped message="SKIP_RETURN_CODE=77"/>
		<system-out></system-out>
	</testcase>
</testsuite>
)fixture";

// A Google Benchmark 1.7.1 JSON file with the course's counters and one SkipWithError.
const char* const kBenchmarkJson = R"fixture({
  "context": {
    "date": "2026-11-22T18:42:21+00:00",
    "host_name": "vm",
    "executable": "./b",
    "num_cpus": 2,
    "mhz_per_cpu": 2596,
    "cpu_scaling_enabled": false,
    "caches": [
      {
        "type": "Data",
        "level": 1,
        "size": 49152,
        "num_sharing": 1
      },
      {
        "type": "Instruction",
        "level": 1,
        "size": 32768,
        "num_sharing": 1
      },
      {
        "type": "Unified",
        "level": 2,
        "size": 1048576,
        "num_sharing": 1
      },
      {
        "type": "Unified",
        "level": 3,
        "size": 33554432,
        "num_sharing": 2
      }
    ],
    "load_avg": [0.097168,0.0454102,0.00683594],
    "library_build_type": "debug",
    "copy_ceiling_GBps": "3003.000000",
    "device": "NVIDIA H100 \"fake\""
  },
  "benchmarks": [
    {
      "name": "BM_vector_add/67108864/min_time:0.010/manual_time",
      "family_index": 0,
      "per_family_instance_index": 0,
      "run_name": "BM_vector_add/67108864/min_time:0.010/manual_time",
      "run_type": "iteration",
      "repetitions": 1,
      "repetition_index": 0,
      "threads": 1,
      "iterations": 2,
      "real_time": 6.4000000000000000e+03,
      "cpu_time": 3.4549999999985637e-01,
      "time_unit": "us",
      "%copy": 3.3000000000000000e+01,
      "GB/s": 9.9110000000000002e+02,
      "key": 1.0000000000000000e+00,
      "median_us": 8.1250000000000000e+02,
      "spread_%": 1.2500000000000000e+00
    },
    {
      "name": "BM_saxpy/n:67108864/blocks:0/manual_time",
      "family_index": 1,
      "per_family_instance_index": 0,
      "run_name": "BM_saxpy/n:67108864/blocks:0/manual_time",
      "run_type": "iteration",
      "repetitions": 1,
      "repetition_index": 0,
      "threads": 1,
      "error_occurred": true,
      "error_message": "output does not match the reference, not timed: sampled output: element 0 of 65537: expected 1.5, got nan (never written)",
      "iterations": 1,
      "real_time": 0.0000000000000000e+00,
      "cpu_time": 0.0000000000000000e+00,
      "time_unit": "us"
    }
  ]
}
)fixture";

// `cmake --build` output when the student's kernel.cu does not compile (source tree /tmp/mc).
const char* const kBuildLogNvccError = R"fixture([0/2] Re-checking globbed directories...
[1/3] Building CUDA object labs/d01_first_kernels/CMakeFiles/d01_lab_kernel.dir/kernel.cu.o
FAILED: labs/d01_first_kernels/CMakeFiles/d01_lab_kernel.dir/kernel.cu.o 
/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler  -I/tmp/mc/labs/d01_first_kernels -I/tmp/mc/common -isystem=/usr/local/cuda/include -O3 -DNDEBUG --generate-code=arch=compute_90,code=[compute_90,sm_90] -Xcompiler=-fPIC -lineinfo -Xptxas=-warn-spills -std=c++17 -MD -MT labs/d01_first_kernels/CMakeFiles/d01_lab_kernel.dir/kernel.cu.o -MF labs/d01_first_kernels/CMakeFiles/d01_lab_kernel.dir/kernel.cu.o.d -x cu -c /tmp/mc/labs/d01_first_kernels/kernel.cu -o labs/d01_first_kernels/CMakeFiles/d01_lab_kernel.dir/kernel.cu.o
/tmp/mc/labs/d01_first_kernels/kernel.cu(23): error: identifier "bb" is undefined
    int i = blockIdx.x * blockDim.x + threadIdx.x; c[i] = a[i] + bb[i];
                                                                 ^

1 error detected in the compilation of "/tmp/mc/labs/d01_first_kernels/kernel.cu".
ninja: build stopped: subcommand failed.
)fixture";

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

Day day1() {
  Day d;
  d.day = "d01";
  d.name = "d01_first_kernels";
  d.title = "Programming model, first kernels, honest timing";
  d.exercises = {"VectorAdd", "Saxpy", "DeviceQuery", "Timing"};
  d.lab_source = "/src/labs/d01_first_kernels/kernel.cu";
  return d;
}

TestResult result(const std::string& name, Outcome outcome, const std::string& output = "") {
  TestResult r;
  r.name = name;
  r.outcome = outcome;
  r.output = output;
  return r;
}

CheckReportContext report_context() {
  CheckReportContext c;
  c.source = "labs/d01_first_kernels/kernel.cu";
  c.lesson = "lessons/d01_first_kernels.md";
  c.build_dir = "build/dev";
  c.results_file = "build/dev/course-results/d01.check.json";
  return c;
}

// ============================================================================ JSON

TEST(Json, ParsesScalars) {
  EXPECT_TRUE(parse_json("null")->is_null());
  EXPECT_TRUE(parse_json(" true ")->as_bool());
  EXPECT_FALSE(parse_json("false")->as_bool());
  EXPECT_DOUBLE_EQ(parse_json("-12.5e2")->as_number(), -1250.0);
  EXPECT_DOUBLE_EQ(parse_json("0")->as_number(), 0.0);
  EXPECT_DOUBLE_EQ(parse_json("1.5E-2")->as_number(), 0.015);
  EXPECT_EQ(parse_json("\"hi\"")->as_string(), "hi");
}

TEST(Json, ParsesNestedObjectsAndArraysInOrder) {
  const auto doc = parse_json(R"({"b": [1, {"c": [true, null, []]}, "x"], "a": {}, "n": 2.5})");
  ASSERT_TRUE(doc);
  ASSERT_TRUE(doc->is_object());
  ASSERT_EQ(doc->members().size(), 3u);
  EXPECT_EQ(doc->members()[0].first, "b");  // order kept, not sorted
  const JsonValue* b = doc->get("b");
  ASSERT_TRUE(b && b->is_array());
  EXPECT_EQ(b->size(), 3u);
  EXPECT_TRUE(b->at(1).get("c")->at(0).as_bool());
  EXPECT_TRUE(b->at(1).get("c")->at(1).is_null());
  EXPECT_EQ(b->at(1).get("c")->at(2).size(), 0u);
  EXPECT_EQ(b->at(2).as_string(), "x");
  EXPECT_DOUBLE_EQ(doc->number_or("n", 0), 2.5);
  EXPECT_DOUBLE_EQ(doc->number_or("missing", 7), 7);
  EXPECT_EQ(doc->string_or("n", "not a string"), "not a string");
  EXPECT_EQ(doc->get("missing"), nullptr);
}

TEST(Json, DecodesEveryEscape) {
  const auto s = parse_json(R"("q\" b\\ s\/ \b\f\n\r\t \u00e9 \u20ac \ud83d\ude00")");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->as_string(), "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
}

TEST(Json, AcceptsTheNonFiniteNumbersGoogleBenchmarkWrites) {
  const auto doc = parse_json(R"({"a": NaN, "b": Infinity, "c": -Infinity})");
  ASSERT_TRUE(doc);
  EXPECT_TRUE(std::isnan(doc->number_or("a", 0)));
  EXPECT_TRUE(std::isinf(doc->number_or("b", 0)) && doc->number_or("b", 0) > 0);
  EXPECT_TRUE(std::isinf(doc->number_or("c", 0)) && doc->number_or("c", 0) < 0);
}

struct MalformedJson {
  const char* text;
  std::size_t line;
  std::size_t column;
  const char* says;
};

TEST(Json, RejectsMalformedInputAndSaysWhere) {
  const MalformedJson cases[] = {
      {"", 1, 1, "unexpected end of input"},
      {"{\"a\": 1,}", 1, 9, "expected a string key"},
      {"[1 2]", 1, 4, "expected ',' or ']'"},
      {"{\"a\" 1}", 1, 6, "expected ':'"},
      {"{\n  \"a\": [1,\n  2,\n", 4, 1, "unexpected end of input"},
      {"\"abc", 1, 5, "unterminated string"},
      {"\"a\nb\"", 1, 3, "control character"},
      {"\"\\x\"", 1, 2, "unknown escape"},
      {"\"\\u12g4\"", 1, 6, "hex digits"},
      {"\"\\udc00\"", 1, 2, "lone low surrogate"},
      {"\"\\ud83d x\"", 1, 2, "high surrogate must be followed"},
      {"tru", 1, 1, "unexpected character"},
      {"01", 1, 2, "after the end"},
      {"-", 1, 2, "expected a digit"},
      {"1.", 1, 3, "after the decimal point"},
      {"1e+", 1, 4, "exponent"},
      {"[] []", 1, 4, "after the end"},
  };
  for (const MalformedJson& c : cases) {
    ParseError error;
    EXPECT_FALSE(parse_json(c.text, &error)) << c.text;
    EXPECT_EQ(error.line, c.line) << c.text << ": " << error.describe();
    EXPECT_EQ(error.column, c.column) << c.text << ": " << error.describe();
    EXPECT_TRUE(contains(error.message, c.says)) << c.text << ": " << error.describe();
  }
}

TEST(Json, RefusesHostileNestingWithoutCrashing) {
  const std::string deep(100000, '[');
  ParseError error;
  EXPECT_FALSE(parse_json(deep, &error));
  EXPECT_TRUE(contains(error.message, "nested deeper")) << error.describe();
}

TEST(Json, WriterOutputReadsBackTheSame) {
  JsonValue doc = JsonValue::object();
  doc.set("text", JsonValue::string("tab\t \"quoted\" back\\slash \x01 é"));
  doc.set("int", JsonValue::number(40));
  doc.set("fraction", JsonValue::number(0.005077));
  doc.set("nan", JsonValue::number(std::nan("")));
  JsonValue list = JsonValue::array();
  list.push_back(JsonValue::boolean(true));
  list.push_back(JsonValue());
  list.push_back(JsonValue::object());
  doc.set("list", list);
  doc.set("int", JsonValue::number(41));  // set() replaces
  for (int indent : {0, 2}) {
    const std::string text = to_json(doc, indent);
    const auto back = parse_json(text);
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(back->string_or("text", ""), "tab\t \"quoted\" back\\slash \x01 é");
    EXPECT_EQ(back->number_or("int", 0), 41);
    EXPECT_EQ(back->number_or("fraction", 0), 0.005077);
    EXPECT_TRUE(back->get("nan")->is_null());  // JSON has no NaN
    EXPECT_EQ(back->get("list")->size(), 3u);
    EXPECT_EQ(back->members().size(), 5u);
  }
  EXPECT_TRUE(contains(to_json(doc, 2), "\"fraction\": 0.005077"));
}

// ============================================================================ XML

TEST(Xml, ParsesElementsAttributesEntitiesAndCdata) {
  const auto root = parse_xml(
      "<?xml version=\"1.0\"?>\n<!-- a comment -->\n<a x='1' y=\"&lt;&amp;&quot;&#65;&#x42;\">"
      "text &gt; more<b/><c k=\"v\"><![CDATA[<raw & stuff>]]></c><!-- inner --></a>\n");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->name, "a");
  EXPECT_EQ(root->attribute_or("x", ""), "1");
  EXPECT_EQ(root->attribute_or("y", ""), "<&\"AB");
  EXPECT_EQ(root->text, "text > more");
  ASSERT_EQ(root->children.size(), 2u);
  EXPECT_EQ(root->children[0].name, "b");
  EXPECT_EQ(root->child("c")->attribute_or("k", ""), "v");
  EXPECT_EQ(root->child("c")->text, "<raw & stuff>");
  EXPECT_EQ(root->child("missing"), nullptr);
}

TEST(Xml, RejectsMalformedDocumentsAndSaysWhere) {
  const struct {
    const char* text;
    std::size_t line;
    const char* says;
  } cases[] = {
      {"", 1, "no root element"},
      {"<a><b></a>", 1, "</a> closes <b>"},
      {"<a>\n<b>\n", 3, "never closed"},
      {"<a x=1/>", 1, "quoted value"},
      {"<a>&bogus;</a>", 1, "unknown entity"},
      {"<a>AT&T</a>", 1, "entity"},
      {"<a></a><b/>", 1, "after the root element"},
      {"<a><!-- never ends", 1, "unterminated comment"},
  };
  for (const auto& c : cases) {
    ParseError error;
    EXPECT_FALSE(parse_xml(c.text, &error)) << c.text;
    EXPECT_EQ(error.line, c.line) << c.text << ": " << error.describe();
    EXPECT_TRUE(contains(error.message, c.says)) << c.text << ": " << error.describe();
  }
}

// ============================================================================ ctest JUnit

TEST(CtestJunit, ReadsDay1WithoutAGpuAsSkipped) {
  ParseError error;
  const auto results = parse_ctest_junit(kJunitDay1NoGpu, &error);
  ASSERT_TRUE(results) << error.describe();
  ASSERT_EQ(results->size(), 4u);
  EXPECT_EQ((*results)[0].name, "d01.lab.Timing.HostClockWithoutSyncMeasuresOnlyTheLaunch");
  for (const TestResult& r : *results) {
    EXPECT_EQ(r.outcome, Outcome::Skipped) << r.name;
    EXPECT_TRUE(contains(r.output, "[  SKIPPED ]")) << r.name;
  }
  EXPECT_EQ(skip_reason((*results)[0].output),
            "no usable CUDA device (CUDA driver version is insufficient for CUDA runtime version): this test "
            "needs a CUDA GPU");
}

TEST(CtestJunit, TellsFailuresFromCrashesAndTimeouts) {
  auto results = parse_ctest_junit(kJunitFailures);
  ASSERT_TRUE(results);
  ASSERT_EQ(results->size(), 6u);
  const auto& r = *results;
  EXPECT_EQ(r[0].outcome, Outcome::Failed);   // Saxpy: a harness comparison
  EXPECT_EQ(r[1].outcome, Outcome::Failed);   // DeviceQuery: EXPECT_EQ
  EXPECT_EQ(r[2].outcome, Outcome::Passed);
  EXPECT_EQ(r[3].outcome, Outcome::Crashed);  // Hangs: killed by the timeout
  EXPECT_EQ(r[4].outcome, Outcome::Crashed);  // Crashes: SIGSEGV
  EXPECT_EQ(r[5].outcome, Outcome::Failed);
  EXPECT_NEAR(r[3].seconds, 2.006, 0.001);

  apply_ctest_console(kConsoleFailures, *results);
  EXPECT_EQ(r[3].detail, "Timeout");
  EXPECT_EQ(r[4].detail, "Exception: SegFault");
  // The long parameterised name is matched through ctest's "Start N:" line.
  EXPECT_EQ(r[5].detail, "Failed");
  EXPECT_EQ(r[2].detail, "");
}

TEST(CtestJunit, FirstFailureIsTheHarnessSentence) {
  auto results = parse_ctest_junit(kJunitFailures);
  ASSERT_TRUE(results);
  apply_ctest_console(kConsoleFailures, *results);

  const FailureText unwritten = first_failure((*results)[5]);
  EXPECT_EQ(unwritten.where, "t.cpp:9");
  EXPECT_TRUE(starts_with(unwritten.message, "No element of output was written: the kernel did not run"))
      << unwritten.message;
  EXPECT_TRUE(contains(unwritten.message, "got <never written>")) << unwritten.message;  // entities decoded
  EXPECT_FALSE(contains(unwritten.message, "[  FAILED  ]"));

  const FailureText tail = first_failure((*results)[0]);
  EXPECT_TRUE(starts_with(tail.message, "The first 97 elements of y (grid of 1 blocks of 32 threads) are right"))
      << tail.message;

  const FailureText eq = first_failure((*results)[1]);
  EXPECT_EQ(eq.where, "t.cpp:20");
  EXPECT_TRUE(starts_with(eq.message, "Expected equality of these values:")) << eq.message;
  EXPECT_TRUE(contains(eq.message, "sm_count: cudaDeviceProp::multiProcessorCount")) << eq.message;

  const FailureText hang = first_failure((*results)[3]);
  EXPECT_TRUE(starts_with(hang.message, "timed out after 2 s")) << hang.message;
  EXPECT_TRUE(contains(hang.message, "[ RUN      ] Timing.Hangs")) << hang.message;

  const FailureText segv = first_failure((*results)[4]);
  EXPECT_TRUE(starts_with(segv.message, "the test process crashed (Exception: SegFault)")) << segv.message;
}

TEST(CtestJunit, FirstFailureIsCutAfterMaxLines) {
  const TestResult r = result("d01.lab.A.B", Outcome::Failed,
                              "x.cu:1: Failure\nFailed\nl1\nl2\nl3\nl4\n[  FAILED  ] A.B\n");
  EXPECT_EQ(first_failure(r, 2).message, "l1\nl2\n...");
  EXPECT_EQ(first_failure(r, 8).message, "l1\nl2\nl3\nl4");
}

TEST(CtestJunit, DisabledMissingAndReturnCodeSkips) {
  const auto results = parse_ctest_junit(kJunitNotRun);
  ASSERT_TRUE(results);
  ASSERT_EQ(results->size(), 3u);
  EXPECT_EQ((*results)[0].outcome, Outcome::NotRun);
  EXPECT_EQ((*results)[0].detail, "Disabled");
  EXPECT_EQ((*results)[1].outcome, Outcome::NotRun);
  EXPECT_EQ((*results)[1].detail, "Unable to find executable");
  EXPECT_EQ((*results)[2].outcome, Outcome::Skipped);
  EXPECT_TRUE(contains(first_failure((*results)[1]).message, "did not run (Unable to find executable)"));
}

TEST(CtestJunit, MalformedOrForeignXmlIsAnErrorNotACrash) {
  ParseError error;
  const std::string cut = std::string(kJunitFailures).substr(0, 700);
  EXPECT_FALSE(parse_ctest_junit(cut, &error));
  EXPECT_GT(error.line, 1u);
  EXPECT_FALSE(error.message.empty());
  EXPECT_FALSE(parse_ctest_junit("<html><body/></html>", &error));
  EXPECT_TRUE(contains(error.message, "not a JUnit <testsuite>")) << error.message;
  const auto empty = parse_ctest_junit("<testsuite tests=\"0\"></testsuite>");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

// ============================================================================ days and the manifest

TEST(DayArgument, AcceptsTheUsualSpellings) {
  for (const char* s : {"d02", "D02", "d2", "2", "02", "day2", "Day02", " d02 ", "d02_coalescing"})
    EXPECT_EQ(parse_day(s).value_or("?"), "d02") << s;
  EXPECT_EQ(parse_day("14").value_or("?"), "d14");
  EXPECT_EQ(parse_day("d1").value_or("?"), "d01");
}

TEST(DayArgument, RefusesAnythingElse) {
  for (const char* s : {"", "d", "x", "123", "d123", "d1x", "-1", "2.0", "day", "coalescing", "d 2"})
    EXPECT_FALSE(parse_day(s)) << s;
}

TEST(Manifest, ReadsTheLinesCourseCmakeWrites) {
  std::string error;
  const auto m = parse_manifest(
      "# day\tname\ttitle\texercises\tlab_source\n"
      "d01\td01_first_kernels\tProgramming model, first kernels\tVectorAdd,Saxpy,DeviceQuery,Timing\t/s/labs/d01_first_kernels/kernel.cu\n"
      "\n"
      "d05\td05_warp_programming\tWarps\tWarpSoftmax\t/s/labs/d05_warp_programming/kernel.cu\n",
      &error);
  ASSERT_TRUE(m) << error;
  ASSERT_EQ(m->days.size(), 2u);
  EXPECT_EQ(m->days[0].exercises, (std::vector<std::string>{"VectorAdd", "Saxpy", "DeviceQuery", "Timing"}));
  EXPECT_EQ(m->days[0].lesson(), "lessons/d01_first_kernels.md");
  EXPECT_EQ(m->days[0].lab_dir(), "labs/d01_first_kernels");
  EXPECT_EQ(m->days[1].number(), 5);
  EXPECT_EQ(m->find("d05")->title, "Warps");
  EXPECT_EQ(m->find("d02"), nullptr);
  EXPECT_EQ(m->day_list(), "d01, d05");
}

TEST(Manifest, NamesTheBadLine) {
  std::string error;
  EXPECT_FALSE(parse_manifest("# header\nd01\tonly two\n", &error));
  EXPECT_TRUE(starts_with(error, "line 2: expected 5 tab-separated fields")) << error;
  EXPECT_FALSE(parse_manifest("x1\tx1_a\tT\tA\t/k.cu\n", &error));
  EXPECT_TRUE(contains(error, "not a day")) << error;
  EXPECT_FALSE(parse_manifest("d01\td01_a\tT\tA\t/k.cu\nd01\td01_a\tT\tA\t/k.cu\n", &error));
  EXPECT_TRUE(contains(error, "declared twice")) << error;
}

// ============================================================================ exercises

TEST(Exercises, SuiteComesFromTheTestName) {
  EXPECT_EQ(suite_of("d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31", "d01.lab."), "Sizes/VectorAdd");
  EXPECT_EQ(suite_of("d01.lab.VectorAddBounds.DoesNotWritePastTheEnd", "d01.lab."), "VectorAddBounds");
  EXPECT_EQ(suite_of("d02.lab.Typed/VectorizedCopy/0.HandlesTail", "d02.lab."), "Typed/VectorizedCopy/0");
}

TEST(Exercises, ASuiteCountsTowardTheLongestExerciseItStartsWith) {
  const std::vector<std::string> ex = {"VectorAdd", "Saxpy", "Copy", "CopyVectorized"};
  EXPECT_EQ(exercise_of("VectorAdd", ex), "VectorAdd");
  EXPECT_EQ(exercise_of("VectorAddBounds", ex), "VectorAdd");
  EXPECT_EQ(exercise_of("Sizes/VectorAdd", ex), "VectorAdd");       // instantiation prefix ignored
  EXPECT_EQ(exercise_of("Grids/Saxpy", ex), "Saxpy");
  EXPECT_EQ(exercise_of("CopyVectorizedTail", ex), "CopyVectorized");  // longest wins
  EXPECT_EQ(exercise_of("CopyNaive", ex), "Copy");
  EXPECT_EQ(exercise_of("Typed/CopyVectorized/0", ex), "CopyVectorized");
  EXPECT_EQ(exercise_of("Hidden", ex), "");
  EXPECT_EQ(exercise_of("saxpy", ex), "");  // case matters, as in GoogleTest
}

TEST(Exercises, ResultsAreTalliedInManifestOrder) {
  const std::vector<TestResult> results = {
      result("d01.lab.Timing.EventsMeasureTheKernel", Outcome::Passed),
      result("d01.lab.Grids/Saxpy.IsCorrectForAnyGrid/n1", Outcome::Failed, "t.cu:3: Failure\nFailed\nsaxpy is wrong\n"),
      result("d01.lab.Grids/Saxpy.IsCorrectForAnyGrid/n2", Outcome::Crashed),
      result("d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n1", Outcome::Passed),
      result("d01.lab.VectorAddBounds.DoesNotWritePastTheEnd", Outcome::Passed),
      result("d01.lab.Hidden.InstructorTest", Outcome::Failed),
      result("d01.solution.Grids/Saxpy.IsCorrectForAnyGrid/n1", Outcome::Passed),  // not a lab test
  };
  const CheckSummary s = summarize(day1(), results);
  ASSERT_EQ(s.exercises.size(), 5u);
  EXPECT_EQ(s.exercises[0].name, "VectorAdd");
  EXPECT_EQ(s.exercises[0].passed, 2);
  EXPECT_STREQ(s.exercises[0].mark(), "✓");
  EXPECT_EQ(s.exercises[1].name, "Saxpy");
  EXPECT_EQ(s.exercises[1].failed, 2);
  EXPECT_STREQ(s.exercises[1].mark(), "✗");
  EXPECT_EQ(s.exercises[1].first_failure->name, "d01.lab.Grids/Saxpy.IsCorrectForAnyGrid/n1");
  EXPECT_STREQ(s.exercises[2].mark(), "–");  // DeviceQuery: nothing ran
  EXPECT_EQ(s.exercises[4].name, "");       // the instructor's extra suite
  EXPECT_EQ(s.exercises[4].failed, 1);
  EXPECT_EQ(s.passed, 3);
  EXPECT_EQ(s.failed, 3);
  EXPECT_EQ(s.verdict, Verdict::Failed);
  EXPECT_EQ(s.first_failing()->name, "Saxpy");
}

// ============================================================================ check: decisions

TEST(CheckReport, AllSkippedSaysNoGpuNotPassed) {
  const auto results = parse_ctest_junit(kJunitDay1NoGpu);
  ASSERT_TRUE(results);
  const CheckSummary s = summarize(day1(), *results);
  EXPECT_EQ(s.verdict, Verdict::Skipped);
  EXPECT_EQ(exit_code_for(s.verdict), 3);
  EXPECT_TRUE(skipped_for_lack_of_gpu(s));
  const std::string text = render_check(day1(), s, report_context());
  EXPECT_TRUE(contains(text, "No GPU here: all 4 tests were SKIPPED, which is not the same as passed.")) << text;
  EXPECT_TRUE(contains(text, "Your code compiles.")) << text;
  EXPECT_TRUE(contains(text, "check d01")) << text;
  EXPECT_TRUE(contains(text, "–  1 VectorAdd")) << text;
  EXPECT_FALSE(contains(text, "✓")) << text;
  EXPECT_FALSE(contains(text, "Next: fix")) << text;
}

TEST(CheckReport, SkippedForAnotherReasonDoesNotBlameTheGpu) {
  CheckSummary s = summarize(day1(), {result("d01.lab.Timing.X", Outcome::Skipped,
                                             "a.cu:1: Skipped\nneeds sm_90a (wgmma)\n[  SKIPPED ] X\n")});
  EXPECT_EQ(s.skip_reason, "needs sm_90a (wgmma)");
  EXPECT_FALSE(skipped_for_lack_of_gpu(s));
  EXPECT_EQ(exit_code_for(s.verdict), 3);
  const std::string text = render_check(day1(), s, report_context());
  EXPECT_FALSE(contains(text, "No GPU")) << text;
  EXPECT_TRUE(contains(text, "skipped (not passed): needs sm_90a (wgmma)")) << text;
}

TEST(CheckReport, FailureNamesTheExerciseTheLessonAndTheSentence) {
  auto results = parse_ctest_junit(kJunitFailures);
  ASSERT_TRUE(results);
  apply_ctest_console(kConsoleFailures, *results);
  const CheckSummary s = summarize(day1(), *results);
  EXPECT_EQ(s.verdict, Verdict::Failed);
  EXPECT_EQ(exit_code_for(s.verdict), 1);
  const std::string text = render_check(day1(), s, report_context());
  // VectorAdd comes first in the manifest, although ctest ran Saxpy first.
  EXPECT_TRUE(contains(text, "First failure: d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31")) << text;
  EXPECT_TRUE(contains(text, "[t.cpp:9]")) << text;
  EXPECT_TRUE(contains(text, "    No element of output was written")) << text;
  EXPECT_TRUE(contains(text, "Next: fix exercise 1 (VectorAdd) in labs/d01_first_kernels/kernel.cu")) << text;
  EXPECT_TRUE(contains(text, "TODO(d01.1)")) << text;
  EXPECT_TRUE(contains(text, "see lessons/d01_first_kernels.md")) << text;
  EXPECT_TRUE(contains(text, "ctest --test-dir build/dev -R '^d01\\.lab\\.Sizes/VectorAdd\\.")) << text;
  EXPECT_TRUE(contains(text, "✗  1 VectorAdd")) << text;
  EXPECT_TRUE(contains(text, "✗  4 Timing")) << text;  // one passed, two crashed
}

TEST(CheckReport, AllPassedPointsToTheBenchmarkAndTheNextDay) {
  Day next = day1();
  next.day = "d02";
  next.name = "d02_coalescing";
  CheckReportContext context = report_context();
  context.next_day = &next;
  const CheckSummary s = summarize(day1(), {result("d01.lab.Saxpy.A", Outcome::Passed),
                                            result("d01.lab.VectorAdd.B", Outcome::Passed),
                                            result("d01.lab.Timing.C", Outcome::Skipped)});
  EXPECT_EQ(s.verdict, Verdict::Passed);  // a skip among passes does not spoil the verdict
  EXPECT_EQ(exit_code_for(s.verdict), 0);
  const std::string text = render_check(day1(), s, context);
  EXPECT_TRUE(contains(text, "All 2 tests of Day 1 pass (1 test skipped, not passed)")) << text;
  EXPECT_TRUE(contains(text, "course bench d01")) << text;
  EXPECT_TRUE(contains(text, "Day 2: lessons/d02_coalescing.md")) << text;
}

TEST(CheckReport, NoTestsIsAnErrorOfTheSetup) {
  const CheckSummary s = summarize(day1(), {result("d02.lab.Other.Day", Outcome::Passed)});
  EXPECT_EQ(s.verdict, Verdict::NoTests);
  EXPECT_EQ(exit_code_for(s.verdict), 2);
  EXPECT_TRUE(contains(render_check(day1(), s, report_context()), "No test of d01 ran"));
}

TEST(CheckReport, VerdictNamesRoundTrip) {
  for (Verdict v : {Verdict::Passed, Verdict::Failed, Verdict::Skipped, Verdict::NoTests})
    EXPECT_EQ(verdict_from_string(to_string(v)), v);
}

// ============================================================================ build failures

TEST(BuildFailure, NvccErrorNamesTheStudentsFileAndLine) {
  const BuildFailure f = first_build_error(kBuildLogNvccError, "/tmp/mc");
  EXPECT_EQ(f.file, "labs/d01_first_kernels/kernel.cu");
  EXPECT_EQ(f.line, 23);
  EXPECT_TRUE(starts_with(f.first_lines, "/tmp/mc/labs/d01_first_kernels/kernel.cu(23): error: identifier \"bb\" is undefined"))
      << f.first_lines;
  EXPECT_FALSE(contains(f.first_lines, "ninja: build stopped")) << f.first_lines;
  CheckReportContext context = report_context();
  const std::string text = render_build_failure(day1(), f, context, "build/dev/course-results/d01.build.log");
  EXPECT_TRUE(contains(text, "fix labs/d01_first_kernels/kernel.cu, line 23 first.")) << text;
  EXPECT_FALSE(contains(text, "not your kernel")) << text;
  EXPECT_TRUE(contains(text, "then `course check d01` again")) << text;
  EXPECT_TRUE(contains(render_build_failure(day1(), f, context, "", "bench"), "then `course bench d01` again"));
}

TEST(BuildFailure, GccErrorInAnotherFileSaysSo) {
  const BuildFailure f = first_build_error(
      "[1/2] Building CXX object x.o\nFAILED: x.o\n/src/labs/d01_first_kernels/lab.h:12:5: error: expected ';'\n"
      "   12 | int x\n      |     ^\n",
      "/src");
  EXPECT_EQ(f.file, "labs/d01_first_kernels/lab.h");
  EXPECT_EQ(f.line, 12);
  const std::string text = render_build_failure(day1(), f, report_context(), "");
  EXPECT_TRUE(contains(text, "that is not your kernel")) << text;
}

TEST(BuildFailure, LinkErrorsAreShownToo) {
  const BuildFailure f = first_build_error(
      "[3/3] Linking CXX executable d01_lab_tests\nFAILED: d01_lab_tests\n"
      "/usr/bin/ld: test_d01.cu.o: in function `f':\n"
      "test_d01.cu:(.text+0x1): undefined reference to `d01::saxpy(float, float const*, float*, long, int, int)'\n"
      "collect2: error: ld returned 1 exit status\n",
      "/src");
  EXPECT_EQ(f.file, "");
  EXPECT_TRUE(starts_with(f.first_lines, "test_d01.cu:(.text+0x1): undefined reference to")) << f.first_lines;
}

// ============================================================================ bench

TEST(Bench, ReadsGoogleBenchmarkJson) {
  ParseError error;
  const auto run = parse_benchmark_json(kBenchmarkJson, &error);
  ASSERT_TRUE(run) << error.describe();
  EXPECT_EQ(run->device, "NVIDIA H100 \"fake\"");
  EXPECT_DOUBLE_EQ(run->copy_ceiling_gbs, 3003.0);
  ASSERT_EQ(run->rows.size(), 2u);
  const BenchRow& add = run->rows[0];
  EXPECT_EQ(add.name, "BM_vector_add/67108864");
  EXPECT_TRUE(add.key);
  EXPECT_TRUE(add.error.empty());
  EXPECT_DOUBLE_EQ(add.median_us, 812.5);
  EXPECT_DOUBLE_EQ(add.gb_per_s, 991.1);
  EXPECT_DOUBLE_EQ(add.pct_copy, 33.0);
  EXPECT_TRUE(std::isnan(add.tflop_per_s));
  const BenchRow& saxpy = run->rows[1];
  EXPECT_EQ(saxpy.name, "BM_saxpy/n:67108864/blocks:0");
  EXPECT_TRUE(starts_with(saxpy.error, "output does not match the reference, not timed:")) << saxpy.error;
  EXPECT_EQ(count_errors(*run), 1);
}

TEST(Bench, MalformedJsonIsAnErrorWithAPosition) {
  ParseError error;
  EXPECT_FALSE(parse_benchmark_json("{\"benchmarks\": [", &error));
  EXPECT_EQ(error.line, 1u);
  EXPECT_FALSE(parse_benchmark_json("{\"context\": {}}", &error));
  EXPECT_TRUE(contains(error.message, "no \"benchmarks\" array")) << error.message;
  EXPECT_FALSE(parse_benchmark_json("{\"benchmarks\": [1]}", &error));
}

TEST(Bench, MedianAggregateWinsOverRepetitions) {
  const auto run = parse_benchmark_json(R"({"benchmarks": [
    {"name": "BM_a/8/manual_time", "run_name": "BM_a/8/manual_time", "run_type": "iteration", "median_us": 10},
    {"name": "BM_a/8/manual_time", "run_name": "BM_a/8/manual_time", "run_type": "iteration", "median_us": 30},
    {"name": "BM_a/8/manual_time_mean", "run_name": "BM_a/8/manual_time", "run_type": "aggregate", "aggregate_name": "mean", "median_us": 20},
    {"name": "BM_a/8/manual_time_median", "run_name": "BM_a/8/manual_time", "run_type": "aggregate", "aggregate_name": "median", "median_us": 11}
  ]})");
  ASSERT_TRUE(run);
  ASSERT_EQ(run->rows.size(), 1u);
  EXPECT_EQ(run->rows[0].name, "BM_a/8");
  EXPECT_DOUBLE_EQ(run->rows[0].median_us, 11);
}

TEST(Bench, DisplayNamesDropHowTheRunWasTimed) {
  EXPECT_EQ(benchmark_display_name("BM_vector_add/1048576/min_time:0.200/manual_time"), "BM_vector_add/1048576");
  EXPECT_EQ(benchmark_display_name("BM_saxpy/n:67108864/blocks:0/real_time"), "BM_saxpy/n:67108864/blocks:0");
  EXPECT_EQ(benchmark_display_name("BM_x/threads:2"), "BM_x/threads:2");
}

TEST(Bench, TableShowsBothSidesTheRatioAndErrors) {
  BenchRun yours, solution;
  BenchRow a;
  a.name = "BM_vector_add/67108864";
  a.key = true;
  a.median_us = 1000;
  a.gb_per_s = 805.3;
  a.pct_copy = 26.8;
  BenchRow a_sol = a;
  a_sol.median_us = 280;
  a_sol.gb_per_s = 2876;
  a_sol.pct_copy = 95.8;
  BenchRow b;
  b.name = "BM_saxpy/n:67108864/blocks:1";
  b.error = "output does not match the reference, not timed: element 0 never written";
  BenchRow b_sol;
  b_sol.name = b.name;
  b_sol.median_us = 5000;
  b_sol.gb_per_s = 161;
  b_sol.pct_copy = 5.4;
  yours.rows = {a, b};
  solution.rows = {a_sol, b_sol};
  EXPECT_NEAR(speed_ratio(a, a_sol), 0.28, 1e-12);
  EXPECT_TRUE(std::isnan(speed_ratio(b, b_sol)));
  const std::string table = render_bench_table(yours, solution);
  EXPECT_TRUE(contains(table, "benchmark")) << table;
  EXPECT_TRUE(contains(table, "your median_us")) << table;
  EXPECT_TRUE(contains(table, "solution GB/s")) << table;
  EXPECT_TRUE(contains(table, "yours/solution")) << table;
  EXPECT_TRUE(contains(table, "BM_vector_add/67108864 *")) << table;
  EXPECT_TRUE(contains(table, "0.28x")) << table;
  EXPECT_TRUE(contains(table, "2876")) << table;
  EXPECT_TRUE(contains(table, "error [1]")) << table;
  EXPECT_TRUE(contains(table, "[1] BM_saxpy/n:67108864/blocks:1 (yours): output does not match the reference")) << table;
  EXPECT_FALSE(contains(table, "TFLOP/s")) << table;  // no benchmark reports FLOPs
}

// ============================================================================ status

TEST(Status, StateDecisions) {
  DayFacts f;
  EXPECT_EQ(decide_state(f), DayState::NotStarted);  // never checked
  f.check_verdict = "skipped";
  EXPECT_EQ(decide_state(f), DayState::CompiledNoGpu);
  f.kernel_untouched = true;
  EXPECT_EQ(decide_state(f), DayState::NotStarted);  // the untouched starter
  f.check_verdict = "failed";
  EXPECT_EQ(decide_state(f), DayState::NotStarted);
  f.kernel_untouched = false;
  EXPECT_EQ(decide_state(f), DayState::Failing);
  f.check_verdict = "build_failed";
  EXPECT_EQ(decide_state(f), DayState::Failing);
  f.check_verdict = "passed";
  EXPECT_EQ(decide_state(f), DayState::Passing);
  f.kernel_untouched = true;  // committed work that passes still passes
  EXPECT_EQ(decide_state(f), DayState::Passing);
  f.kernel_untouched.reset();  // no git: the recorded check decides
  f.check_verdict = "skipped";
  EXPECT_EQ(decide_state(f), DayState::CompiledNoGpu);
}

TEST(Status, TableBeforeAnythingWasChecked) {
  const Day d = day1();
  const std::string text = render_status({{&d, DayFacts{}}}, "course");
  EXPECT_TRUE(contains(text, "not started")) << text;
  EXPECT_TRUE(contains(text, "never")) << text;
  EXPECT_TRUE(contains(text, "Nothing checked yet")) << text;
}

TEST(Status, TableNotesAChangedKernelAndNoGpu) {
  const Day d = day1();
  DayFacts f;
  f.check_verdict = "skipped";
  f.check_time = "2026-11-22T18:49:42Z";
  f.check_counts = "40 skipped";
  f.kernel_untouched = false;
  f.kernel_changed_since_check = true;
  f.bench_note = "no GPU";
  const std::string text = render_status({{&d, f}}, "course");
  EXPECT_TRUE(contains(text, "compiled (no GPU)")) << text;
  EXPECT_TRUE(contains(text, "2026-11-22 18:49 UTC, 40 skipped")) << text;
  EXPECT_TRUE(contains(text, "changed since the last check")) << text;
  EXPECT_TRUE(contains(text, "they count as not yet passed")) << text;
}

// ============================================================================ files and text

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/course_tool_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

using Files = TempDir;

TEST_F(Files, AtomicWriteReplacesAndLeavesNoTemporary) {
  const auto path = dir_ / "results" / "d01.check.json";
  std::string error;
  ASSERT_TRUE(write_file_atomically(path, "first", &error)) << error;
  ASSERT_TRUE(write_file_atomically(path, "second", &error)) << error;
  EXPECT_EQ(read_file(path).value_or(""), "second");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(path.parent_path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(Files, FailedWriteKeepsTheEarlierFile) {
  const auto path = dir_ / "d01.check.json";
  ASSERT_TRUE(write_file_atomically(path, "earlier"));
  std::filesystem::create_directory(temporary_sibling(path));  // the temporary cannot be opened
  std::string error;
  EXPECT_FALSE(write_file_atomically(path, "later", &error));
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(read_file(path).value_or(""), "earlier");
}

TEST_F(Files, StaleTemporariesOfFinishedProcessesAreRemoved) {
  const auto mine = temporary_sibling(dir_ / "d01.check.json");  // this process: still running
  const auto stale = dir_ / "d01.junit.xml.tmp.999999999";       // no such process
  const auto other = dir_ / "d01.check.json";
  for (const auto& p : {mine, stale, other}) std::ofstream(p) << "x";
  EXPECT_EQ(remove_stale_temporaries(dir_), 1);
  EXPECT_TRUE(std::filesystem::exists(mine));
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(other));
}

TEST(Process, CapturesOutputAndExitCode) {
  const ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "out\nerr\n");
  EXPECT_EQ(describe_exit(r), "exit code 3");
  EXPECT_TRUE(run_process({"true"}).ok());
}

TEST(Process, SaysWhenAProgramCannotStart) {
  const ProcessResult r = run_process({"/nonexistent/course-tool-test"});
  EXPECT_FALSE(r.started);
  EXPECT_TRUE(contains(r.error, "could not run /nonexistent/course-tool-test")) << r.error;
  ProcessOptions in_missing_dir;
  in_missing_dir.working_dir = "/nonexistent";
  EXPECT_FALSE(run_process({"true"}, in_missing_dir).started);
}

TEST(Process, StopsAProgramPastItsTimeout) {
  ProcessOptions options;
  options.timeout_s = 0.2;
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = run_process({"sleep", "20"}, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(seconds, 10.0);
}

TEST(Process, HandsOverCompleteLines) {
  std::vector<std::string> lines;
  ProcessOptions options;
  options.on_line = [&](std::string_view line) { lines.emplace_back(line); };
  const ProcessResult r = run_process({"sh", "-c", "printf 'a\\nbb'; sleep 0.1; printf 'b\\n\\nc'"}, options);
  EXPECT_EQ(r.output, "a\nbbb\n\nc");
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "bbb", ""}));  // "c" never ended
}

TEST(Text, FingerprintsDiffer) {
  EXPECT_EQ(fingerprint(""), "cbf29ce484222325");
  EXPECT_NE(fingerprint("a"), fingerprint("b"));
  EXPECT_EQ(fingerprint("kernel"), fingerprint("kernel"));
}

TEST(Text, QuotingAndEscaping) {
  EXPECT_EQ(shell_quote("build/dev"), "build/dev");
  EXPECT_EQ(shell_quote("^d01\\.lab\\."), "'^d01\\.lab\\.'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(regex_escape("d01.lab.Sizes/VectorAdd.X/n31"), "d01\\.lab\\.Sizes/VectorAdd\\.X/n31");
  EXPECT_EQ(format_figure(2876.4), "2876");
  EXPECT_EQ(format_figure(26.84), "26.8");
  EXPECT_EQ(format_figure(0.01234), "0.0123");
  EXPECT_EQ(display_width("✓ ok"), 4u);
  EXPECT_EQ(shorten("abcdefghij", 6), "abc...");
}

// ============================================================================ the command line

class CommandLine : public TempDir {
 protected:
  int run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    args.insert(args.begin(), {"course", "--build-dir", (dir_ / "build").string()});
    return run_course_tool(args, dir_ / "src", dir_ / "build", out_, err_);
  }
  void write_manifest() {
    std::filesystem::create_directories(dir_ / "build");
    std::ofstream(dir_ / "build" / "course_manifest.tsv")
        << "# day\tname\ttitle\texercises\tlab_source\n"
        << "d01\td01_first_kernels\tFirst kernels\tVectorAdd,Saxpy\t" << (dir_ / "src/labs/d01_first_kernels/kernel.cu").string() << "\n"
        << "d02\td02_coalescing\tCoalescing\tCopy\t" << (dir_ / "src/labs/d02_coalescing/kernel.cu").string() << "\n";
  }
  std::ostringstream out_, err_;
};

TEST_F(CommandLine, HelpAndUnknownCommandsAreUsageErrors) {
  EXPECT_EQ(run({}), 2);
  EXPECT_TRUE(contains(out_.str(), "usage:")) << out_.str();
  EXPECT_EQ(run({"help"}), 2);
  EXPECT_EQ(run({"frobnicate"}), 2);
  EXPECT_TRUE(contains(err_.str(), "unknown command 'frobnicate'")) << err_.str();
  EXPECT_EQ(run({"--nonsense", "list"}), 2);
  EXPECT_EQ(run({"--jobs", "zero", "list"}), 2);
}

TEST_F(CommandLine, WithoutAManifestItSaysConfigureFirst) {
  EXPECT_EQ(run({"list"}), 2);
  EXPECT_TRUE(contains(err_.str(), "Configure first:  cmake --preset default")) << err_.str();
  EXPECT_EQ(run({"check", "d01"}), 2);
  EXPECT_EQ(run({"status"}), 2);
}

TEST_F(CommandLine, ListShowsDaysExercisesLessonsAndLabs) {
  write_manifest();
  EXPECT_EQ(run({"list"}), 0) << err_.str();
  EXPECT_TRUE(contains(out_.str(), "d01  First kernels")) << out_.str();
  EXPECT_TRUE(contains(out_.str(), "lessons/d01_first_kernels.md  (not written yet)")) << out_.str();
  EXPECT_TRUE(contains(out_.str(), "labs/d02_coalescing/")) << out_.str();
  EXPECT_TRUE(contains(out_.str(), "exercises: 1 VectorAdd, 2 Saxpy")) << out_.str();
}

TEST_F(CommandLine, UnknownDayListsTheValidOnes) {
  write_manifest();
  EXPECT_EQ(run({"check", "d07"}), 2);
  EXPECT_TRUE(contains(err_.str(), "'d07' is not a day of this course. The days are: d01, d02")) << err_.str();
  EXPECT_EQ(run({"bench", "seven"}), 2);
  EXPECT_EQ(run({"check"}), 2);
  EXPECT_TRUE(contains(err_.str(), "usage: course check <day>")) << err_.str();
}

TEST_F(CommandLine, StatusBeforeAnythingWasChecked) {
  write_manifest();
  EXPECT_EQ(run({"status"}), 0) << err_.str();
  EXPECT_TRUE(contains(out_.str(), "not started")) << out_.str();
  EXPECT_TRUE(contains(out_.str(), "Nothing checked yet")) << out_.str();
}

TEST_F(CommandLine, StatusReadsRecordedResultsAndSurvivesBadOnes) {
  write_manifest();
  std::filesystem::create_directories(dir_ / "build" / "course-results");
  std::ofstream(dir_ / "build" / "course-results" / "d01.check.json")
      << R"({"verdict": "skipped", "finished": "2026-11-22T18:49:42Z", "totals": {"skipped": 40}})";
  std::ofstream(dir_ / "build" / "course-results" / "d02.check.json") << "{\"verdict\": ";
  EXPECT_EQ(run({"status"}), 0);
  EXPECT_TRUE(contains(out_.str(), "compiled (no GPU)")) << out_.str();
  EXPECT_TRUE(contains(err_.str(), "d02.check.json is not valid JSON (line 1, column 13")) << err_.str();
}

}  // namespace
