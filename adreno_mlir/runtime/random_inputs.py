"""The seeded random inputs of `adreno-mlir run` and `adreno-run` (one generator, so one
artifact run without --input gives the same answer from both).

It is counter-based: element `j` (0-based, C order) of input number `i` (0-based, in the
model's input order, the order of the artifact manifest's "inputs") for seed `seed` is, in
unsigned 64-bit arithmetic (everything modulo 2**64):

    z = seed * 0x9E3779B97F4A7C15 + (i << 40) + j
    x = splitmix64(z)
    u = (x >> 40) / 2**24                  # uniform in [0, 1), 24 bits

    splitmix64(z):  z += 0x9E3779B97F4A7C15
                    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
                    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
                    return z ^ (z >> 31)

(Sebastiano Vigna's SplitMix64 output function applied to the counter `z`.) A float input
gets `2 * u - 1` as float32: uniform in [-1, 1), a multiple of 2**-23, exact in float32 and
in double, so every implementation gives the same bits. An integer input with a `bound`
(token ids, the size of the table they index) gets `floor(u * span) = ((x >> 40) * span)
>> 24` as int64: uniform ids in [0, span), span = bound, except for the bound 2**24 of an
integer input the model computes with (an attention mask, token type ids: `VALUE_BOUND`),
whose span is 2: 0s and 1s, what a mask holds (ids up to 2**24 would make a mask's
`(1 - mask) * min` overflow to -inf and NaN). A negative seed is taken modulo 2**64.

runtime/c/tools/adreno_run.c (`adreno-run --seed N`) implements the same formula, for float
inputs and token ids; tests/test_adreno_run_tools.py and tests/test_native_int_inputs.py
check that the two agree."""

from __future__ import annotations

import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_MASK = (1 << 64) - 1
INDEX_SHIFT = 40
"""Input `i`'s counters start at i << 40: inputs of up to 2**40 elements never overlap."""


def splitmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output for each uint64 counter of `z` (wrapping arithmetic)."""
    z = z + np.uint64(GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
    return z ^ (z >> np.uint64(31))


def random_bits(seed: int, index: int, count: int) -> np.ndarray:
    """The 24-bit draws `x >> 40` of input `index`'s first `count` elements (uint64)."""
    if index < 0 or count < 0 or count > 1 << INDEX_SHIFT:
        raise ValueError(f"random_bits: input index {index} and element count {count} must be >= 0 and "
                         f"the count at most 2**{INDEX_SHIFT}")
    base = (int(seed) * GOLDEN + (int(index) << INDEX_SHIFT)) & _MASK
    with np.errstate(over="ignore"):
        z = np.uint64(base) + np.arange(count, dtype=np.uint64)
        return splitmix64(z) >> np.uint64(40)


VALUE_BOUND = 1 << 24
"""The bound of an integer input computed with on device (held as float32, exact below
2**24), not only looked up in a table: random data for it is 0 or 1."""


def random_input(seed: int, index: int, shape, dtype=np.float32, bound: int | None = None) -> np.ndarray:
    """Input number `index` of a model (0-based, model input order) drawn for `seed`, of
    `shape`: float32 (or another float dtype, cast from the float32 values) uniform in
    [-1, 1); for an integer `dtype`, ids uniform in [0, bound) as that dtype (int64 for
    ONNX token ids; `bound` is required), 0 or 1 for the bound VALUE_BOUND. The formula is in the module docstring."""
    shape = tuple(int(d) for d in shape)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    bits = random_bits(seed, index, count)
    if np.issubdtype(np.dtype(dtype), np.integer):
        if bound is None or not 1 <= int(bound) < 1 << INDEX_SHIFT:
            raise ValueError(f"random_input: an integer input needs a bound in [1, 2**{INDEX_SHIFT}), not {bound}")
        span = 2 if int(bound) == VALUE_BOUND else int(bound)
        with np.errstate(over="ignore"):
            ids = (bits * np.uint64(span)) >> np.uint64(24)
        return ids.astype(dtype).reshape(shape)
    values = (bits.astype(np.float64) / float(1 << 24) * 2.0 - 1.0).astype(np.float32)
    return values.astype(dtype, copy=False).reshape(shape)
