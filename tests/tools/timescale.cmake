# The suite's time-scale factor, GLUCX_TEST_TIME_SCALE (tests/README.md), for CMake: ctest's
# per-test TIMEOUTs and the deadlines of cmake -P test scripts. Included by tests/CMakeLists.txt
# (configure: the cache variable GLUCX_TEST_TIME_SCALE) and by test scripts run by ctest (script
# mode: the environment variable, which every test gets through its ENVIRONMENT property).

# glucx_test_time_scale_milli(<out>): the factor in thousandths (an integer: CMake's math is).
function(glucx_test_time_scale_milli out)
  if(DEFINED GLUCX_TEST_TIME_SCALE AND NOT "${GLUCX_TEST_TIME_SCALE}" STREQUAL "")
    set(s "${GLUCX_TEST_TIME_SCALE}")
  elseif(DEFINED ENV{GLUCX_TEST_TIME_SCALE} AND NOT "$ENV{GLUCX_TEST_TIME_SCALE}" STREQUAL "")
    set(s "$ENV{GLUCX_TEST_TIME_SCALE}")
  else()
    set(s 1)
  endif()
  if(NOT s MATCHES "^([0-9]*)(\\.([0-9]*))?$" OR s STREQUAL "." OR s STREQUAL "")
    message(FATAL_ERROR "GLUCX_TEST_TIME_SCALE=${s}: expected a positive number such as 2 or 1.5")
  endif()
  set(int "${CMAKE_MATCH_1}")
  set(frac "${CMAKE_MATCH_3}000")
  if(int STREQUAL "")
    set(int 0)
  endif()
  string(SUBSTRING "${frac}" 0 3 frac)
  string(REGEX REPLACE "^0+([0-9])" "\\1" frac "${frac}") # math(EXPR) reads 0xx as octal
  string(REGEX REPLACE "^0+([0-9])" "\\1" int "${int}")
  math(EXPR milli "${int} * 1000 + ${frac}")
  if(milli LESS_EQUAL 0 OR milli GREATER_EQUAL 1000000)
    message(FATAL_ERROR "GLUCX_TEST_TIME_SCALE=${s}: expected a number in (0, 1000)")
  endif()
  set(${out} ${milli} PARENT_SCOPE)
endfunction()

# glucx_scaled_timeout(<out> <base s>): ceil(base x the factor), at least 1 (seconds).
function(glucx_scaled_timeout out base)
  glucx_test_time_scale_milli(milli)
  math(EXPR t "(${base} * ${milli} + 999) / 1000")
  if(t LESS 1)
    set(t 1)
  endif()
  set(${out} ${t} PARENT_SCOPE)
endfunction()
