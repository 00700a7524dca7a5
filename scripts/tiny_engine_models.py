#!/usr/bin/env python3
"""Tiny random stand-ins for the cloning engines' public ONNX layouts, for tests.

No weights for chatterbox_turbo are reachable from this project (docs/engines.md), so the tests
run the real pipeline on graphs with exactly the public signatures (input/output names, dtypes,
ranks, output order, KV naming, the special token ids) and shrunk hidden sizes. The graphs are
random but fixed (numpy seed), and built so that generation ends by itself: the language model
adds a bias to the stop token that grows with the number of speech tokens fed back, so a loop
stops after a bounded number of steps (about 20 to 40) at any temperature.

Written under OUT (the layout an operator places under `<models_dir>`):

    chatterbox_turbo/onnx/speech_encoder.onnx       audio_values f32 [B, n] ->
        audio_features f32 [B, N, D], audio_tokens i64 [B, P], speaker_embeddings f32 [B, 192],
        speaker_features f32 [B, 2P, 80]                 (N = P = n // 960)
    chatterbox_turbo/onnx/embed_tokens.onnx         input_ids i64 [B, S] -> inputs_embeds [B, S, D]
    chatterbox_turbo/onnx/language_model.onnx(+ _data)  inputs_embeds, attention_mask i64 [B, total],
        position_ids i64 [B, S], past_key_values.{i}.{key,value} f32 [B, H, past, hd]
        -> logits f32 [B, S, 6563], present.{i}.{key,value} [B, H, total, hd]
    chatterbox_turbo/onnx/conditional_decoder.onnx(+ _data)  speech_tokens i64 [B, T],
        speaker_embeddings, speaker_features -> waveform f32 [B, (T - F/2) * 960]; draws its
        flow noise with RandomNormalLike like the real graph
    chatterbox_turbo/tokenizer.json                 a `tokenizers` WordLevel tokenizer
    chatterbox_turbo/voices/default.wav             a 6 s synthetic reference voice, 24 kHz

    chatterbox/onnx/speech_encoder.onnx             as chatterbox_turbo's
    chatterbox/onnx/embed_tokens.onnx               input_ids i64 [B, S], position_ids i64 [B, S],
        exaggeration f32 [B] -> inputs_embeds [B, S, D]; text rows are those up to the first 0
        (stop text), 6563 carries the exaggeration vector, the rest are speech rows (upstream
        `InputsEmbeds`)
    chatterbox/onnx/language_model.onnx(+ _data)    inputs_embeds, attention_mask,
        past_key_values.{i}.{key,value} (no position_ids) -> logits f32 [B, S, 8194], present.*
    chatterbox/onnx/conditional_decoder.onnx(+ _data)  as chatterbox_turbo's
    chatterbox/tokenizer.json                       character-level WordLevel tokenizer with the
        added tokens [SPACE] and [xx] per language, and the upstream template
        [6563, 255, ..., 0, 6561, 6561]
    chatterbox/voices/default.wav                   a 6 s synthetic reference voice, 24 kHz

Usage: tiny_engine_models.py OUT
"""
import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 9
D = 32  # hidden size (1024 upstream)
HEADS = 2  # 16 upstream
HEAD_DIM = 8  # 64 upstream
LAYERS = 2  # 24 upstream
SPEECH_VOCAB = 6563  # logits width, as upstream
MTL_VOCAB = 8194  # the multilingual model's logits width
EXAGGERATION = 6563
START_TEXT = 255
STOP_TEXT = 0
MTL_LANGUAGES = (
    "ar da de el en es fi fr he hi it ja ko ms nl no pl pt ru sv sw tr zh"
).split()
MTL_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789.,!?'-\"") + ["\u0301", "\u0300", "\u0308", "\u0327"]
START_SPEECH = 6561
STOP_SPEECH = 6562
SAMPLES_PER_TOKEN = 960
SPEAKER_DIM = 192
MEL = 80
TEXT_IDS = 128  # tokenizer ids are below this; embeddings of higher ids carry the step marker
STOP_AFTER = 20  # the stop bias turns positive after this many speech tokens
STOP_SLOPE = 1.5

