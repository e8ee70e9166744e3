# Tests of the measurement protocol's scripts (scripts/compare.sh, scripts/bench/report.py;
# docs/perf.md, "Measurement protocol"), included from tests/CMakeLists.txt. Debian's
# /usr/bin/python3; no build target, Open MPI or PyTorch needed.
#  tools/compare_report  report.py on synthetic raw outputs with known medians: the tables'
#                        medians and ratios, every issue-15 target's ratio and verdict, the
#                        BELOW PROTOCOL flags (a few seconds)
#  tools/compare_load    compare.sh --load with fake libraries: stress-ng runs during every run
#                        and is stopped on success, failure, SIGINT, SIGTERM and when it expired;
#                        pin_rank.sh's CPU rule (--bind) (about 35-50 s on a busy 2-core machine). It loads every CPU for seconds at a time, so it runs alone
#                        (RUN_SERIAL); skipped (77) without stress-ng or taskset.
add_test(NAME tools/compare_report
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_compare_report.py
                 --report ${PROJECT_SOURCE_DIR}/scripts/bench/report.py
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tools/compare_report)
glucx_scaled_timeout(_compare_report_timeout 120)
set_tests_properties(tools/compare_report PROPERTIES LABELS "unit;tools"
                     TIMEOUT ${_compare_report_timeout})
add_test(NAME tools/compare_load
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_compare_load.py
                 --compare ${PROJECT_SOURCE_DIR}/scripts/compare.sh
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tools/compare_load)
glucx_scaled_timeout(_compare_load_timeout 300)
set_tests_properties(tools/compare_load PROPERTIES LABELS "integration;tools"
                     TIMEOUT ${_compare_load_timeout} RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
