# glucx-bench tests. Two roles in one file:
#  - included from tests/CMakeLists.txt (include(tools/bench.cmake)): registers the ctests;
#  - run as `cmake -DBENCH=... -DARGS=... -P bench.cmake`: runs glucx-bench once and checks its
#    table: exit status 0, a header with exactly the columns
#    "size count type redop algo time algbw busbw #wrong", at least one row (exactly ROWS if
#    given), and every row with #wrong 0, a positive time, and algo ALGO if given. With -DPUT=1
#    (glucx-bench --put) the columns are "size plain_us sync_us plain_bw sync_bw iters
#    sync/plain" and both times of every row must be positive.
if(CMAKE_SCRIPT_MODE_FILE)
  include(${CMAKE_CURRENT_LIST_DIR}/timescale.cmake)
  glucx_scaled_timeout(bench_timeout 240)
  separate_arguments(args UNIX_COMMAND "${ARGS}")
  execute_process(COMMAND ${BENCH} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT ${bench_timeout})
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "glucx-bench ${ARGS} exited with ${rc}:\n${err}")
  endif()
  string(REPLACE ";" "," out_nosemi "${out}")
  string(REPLACE "\n" ";" lines "${out_nosemi}")
  set(header_ok 0)
  set(rows 0)
  foreach(line IN LISTS lines)
    if(line MATCHES "^#")
      string(REGEX REPLACE "^#[ ]*" "" cols "${line}")
      string(REGEX REPLACE "[ ]+" ";" cols "${cols}")
      if(PUT AND cols STREQUAL "size;plain_us;sync_us;plain_bw;sync_bw;iters;sync/plain")
        set(header_ok 1)
      elseif(NOT PUT AND cols STREQUAL "size;count;type;redop;algo;time;algbw;busbw;#wrong")
        set(header_ok 1)
      endif()
      continue()
    endif()
    if(line STREQUAL "")
      continue()
    endif()
    if(NOT header_ok)
      message(FATAL_ERROR "row before the column header: '${line}'")
    endif()
    string(REGEX REPLACE "^[ ]+" "" fields "${line}")
    string(REGEX REPLACE "[ ]+" ";" fields "${fields}")
    list(LENGTH fields nf)
    if(PUT)
      if(NOT nf EQUAL 7)
        message(FATAL_ERROR "row with ${nf} fields instead of 7: '${line}'")
      endif()
      list(GET fields 1 plain)
      list(GET fields 2 sync)
      foreach(t ${plain} ${sync})
        if(NOT t MATCHES "^[0-9]+\\.[0-9]+$" OR t STREQUAL "0.00")
          message(FATAL_ERROR "time '${t}' is not a positive number: '${line}'")
        endif()
      endforeach()
      math(EXPR rows "${rows} + 1")
      continue()
    endif()
    if(NOT nf EQUAL 9)
      message(FATAL_ERROR "row with ${nf} fields instead of 9: '${line}'")
    endif()
    list(GET fields 0 size)
    list(GET fields 5 time)
    list(GET fields 8 wrong)
    list(GET fields 4 algo)
    if(DEFINED ALGO AND NOT algo STREQUAL ALGO)
      message(FATAL_ERROR "size ${size}: algo '${algo}', expected '${ALGO}'")
    endif()
    if(NOT wrong STREQUAL "0")
      message(FATAL_ERROR "size ${size}: #wrong is '${wrong}', expected 0: '${line}'")
    endif()
    if(NOT time MATCHES "^[0-9]+\\.[0-9]+$" OR time STREQUAL "0.00")
      message(FATAL_ERROR "size ${size}: time '${time}' is not a positive number: '${line}'")
    endif()
    math(EXPR rows "${rows} + 1")
  endforeach()
  if(NOT header_ok)
    message(FATAL_ERROR "no header with the expected columns (PUT=${PUT}) in:\n${out}")
  endif()
  if(DEFINED ROWS AND NOT rows EQUAL ROWS)
    message(FATAL_ERROR "${rows} rows, expected ${ROWS}")
  endif()
  if(rows EQUAL 0)
    message(FATAL_ERROR "no rows")
  endif()
  return()
endif()

