# Helpers that declare AttnFuse's libraries and tools so that they are
# installed and exported in the AttnFuseTargets set (find_package(AttnFuse)),
# as CIRCT does for its own: MLIR's add_mlir_library would put them in
# MLIR's export set, which this project does not install.

include(GNUInstallDirs)

# Installs `name` (a library or an executable) into the AttnFuseTargets export
# set and records it for AttnFuseConfig.cmake.
function(attnfuse_install_target name)
  install(TARGETS ${name}
    EXPORT AttnFuseTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT attnfuse
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT attnfuse
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT attnfuse
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set_property(GLOBAL APPEND PROPERTY ATTNFUSE_EXPORTS ${name})
endfunction()

# Objects built with the sanitizers call into their runtimes: whatever links
# them, here or in a project that uses the installed package, must link the
# runtimes too.
function(attnfuse_link_sanitizers name)
  if(ATTNFUSE_ENABLE_SANITIZERS)
    target_link_options(${name} INTERFACE -fsanitize=address,undefined)
  endif()
endfunction()

# add_mlir_library / add_mlir_dialect_library / add_mlir_conversion_library,
# installed and exported as part of AttnFuse.
function(add_attnfuse_library name)
  add_mlir_library(${name} ${ARGN} DISABLE_INSTALL)
  attnfuse_install_target(${name})
  attnfuse_link_sanitizers(${name})
endfunction()

function(add_attnfuse_dialect_library name)
  set_property(GLOBAL APPEND PROPERTY ATTNFUSE_DIALECT_LIBS ${name})
  add_attnfuse_library(${name} ${ARGN})
endfunction()

function(add_attnfuse_conversion_library name)
  set_property(GLOBAL APPEND PROPERTY ATTNFUSE_CONVERSION_LIBS ${name})
  add_attnfuse_library(${name} ${ARGN})
endfunction()

# An attnfuse-* tool: built into bin/, installed with an RPATH that finds
# libMLIR.so where the LLVM package keeps it.
function(add_attnfuse_tool name)
  add_llvm_executable(${name} ${ARGN})
  llvm_update_compile_flags(${name})
  set_target_properties(${name} PROPERTIES
    INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${LLVM_LIBRARY_DIR}")
  attnfuse_install_target(${name})
endfunction()
