#!/usr/bin/env python3
"""Refuse graphs that draw random numbers of their own.

voiced's engines take every random draw from the generation's seed on the host (sampling in
the language-model loops, the flow-matching start noise). A graph with a random operator
(``RandomNormal*``, ``RandomUniform*``, ``Multinomial``, ``Bernoulli``) anywhere, subgraphs
included, would make two runs with the same seed differ, so ``voiced models prepare`` refuses
it, naming the node. (Chatterbox's decoders have such a node at the top level; their prepare
step rewrites it into an input instead, ``seed_noise_graph.py``.) External weights are not read.

Usage: check_graph_noise.py GRAPH.onnx...
"""
import sys

import onnx

RANDOM = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}


def random_nodes(graph, where):
    for node in graph.node:
        if node.op_type in RANDOM:
            yield f"{where}: {node.op_type} node {node.name or '(unnamed)'}"
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subgraphs:
                yield from random_nodes(sub, f"{where} (inside {node.name or node.op_type})")


def main(paths):
    found = []
    for path in paths:
        model = onnx.load(path, load_external_data=False)
        found.extend(random_nodes(model.graph, path))
    if found:
        sys.exit("these graphs draw their own noise, which the seed cannot reach:\n" + "\n".join(found))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