WORDS = (
    "[UNK] . , ! ? ' hello from voiced the a an and of to in is it you that was for on are "
    "with as this be at one have not what all were we when your can said there use each "
    "which do how if will up other about out many then them these so some would make "
    "like him into time has look two more write go see number no way could people my "
    "than first water been call who oil its now find long down day did get come made may part"
).split()


class Graph:
    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []
        self.n = 0

    def name(self, hint):
        self.n += 1
        return f"{hint}_{self.n}"

    def const(self, value, dtype=np.float32, hint="c"):
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def weight(self, shape, scale, hint="w"):
        return self.const(self.rng.standard_normal(shape).astype(np.float32) * scale, hint=hint)

    def op(self, op_type, inputs, output=None, **attrs):
        output = output or self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attrs))
        return output

    def save(self, path, inputs, outputs, external=False):
        graph = helper.make_graph(self.nodes, os.path.basename(path), inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        if external:
            onnx.save(
                model,
                path,
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=os.path.basename(path) + "_data",
                size_threshold=1024,
            )
        else:
            onnx.save(model, path)


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def i64(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def speech_encoder(path, rng):
    g = Graph(rng)
    n = g.op("Shape", ["audio_values"], start=1, end=2)
    frames_n = g.op("Div", [n, g.const([SAMPLES_PER_TOKEN], np.int64)])
    used = g.op("Mul", [frames_n, g.const([SAMPLES_PER_TOKEN], np.int64)])
    audio = g.op("Slice", ["audio_values", g.const([0], np.int64), used, g.const([1], np.int64)])
    frames = g.op("Reshape", [audio, g.const([0, -1, SAMPLES_PER_TOKEN], np.int64)])
    feats = g.op("Tanh", [g.op("MatMul", [frames, g.weight([SAMPLES_PER_TOKEN, D], 0.2)])])
    no_marker = np.ones([D], np.float32)
    no_marker[0] = 0.0  # channel 0 marks fed-back speech tokens; the prompt carries none
    g.op("Mul", [feats, g.const(no_marker)], "audio_features")
    scores = g.op("MatMul", [frames, g.weight([SAMPLES_PER_TOKEN, 64], 0.2)])
    arg = g.op("ArgMax", [scores], axis=2, keepdims=0)
    spread = g.op("Add", [g.op("Mul", [arg, g.const(97, np.int64)]), g.const(128, np.int64)])
    g.op("Mod", [spread, g.const(START_SPEECH, np.int64)], "audio_tokens")
    spk = g.op("ReduceMean", [g.op("MatMul", [frames, g.weight([SAMPLES_PER_TOKEN, SPEAKER_DIM], 0.2)])], axes=[1], keepdims=0)
    g.op("Tanh", [spk], "speaker_embeddings")
    mel = g.op("MatMul", [frames, g.weight([SAMPLES_PER_TOKEN, 2 * MEL], 0.2)])
    g.op("Reshape", [mel, g.const([0, -1, MEL], np.int64)], "speaker_features")
    g.save(
        path,
        [f32("audio_values", ["batch_size", "num_samples"])],
        [
            f32("audio_features", ["batch_size", "num_prompt_rows", D]),
            i64("audio_tokens", ["batch_size", "num_prompt_tokens"]),
            f32("speaker_embeddings", ["batch_size", SPEAKER_DIM]),
            f32("speaker_features", ["batch_size", "num_prompt_frames", MEL]),
        ],
    )


def embed_tokens(path, rng):
    g = Graph(rng)
    table = rng.standard_normal([SPEECH_VOCAB, D]).astype(np.float32) * 0.5
    table[:, 0] = 0.0
    table[TEXT_IDS:, 0] = 1.0
    g.op("Gather", [g.const(table), "input_ids"], "inputs_embeds")
    g.save(
        path,
        [i64("input_ids", ["batch_size", "sequence_length"])],
        [f32("inputs_embeds", ["batch_size", "sequence_length", D])],
    )


def language_model(path, rng, vocab=SPEECH_VOCAB, positions=True):
    """positions: the graph takes position_ids (turbo); the multilingual one does not (its
    embedder adds the positions)."""
    g = Graph(rng)
    inputs = [
        f32("inputs_embeds", ["batch_size", "sequence_length", D]),
        i64("attention_mask", ["batch_size", "total_sequence_length"]),
    ]
    x = "inputs_embeds"
    if positions:
        # Sinusoidal positions; channel 0 stays 0 so that layer 0 can count speech tokens.
        freqs = np.concatenate([[0.0], 1.0 / (10000 ** (np.arange(1, D) / D))]).astype(np.float32)
        pos = g.op("Unsqueeze", [g.op("Cast", ["position_ids"], to=TensorProto.FLOAT), g.const([2], np.int64)])
        x = g.op("Add", [x, g.op("Mul", [g.op("Sin", [g.op("Mul", [pos, g.const(freqs)])]), g.const(0.3)])])
        inputs.append(i64("position_ids", ["batch_size", "sequence_length"]))
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = g.op("Unsqueeze", [mask, g.const([1, 2], np.int64)])  # [B, 1, 1, total]
    mask_bias = g.op("Mul", [g.op("Sub", [g.const(1.0), mask]), g.const(-1e4)])
    outputs = []
    count = None
    for layer in range(LAYERS):
        heads = []
        for kind in ("key", "value", "query"):
            w = rng.standard_normal([D, HEADS * HEAD_DIM]).astype(np.float32) / np.sqrt(D)
            if layer == 0 and kind == "value":
                w[:, 0] = 0.0
                w[0, 0] = 1.0  # head 0, dim 0 of layer 0's values = the step marker
            proj = g.op("MatMul", [x, g.const(w)])
            proj = g.op("Reshape", [proj, g.const([0, 0, HEADS, HEAD_DIM], np.int64)])
            heads.append(g.op("Transpose", [proj], perm=[0, 2, 1, 3]))
        k, v, q = heads
        past = f"past_key_values.{layer}"
        present = f"present.{layer}"
        k = g.op("Concat", [past + ".key", k], present + ".key", axis=2)
        v = g.op("Concat", [past + ".value", v], present + ".value", axis=2)
        for kind in ("key", "value"):
            inputs.append(f32(f"{past}.{kind}", ["batch_size", HEADS, "past_sequence_length", HEAD_DIM]))
            outputs.append(f32(f"{present}.{kind}", ["batch_size", HEADS, "total_sequence_length", HEAD_DIM]))
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = g.op("Add", [g.op("Mul", [scores, g.const(1.0 / np.sqrt(HEAD_DIM))]), mask_bias])
        attn = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        attn = g.op("Reshape", [g.op("Transpose", [attn], perm=[0, 2, 1, 3]), g.const([0, 0, HEADS * HEAD_DIM], np.int64)])
        x = g.op("Add", [x, g.op("MatMul", [attn, g.weight([HEADS * HEAD_DIM, D], 0.3)])])
        if layer == 0:
            marker = g.op("Slice", [v, g.const([0, 0], np.int64), g.const([1, 1], np.int64), g.const([1, 3], np.int64)])
            count = g.op("ReduceSum", [marker, g.const([1, 2, 3], np.int64)], keepdims=0)  # [B]
    logits = g.op("MatMul", [x, g.weight([D, vocab], 1.0 / np.sqrt(D))])
    stop = np.zeros([vocab], np.float32)
    stop[STOP_SPEECH] = 1.0
    never = np.zeros([vocab], np.float32)
    never[START_SPEECH] = -30.0
    steps = g.op("Unsqueeze", [g.op("Sub", [count, g.const(float(STOP_AFTER))]), g.const([1, 2], np.int64)])
    bias = g.op("Add", [g.op("Mul", [g.op("Mul", [steps, g.const(STOP_SLOPE)]), g.const(stop)]), g.const(never)])
    g.op("Add", [logits, bias], "logits")
    outputs.insert(0, f32("logits", ["batch_size", "sequence_length", vocab]))
    g.save(path, inputs, outputs, external=True)


def multilingual_embed_tokens(path, rng):
    """Upstream `InputsEmbeds`: rows up to the first stop-text id (0) are text (token and
    position tables), the exaggeration id carries `exaggeration` times a learned vector, every
    other row is speech (token and position tables). Speech rows carry the step marker in
    channel 0 that the tiny language model counts."""
    g = Graph(rng)
    ids = "input_ids"
    seq = g.op("Shape", [ids], start=1, end=2)
    idx = g.op("Unsqueeze", [g.op("Range", [g.const(0, np.int64), g.op("Squeeze", [seq, g.const([0], np.int64)]), g.const(1, np.int64)]), g.const([0], np.int64)])  # [1, S]
    is_zero = g.op("Cast", [g.op("Equal", [ids, g.const(STOP_TEXT, np.int64)])], to=TensorProto.FLOAT)
    has_zero = g.op("Cast", [g.op("ReduceMax", [is_zero], axes=[1], keepdims=1)], to=TensorProto.BOOL)  # [B, 1]
    zero_pos = g.op("ArgMax", [is_zero], axis=1, keepdims=1)  # first zero, [B, 1]
    base_text = g.op("And", [g.op("LessOrEqual", [idx, zero_pos]), has_zero])
    exag = g.op("Equal", [ids, g.const(EXAGGERATION, np.int64)])
    not_exag = g.op("Not", [exag])
    text_mask = g.op("And", [base_text, not_exag])
    speech_mask = g.op("And", [g.op("Not", [base_text]), not_exag])
    zero = g.const(0, np.int64)
    pos = "position_ids"

    def table(rows, marker):
        t = rng.standard_normal([rows, D]).astype(np.float32) * 0.5
        t[:, 0] = marker
        return g.const(t)

    def rows(mask, tok_table, pos_table):
        tok = g.op("Gather", [tok_table, g.op("Where", [mask, ids, zero])])
        at = g.op("Gather", [pos_table, g.op("Where", [mask, pos, zero])])
        m = g.op("Unsqueeze", [g.op("Cast", [mask], to=TensorProto.FLOAT), g.const([2], np.int64)])
        return g.op("Mul", [g.op("Add", [tok, at]), m])

    text = rows(text_mask, table(MTL_VOCAB, 0.0), table(512, 0.0))
    speech_pos = rng.standard_normal([1100, D]).astype(np.float32) * 0.3
    speech_pos[:, 0] = 0.0
    speech = rows(speech_mask, table(MTL_VOCAB, 1.0), g.const(speech_pos))
    vec = rng.standard_normal([D]).astype(np.float32)
    vec[0] = 0.0
    adv = g.op("Mul", [g.op("Unsqueeze", ["exaggeration", g.const([1, 2], np.int64)]), g.const(vec)])  # [B, 1, D]
    em = g.op("Unsqueeze", [g.op("Cast", [exag], to=TensorProto.FLOAT), g.const([2], np.int64)])
    g.op("Add", [g.op("Add", [text, speech]), g.op("Mul", [adv, em])], "inputs_embeds")
    g.save(
        path,
        [
            i64("input_ids", ["batch_size", "sequence_length"]),
            i64("position_ids", ["batch_size", "sequence_length"]),
            f32("exaggeration", ["batch_size"]),
        ],
        [f32("inputs_embeds", ["batch_size", "sequence_length", D])],
    )


def multilingual_tokenizer(path):
    added = ["[UNK]", "[SPACE]"] + [f"[{l}]" for l in MTL_LANGUAGES]
    vocab = {}
    for i, w in enumerate(added + MTL_CHARS):
        vocab[w] = i + 1  # 0 is the stop-text id
    assert len(vocab) < START_TEXT
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": vocab[w], "content": w, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": False}
            for w in added
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": False},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "[EXAG]", "type_id": 0}},
                {"SpecialToken": {"id": "[SOT]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[EOT]", "type_id": 0}},
                {"SpecialToken": {"id": "[SPEECH]", "type_id": 0}},
                {"SpecialToken": {"id": "[SPEECH]", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {
                "[EXAG]": {"id": "[EXAG]", "ids": [EXAGGERATION], "tokens": ["[EXAG]"]},
                "[SOT]": {"id": "[SOT]", "ids": [START_TEXT], "tokens": ["[SOT]"]},
                "[EOT]": {"id": "[EOT]", "ids": [STOP_TEXT], "tokens": ["[EOT]"]},
                "[SPEECH]": {"id": "[SPEECH]", "ids": [START_SPEECH], "tokens": ["[SPEECH]"]},
            },
        },
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)


def conditional_decoder(path, rng):
    g = Graph(rng)
    frames = g.op("Shape", ["speaker_features"], start=1, end=2)
    prompt = g.op("Div", [frames, g.const([2], np.int64)])
    tokens = g.op("Slice", ["speech_tokens", prompt, g.const([2**62], np.int64), g.const([1], np.int64)])
    emb = g.op("Gather", [g.weight([SPEECH_VOCAB, 16], 1.0), tokens])  # [B, T', 16]
    mu = g.op("MatMul", [emb, g.weight([16, MEL], 0.25)])
    spk = g.op("MatMul", ["speaker_embeddings", g.weight([SPEAKER_DIM, MEL], 0.1)])
    prompt_mel = g.op("ReduceMean", ["speaker_features"], axes=[1], keepdims=0)
    cond = g.op("Unsqueeze", [g.op("Add", [spk, prompt_mel]), g.const([1], np.int64)])
    mu = g.op("Transpose", [g.op("Add", [mu, cond])], perm=[0, 2, 1])  # [B, 80, T']
    z = g.op("RandomNormalLike", [mu], mean=0.0, scale=1.0)
    x = g.op("Add", [mu, g.op("Mul", [z, g.const(0.7)])])
    wav = g.op("MatMul", [g.op("Transpose", [x], perm=[0, 2, 1]), g.weight([MEL, SAMPLES_PER_TOKEN], 0.15)])
    wav = g.op("Mul", [g.op("Tanh", [wav]), g.const(0.5)])
    g.op("Reshape", [wav, g.const([0, -1], np.int64)], "waveform")
    g.save(
        path,
        [
            i64("speech_tokens", ["batch_size", "num_speech_tokens"]),
            f32("speaker_embeddings", ["batch_size", SPEAKER_DIM]),
            f32("speaker_features", ["batch_size", "num_prompt_frames", MEL]),
        ],
        [f32("waveform", ["batch_size", "num_samples"])],
        external=True,
    )


def tokenizer(path):
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(WORDS)}, "unk_token": "[UNK]"},
    }
    assert len(WORDS) <= TEXT_IDS
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def reference_voice(path, rng, seconds=6.0, rate=24000):
    t = np.arange(int(seconds * rate)) / rate
    f0 = 140 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voice = sum(np.sin(h * phase) / h for h in range(1, 6))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3.0 * t) ** 2
    signal = 0.25 * voice * envelope + 0.01 * rng.standard_normal(t.shape)
    pcm = np.clip(signal * 32767, -32768, 32767).astype("<i2").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVEfmt "
    header += struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(pcm))
    with open(path, "wb") as f:
        f.write(header + pcm)


