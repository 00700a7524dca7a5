#!/usr/bin/env python3
"""Tiny random stand-ins for the cloning engines' public ONNX layouts, for tests.

No weights for chatterbox_turbo, qwen or luxtts are reachable from this project (docs/engines.md), so the tests
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
    qwen/, qwen_custom_voice/                       the wavekat layout of Qwen3-TTS-12Hz:
        config.json, tokenizer/{vocab.json,merges.txt}, embeddings/*.npy,
        fp32/{talker_prefill,talker_decode,code_predictor,vocoder}.onnx (+ .data); Base also
        speaker_encoder.onnx, tokenizer_encoder.onnx and voices/{default.wav, narrator.wav +
        narrator.txt}; generation stops by itself after about 12-20 frames (see qwen_models)
    luxtts/                                         text_encoder.onnx, fm_decoder.onnx,
        tokens.txt, vocoder.onnx (48 kHz, the signature docs/engines.md asks operators for),
        voices/default.{wav,txt}

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


# ---------------------------------------------------------------------------------------------
# qwen and qwen_custom_voice: the wavekat layout of Qwen3-TTS-12Hz (docs/engines.md). Hidden
# sizes shrunk; vocabularies (talker 3072, code predictor 2048), 16 code groups, the codec
# control ids, speaker ids, 1920 samples per frame and the speech tokenizer's 10 s window as
# upstream. Generation stops by itself: code group 0 is drawn from 1024..2047 (ids below carry a
# -30 bias), whose codec embeddings mark channel 0 with 1 (reference codes from the speech
# tokenizer stay below 1024 and do not), and the talker adds to the stop id a bias that grows
# with the number of marked rows in its cache.

QW_H = 32  # talker hidden (1024 for 0.6B upstream)
QW_TEXT = 16  # text embedding width (2048 upstream)
QW_INNER = 24
QW_LAYERS = 2  # 28 upstream
QW_HEADS = 2  # 8 upstream
QW_HEAD_DIM = 8  # 128 upstream
QW_CP_H = 24
QW_CP_LAYERS = 2  # 5 upstream
QW_VOCAB = 3072
QW_CP_VOCAB = 2048
QW_GROUPS = 16
QW_FRAME = 1920
QW_WINDOW = 240000
QW_EOS = 2150
QW_STOP_AFTER = 12
QW_STOP_SLOPE = 1.5
QW_SPEAKERS = {"vivian": 3065, "serena": 3066, "uncle_fu": 3010, "ryan": 3061, "aiden": 2861,
               "ono_anna": 2873, "sohee": 2864, "eric": 2875, "dylan": 2878}
QW_LANGUAGES = {"english": 2050, "german": 2053, "spanish": 2054, "chinese": 2055, "japanese": 2058,
                "french": 2061, "korean": 2064, "russian": 2069, "italian": 2070, "portuguese": 2071,
                "sichuan_dialect": 2062, "beijing_dialect": 2074}
QW_WORDS = ["assistant", "user", "hello", "Hello", "Ġhello", "Ġfrom", "Ġthe", "Ġvoiced", "Ġengine",
            "Ġone", "Ġtwo", "Ġthree", "Ġreference", "Ġvoice", "Ġspeak", "Ġwarmly", "Ġand", "Ġslowly",
            "Ġtiny", "Ġmodel", "Ġqwen"]


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def qwen_tokenizer(dir_):
    """A byte-level BPE in Qwen2's file format: the 256 byte symbols, then merges that build
    the words above left to right. Returns the vocabulary size (special ids follow it)."""
    byte_symbols = bytes_to_unicode()
    vocab = {byte_symbols[b]: b for b in range(256)}
    merges = []
    for word in QW_WORDS:
        symbols = list(word)
        while len(symbols) > 1:
            pair = (symbols[0], symbols[1])
            merged = pair[0] + pair[1]
            if pair not in merges:
                merges.append(pair)
            if merged not in vocab:
                vocab[merged] = len(vocab)
            symbols = [merged] + symbols[2:]
    os.makedirs(os.path.join(dir_, "tokenizer"), exist_ok=True)
    with open(os.path.join(dir_, "tokenizer", "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(dir_, "tokenizer", "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return len(vocab)


def qwen_embeddings(dir_, rng, text_vocab):
    emb = os.path.join(dir_, "embeddings")
    os.makedirs(emb, exist_ok=True)
    save = lambda name, a: np.save(os.path.join(emb, name + ".npy"), a.astype(np.float32))
    save("text_embedding", rng.standard_normal([text_vocab, QW_TEXT]))
    save("text_projection_fc1_weight", rng.standard_normal([QW_INNER, QW_TEXT]) / np.sqrt(QW_TEXT))
    save("text_projection_fc1_bias", rng.standard_normal([QW_INNER]) * 0.1)
    fc2 = rng.standard_normal([QW_H, QW_INNER]) / np.sqrt(QW_INNER)
    fc2[0] = 0.0  # channel 0 is the generated-frame marker
    b2 = rng.standard_normal([QW_H]) * 0.1
    b2[0] = 0.0
    save("text_projection_fc2_weight", fc2)
    save("text_projection_fc2_bias", b2)
    codec = rng.standard_normal([QW_VOCAB, QW_H]) * 0.5
    codec[:, 0] = 0.0
    codec[1024:2048, 0] = 1.0
    save("talker_codec_embedding", codec)
    for g in range(QW_GROUPS - 1):
        table = rng.standard_normal([QW_CP_VOCAB, QW_H]) * 0.3
        table[:, 0] = 0.0
        save(f"cp_codec_embedding_{g}", table)


def qwen_positions(g, positions, width):
    """Sinusoidal positions [1, S, width] from int64 positions [1, S]; channel 0 stays 0."""
    freqs = np.concatenate([[0.0], 1.0 / (10000 ** (np.arange(1, width) / width))]).astype(np.float32)
    pos = g.op("Unsqueeze", [g.op("Cast", [positions], to=TensorProto.FLOAT), g.const([2], np.int64)])
    return g.op("Mul", [g.op("Sin", [g.op("Mul", [pos, g.const(freqs)])]), g.const(0.3)])


def qwen_layers(g, x, layers, heads, head_dim, past, key_bias):
    """Causal attention layers. `past` gives per layer the (key, value) caches [1, h, past, d]
    or None; `key_bias` [1, 1, S, total] masks keys. Returns x and per layer (key, value)."""
    presents = []
    for layer, w in enumerate(layers):
        projected = []
        for kind in ("q", "k", "v"):
            p = g.op("MatMul", [x, g.const(w[kind])])
            p = g.op("Reshape", [p, g.const([0, 0, heads, head_dim], np.int64)])
            projected.append(g.op("Transpose", [p], perm=[0, 2, 1, 3]))
        q, k, v = projected
        if past is not None:
            k = g.op("Concat", [past[layer][0], k], axis=2)
            v = g.op("Concat", [past[layer][1], v], axis=2)
        presents.append((k, v))
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = g.op("Add", [g.op("Mul", [scores, g.const(1.0 / np.sqrt(head_dim))]), key_bias])
        attn = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        attn = g.op("Reshape", [g.op("Transpose", [attn], perm=[0, 2, 1, 3]), g.const([0, 0, heads * head_dim], np.int64)])
        x = g.op("Add", [x, g.op("MatMul", [attn, g.const(w["o"])])])
    return x, presents


def qwen_key_bias(g, query_positions, total, padding=None):
    """[1, 1, S, total]: −1e4 on keys after the query's position (and on padded keys)."""
    q = g.op("Unsqueeze", [g.op("Cast", [query_positions], to=TensorProto.FLOAT), g.const([1, 3], np.int64)])
    limit = g.op("Reshape", [g.op("Cast", [total], to=TensorProto.FLOAT), g.const([], np.int64)])
    keys = g.op("Range", [g.const(0.0), limit, g.const(1.0)])
    keys = g.op("Reshape", [keys, g.const([1, 1, 1, -1], np.int64)])
    bias = g.op("Mul", [g.op("Cast", [g.op("Greater", [keys, q])], to=TensorProto.FLOAT), g.const(-1e4)])
    if padding is not None:
        pad = g.op("Unsqueeze", [g.op("Cast", [padding], to=TensorProto.FLOAT), g.const([1, 2], np.int64)])
        bias = g.op("Add", [bias, g.op("Mul", [g.op("Sub", [g.const(1.0), pad]), g.const(-1e4)])])
    return bias


