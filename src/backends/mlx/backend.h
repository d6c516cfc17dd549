/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX backend record ("mlx"). Compiled in when CMake finds the mlx-cpu SDK (RLX_HAVE_MLX). */
#ifndef RLX_MLX_BACKEND_H
#define RLX_MLX_BACKEND_H

#include "rlx/backend.h"

const rlx_backend *rlx_mlx_backend(void);

#endif
