#!/usr/bin/env python3
"""Turn a Chatterbox conditional decoder's internal noise into an input the caller fills.

The decoder starts its flow matching from ``z = randn_like(mu)``, exported as a
``RandomNormalLike`` node: ONNX Runtime offers no per-run seed for it, so two runs of the same
request differ. This script replaces every top-level ``RandomNormalLike`` by a graph input

* ``noise`` float32 [1, C, K]: a standard-normal bank drawn by voiced from the request's seed,
  tiled along the last axis (and the batch) to the shape of the node's input, sliced to it,
  then scaled and shifted by the node's own ``scale``/``mean`` and cast like its input.

so that same seed -> same audio and another seed -> another take. Several noise nodes get
``noise``, ``noise_1``, ... The graph's external weights (``<file>_data``) are not read or
copied: the output sits next to the input and refers to the same weight file. Run by
``voiced models prepare``; voiced records the output's sha256 and verifies it at load.

Usage: seed_noise_graph.py INPUT.onnx OUTPUT.onnx CHANNELS
"""
import sys

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

ONNX_VERSION = "1.23.2"
P = "/voiced_seed/"


def main(src, dst, channels):
    if onnx.__version__ != ONNX_VERSION:
        sys.exit(f"onnx {ONNX_VERSION} is required (found {onnx.__version__}): the output checksum depends on it")
    model = onnx.load(src, load_external_data=False)
    graph = model.graph
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    if opset < 15:
        sys.exit(f"opset {opset} is too old (CastLike needs 15)")
    if any(i.name.startswith("noise") for i in graph.input):
        sys.exit("graph is already rewritten")
    for n in graph.node:
        for a in n.attribute:
            if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                subgraphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
                for sub in subgraphs:
                    if any(m.op_type.startswith("RandomNormal") for m in sub.node):
                        sys.exit(f"noise drawn inside the subgraph of {n.name}: not supported")
    targets = [n for n in graph.node if n.op_type == "RandomNormalLike"]
    if not targets:
        sys.exit("no RandomNormalLike in the graph: nothing to seed")

    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array([1], np.int64), P + "one"),
            numpy_helper.from_array(np.array([0], np.int64), P + "zero"),
            numpy_helper.from_array(np.array([2], np.int64), P + "axis2"),
        ]
    )
    out = []
    for n in graph.node:
        if n.op_type != "RandomNormalLike":
            out.append(n)
            continue
        k = len([i for i in graph.input if i.name.startswith("noise")])
        noise = "noise" if k == 0 else f"noise_{k}"
        graph.input.append(helper.make_tensor_value_info(noise, TensorProto.FLOAT, [1, channels, "noise_frames"]))
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        p = f"{P}{k}/"

        def node(op, inputs, name, **kw):
            out.append(helper.make_node(op, inputs, [p + name], name=p + name, **kw))
            return p + name

        like = n.input[0]
        batch = node("Shape", [like], "batch", start=0, end=1)
        frames = node("Shape", [like], "frames", start=2, end=3)
        bank = node("Shape", [noise], "bank", start=2, end=3)
        reps = node("Div", [node("Sub", [node("Add", [frames, bank], "fb"), P + "one"], "fb1"), bank], "reps")
        tiled = node("Tile", [noise, node("Concat", [batch, P + "one", reps], "repeats", axis=0)], "tiled")
        cut = node("Slice", [tiled, P + "zero", frames, P + "axis2"], "cut")
        scale = numpy_helper.from_array(np.array(attrs.get("scale", 1.0), np.float32), p + "scale_c")
        mean = numpy_helper.from_array(np.array(attrs.get("mean", 0.0), np.float32), p + "mean_c")
        graph.initializer.extend([scale, mean])
        shifted = node("Add", [node("Mul", [cut, p + "scale_c"], "scaled"), p + "mean_c"], "shifted")
        if "dtype" in attrs:
            out.append(helper.make_node("Cast", [shifted], [n.output[0]], name=p + "cast", to=attrs["dtype"]))
        else:
            out.append(helper.make_node("CastLike", [shifted, like], [n.output[0]], name=p + "cast"))
    del graph.node[:]
    graph.node.extend(out)
    onnx.save(model, dst)
    # By path, so that the external weights are found next to the graph.
    onnx.checker.check_model(dst)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