def qwen_layer_weights(rng, width, layers, heads, head_dim, marker):
    out = []
    for layer in range(layers):
        w = {kind: (rng.standard_normal([width, heads * head_dim]) / np.sqrt(width)).astype(np.float32) for kind in "qkv"}
        if marker and layer == 0:
            w["v"][:, 0] = 0.0
            w["v"][0, 0] = 1.0  # head 0, dim 0 of layer 0's values = the marker channel
        w["o"] = (rng.standard_normal([heads * head_dim, width]) * 0.3 / np.sqrt(heads * head_dim)).astype(np.float32)
        out.append(w)
    return out


def qwen_talker(dir_, rng):
    layers = qwen_layer_weights(rng, QW_H, QW_LAYERS, QW_HEADS, QW_HEAD_DIM, marker=True)
    head = (rng.standard_normal([QW_H, QW_VOCAB]) / np.sqrt(QW_H)).astype(np.float32)
    bias = np.zeros([QW_VOCAB], np.float32)
    bias[:1024] = -30.0
    stop = np.zeros([QW_VOCAB], np.float32)
    stop[QW_EOS] = 1.0

    def body(g, past):
        row0 = g.op("Squeeze", [g.op("Slice", ["position_ids", g.const([0], np.int64), g.const([1], np.int64), g.const([0], np.int64)]), g.const([0], np.int64)])
        x = g.op("Add", ["inputs_embeds", qwen_positions(g, row0, QW_H)])
        total = g.op("Shape", ["attention_mask"], start=1, end=2)
        key_bias = qwen_key_bias(g, row0, total, "attention_mask")
        x, presents = qwen_layers(g, x, layers, QW_HEADS, QW_HEAD_DIM, past, key_bias)
        marker = g.op("Slice", [presents[0][1], g.const([0, 0], np.int64), g.const([1, 1], np.int64), g.const([1, 3], np.int64)])
        count = g.op("ReduceSum", [marker, g.const([1, 2, 3], np.int64)], keepdims=0)
        steps = g.op("Unsqueeze", [g.op("Sub", [count, g.const(float(QW_STOP_AFTER))]), g.const([1, 2], np.int64)])
        logits = g.op("Add", [g.op("MatMul", [x, g.const(head)]), g.const(bias)])
        g.op("Add", [logits, g.op("Mul", [g.op("Mul", [steps, g.const(QW_STOP_SLOPE)]), g.const(stop)])], "logits")
        g.op("Identity", [x], "hidden_states")
        return presents

    common_in = lambda seq: [
        f32("inputs_embeds", [1, seq, QW_H]),
        i64("attention_mask", [1, "total_sequence_length"]),
        i64("position_ids", [3, 1, seq]),
    ]
    common_out = lambda seq: [f32("logits", [1, seq, QW_VOCAB]), f32("hidden_states", [1, seq, QW_H])]

    g = Graph(rng)
    presents = body(g, None)
    outputs = common_out("sequence_length")
    for i, (k, v) in enumerate(presents):
        g.op("Identity", [k], f"present_key_{i}")
        g.op("Identity", [v], f"present_value_{i}")
        outputs.append(f32(f"present_key_{i}", [1, QW_HEADS, "sequence_length", QW_HEAD_DIM]))
        outputs.append(f32(f"present_value_{i}", [1, QW_HEADS, "sequence_length", QW_HEAD_DIM]))
    g.save(os.path.join(dir_, "talker_prefill.onnx"), common_in("sequence_length"), outputs, external=True)

    g = Graph(rng)
    past = [tuple(g.op("Squeeze", [g.op("Gather", [name, g.const([i], np.int64)], axis=0), g.const([0], np.int64)]) for name in ("past_keys", "past_values")) for i in range(QW_LAYERS)]
    presents = body(g, past)
    for kind, index in (("keys", 0), ("values", 1)):
        stacked = [g.op("Unsqueeze", [p[index], g.const([0], np.int64)]) for p in presents]
        g.op("Concat", stacked, f"present_{kind}", axis=0)
    cache = lambda name, seq: f32(name, [QW_LAYERS, 1, QW_HEADS, seq, QW_HEAD_DIM])
    g.save(
        os.path.join(dir_, "talker_decode.onnx"),
        common_in(1) + [cache("past_keys", "past_sequence_length"), cache("past_values", "past_sequence_length")],
        common_out(1) + [cache("present_keys", "total_sequence_length"), cache("present_values", "total_sequence_length")],
        external=True,
    )


