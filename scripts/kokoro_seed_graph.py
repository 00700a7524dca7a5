#!/usr/bin/env python3
"""Give Kokoro-82M's harmonic source its randomness back, as explicit model inputs.

The shipped int8 ONNX export of Kokoro-82M is deterministic: its SineGen
(/decoder/decoder/generator/m_source/l_sin_gen/) lost the additive noise and the random
initial phase of the PyTorch model when it was traced. This script adds two inputs so that
the caller (voiced, from a seeded RNG) decides them:

* ``sine_noise`` float32 [1, K, 9]: standard-normal noise bank, tiled along time to the
  source's length and scaled as the original model does (0.003 where voiced,
  0.1 / 3 where unvoiced), then added to the harmonics.
* ``sine_phase`` float32 [1, 1, 9]: per-harmonic phase offset in radians, added before ``Sin``.

It also exposes the duration predictor's answer as a second output, so that voiced can tell when
each phoneme is spoken (word timestamps):

* ``durations`` int64 [T]: frames per input token (padding included) as the length regulator
  uses them (round(sum(sigmoid(duration_proj)) / speed), at least 1). A frame is 600 samples of
  the 24 kHz audio.

Feeding zeros reproduces the original model's output exactly. Run by
``voiced models fetch kokoro``; the output's sha256 is pinned in voiced, so onnx is pinned too.

Usage: kokoro_seed_graph.py INPUT.onnx OUTPUT.onnx
"""
import sys

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

ONNX_VERSION = "1.23.2"
SRC = "/decoder/decoder/generator/m_source/l_sin_gen/"
PHASE_IN = SRC + "Transpose_3_output_0"  # phase in radians, [1, T, 9], fed to Sin
SIN = SRC + "Sin"
UV = SRC + "Cast_output_0"  # voiced flag, [1, T, 1]
HARMONICS = SRC + "Mul_6_output_0"  # sine_amp * sin(phase) * uv, [1, T, 9]
HARMONIC_COUNT = 9
DURATIONS = "/encoder/Gather_output_0"  # int64 [T]: pred_dur[0], read by the length regulator
NOISE_STD = 0.003  # SineGen.noise_std
SINE_AMP = 0.1  # SineGen.sine_amp
P = "/voiced_seed/"


def const(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype=dtype), P + name)


def main(src, dst):
    if onnx.__version__ != ONNX_VERSION:
        sys.exit(f"onnx {ONNX_VERSION} is required (found {onnx.__version__}): the output checksum depends on it")
    model = onnx.load(src)
    graph = model.graph
    names = {o for n in graph.node for o in n.output}
    for needed in (PHASE_IN, UV, HARMONICS, DURATIONS):
        if needed not in names:
            sys.exit(f"unexpected graph: {needed} not found (is this kokoro-v1.0.int8.onnx?)")
    if any(i.name in ("sine_noise", "sine_phase") for i in graph.input):
        sys.exit("graph is already rewritten")

    graph.input.append(helper.make_tensor_value_info("sine_noise", TensorProto.FLOAT, [1, "noise_length", HARMONIC_COUNT]))
    graph.input.append(helper.make_tensor_value_info("sine_phase", TensorProto.FLOAT, [1, 1, HARMONIC_COUNT]))
    graph.initializer.extend(
        [
            const("one_i64", [1], np.int64),
            const("zero_i64", [0], np.int64),
            const("axis1", [1], np.int64),
            const("one_f", 1.0, np.float32),
            const("voiced_amp", NOISE_STD, np.float32),
            const("unvoiced_amp", SINE_AMP / 3, np.float32),
        ]
    )

    def node(op, inputs, name, **attrs):
        return helper.make_node(op, inputs, [P + name], name=P + name, **attrs)

    new = [
        # Phase offset before Sin.
        node("Add", [PHASE_IN, "sine_phase"], "phase"),
        # Tile the noise bank to the source's length T: repeats = ceil(T / K), then cut to T.
        node("Shape", [UV], "len", start=1, end=2),
        node("Shape", ["sine_noise"], "bank_len", start=1, end=2),
        node("Add", [P + "len", P + "bank_len"], "len_plus_bank"),
        node("Sub", [P + "len_plus_bank", P + "one_i64"], "len_plus_bank_m1"),
        node("Div", [P + "len_plus_bank_m1", P + "bank_len"], "reps"),
        node("Concat", [P + "one_i64", P + "reps", P + "one_i64"], "repeats", axis=0),
        node("Tile", ["sine_noise", P + "repeats"], "tiled"),
        node("Slice", [P + "tiled", P + "zero_i64", P + "len", P + "axis1"], "noise"),
        # noise_amp = uv * noise_std + (1 - uv) * sine_amp / 3, as in SineGen.forward.
        node("Mul", [UV, P + "voiced_amp"], "amp_voiced"),
        node("Sub", [P + "one_f", UV], "unvoiced"),
        node("Mul", [P + "unvoiced", P + "unvoiced_amp"], "amp_unvoiced"),
        node("Add", [P + "amp_voiced", P + "amp_unvoiced"], "amp"),
        node("Mul", [P + "noise", P + "amp"], "scaled_noise"),
        node("Add", [HARMONICS, P + "scaled_noise"], "source"),
    ]

    # Rewire: Sin reads the shifted phase, consumers of the harmonics read harmonics + noise.
    rewired = 0
    for n in graph.node:
        for i, name in enumerate(n.input):
            if n.name == SIN and name == PHASE_IN:
                n.input[i] = P + "phase"
                rewired += 1
            elif name == HARMONICS:
                n.input[i] = P + "source"
                rewired += 1
    if rewired < 2:
        sys.exit("unexpected graph: could not rewire the harmonic source")

    # Keep topological order: insert the new nodes right after the node producing HARMONICS
    # (every input they read is produced before it), and the phase Add before Sin.
    nodes = list(graph.node)
    out = []
    for n in nodes:
        if n.name == SIN:
            out.append(new[0])
        out.append(n)
        if HARMONICS in n.output:
            out.extend(new[1:])
    out.append(helper.make_node("Identity", [DURATIONS], ["durations"], name=P + "durations"))
    del graph.node[:]
    graph.node.extend(out)
    graph.output.append(helper.make_tensor_value_info("durations", TensorProto.INT64, ["token_count"]))

    onnx.checker.check_model(model)
    onnx.save(model, dst)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
