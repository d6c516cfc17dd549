# SPDX-License-Identifier: MIT OR Apache-2.0
# Corpus replay in the ordinary (gcc) test builds: each fuzz target's entry function is linked with
# tests/fuzz/replay_main.c and run over every file of its corpus tests/fuzz/corpus/<name>/, so the
# RelWithDebInfo and the ASan+UBSan suites both re-check every seed and every crash ever found
# (ctest -R fuzz_corpus). Included from tests/CMakeLists.txt.
foreach(name text binary npy safetensors onnx idx)
  set(target fuzz_replay_${name})
  add_executable(${target} ${CMAKE_CURRENT_LIST_DIR}/fuzz_${name}.c ${CMAKE_CURRENT_LIST_DIR}/replay_main.c)
  target_link_libraries(${target} PRIVATE rlx_static)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  add_test(NAME fuzz_corpus_${name} COMMAND ${target} ${CMAKE_CURRENT_LIST_DIR}/corpus/${name})
endforeach()
