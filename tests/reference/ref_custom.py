# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: Custom ops registered by the conformance cases (tests/cases/cases_custom.c),
keyed by the case's body name."""

BODIES = {
    "scaled_square_a1.5": lambda x: 1.5 * x * x,
}


def ref_custom(case, xs):
    fn = BODIES.get(case["body"])
    if fn is None:
        raise KeyError("no reference for Custom body " + case["body"])
    return fn(xs[0])


REF = {"Custom": ref_custom}
