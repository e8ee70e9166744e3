# glucx-info --topology (the JSON form glucx-cluster reads), included from tests/CMakeLists.txt.
add_test(NAME tools/glucx_info_topology
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_glucx_info_topology.py
                 --info $<TARGET_FILE:glucx-info>
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tools/glucx_info_topology)
set_tests_properties(tools/glucx_info_topology PROPERTIES LABELS "unit;tools" TIMEOUT 120)
# glucx-bench --calibrate per dimension: 4 ranks in 2 packages faked with GLUCX_HOSTID
add_test(NAME tools/calibrate_dims
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_calibrate_dims.py
                 --bench $<TARGET_FILE:glucx-bench>
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tools/calibrate_dims)
glucx_scaled_timeout(_calibrate_dims_timeout 300)
set_tests_properties(tools/calibrate_dims PROPERTIES LABELS "integration;tools"
                     TIMEOUT ${_calibrate_dims_timeout})
