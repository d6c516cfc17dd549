/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The finite-difference gradient checks (test_gradcheck.c, included whole) with the MLX backend
 * registered: every case runs on the CPU and on MLX. Until the registry lists built-in backends
 * from the build, this file registers "mlx" itself. */
#include "test_gradcheck.c"

#ifdef RLX_HAVE_MLX
#include "backends/mlx/backend.h"

__attribute__((constructor)) static void register_mlx(void) {
  if (rlx_backend_register(rlx_mlx_backend()) != RLX_OK) {
    fprintf(stderr, "test_mlx_gradcheck: cannot register mlx: %s\n", rlx_last_error());
    exit(1);
  }
}
#else
__attribute__((constructor)) static void no_mlx(void) {
  fprintf(stderr, "test_mlx_gradcheck: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  exit(77);
}
#endif
