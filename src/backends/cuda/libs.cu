/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Loading cuBLAS, cuBLASLt, cuSOLVER and cuFFT at run time (libs.cuh; cuDNN, optional, through
 * rlx_cu_lib_open in dnn.cu). Each library is looked up by its
 * soname first (LD_LIBRARY_PATH, the ld.so cache), then in the toolkit folder CMake found at
 * configure time (RLX_CUDA_LIBDIR). The major versions come from the headers compiled against,
 * so the loaded library has the ABI the call sites were built for. */
#include <dlfcn.h>
#include <mutex>
#include <stdio.h>

#include "backends/cuda/libs.cuh"

#define RLX_STR2(x) #x
#define RLX_STR(x) RLX_STR2(x)

struct rlx_cu_libs rlx_cu_libs_table;

namespace {

std::once_flag g_once;
int g_loaded;
char g_why[512];

} // namespace

/* lib<stem>.so.<major> by soname, then in the toolkit folder; NULL when neither loads */
extern "C" void *rlx_cu_lib_open(const char *stem, int major) {
  char name[256];
  snprintf(name, sizeof name, "lib%s.so.%d", stem, major);
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
#ifdef RLX_CUDA_LIBDIR
  if (!h) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", RLX_CUDA_LIBDIR, name);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
#endif
  return h;
}

namespace {

void *open_lib(const char *stem, int major) {
  void *h = rlx_cu_lib_open(stem, major);
  if (!h) {
    char name[256];
    snprintf(name, sizeof name, "lib%s.so.%d", stem, major);
    const char *e = dlerror();
    snprintf(g_why, sizeof g_why,
             "cuda: cannot load %s (%s); the cuda backend needs the CUDA %d toolkit's cuBLAS, cuBLASLt, cuSOLVER and cuFFT: "
             "install them or add their folder to LD_LIBRARY_PATH", name, e ? e : "not found", CUBLAS_VER_MAJOR);
  }
  return h;
}

bool find(void *lib, const char *sym, void **slot) {
  *slot = dlsym(lib, sym);
  if (!*slot)
    snprintf(g_why, sizeof g_why, "cuda: the loaded CUDA library lacks %s (an older toolkit than the one rlx was built with?)",
             sym);
  return *slot != NULL;
}

void load_all() {
  void *blas = open_lib("cublas", CUBLAS_VER_MAJOR);
  void *blas_lt = blas ? open_lib("cublasLt", CUBLAS_VER_MAJOR) : NULL;
  void *solver = blas_lt ? open_lib("cusolver", CUSOLVER_VER_MAJOR) : NULL;
  void *fft = solver ? open_lib("cufft", CUFFT_VER_MAJOR) : NULL;
  if (!fft) return;
  bool ok = true;
  struct rlx_cu_libs &t = rlx_cu_libs_table;
#define FIND_BLAS(f) ok = ok && find(blas, RLX_STR(f), (void **)&t.RLX_CU_CAT(fn_, f));
#define FIND_BLAS_LT(f) ok = ok && find(blas_lt, RLX_STR(f), (void **)&t.RLX_CU_CAT(fn_, f));
#define FIND_SOLVER(f) ok = ok && find(solver, RLX_STR(f), (void **)&t.RLX_CU_CAT(fn_, f));
#define FIND_FFT(f) ok = ok && find(fft, RLX_STR(f), (void **)&t.RLX_CU_CAT(fn_, f));
  RLX_CUBLAS_FUNCTIONS(FIND_BLAS)
  RLX_CUBLAS_OVERLOADED(FIND_BLAS)
  RLX_CUBLASLT_FUNCTIONS(FIND_BLAS_LT)
  RLX_CUSOLVER_FUNCTIONS(FIND_SOLVER)
  RLX_CUFFT_FUNCTIONS(FIND_FFT)
  g_loaded = ok;
}

} // namespace

int rlx_cu_libs_load(const char **why) {
  std::call_once(g_once, load_all);
  if (!g_loaded && why) *why = g_why;
  return g_loaded;
}