# --- registration (include mode) ---
set(_bench_script ${CMAKE_CURRENT_LIST_FILE})
function(glucx_bench_test name rows)
  string(REPLACE ";" " " args "${ARGN}")
  set(algo_check)
  if(args MATCHES "--algo ([a-z_]+)")
    set(algo_check -DALGO=${CMAKE_MATCH_1})
  endif()
  if(args MATCHES "--put")
    list(APPEND algo_check -DPUT=1)
  endif()
  add_test(NAME tools/glucx-bench/${name}
           COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:glucx-bench> "-DARGS=${args}"
                   -DROWS=${rows} ${algo_check} -P ${_bench_script})
  glucx_scaled_timeout(timeout 300)
  set_tests_properties(tools/glucx-bench/${name} PROPERTIES TIMEOUT ${timeout} LABELS integration)
endfunction()

# The two sweeps the tool is mostly used for: 1 KiB .. 1 MiB, 11 rows each, checked.
glucx_bench_test(allreduce 11 --ranks 2 --coll allreduce -b 1K -e 1M -f 2 --iters 5 --warmup 1 --check 1)
glucx_bench_test(alltoall 11 --ranks 2 --coll alltoall -b 1K -e 1M -f 2 --iters 5 --warmup 1 --check 1)
# Uneven sizes (rounding to whole blocks), a non-default dtype/op and root, three ranks.
glucx_bench_test(allreduce_i32_max_3ranks 4 --ranks 3 --coll allreduce --dtype i32 --op max -b 100 -e 100000 -f 10 --iters 3 --warmup 1)
foreach(coll allgather allgatherv reduce_scatter alltoallv broadcast reduce gather scatter)
  glucx_bench_test(${coll}_3ranks 3 --ranks 3 --coll ${coll} --root 1 -b 3K -e 300K -f 10 --iters 3 --warmup 1)
endforeach()
glucx_bench_test(barrier 1 --ranks 2 --coll barrier --iters 10)
# Window puts, plain against GLUCX_PUT_SYNC: 8 B, 4 KiB (eager) and 2 MiB (rendezvous).
glucx_bench_test(put 3 --ranks 2 --put -b 8 -e 2M -f 512 --iters 5 --warmup 1)
# A forced algorithm is used for the timed collective only (the tool's own barrier and
# reductions keep glucx's choice), and shows in the algo column.
glucx_bench_test(allreduce_forced_ring_3ranks 3 --ranks 3 --algo ring -b 3K -e 300K -f 10 --iters 3 --warmup 1)

# Bad arguments: usage and exit status 2, before any rank starts.
set(_bad "--coll nosuchcoll" "-b 2M -e 1M" "-b 1X" "-f 1" "--dtype f128" "--op nop"
         "--dtype f32 --op bxor" "--algo nosuchalgo" "--check 2" "--ranks 0" "--ranks 2 --root 2" "--iters" "stray")
set(_i 0)
glucx_scaled_timeout(_t30 30)
foreach(args IN LISTS _bad)
  add_test(NAME tools/glucx-bench/bad_args_${_i}
           COMMAND sh -c "$<TARGET_FILE:glucx-bench> ${args} 2>&1 | grep -q '^usage:' && { $<TARGET_FILE:glucx-bench> ${args} >/dev/null 2>&1; test $? -eq 2; }")
  set_tests_properties(tools/glucx-bench/bad_args_${_i} PROPERTIES TIMEOUT ${_t30} LABELS unit)
  math(EXPR _i "${_i} + 1")
endforeach()
# Without --ranks and launcher variables: a clear error, exit status 2.
add_test(NAME tools/glucx-bench/no_launcher
         COMMAND env -u RANK -u OMPI_COMM_WORLD_RANK -u PMI_RANK $<TARGET_FILE:glucx-bench>)
set_tests_properties(tools/glucx-bench/no_launcher PROPERTIES
                     PASS_REGULAR_EXPRESSION "no --ranks and no launcher variables" TIMEOUT ${_t30}
                     LABELS unit)
# Launcher mode: two processes that get RANK/WORLD_SIZE as torchrun sets them and a file store.
add_test(NAME tools/glucx-bench/launcher_env
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/bench_launcher.sh $<TARGET_FILE:glucx-bench>)
glucx_scaled_timeout(_t 120)
set_tests_properties(tools/glucx-bench/launcher_env PROPERTIES TIMEOUT ${_t} LABELS integration)
