# The cost model's tools (issue 17, parts 2 and 3), included from tests/CMakeLists.txt:
# glucx-info --algorithms on a topology (the selection map and each algorithm's predicted cost,
# JSON form) and glucx-bench --validate (every algorithm measured against its prediction).
add_test(NAME tools/info_algorithms
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_info_algorithms.py
                 --info $<TARGET_FILE:glucx-info>
                 --torus ${CMAKE_CURRENT_SOURCE_DIR}/cluster/torus2x2.yaml
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tools/info_algorithms)
glucx_scaled_timeout(_info_algorithms_timeout 120)
set_tests_properties(tools/info_algorithms PROPERTIES LABELS "unit;tools"
                     TIMEOUT ${_info_algorithms_timeout})
# 4, 3 and 2 local ranks on this host (one package); measured times are printed, never asserted
add_test(NAME tools/bench_validate
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_bench_validate.py
                 --bench $<TARGET_FILE:glucx-bench> --info $<TARGET_FILE:glucx-info>
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tools/bench_validate)
glucx_scaled_timeout(_bench_validate_timeout 600)
set_tests_properties(tools/bench_validate PROPERTIES LABELS "integration;tools"
                     TIMEOUT ${_bench_validate_timeout})