def qwen_code_predictor(path, rng):
    layers = qwen_layer_weights(rng, QW_CP_H, QW_CP_LAYERS, QW_HEADS, QW_HEAD_DIM, marker=False)
    g = Graph(rng)
    past_len = g.op("Shape", ["past_keys"], start=3, end=4)
    seq = g.op("Shape", ["inputs_embeds"], start=1, end=2)
    total = g.op("Add", [past_len, seq])
    positions = g.op("Range", [g.op("Reshape", [past_len, g.const([], np.int64)]), g.op("Reshape", [total, g.const([], np.int64)]), g.const(1, np.int64)])
    positions = g.op("Unsqueeze", [positions, g.const([0], np.int64)])
    x = g.op("MatMul", ["inputs_embeds", g.weight([QW_H, QW_CP_H], 1.0 / np.sqrt(QW_H))])  # small_to_mtp projection
    x = g.op("Add", [x, qwen_positions(g, positions, QW_CP_H)])
    past = [tuple(g.op("Squeeze", [g.op("Gather", [name, g.const([i], np.int64)], axis=0), g.const([0], np.int64)]) for name in ("past_keys", "past_values")) for i in range(QW_CP_LAYERS)]
    x, presents = qwen_layers(g, x, layers, QW_HEADS, QW_HEAD_DIM, past, qwen_key_bias(g, positions, total))
    step_bias = g.op("Gather", [g.weight([QW_GROUPS - 1, QW_CP_VOCAB], 1.0), "generation_steps"], axis=0)  # [1, V]
    g.op("Add", [g.op("MatMul", [x, g.weight([QW_CP_H, QW_CP_VOCAB], 2.0 / np.sqrt(QW_CP_H))]), step_bias], "logits")
    for kind, index in (("keys", 0), ("values", 1)):
        stacked = [g.op("Unsqueeze", [p[index], g.const([0], np.int64)]) for p in presents]
        g.op("Concat", stacked, f"present_{kind}", axis=0)
    cache = lambda name, seq: f32(name, [QW_CP_LAYERS, 1, QW_HEADS, seq, QW_HEAD_DIM])
    g.save(
        path,
        [f32("inputs_embeds", [1, "sequence_length", QW_H]), i64("generation_steps", [1]),
         cache("past_keys", "past_sequence_length"), cache("past_values", "past_sequence_length")],
        [f32("logits", [1, "sequence_length", QW_CP_VOCAB]),
         cache("present_keys", "total_sequence_length"), cache("present_values", "total_sequence_length")],
        external=True,
    )


