# The attnfuse Python package, included by the top-level CMakeLists.txt when
# ATTNFUSE_ENABLE_PYTHON is on.
#
# Main build: build/python_packages/attnfuse/ holds the pure-Python files
# (copied from python-bindings/attnfuse), the _attnfuse extension and the GPU
# runtime library; `python/pytest` runs python-bindings/tests against it.
# `pip install ./python-bindings` (scikit-build-core, SKBUILD set) installs
# the extension and the runtime library next to the pure-Python files.

if(NOT Python_Development.Module_FOUND)
  message(FATAL_ERROR "ATTNFUSE_ENABLE_PYTHON needs Python's development files")
endif()
if(NOT ATTNFUSE_NANOBIND_DIR)
  message(FATAL_ERROR "ATTNFUSE_ENABLE_PYTHON needs nanobind: "
    "${Python_EXECUTABLE} -m pip install nanobind")
endif()
find_package(nanobind CONFIG REQUIRED HINTS ${ATTNFUSE_NANOBIND_DIR})

set(ATTNFUSE_PYTHON_PACKAGE_DIR ${CMAKE_BINARY_DIR}/python_packages)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/src ${CMAKE_BINARY_DIR}/python-bindings)

# Pure-Python files into the build tree's package.
file(GLOB ATTNFUSE_PYTHON_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/attnfuse/*.py)
set(ATTNFUSE_PYTHON_COPIES)
foreach(source ${ATTNFUSE_PYTHON_SOURCES})
  get_filename_component(name ${source} NAME)
  set(copy ${ATTNFUSE_PYTHON_PACKAGE_DIR}/attnfuse/${name})
  add_custom_command(OUTPUT ${copy}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${source} ${copy}
    DEPENDS ${source})
  list(APPEND ATTNFUSE_PYTHON_COPIES ${copy})
endforeach()
set(ATTNFUSE_RUNTIME_COPY
  ${ATTNFUSE_PYTHON_PACKAGE_DIR}/attnfuse/$<TARGET_FILE_NAME:attnfuse_runtime>)
add_custom_target(AttnFusePythonPackage ALL
  DEPENDS ${ATTNFUSE_PYTHON_COPIES} _attnfuse attnfuse_runtime
  COMMAND ${CMAKE_COMMAND} -E copy_if_different
          $<TARGET_FILE:attnfuse_runtime> ${ATTNFUSE_RUNTIME_COPY}
  COMMENT "attnfuse Python package in ${ATTNFUSE_PYTHON_PACKAGE_DIR}")

if(SKBUILD)
  install(TARGETS _attnfuse attnfuse_runtime
    LIBRARY DESTINATION attnfuse COMPONENT python)
endif()

if(ATTNFUSE_BUILD_TESTS AND ATTNFUSE_BUILD_TOOLS)
  add_test(NAME python/pytest
    COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider
            ${CMAKE_CURRENT_LIST_DIR}/tests
    WORKING_DIRECTORY ${ATTNFUSE_SOURCE_DIR})
  set_tests_properties(python/pytest PROPERTIES
    ENVIRONMENT "PYTHONPATH=${ATTNFUSE_PYTHON_PACKAGE_DIR};ATTNFUSE_OPT=$<TARGET_FILE:attnfuse-opt>"
    TIMEOUT 1800
    LABELS "python")
endif()

# Training: gradients of every attention form against float64 references,
# torch autograd, the seed experiment in miniature and data-parallel
# training, through the Python package (integration_test/training/).
if(ATTNFUSE_BUILD_TESTS AND ATTNFUSE_BUILD_TOOLS)
  add_test(NAME integration/training
    COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider
            ${ATTNFUSE_SOURCE_DIR}/integration_test/training
    WORKING_DIRECTORY ${ATTNFUSE_SOURCE_DIR})
  set_tests_properties(integration/training PROPERTIES
    ENVIRONMENT "PYTHONPATH=${ATTNFUSE_PYTHON_PACKAGE_DIR};ATTNFUSE_RUN=$<TARGET_FILE:attnfuse-run>"
    TIMEOUT 1800
    LABELS "integration;training")
endif()

# Whole models through their sm_90a device programs on the emulator (the
# instrumented sanitizer build of the emulator cannot be loaded into Python).
if(ATTNFUSE_BUILD_TESTS AND ATTNFUSE_BUILD_TOOLS AND TARGET attnfuse_cudasim
   AND NOT ATTNFUSE_ENABLE_SANITIZERS)
  add_test(NAME cudasim/programs
    COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider
            ${ATTNFUSE_SOURCE_DIR}/cudasim/test/programs
    WORKING_DIRECTORY ${ATTNFUSE_SOURCE_DIR})
  set_tests_properties(cudasim/programs PROPERTIES
    ENVIRONMENT "PYTHONPATH=${ATTNFUSE_PYTHON_PACKAGE_DIR};ATTNFUSE_CUDA_DRIVER=$<TARGET_FILE:attnfuse_cudasim>;ATTNFUSE_RUNTIME_LIB=$<TARGET_FILE:attnfuse_runtime>"
    TIMEOUT 1800
    LABELS "emulator")
endif()

# The pip build of the package (25 s to 1.5 minutes with a warm ccache; a
# second full compile without one).
if(ATTNFUSE_BUILD_TESTS)
  add_test(NAME python/pip-install
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/tests/pip_install_check.sh
            ${CMAKE_BINARY_DIR}/pip-install-venv)
  set_tests_properties(python/pip-install PROPERTIES
    ENVIRONMENT "PYTHON=${Python_EXECUTABLE}"
    TIMEOUT 1800
    RUN_SERIAL ON
    LABELS "python")
endif()
