#!/bin/sh
# What one test case's ctest test runs: it reports the result that the day's test run
# (tools/course/testrun.py, the ctest test dNN.<variant>.run) recorded for this case.
# The file's first line is the outcome (tools/course/results.py); the rest is the report.
# Exit 0: passed; 77 (ctest: skipped): skipped; 1: failed, crashed, timed out or not run.
file=$1
if [ ! -f "$file" ]; then
  echo "NOT RUN: no result was recorded for this test (its day's run, the ctest test"
  echo "dNN.<variant>.run, did not reach it: it was stopped, or it died; see its output)."
  exit 1
fi
outcome=$(head -n 1 "$file")
tail -n +2 "$file"
case "$outcome" in
  passed) exit 0 ;;
  skipped) exit 77 ;;
  *) exit 1 ;;
esac
