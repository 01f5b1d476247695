# Compile flags of the C++ test executables.
#
# Why: the test files were half of the build's compile time, and most of that
# was the optimizer working on gtest's and gmock's expanded macros. A test's
# running time is in the code under test (the libraries, autoresearchd, the fake
# trainer), which keeps the build type's flags. At -O0 instead of -O1,
# tests/daemon/e2e_test.cc compiles in 10 s instead of 18 s on the 2-core
# machine. A precompiled header of gtest, gmock, nlohmann/json and toml++ was
# measured too, and gained nothing.
#
# The trainer (its own CMake project) is left as it is: its harness tests run
# real tokenizer and loader work in their bodies.

# ard_unoptimized_tests(DIR ...): every C++ executable named *_test defined in DIR
# or below is compiled at -O0 (debug information, if the build type has it, stays).
function(ard_unoptimized_tests)
  foreach(dir ${ARGN})
    _ard_collect_tests(${dir} tests)
    foreach(t ${tests})
      target_compile_options(${t} PRIVATE -O0)
    endforeach()
  endforeach()
endfunction()

function(_ard_collect_tests dir out)
  set(found)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    get_target_property(sources ${t} SOURCES)
    if(type STREQUAL "EXECUTABLE" AND t MATCHES "_test$" AND NOT sources MATCHES "\\.cu(;|$)")
      list(APPEND found ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    _ard_collect_tests(${sub} more)
    list(APPEND found ${more})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()
