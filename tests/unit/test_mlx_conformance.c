/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The op conformance suite (test_conformance.c, included whole) with the MLX backend registered:
 * every case of every kind MLX claims runs on MLX and is compared with the CPU. Run with
 * --no-test-backend to leave out the test-only cpu-decomposed backend. Until the registry lists
 * built-in backends from the build, this file registers "mlx" itself. */
#include "test_conformance.c"

#ifdef RLX_HAVE_MLX
#include "backends/mlx/backend.h"

__attribute__((constructor)) static void register_mlx(void) {
  if (rlx_backend_register(rlx_mlx_backend()) != RLX_OK) {
    fprintf(stderr, "test_mlx_conformance: cannot register mlx: %s\n", rlx_last_error());
    exit(1);
  }
}
#else
__attribute__((constructor)) static void no_mlx(void) {
  fprintf(stderr, "test_mlx_conformance: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  exit(77);
}
#endif
