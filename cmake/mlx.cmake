# SPDX-License-Identifier: MIT OR Apache-2.0
# The MLX backend (src/backends/mlx/): built whenever the mlx-cpu wheel's C++ SDK is found.
# scripts/setup.sh installs mlx-cpu==0.32.4 with `pip install --no-deps --target .deps/mlx-cpu`;
# point RLX_MLX_ROOT (or MLX_DIR) elsewhere to use another copy. Defines RLX_HAVE_MLX=1 on the
# library when the backend is compiled in, and registers it (rlx_add_backend(mlx): the registry's
# generated table then lists rlx_mlx_backend(), src/backends/mlx/backend.c).
set(RLX_MLX_ROOT "${PROJECT_SOURCE_DIR}/.deps/mlx-cpu" CACHE PATH "folder holding the mlx-cpu wheel (mlx/, mlx_cpu.libs/)")
if(NOT MLX_DIR AND EXISTS "${RLX_MLX_ROOT}/mlx/share/cmake/MLX/MLXConfig.cmake")
  set(MLX_DIR "${RLX_MLX_ROOT}/mlx/share/cmake/MLX")
endif()
find_package(MLX CONFIG QUIET)
if(MLX_FOUND AND TARGET mlx)
  set(_rlx_mlx_default ON)
else()
  set(_rlx_mlx_default OFF)
endif()
option(RLX_MLX "Build the MLX backend (needs the mlx-cpu SDK)" ${_rlx_mlx_default})

file(GLOB RLX_MLX_C_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backends/mlx/*.c)
if(RLX_MLX AND NOT (MLX_FOUND AND TARGET mlx))
  message(FATAL_ERROR "RLX_MLX=ON but the MLX SDK was not found: run scripts/setup.sh (it installs mlx-cpu into .deps/mlx-cpu) or pass -DMLX_DIR=<dir>/mlx/share/cmake/MLX")
endif()
if(NOT RLX_MLX)
  message(STATUS "MLX backend: off (RLX_MLX=OFF; the SDK is looked for in ${RLX_MLX_ROOT})")
else()
  enable_language(CXX)
  message(STATUS "MLX backend: on (MLX ${MLX_VERSION} from ${MLX_DIR})")
  set(_rlx_mlx_shim ${PROJECT_SOURCE_DIR}/src/backends/mlx/shim.cpp)
  # the top-level glob leaves src/backends/mlx/ out; the backend adds itself to the registry table
  target_sources(rlx_objects PRIVATE ${RLX_MLX_C_SOURCES} ${_rlx_mlx_shim})
  rlx_add_backend(mlx)
  # C++20 only in the shim; MLX's headers come in as system headers (imported target)
  set_source_files_properties(${_rlx_mlx_shim} PROPERTIES COMPILE_OPTIONS "-std=c++20;-fno-strict-aliasing")
  target_include_directories(rlx_objects SYSTEM PRIVATE $<TARGET_PROPERTY:mlx,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(rlx_objects PUBLIC RLX_HAVE_MLX=1)
  add_compile_definitions(RLX_HAVE_MLX=1) # targets defined later (tests, tools) see it too
  get_target_property(_rlx_mlx_lib mlx IMPORTED_LOCATION_RELEASE)
  if(NOT _rlx_mlx_lib)
    get_target_property(_rlx_mlx_lib mlx IMPORTED_LOCATION)
  endif()
  get_filename_component(_rlx_mlx_libdir "${_rlx_mlx_lib}" DIRECTORY)
  # The wheel bundles reference netlib BLAS (~4 GFLOP/s on a 1024^3 sgemm). Debian's OpenBLAS
  # linked ahead of libmlx (and kept by --no-as-needed) makes libmlx's cblas_sgemm/dgemm bind to
  # it: ~70 GFLOP/s. This lives in the build, not in LD_PRELOAD.
  list(APPEND RLX_LINK_LIBS "-Wl,--no-as-needed" ${RLX_OPENBLAS_LIB} "${_rlx_mlx_lib}" "-Wl,--as-needed"
       "-Wl,-rpath,${_rlx_mlx_libdir}" stdc++)
  # Installed artefacts keep finding libmlx where the SDK is (its folder is not installed): the
  # installed rlx tool and librlx.so get it as their RUNPATH, librlx.a's consumers (CMake package
  # and pkg-config --static) link libmlx and libstdc++. Applied once the root CMakeLists has made
  # the targets and rlx.pc.
  set(RLX_MLX_LIBDIR "${_rlx_mlx_libdir}")
  set(RLX_MLX_LIB "${_rlx_mlx_lib}")
  function(_rlx_mlx_install_fixups)
    foreach(t rlx rlx_shared)
      if(TARGET ${t})
        set_property(TARGET ${t} APPEND PROPERTY INSTALL_RPATH "${RLX_MLX_LIBDIR}")
      endif()
    endforeach()
    if(TARGET rlx_static)
      target_link_libraries(rlx_static PRIVATE "$<INSTALL_INTERFACE:${RLX_MLX_LIB}>" "$<INSTALL_INTERFACE:stdc++>")
    endif()
    set(pc "${PROJECT_BINARY_DIR}/rlx.pc")
    if(EXISTS "${pc}")
      file(READ "${pc}" body)
      if(NOT body MATCHES "libmlx")
        string(REPLACE "Libs.private: " "Libs.private: ${RLX_MLX_LIB} -Wl,-rpath,${RLX_MLX_LIBDIR} -lstdc++ " body "${body}")
        file(WRITE "${pc}" "${body}")
      endif()
    endif()
  endfunction()
  cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL _rlx_mlx_install_fixups)
endif()

# The MLX-backend benchmark (bench/run_mlx_bench.sh runs it against MLX's Python API).
if(RLX_MLX AND EXISTS ${PROJECT_SOURCE_DIR}/bench/bench_mlx.c)
  add_executable(bench_mlx ${PROJECT_SOURCE_DIR}/bench/bench_mlx.c)
  target_include_directories(bench_mlx PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(bench_mlx PRIVATE rlx_static)
endif()
