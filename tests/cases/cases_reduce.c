/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: reductions, scans, selection, sorting, histogram, sampling and the random
 * ops (Reduce, Softmax, Cumsum, CumProd, CumMax, ArgMax, ArgMin, TopK, Sort, ArgSort, Histogram,
 * Sample, RngNormal, RngUniform). See cases.h for the row format. */
#include "cases.h"

#define RED(OP, KEEP, ...) AT(Reduce, .op = RLX_REDUCE_##OP, .axes = IL(__VA_ARGS__), .keep_dim = KEEP)
#define RED_ALL(OP) AT(Reduce, .op = RLX_REDUCE_##OP, .axes = IL0, .keep_dim = false)
#define SCAN(OP, AX, EXCL) AT(OP, .axis = AX, .exclusive = EXCL)
#define ARG(OP, AX, KEEP) AT(OP, .axis = AX, .keep_dim = KEEP)
#define SORT(OP, AX, DESC) AT(OP, .axis = AX, .descending = DESC)
#define HIST(BINS, LO, HI) AT(Histogram, .bins = BINS, .min = LO, .max = HI)
#define SAMPLE(K, P, T, SEED) AT(Sample, .top_k = K, .top_p = P, .temperature = T, .seed = SEED)
#define NORMAL(MEAN, SCALE, KEY) AT(RngNormal, .mean = MEAN, .scale = SCALE, .key = KEY)
#define UNIFORM(LO, HI, KEY) AT(RngUniform, .low = LO, .high = HI, .key = KEY)

