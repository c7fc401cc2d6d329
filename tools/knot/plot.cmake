# Plotting: tools/plot.py, run by `knot ... --plot` (plot.cpp) under a Python interpreter that can
# import matplotlib. The interpreter is found here, at configure time, and baked into the program
# with the script's installed and source-tree paths (generated/knot/plot_config.hpp).
set(KNOT_PLOT_PYTHON "" CACHE FILEPATH
    "Python interpreter for tools/plot.py (empty: /usr/bin/python3, then find_package(Python3); the first that imports matplotlib)")

# knot_find_plot_python(<var>): the first candidate that imports matplotlib, or "".
function(knot_find_plot_python var)
  if(KNOT_PLOT_PYTHON)
    set(candidates ${KNOT_PLOT_PYTHON})
  else()
    # /usr/bin/python3 first: a python3 earlier on PATH (pyenv, a venv) often lacks Debian's matplotlib.
    set(candidates /usr/bin/python3)
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(Python3_Interpreter_FOUND)
      list(APPEND candidates ${Python3_EXECUTABLE})
    endif()
  endif()
  foreach(py IN LISTS candidates)
    if(EXISTS ${py})
      execute_process(COMMAND ${py} -c "import matplotlib" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 60)
      if(rc EQUAL 0)
        set(${var} ${py} PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
  set(${var} "" PARENT_SCOPE)
endfunction()

knot_find_plot_python(KNOT_PLOT_INTERPRETER)
if(KNOT_PLOT_INTERPRETER)
  message(STATUS "knot --plot: ${KNOT_PLOT_INTERPRETER} (imports matplotlib)")
else()
  message(STATUS "knot --plot: no Python interpreter imports matplotlib (apt-get install python3-matplotlib); "
                 "--plot will say so, and the knot_plot tests are skipped")
endif()

file(RELATIVE_PATH KNOT_PLOT_SCRIPT_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_DATADIR}/knot/plot.py)
configure_file(${CMAKE_CURRENT_LIST_DIR}/plot_config.hpp.in ${CMAKE_CURRENT_BINARY_DIR}/generated/knot/plot_config.hpp @ONLY)
target_sources(knot PRIVATE ${CMAKE_CURRENT_LIST_DIR}/plot.cpp)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/plot.py DESTINATION ${CMAKE_INSTALL_DATADIR}/knot)

# The script writes real PNGs for each kind of CSV (the fixtures of tests/data/plot) and fails with
# its message on bad input; plot_files runs it with any path. Registered only where they can run.
if(KNOT_BUILD_TESTS)
  if(KNOT_PLOT_INTERPRETER)
    set(plot_cases trajectory manipulator trajectory_without_stats closed_loop closed_loop_manipulator bench two_inputs_one_folder
                   check_rejects_bad_png unknown_header missing_file bad_number no_matplotlib)
    foreach(case IN LISTS plot_cases)
      add_test(NAME knot_plot.${case}
               COMMAND ${KNOT_PLOT_INTERPRETER} ${PROJECT_SOURCE_DIR}/tests/tools/plot/plot_test.py ${case}
                       --work ${CMAKE_CURRENT_BINARY_DIR}/plot_test/${case})
      set_tests_properties(knot_plot.${case} PROPERTIES LABELS cli)
    endforeach()
    find_package(GTest REQUIRED)
    add_executable(test_plot_files ${PROJECT_SOURCE_DIR}/tests/tools/plot/test_plot_files.cpp
                                   ${CMAKE_CURRENT_LIST_DIR}/plot.cpp)
    target_include_directories(test_plot_files PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated ${CMAKE_CURRENT_LIST_DIR})
    target_compile_definitions(test_plot_files PRIVATE KNOT_PLOT_FIXTURES="${PROJECT_SOURCE_DIR}/tests/data/plot"
                                                       KNOT_PLOT_WORK="${CMAKE_CURRENT_BINARY_DIR}/plot_test/plot_files")
    target_link_libraries(test_plot_files PRIVATE GTest::gtest GTest::gtest_main)
    target_compile_options(test_plot_files PRIVATE -Wall -Wextra)
    include(GoogleTest)
    gtest_discover_tests(test_plot_files DISCOVERY_MODE PRE_TEST PROPERTIES LABELS cli)
  endif()
endif()
