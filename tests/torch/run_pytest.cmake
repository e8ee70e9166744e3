# Runs the torch pytest suite: cmake -DPYTHON=<venv>/bin/python -DSUITE=<tests/torch>
#   [-DBASETEMP=<dir for the ranks' outputs>] [-DARGS="extra pytest arguments"] -P run_pytest.cmake
if(NOT EXISTS "${PYTHON}")
  message(FATAL_ERROR
    "torch suite: no Python interpreter at ${PYTHON}. The suite runs in the project's venv, which "
    "holds the glucx package: run `make venv` first (or configure -DGLUCX_VENV=<path to a venv>).")
endif()
set(extra "")
if(BASETEMP)
  list(APPEND extra --basetemp=${BASETEMP})
endif()
if(ARGS)
  separate_arguments(args UNIX_COMMAND "${ARGS}")
  list(APPEND extra ${args})
endif()
execute_process(COMMAND ${PYTHON} -m pytest -q -p no:cacheprovider -rfEs ${SUITE} ${extra}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "torch suite: pytest exited with ${rc}")
endif()