def qwen_vocoder(path, rng):
    g = Graph(rng)
    offsets = (np.arange(QW_GROUPS) * QW_CP_VOCAB).reshape(1, QW_GROUPS, 1)
    ids = g.op("Add", ["codes", g.const(offsets, np.int64)])
    emb = g.op("Gather", [g.weight([QW_GROUPS * QW_CP_VOCAB, 8], 0.5), ids])  # [1, 16, T, 8]
    summed = g.op("ReduceSum", [emb, g.const([1], np.int64)], keepdims=0)  # [1, T, 8]
    wav = g.op("Mul", [g.op("Tanh", [g.op("MatMul", [summed, g.weight([8, QW_FRAME], 0.3)])]), g.const(0.5)])
    g.op("Reshape", [wav, g.const([1, 1, -1], np.int64)], "waveform")
    g.save(path, [i64("codes", [1, QW_GROUPS, "frames"])], [f32("waveform", [1, 1, "samples"])], external=True)


def qwen_speaker_encoder(path, rng):
    g = Graph(rng)
    mean = g.op("ReduceMean", ["mels"], axes=[1], keepdims=0)  # [B, 128]
    mask = np.ones([QW_H], np.float32)
    mask[0] = 0.0
    x = g.op("Tanh", [g.op("MatMul", [mean, g.weight([128, QW_H], 0.05)])])
    g.op("Mul", [x, g.const(mask)], "speaker_embedding")
    g.save(path, [f32("mels", ["batch", "mel_frames", 128])], [f32("speaker_embedding", ["batch", QW_H])])


