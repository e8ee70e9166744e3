# glucx-info --topology (the JSON form glucx-cluster reads), included from tests/CMakeLists.txt.
add_test(NAME tools/glucx_info_topology
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_glucx_info_topology.py
                 --info $<TARGET_FILE:glucx-info>
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tools/glucx_info_topology)
set_tests_properties(tools/glucx_info_topology PROPERTIES LABELS "unit;tools" TIMEOUT 120)
