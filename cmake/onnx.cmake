# SPDX-License-Identifier: MIT OR Apache-2.0
# ONNX import: C code for onnx.proto generated at build time with protoc-c (Debian packages
# libonnx-dev for the .proto, protobuf-c-compiler for protoc-c, libprotobuf-c-dev for the runtime;
# scripts/setup.sh installs them). Included by the root CMakeLists.txt after the rlx_objects
# target exists; adds the generated source to it and libprotobuf-c to RLX_LINK_LIBS.
# src/io/onnx/onnx_data.proto (our own declaration of the SequenceProto / OptionalProto test-data
# messages, which Debian's onnx.proto lacks) is compiled the same way.
# Sets RLX_ONNX_GEN_SOURCES / RLX_ONNX_GEN_INCLUDE for targets that build the sources themselves
# (the fuzzers).
find_program(RLX_PROTOC_C protoc-c REQUIRED)
find_file(RLX_ONNX_PROTO onnx.proto PATHS /usr/include/onnx NO_DEFAULT_PATH REQUIRED)
find_path(RLX_PROTOBUF_C_INCLUDE protobuf-c/protobuf-c.h REQUIRED)
find_library(RLX_PROTOBUF_C_LIB NAMES protobuf-c REQUIRED)

set(RLX_ONNX_GEN_INCLUDE ${CMAKE_BINARY_DIR}/gen)
set(RLX_ONNX_GEN_DIR ${RLX_ONNX_GEN_INCLUDE}/onnx)
set(RLX_ONNX_GEN_SOURCES ${RLX_ONNX_GEN_DIR}/onnx.pb-c.c ${RLX_ONNX_GEN_DIR}/onnx_data.pb-c.c)
set(RLX_ONNX_DATA_PROTO ${PROJECT_SOURCE_DIR}/src/io/onnx/onnx_data.proto)
file(MAKE_DIRECTORY ${RLX_ONNX_GEN_DIR})

# The proto is copied next to the output first, so the generated file includes "onnx.pb-c.h" and
# users include it as <onnx/onnx.pb-c.h> through RLX_ONNX_GEN_INCLUDE.
add_custom_command(
  OUTPUT ${RLX_ONNX_GEN_DIR}/onnx.pb-c.c ${RLX_ONNX_GEN_DIR}/onnx.pb-c.h
  COMMAND ${CMAKE_COMMAND} -E copy ${RLX_ONNX_PROTO} ${RLX_ONNX_GEN_DIR}/onnx.proto
  COMMAND ${RLX_PROTOC_C} --proto_path=${RLX_ONNX_GEN_DIR} --c_out=${RLX_ONNX_GEN_DIR} ${RLX_ONNX_GEN_DIR}/onnx.proto
  DEPENDS ${RLX_ONNX_PROTO}
  COMMENT "Generating C code for onnx.proto with protoc-c"
  VERBATIM)
# Our own onnx_data.proto (sequence / optional test-data files) imports onnx.proto.
add_custom_command(
  OUTPUT ${RLX_ONNX_GEN_DIR}/onnx_data.pb-c.c ${RLX_ONNX_GEN_DIR}/onnx_data.pb-c.h
  COMMAND ${CMAKE_COMMAND} -E copy ${RLX_ONNX_DATA_PROTO} ${RLX_ONNX_GEN_DIR}/onnx_data.proto
  COMMAND ${RLX_PROTOC_C} --proto_path=${RLX_ONNX_GEN_DIR} --c_out=${RLX_ONNX_GEN_DIR} ${RLX_ONNX_GEN_DIR}/onnx_data.proto
  DEPENDS ${RLX_ONNX_DATA_PROTO} ${RLX_ONNX_GEN_DIR}/onnx.pb-c.h
  COMMENT "Generating C code for onnx_data.proto with protoc-c"
  VERBATIM)
# Generated code is not ours to fix: compile it without our warning flags.
set_source_files_properties(${RLX_ONNX_GEN_SOURCES} PROPERTIES GENERATED TRUE COMPILE_OPTIONS "-w")

add_custom_target(rlx_onnx_gen DEPENDS ${RLX_ONNX_GEN_SOURCES}) # for targets in other directories

target_sources(rlx_objects PRIVATE ${RLX_ONNX_GEN_SOURCES})
target_include_directories(rlx_objects PRIVATE ${RLX_ONNX_GEN_INCLUDE} ${RLX_PROTOBUF_C_INCLUDE})
list(APPEND RLX_LINK_LIBS ${RLX_PROTOBUF_C_LIB})
