# glucx-gloo-bench (adapters/gloo/tools/) smoke test through scripts/bench/gloo_algos.sh: 2 ranks,
# both devices, small sizes, results checked by the tool; not a timed test.
glucx_scaled_timeout(_t 300)
add_test(NAME tools/glucx-gloo-bench/smoke
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gloo_bench_smoke.sh $<TARGET_FILE:glucx-gloo-bench>
                 ${PROJECT_SOURCE_DIR}/scripts/bench/gloo_algos.sh)
set_tests_properties(tools/glucx-gloo-bench/smoke PROPERTIES TIMEOUT ${_t} LABELS integration
                     ENVIRONMENT "GLUCX_TEST_TIME_SCALE=${GLUCX_TEST_TIME_SCALE}")