def qwen_tokenizer_encoder(path, rng):
    g = Graph(rng)
    frames = QW_WINDOW // QW_FRAME
    x = g.op("Reshape", ["waveform", g.const([1, frames, 64, QW_FRAME // 64], np.int64)])
    x = g.op("ReduceMean", [x], axes=[3], keepdims=0)  # [1, 125, 64]
    scores = g.op("Reshape", [g.op("MatMul", [x, g.weight([64, QW_GROUPS * 16], 1.0)]), g.const([1, frames, QW_GROUPS, 16], np.int64)])
    arg = g.op("ArgMax", [scores], axis=3, keepdims=0)  # [1, 125, 16]
    offsets = (np.arange(QW_GROUPS) * 7).reshape(1, 1, QW_GROUPS)
    codes = g.op("Mod", [g.op("Add", [g.op("Mul", [arg, g.const(61, np.int64)]), g.const(offsets, np.int64)]), g.const(1024, np.int64)])
    g.op("Transpose", [codes], "audio_codes", perm=[0, 2, 1])
    g.save(path, [f32("waveform", [1, QW_WINDOW])], [i64("audio_codes", [1, QW_GROUPS, frames])])


def qwen_models(out, custom_voice):
    engine = "qwen_custom_voice" if custom_voice else "qwen"
    dir_ = os.path.join(out, engine)
    os.makedirs(os.path.join(dir_, "fp32"), exist_ok=True)
    rng = np.random.default_rng(20261124 + int(custom_voice))
    text_vocab = qwen_tokenizer(dir_)
    qwen_embeddings(dir_, rng, text_vocab + 5)
    qwen_talker(os.path.join(dir_, "fp32"), rng)
    qwen_code_predictor(os.path.join(dir_, "fp32", "code_predictor.onnx"), rng)
    qwen_vocoder(os.path.join(dir_, "fp32", "vocoder.onnx"), rng)
    config = {
        "tts_model_type": "custom_voice" if custom_voice else "base",
        "tts_model_size": "1b7" if custom_voice else "0b6",
        "im_start_token_id": text_vocab, "im_end_token_id": text_vocab + 1,
        "tts_pad_token_id": text_vocab + 2, "tts_bos_token_id": text_vocab + 3, "tts_eos_token_id": text_vocab + 4,
        "codec_eos_token_id": QW_EOS, "codec_think_id": 2154, "codec_nothink_id": 2155,
        "codec_think_bos_id": 2156, "codec_think_eos_id": 2157, "codec_pad_id": 2148, "codec_bos_id": 2149,
        "talker_hidden_size": QW_H, "talker_num_layers": QW_LAYERS, "talker_vocab_size": QW_VOCAB,
        "talker_num_code_groups": QW_GROUPS, "cp_vocab_size": QW_CP_VOCAB,
        "spk_id": QW_SPEAKERS if custom_voice else {},
        "spk_is_dialect": {"eric": "sichuan_dialect", "dylan": "beijing_dialect"} if custom_voice else {},
        "codec_language_id": QW_LANGUAGES,
        "generate_config": {"do_sample": True, "temperature": 0.9, "top_k": 50, "top_p": 1.0,
                            "repetition_penalty": 1.05, "subtalker_dosample": True, "subtalker_temperature": 0.9,
                            "subtalker_top_k": 50, "subtalker_top_p": 1.0, "max_new_tokens": 8192},
        "sample_rate": 24000,
    }
    with open(os.path.join(dir_, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    if not custom_voice:
        qwen_speaker_encoder(os.path.join(dir_, "speaker_encoder.onnx"), rng)
        qwen_tokenizer_encoder(os.path.join(dir_, "tokenizer_encoder.onnx"), rng)
        os.makedirs(os.path.join(dir_, "voices"), exist_ok=True)
        reference_voice(os.path.join(dir_, "voices", "default.wav"), rng)
        reference_voice(os.path.join(dir_, "voices", "narrator.wav"), rng, seconds=7.5)
        with open(os.path.join(dir_, "voices", "narrator.txt"), "w") as f:
            f.write("hello from the reference voice, one two three.\n")


# ---------------------------------------------------------------------------------------------
# luxtts: YatharthS/LuxTTS's two graphs (inputs, outputs, scalar ranks and metadata as
# zipvoice/bin/onnx_export.py writes them; the text encoder's duration arithmetic as upstream)
# and the ONNX vocoder voiced asks the operator for (mel [N, 100, T] -> waveform [N, S],
# metadata sample_rate; this one writes 48 kHz, 512 samples per frame, like LinaCodec's Vocos).

LUX_FEAT = 100
LUX_VOCODER_RATE = 48000
LUX_VOCODER_HOP = 512
LUX_SYMBOLS = list(" !',-.:;?\"()…—abcdefghijklmnopqrstuvwxyzæçðøħŋœǀǁǂǃɐɑɒɓɔɕɖɗɘəɚɛɜɝɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢʲˈˌːˑ˞βθχᵻⱱ̩̃")


def lux_text_encoder(path, rng, vocab):
    g = Graph(rng)
    cat = g.op("Concat", ["prompt_tokens", "tokens"], axis=1)
    padded = g.op("Concat", [cat, g.const([[0]], np.int64)], axis=1)  # the pad id "_" is 0
    length = g.op("Shape", [cat], start=1, end=2)
    embed = g.op("Gather", [g.weight([vocab, LUX_FEAT], 1.0), padded])
    embed = g.op("Tanh", [g.op("MatMul", [embed, g.weight([LUX_FEAT, LUX_FEAT], 0.2)])])
    prompt_len = g.op("Cast", ["prompt_features_len"], to=TensorProto.FLOAT)
    prompt_tokens = g.op("Cast", [g.op("Shape", ["prompt_tokens"], start=1, end=2)], to=TensorProto.FLOAT)
    ratio = g.op("Div", [g.op("Mul", [g.op("Div", [prompt_len, prompt_tokens]), g.op("Cast", [length], to=TensorProto.FLOAT)]), "speed"])
    features_len = g.op("Cast", [g.op("Ceil", [ratio])], to=TensorProto.INT64)
    dur = g.op("Div", [features_len, length])
    body = g.op("Slice", [embed, g.const([0], np.int64), g.const([-1], np.int64), g.const([1], np.int64)])
    one, width = g.const([1], np.int64), g.const([LUX_FEAT], np.int64)
    expanded = g.op("Expand", [g.op("Unsqueeze", [body, g.const([2], np.int64)]), g.op("Concat", [one, length, dur, width], axis=0)])
    covered = g.op("Mul", [length, dur])
    cond = g.op("Reshape", [expanded, g.op("Concat", [one, covered, width], axis=0)])
    last = g.op("Slice", [embed, g.const([-1], np.int64), g.const([2**62], np.int64), g.const([1], np.int64)])
    tail = g.op("Expand", [last, g.op("Concat", [one, g.op("Sub", [features_len, covered]), width], axis=0)])
    g.op("Concat", [cond, tail], "text_condition", axis=1)
    g.save(
        path,
        [i64("tokens", ["N", "T"]), i64("prompt_tokens", ["N", "T_prompt"]), i64("prompt_features_len", []), f32("speed", [])],
        [f32("text_condition", ["N", "T_features", LUX_FEAT])],
    )
    lux_metadata(path, {"version": "1", "model_author": "k2-fsa", "comment": "ZipVoice text encoder", "use_espeak": "1", "use_pinyin": "1"})


def lux_fm_decoder(path, rng):
    g = Graph(rng)
    h = g.op("Add", [g.op("MatMul", ["x", g.weight([LUX_FEAT, LUX_FEAT], 0.1)]), g.op("MatMul", ["text_condition", g.weight([LUX_FEAT, LUX_FEAT], 0.1)])])
    h = g.op("Add", [h, g.op("MatMul", ["speech_condition", g.weight([LUX_FEAT, LUX_FEAT], 0.1)])])
    h = g.op("Add", [h, g.op("Mul", ["t", g.weight([LUX_FEAT], 1.0)])])
    gain = g.op("Add", [g.const(1.0), g.op("Mul", ["guidance_scale", g.const(0.1)])])
    g.op("Sub", [g.op("Mul", [g.op("Tanh", [h]), gain]), g.op("Mul", ["x", g.const(0.3)])], "v")
    seq = lambda name: f32(name, ["N", "T", LUX_FEAT])
    g.save(path, [f32("t", []), seq("x"), seq("text_condition"), seq("speech_condition"), f32("guidance_scale", [])], [seq("v")])
    lux_metadata(path, {"version": "1", "model_author": "k2-fsa", "comment": "ZipVoice flow-matching decoder",
                        "feat_dim": str(LUX_FEAT), "sample_rate": "24000", "n_fft": "1024", "hop_length": "256",
                        "window_length": "1024", "num_mels": "100"})


def lux_vocoder(path, rng):
    g = Graph(rng)
    x = g.op("Transpose", ["mel"], perm=[0, 2, 1])
    wav = g.op("Mul", [g.op("Tanh", [g.op("MatMul", [x, g.weight([LUX_FEAT, LUX_VOCODER_HOP], 0.02)])]), g.const(0.5)])
    g.op("Reshape", [wav, g.const([0, -1], np.int64)], "waveform")
    g.save(path, [f32("mel", ["N", LUX_FEAT, "frames"])], [f32("waveform", ["N", "samples"])])
    lux_metadata(path, {"sample_rate": str(LUX_VOCODER_RATE)})


def lux_metadata(path, meta):
    model = onnx.load(path)
    for key, value in meta.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, path)


def luxtts_models(out):
    dir_ = os.path.join(out, "luxtts")
    os.makedirs(os.path.join(dir_, "voices"), exist_ok=True)
    rng = np.random.default_rng(20261126)
    symbols = ["_"] + list(dict.fromkeys(LUX_SYMBOLS))
    with open(os.path.join(dir_, "tokens.txt"), "w") as f:
        f.write("".join(f"{s}\t{i}\n" for i, s in enumerate(symbols)))
    lux_text_encoder(os.path.join(dir_, "text_encoder.onnx"), rng, len(symbols))
    lux_fm_decoder(os.path.join(dir_, "fm_decoder.onnx"), rng)
    lux_vocoder(os.path.join(dir_, "vocoder.onnx"), rng)
    reference_voice(os.path.join(dir_, "voices", "default.wav"), rng)
    with open(os.path.join(dir_, "voices", "default.txt"), "w") as f:
        f.write("Hello from the reference voice of a tiny model.\n")


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
    qwen_models(out, custom_voice=False)
    qwen_models(out, custom_voice=True)
    luxtts_models(out)

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
