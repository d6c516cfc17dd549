/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Umbrella header of librlx. */
#ifndef RLX_RLX_H
#define RLX_RLX_H
#include "rlx/status.h"
#include "rlx/types.h"
#include "rlx/ops.h"
#include "rlx/graph.h"
#include "rlx/verify.h"
#include "rlx/format.h"
#include "rlx/session.h"
#include "rlx/backend.h"
#include "rlx/npy.h"
#include "rlx/autodiff.h"
#include "rlx/custom.h"
#include "rlx/optim.h"
#include "rlx/onnx.h"
#include "rlx/version.h" /* RLX_VERSION_STRING, generated from CMakeLists.txt */
#endif