def main(out):
    turbo = os.path.join(out, "chatterbox_turbo")
    os.makedirs(os.path.join(turbo, "onnx"), exist_ok=True)
    os.makedirs(os.path.join(turbo, "voices"), exist_ok=True)
    rng = np.random.default_rng(20261123)
    speech_encoder(os.path.join(turbo, "onnx", "speech_encoder.onnx"), rng)
    embed_tokens(os.path.join(turbo, "onnx", "embed_tokens.onnx"), rng)
    language_model(os.path.join(turbo, "onnx", "language_model.onnx"), rng)
    conditional_decoder(os.path.join(turbo, "onnx", "conditional_decoder.onnx"), rng)
    tokenizer(os.path.join(turbo, "tokenizer.json"))
    reference_voice(os.path.join(turbo, "voices", "default.wav"), rng)

    mtl = os.path.join(out, "chatterbox")
    os.makedirs(os.path.join(mtl, "onnx"), exist_ok=True)
    os.makedirs(os.path.join(mtl, "voices"), exist_ok=True)
    rng = np.random.default_rng(20261124)
    speech_encoder(os.path.join(mtl, "onnx", "speech_encoder.onnx"), rng)
    multilingual_embed_tokens(os.path.join(mtl, "onnx", "embed_tokens.onnx"), rng)
    language_model(os.path.join(mtl, "onnx", "language_model.onnx"), rng, vocab=MTL_VOCAB, positions=False)
    conditional_decoder(os.path.join(mtl, "onnx", "conditional_decoder.onnx"), rng)
    multilingual_tokenizer(os.path.join(mtl, "tokenizer.json"))
    reference_voice(os.path.join(mtl, "voices", "default.wav"), rng)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