static const conf_case conf_cases_reduce[] = {
    /* ---- Reduce: every op, axis sets, keep_dim ---- */
    {"reduce_sum_axis1", RLX_OP_Reduce, RED(SUM, false, 1), 1, {IN(F32, 2, 3, 4)}},
    {"reduce_sum_keep", RLX_OP_Reduce, RED(SUM, true, -1), 1, {IN(F32, 2, 3, 4)}},
    {"reduce_sum_noncontig_axes", RLX_OP_Reduce, RED(SUM, false, 0, 2), 1, {IN(F32, 2, 3, 4)}},
    {"reduce_sum_all", RLX_OP_Reduce, RED_ALL(SUM), 1, {IN(F32, 3, 4)}},
    {"reduce_sum_rank0", RLX_OP_Reduce, RED_ALL(SUM), 1, {IN0(F32)}},
    {"reduce_sum_all_empty", RLX_OP_Reduce, RED_ALL(SUM), 1, {IN(F32, 2, 0)}},
    {"reduce_sum_special", RLX_OP_Reduce, RED(SUM, false, -1), 1, {INF(F32, CF_SPECIAL, 0, 0, 4, 3)}},
    {"reduce_sum_empty_axis", RLX_OP_Reduce, RED(SUM, false, 0), 1, {IN(F32, 0, 3)}},
    {"reduce_sum_i32", RLX_OP_Reduce, RED(SUM, false, 1), 1, {IN(I32, 3, 5)}},
    {"reduce_sum_i8_saturate", RLX_OP_Reduce, RED(SUM, false, 1), 1, {INF(I8, CF_INT, -128, 127, 4, 6)}},
    {"reduce_prod_i16_saturate", RLX_OP_Reduce, RED(PROD, false, 1), 1, {INF(I16, CF_INT, -30, 30, 3, 5)}},
    {"reduce_sum_f64", RLX_OP_Reduce, RED(SUM, false, 0), 1, {IN(F64, 7, 3)}},
    {"reduce_sum_long_rows", RLX_OP_Reduce, RED(SUM, false, -1), 1, {INF(F32, CF_NORMAL, 1, 3, 3, 10000)}},
    {"reduce_mean_axes_keep", RLX_OP_Reduce, RED(MEAN, true, 0, 2), 1, {IN(F32, 2, 3, 4)}},
    {"reduce_mean_f16", RLX_OP_Reduce, RED(MEAN, false, -1), 1, {IN(F16, 3, 8)}},
    {"reduce_mean_bf16", RLX_OP_Reduce, RED(MEAN, false, 0), 1, {IN(BF16, 8, 3)}},
    {"reduce_max_last", RLX_OP_Reduce, RED(MAX, false, -1), 1, {IN(F32, 3, 5)}},
    {"reduce_max_special", RLX_OP_Reduce, RED(MAX, false, 1), 1, {INF(F32, CF_SPECIAL, 0, 0, 4, 3)}},
    {"reduce_max_empty_axis", RLX_OP_Reduce, RED(MAX, false, 1), 1, {IN(F32, 3, 0)}},
    {"reduce_max_i64", RLX_OP_Reduce, RED(MAX, true, 0), 1, {IN(I64, 4, 3)}},
    {"reduce_min_first", RLX_OP_Reduce, RED(MIN, false, 0), 1, {IN(F32, 4, 3)}},
    {"reduce_min_empty_axis", RLX_OP_Reduce, RED(MIN, false, 0), 1, {IN(F64, 0, 2)}},
    {"reduce_min_u8", RLX_OP_Reduce, RED(MIN, false, 1), 1, {IN(U8, 3, 4)}},
    {"reduce_prod", RLX_OP_Reduce, RED(PROD, false, 1), 1, {INF(F32, CF_UNIFORM, 0.5, 1.5, 3, 6)}},
    {"reduce_prod_empty_axis", RLX_OP_Reduce, RED(PROD, false, 0), 1, {IN(F32, 0, 2)}},
    {"reduce_prod_i32", RLX_OP_Reduce, RED(PROD, false, -1), 1, {INF(I32, CF_INT, -3, 3, 2, 5)}},
    {"reduce_mean_all_keep",
     RLX_OP_Reduce,
     AT(Reduce, .op = RLX_REDUCE_MEAN, .axes = IL0, .keep_dim = true),
     1,
     {IN(F32, 2, 3)}},

    /* ---- Softmax ---- */
    {"softmax_last", RLX_OP_Softmax, AT(Softmax, .axis = -1), 1, {INF(F32, CF_NORMAL, 3, 0, 3, 7)}},
    {"softmax_axis0", RLX_OP_Softmax, AT(Softmax, .axis = 0), 1, {IN(F32, 4, 3)}},
    {"softmax_middle", RLX_OP_Softmax, AT(Softmax, .axis = 1), 1, {IN(F32, 2, 5, 3)}},
    {"softmax_large_logits", RLX_OP_Softmax, AT(Softmax, .axis = -1), 1, {INF(F32, CF_NORMAL, 300, 0, 2, 6)}},
    {"softmax_f64", RLX_OP_Softmax, AT(Softmax, .axis = -1), 1, {IN(F64, 3, 4)}},
    {"softmax_f16", RLX_OP_Softmax, AT(Softmax, .axis = -1), 1, {IN(F16, 2, 8)}},
    {"softmax_bf16", RLX_OP_Softmax, AT(Softmax, .axis = 0), 1, {IN(BF16, 8, 2)}},
    {"softmax_single", RLX_OP_Softmax, AT(Softmax, .axis = -1), 1, {IN(F32, 3, 1)}},
    {"softmax_wide", RLX_OP_Softmax, AT(Softmax, .axis = -1), 1, {INF(F32, CF_NORMAL, 5, 0, 4, 1000)}},
    {"softmax_empty_rows", RLX_OP_Softmax, AT(Softmax, .axis = -1), 1, {IN(F32, 0, 4)}},
    {"softmax_special", RLX_OP_Softmax, AT(Softmax, .axis = 0), 1, {INF(F32, CF_SPECIAL, 0, 0, 3, 4)}},

    /* ---- Cumsum / CumProd / CumMax ---- */
    {"cumsum_last", RLX_OP_Cumsum, SCAN(Cumsum, -1, false), 1, {IN(F32, 3, 6)}},
    {"cumsum_long", RLX_OP_Cumsum, SCAN(Cumsum, -1, false), 1, {INF(F32, CF_UNIFORM, 0, 1, 2, 2000)}},
    {"cumsum_exclusive", RLX_OP_Cumsum, SCAN(Cumsum, -1, true), 1, {IN(F32, 3, 6)}},
    {"cumsum_axis0", RLX_OP_Cumsum, SCAN(Cumsum, 0, false), 1, {IN(F32, 5, 2, 3)}},
    {"cumsum_middle_exclusive", RLX_OP_Cumsum, SCAN(Cumsum, 1, true), 1, {IN(F64, 2, 4, 3)}},
    {"cumsum_i32", RLX_OP_Cumsum, SCAN(Cumsum, -1, false), 1, {IN(I32, 2, 7)}},
    {"cumsum_i64_exclusive", RLX_OP_Cumsum, SCAN(Cumsum, 0, true), 1, {IN(I64, 6)}},
    {"cumsum_i8_saturate", RLX_OP_Cumsum, SCAN(Cumsum, -1, false), 1, {INF(I8, CF_INT, 0, 127, 2, 6)}},
    {"cumsum_f16", RLX_OP_Cumsum, SCAN(Cumsum, -1, false), 1, {IN(F16, 2, 8)}},
    {"cumsum_empty", RLX_OP_Cumsum, SCAN(Cumsum, -1, false), 1, {IN(F32, 2, 0)}},
    {"cumsum_special", RLX_OP_Cumsum, SCAN(Cumsum, -1, false), 1, {INF(F32, CF_SPECIAL, 0, 0, 2, 6)}},
    {"cumprod_last", RLX_OP_CumProd, SCAN(CumProd, -1, false), 1, {INF(F32, CF_UNIFORM, 0.5, 1.5, 3, 6)}},
    {"cumprod_exclusive", RLX_OP_CumProd, SCAN(CumProd, -1, true), 1, {INF(F32, CF_UNIFORM, -1.5, 1.5, 3, 6)}},
    {"cumprod_axis0", RLX_OP_CumProd, SCAN(CumProd, 0, false), 1, {INF(F64, CF_UNIFORM, -2, 2, 5, 3)}},
    {"cumprod_i32", RLX_OP_CumProd, SCAN(CumProd, -1, false), 1, {INF(I32, CF_INT, -3, 3, 2, 6)}},
    {"cummax_last", RLX_OP_CumMax, SCAN(CumMax, -1, false), 1, {IN(F32, 3, 7)}},
    {"cummax_exclusive", RLX_OP_CumMax, SCAN(CumMax, -1, true), 1, {IN(F32, 3, 7)}},
    {"cummax_axis0_ties", RLX_OP_CumMax, SCAN(CumMax, 0, false), 1, {INF(F32, CF_INT, -2, 2, 6, 3)}},
    {"cummax_i32", RLX_OP_CumMax, SCAN(CumMax, 1, false), 1, {IN(I32, 2, 6)}},
    {"cummax_f64_middle", RLX_OP_CumMax, SCAN(CumMax, 1, false), 1, {IN(F64, 2, 5, 2)}},

    /* ---- ArgMax / ArgMin (ties: first occurrence) ---- */
    {"argmax_axis0", RLX_OP_ArgMax, ARG(ArgMax, 0, false), 1, {IN(F32, 5, 3)}},
    {"argmax_last_keep", RLX_OP_ArgMax, ARG(ArgMax, -1, true), 1, {IN(F32, 2, 3, 6)}},
    {"argmax_ties", RLX_OP_ArgMax, ARG(ArgMax, 1, false), 1, {INF(F32, CF_INT, 0, 2, 4, 6)}},
    {"argmax_i32", RLX_OP_ArgMax, ARG(ArgMax, 0, false), 1, {IN(I32, 6, 2)}},
    {"argmax_f32_index", RLX_OP_ArgMax, ARG(ArgMax, 1, false), 1, {IN(F32, 3, 4)}, OUT(F32, 3)},
    {"argmax_i32_index", RLX_OP_ArgMax, ARG(ArgMax, 0, true), 1, {IN(F64, 4, 2)}, OUT(I32, 1, 2)},
    {"argmin_axis0", RLX_OP_ArgMin, ARG(ArgMin, 0, false), 1, {IN(F32, 5, 3)}},
    {"argmin_ties_keep", RLX_OP_ArgMin, ARG(ArgMin, -1, true), 1, {INF(F32, CF_INT, 0, 2, 4, 6)}},
    {"argmin_u8", RLX_OP_ArgMin, ARG(ArgMin, 1, false), 1, {IN(U8, 3, 5)}},
    {"argmin_f16", RLX_OP_ArgMin, ARG(ArgMin, 0, false), 1, {IN(F16, 6)}},

    /* ---- TopK (last axis; ties: smaller index first) ---- */
    {"topk_k2", RLX_OP_TopK, AT(TopK, .k = 2), 1, {IN(F32, 3, 6)}},
    {"topk_ties", RLX_OP_TopK, AT(TopK, .k = 3), 1, {INF(F32, CF_INT, 0, 2, 4, 6)}},
    {"topk_full", RLX_OP_TopK, AT(TopK, .k = 5), 1, {IN(F64, 5)}},
    {"topk_i32", RLX_OP_TopK, AT(TopK, .k = 1), 1, {IN(I32, 2, 2, 4)}},
    {"topk_f32_index", RLX_OP_TopK, AT(TopK, .k = 2), 1, {IN(F32, 2, 5)}, OUT(F32, 2, 2)},

    /* ---- Sort / ArgSort ---- */
    {"sort_last", RLX_OP_Sort, SORT(Sort, -1, false), 1, {IN(F32, 3, 6)}},
    {"sort_desc", RLX_OP_Sort, SORT(Sort, -1, true), 1, {IN(F32, 3, 6)}},
    {"sort_axis0", RLX_OP_Sort, SORT(Sort, 0, false), 1, {IN(F64, 5, 3)}},
    {"sort_i32_ties", RLX_OP_Sort, SORT(Sort, 1, true), 1, {INF(I32, CF_INT, -2, 2, 2, 7)}},
    {"sort_f16", RLX_OP_Sort, SORT(Sort, -1, false), 1, {IN(F16, 9)}},
    {"sort_empty", RLX_OP_Sort, SORT(Sort, 0, false), 1, {IN(F32, 0)}},
    {"argsort_last", RLX_OP_ArgSort, SORT(ArgSort, -1, false), 1, {IN(F32, 3, 6)}},
    {"argsort_desc", RLX_OP_ArgSort, SORT(ArgSort, -1, true), 1, {IN(F32, 3, 6)}},
    {"argsort_ties_stable", RLX_OP_ArgSort, SORT(ArgSort, 1, false), 1, {INF(F32, CF_INT, 0, 2, 3, 8)}},
    {"argsort_ties_desc", RLX_OP_ArgSort, SORT(ArgSort, 1, true), 1, {INF(F32, CF_INT, 0, 2, 3, 8)}},
    {"argsort_axis0_i64", RLX_OP_ArgSort, SORT(ArgSort, 0, false), 1, {IN(I64, 5, 2)}},

    /* ---- Histogram ---- */
    {"histogram_basic", RLX_OP_Histogram, HIST(5, -2.0f, 2.0f), 1, {IN(F32, 40)}},
    {"histogram_edges", RLX_OP_Histogram, HIST(4, -2.0f, 2.0f), 1, {INF(F32, CF_INT, -3, 3, 30)}},
    {"histogram_special", RLX_OP_Histogram, HIST(3, -1.0f, 1.0f), 1, {INF(F32, CF_SPECIAL, 0, 0, 20)}},
    {"histogram_2d_input", RLX_OP_Histogram, HIST(6, 0.0f, 1.0f), 1, {INF(F64, CF_UNIFORM, -0.2, 1.2, 5, 8)}},
    {"histogram_one_bin", RLX_OP_Histogram, HIST(1, 0.0f, 10.0f), 1, {INF(I32, CF_INT, -5, 15, 12)}},

    /* ---- Sample: deterministic outcomes (checked by the float64 reference) ---- */
    {"sample_top_k1", RLX_OP_Sample, SAMPLE(1, 1.0f, 1.0f, 7), 1, {IN(F32, 4, 10)}},
    {"sample_top_p_tiny", RLX_OP_Sample, SAMPLE(0, 0.01f, 1.0f, 3), 1, {INF(F32, CF_NORMAL, 4, 0, 3, 8)}},
    {"sample_cold", RLX_OP_Sample, SAMPLE(0, 1.0f, 1e-6f, 11), 1, {IN(F32, 3, 6)}},
    {"sample_vector", RLX_OP_Sample, SAMPLE(1, 1.0f, 0.5f, 1), 1, {IN(F64, 9)}},
    {"sample_one_token", RLX_OP_Sample, SAMPLE(0, 1.0f, 1.0f, 5), 1, {IN(F32, 3, 1)}},
    /* token frequencies over many identical rows (checked statistically in C) */
    {"sample_dist_plain",
     RLX_OP_Sample,
     SAMPLE(0, 1.0f, 1.0f, 21),
     1,
     {INF(F32, CF_RAMP, 0, 0.5, 20000, 5)},
     .check = CONF_SAMPLE_DIST},
    {"sample_dist_top_k",
     RLX_OP_Sample,
     SAMPLE(3, 1.0f, 1.0f, 22),
     1,
     {INF(F32, CF_RAMP, 0, 0.5, 20000, 5)},
     .check = CONF_SAMPLE_DIST},
    {"sample_dist_top_p",
     RLX_OP_Sample,
     SAMPLE(0, 0.7f, 1.0f, 23),
     1,
     {INF(F32, CF_RAMP, 0, 0.5, 20000, 5)},
     .check = CONF_SAMPLE_DIST},
    {"sample_dist_temperature",
     RLX_OP_Sample,
     SAMPLE(0, 1.0f, 2.0f, 24),
     1,
     {INF(F32, CF_RAMP, 0, 1, 20000, 5)},
     .check = CONF_SAMPLE_DIST},

    /* ---- RngNormal / RngUniform: determinism and moments (checked in C) ---- */
    {"rng_normal_f32", RLX_OP_RngNormal, NORMAL(0.0f, 1.0f, 7), 0, {{0}}, OUT(F32, 8192), .check = CONF_RNG},
    {"rng_normal_shifted_f64", RLX_OP_RngNormal, NORMAL(2.0f, 0.5f, 8), 0, {{0}}, OUT(F64, 64, 64), .check = CONF_RNG},
    {"rng_normal_template", RLX_OP_RngNormal, NORMAL(-1.0f, 3.0f, 9), 1, {IN(F32, 100, 50)}, .check = CONF_RNG},
    {"rng_normal_f16", RLX_OP_RngNormal, NORMAL(0.0f, 2.0f, 10), 0, {{0}}, OUT(F16, 4096), .check = CONF_RNG},
    {"rng_normal_op_seed",
     RLX_OP_RngNormal,
     AT(RngNormal, .mean = 0, .scale = 1, .key = 7, .op_seed = {true, 3.0f}),
     0,
     {{0}},
     OUT(F32, 4096),
     .check = CONF_RNG},
    {"rng_uniform_f32", RLX_OP_RngUniform, UNIFORM(0.0f, 1.0f, 1), 0, {{0}}, OUT(F32, 8192), .check = CONF_RNG},
    {"rng_uniform_range", RLX_OP_RngUniform, UNIFORM(-1.0f, 3.0f, 2), 0, {{0}}, OUT(F64, 50, 100), .check = CONF_RNG},
    {"rng_uniform_bf16", RLX_OP_RngUniform, UNIFORM(-2.0f, 2.0f, 3), 0, {{0}}, OUT(BF16, 4096), .check = CONF_RNG},
    {"rng_uniform_template", RLX_OP_RngUniform, UNIFORM(5.0f, 6.0f, 4), 1, {IN(I32, 64, 64)}, .check = CONF_RNG},
    {"rng_uniform_rank0", RLX_OP_RngUniform, UNIFORM(0.0f, 1.0f, 5), 0, {{0}}, OUT0(F32), .check = CONF_RNG},
};

#undef RED
#undef RED_ALL
#undef SCAN
#undef ARG
#undef SORT
#undef HIST
#undef SAMPLE
#undef NORMAL
#undef UNIFORM
