# cmake -P check_install.cmake: installs KNOT_BUILD_DIR into WORK_DIR/prefix and tries each
# component in COMPONENTS (comma-separated) with a consumer built from CONSUMER_DIR; then checks that
# each component in ABSENT is refused by find_package with a message that names it.
string(REPLACE "," ";" COMPONENTS "${COMPONENTS}")
string(REPLACE "," ";" ABSENT "${ABSENT}")
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_out "${out}${err}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${KNOT_BUILD_DIR} --prefix ${prefix})

set(common -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
           -DKNOT_EXPECT_ARCH=${EXPECT_ARCH})
if(CXX_LAUNCHER)
  list(APPEND common -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()

# "default" is find_package(knot) without components.
foreach(name IN LISTS COMPONENTS ITEMS default)
  set(component ${name})
  if(name STREQUAL "default")
    set(component "")
  endif()
  set(bin ${WORK_DIR}/${name})
  run("configure the ${name} consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${bin} ${common}
      -DKNOT_COMPONENT=${component})
  run("build the ${name} consumer" ${CMAKE_COMMAND} --build ${bin})
  run("run the ${name} consumer" ${bin}/consumer)
  message(STATUS "${run_out}")
endforeach()

foreach(component IN LISTS ABSENT)
  set(bin ${WORK_DIR}/absent_${component})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${bin} ${common} -DKNOT_COMPONENT=${component}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "find_package(knot COMPONENTS ${component}) succeeded, but this build has no ${component}")
  endif()
  if(NOT "${out}${err}" MATCHES "built without: ${component}")
    message(FATAL_ERROR "find_package(knot COMPONENTS ${component}) failed without naming it:\n${out}\n${err}")
  endif()
  message(STATUS "COMPONENTS ${component} refused, as it should be")
endforeach()

# An unknown component is refused by name too.
set(bin ${WORK_DIR}/unknown)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${bin} ${common} -DKNOT_COMPONENT=solvr
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "no such knot component: solvr")
  message(FATAL_ERROR "find_package(knot COMPONENTS solvr) was not refused by name:\n${out}\n${err}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "install: every component configured, built and ran")
