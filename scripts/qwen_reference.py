#!/usr/bin/env python3
"""A small reference loop for Qwen3-TTS's wavekat-layout ONNX graphs, with onnxruntime (tests only).

Independent of voiced's Rust pipeline: its own byte-level BPE over tokenizer/vocab.json +
merges.txt (ASCII text: Qwen2's pre-tokenisation pattern with ASCII letter and digit classes),
the speaker encoder's log-mel in numpy (librosa's Slaney filters, reflect padding of 384,
magnitude with a 1e-9 floor, log clamped at 1e-5), the prompt rows as upstream
``Qwen3TTSForConditionalGeneration.generate`` builds them in non-streaming mode, the talker and
code-predictor loop with sampling in Hugging Face's order (repetition penalty -> suppressed ids
-> temperature -> top-k -> top-p -> draw) from the uniform draws given to it, and the vocoder
(reference codes first and their share cut off, for an in-context clone). Prints JSON
{text_ids, codes, waveform}.

Usage: qwen_reference.py MODEL_DIR REQUEST.json
REQUEST: {text, language, talker_uniforms: [...], predictor_uniforms: [...],
          speaker: name (CustomVoice) | reference: path of f32 LE 24 kHz samples (Base),
          transcript (optional, Base), instruction (optional)}
"""
import json
import math
import os
import re
import sys

import numpy as np
import onnxruntime as ort

LANGUAGES = {"en": "english", "zh": "chinese", "ja": "japanese", "ko": "korean", "de": "german",
             "es": "spanish", "fr": "french", "ru": "russian", "it": "italian", "pt": "portuguese"}
PATTERN = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_symbols():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


class Bpe:
    def __init__(self, dir_):
        self.vocab = json.load(open(os.path.join(dir_, "tokenizer", "vocab.json")))
        lines = open(os.path.join(dir_, "tokenizer", "merges.txt")).read().splitlines()
        pairs = [tuple(l.split(" ")) for l in lines if l and not l.startswith("#version")]
        self.ranks = {p: i for i, p in enumerate(pairs)}
        self.bytes = byte_symbols()

    def word(self, symbols):
        while len(symbols) > 1:
            ranked = [(self.ranks.get((a, b), math.inf), i) for i, (a, b) in enumerate(zip(symbols, symbols[1:]))]
            rank, i = min(ranked)
            if rank == math.inf:
                break
            symbols = symbols[:i] + [symbols[i] + symbols[i + 1]] + symbols[i + 2:]
        return symbols

    def encode(self, text):
        ids = []
        for piece in PATTERN.findall(text):
            symbols = [self.bytes[b] for b in piece.encode("utf-8")]
            ids.extend(self.vocab[s] for s in self.word(symbols))
        return ids


def slaney_filters(sr=24000, n_fft=1024, n_mels=128, fmin=0.0, fmax=12000.0):
    f_sp, min_log_hz, logstep = 200.0 / 3, 1000.0, math.log(6.4) / 27.0
    min_log_mel = min_log_hz / f_sp
    to_mel = lambda f: f / f_sp if f < min_log_hz else min_log_mel + math.log(f / min_log_hz) / logstep
    to_hz = lambda m: f_sp * m if m < min_log_mel else min_log_hz * math.exp(logstep * (m - min_log_mel))
    mels = np.linspace(to_mel(fmin), to_mel(fmax), n_mels + 2)
    points = np.array([to_hz(m) for m in mels])
    freqs = np.arange(n_fft // 2 + 1) * sr / n_fft
    weights = np.zeros([n_mels, len(freqs)])
    for m in range(n_mels):
        lower = (freqs - points[m]) / (points[m + 1] - points[m])
        upper = (points[m + 2] - freqs) / (points[m + 2] - points[m + 1])
        weights[m] = np.maximum(0, np.minimum(lower, upper)) * 2.0 / (points[m + 2] - points[m])
    return weights


def speaker_mel(samples):
    n_fft, hop = 1024, 256
    y = np.pad(samples.astype(np.float64), ((n_fft - hop) // 2,), mode="reflect")
    frames = 1 + (len(y) - n_fft) // hop
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    stacked = np.stack([y[i * hop:i * hop + n_fft] * window for i in range(frames)])
    spectrum = np.fft.rfft(stacked, axis=1)
    magnitude = np.sqrt(spectrum.real ** 2 + spectrum.imag ** 2 + 1e-9)
    mel = magnitude @ slaney_filters().T
    return np.log(np.maximum(mel, 1e-5)).astype(np.float32)[None]  # [1, T, 128]


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()


def sample(logits, generated, suppressed, temperature, top_k, penalty, u):
    x = logits.astype(np.float64)
    for i in sorted(set(generated)):
        x[i] = x[i] * penalty if x[i] < 0 else x[i] / penalty
    x[suppressed] = -np.inf
    x = x / temperature
    if 0 < top_k < len(x):
        kth = np.sort(x)[::-1][top_k - 1]
        x[x < kth] = -np.inf
    p = softmax(x)
    cum = np.cumsum(p)
    target = u * p.sum()
    for i in range(len(p)):
        if cum[i] > target and p[i] > 0:
            return i
    return int(np.nonzero(p)[0][-1])


def main(model_dir, request_path):
    req = json.load(open(request_path))
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    gen = cfg["generate_config"]
    bpe = Bpe(model_dir)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = lambda name: ort.InferenceSession(os.path.join(model_dir, name), opts)
    prefill, decode = session("fp32/talker_prefill.onnx"), session("fp32/talker_decode.onnx")
    predictor, vocoder = session("fp32/code_predictor.onnx"), session("fp32/vocoder.onnx")
    table = lambda name: np.load(os.path.join(model_dir, "embeddings", name + ".npy"))
    text_table = table("text_embedding")
    fc1w, fc1b = table("text_projection_fc1_weight"), table("text_projection_fc1_bias")
    fc2w, fc2b = table("text_projection_fc2_weight"), table("text_projection_fc2_bias")
    codec = table("talker_codec_embedding")
    groups = cfg["talker_num_code_groups"]
    cp = [table(f"cp_codec_embedding_{g}") for g in range(groups - 1)]

    def tp(i):
        h = fc1w @ text_table[i] + fc1b
        return fc2w @ (h / (1 + np.exp(-h))) + fc2b

    def frame_row(codes):
        return codec[codes[0]] + sum(cp[g - 1][c] for g, c in enumerate(codes) if g > 0) + tp(cfg["tts_pad_token_id"])

    text_ids = bpe.encode(req["text"])
    speaker_name = req.get("speaker")
    example = None
    if speaker_name is not None:
        speaker = codec[cfg["spk_id"][speaker_name]]
    else:
        audio = np.fromfile(req["reference"], dtype="<f4")
        speaker = session("speaker_encoder.onnx").run(None, {"mels": speaker_mel(audio)})[0][0]
        if req.get("transcript"):
            window = np.zeros([1, 240000], np.float32)
            window[0, :len(audio)] = audio
            codes = session("tokenizer_encoder.onnx").run(None, {"waveform": window})[0][0]
            frames = -(-len(audio) // 1920)
            example = (bpe.encode(req["transcript"].strip()), codes[:, :frames].T)
    language = LANGUAGES.get(req["language"].split("-")[0].lower(), "auto")
    lang_id = cfg["codec_language_id"].get(language)
    dialect = cfg.get("spk_is_dialect", {}).get(speaker_name or "")
    if dialect and language in ("chinese", "auto"):
        lang_id = cfg["codec_language_id"][dialect]
    pad = tp(cfg["tts_pad_token_id"])
    rows = []
    if req.get("instruction") and cfg["tts_model_type"] == "custom_voice" and cfg["tts_model_size"] != "0b6":
        ids = [cfg["im_start_token_id"]] + bpe.encode("user\n" + req["instruction"]) + [cfg["im_end_token_id"]] + bpe.encode("\n")
        rows += [tp(i) for i in ids]
    rows += [tp(cfg["im_start_token_id"]), tp(bpe.encode("assistant")[0]), tp(bpe.encode("\n")[0])]
    prefix = ([cfg["codec_think_id"], cfg["codec_think_bos_id"], lang_id, cfg["codec_think_eos_id"]]
              if lang_id is not None else [cfg["codec_nothink_id"], cfg["codec_think_bos_id"], cfg["codec_think_eos_id"]])
    rows += [pad + codec[c] for c in prefix]
    rows.append(pad + speaker)
    rows.append(tp(cfg["tts_bos_token_id"]) + codec[cfg["codec_pad_id"]])
    for i in (example[0] if example else []) + text_ids:
        rows.append(tp(i) + codec[cfg["codec_pad_id"]])
    rows.append(tp(cfg["tts_eos_token_id"]) + codec[cfg["codec_pad_id"]])
    rows.append(pad + codec[cfg["codec_bos_id"]])
    if example:
        rows += [frame_row(f) for f in example[1]]
    x = np.array(rows, np.float32)[None]
    n = x.shape[1]
    pos = np.tile(np.arange(n, dtype=np.int64), (3, 1))[:, None, :]
    out = prefill.run(None, {"inputs_embeds": x, "attention_mask": np.ones([1, n], np.int64), "position_ids": pos})
    names = [o.name for o in prefill.get_outputs()]
    out = dict(zip(names, out))
    layers = len([k for k in names if k.startswith("present_key_")])
    keys = np.stack([out[f"present_key_{i}"] for i in range(layers)])
    values = np.stack([out[f"present_value_{i}"] for i in range(layers)])
    logits, hidden = out["logits"][0, -1], out["hidden_states"][0, -1]
    vocab = len(logits)
    eos = cfg["codec_eos_token_id"]
    cp_shape = [d for d in predictor.get_inputs()[2].shape]
    frames, group0 = [], []
    cp_uniforms = iter(req["predictor_uniforms"])
    for step, u in enumerate(req["talker_uniforms"]):
        suppressed = [i for i in range(vocab - 1024, vocab) if i != eos] + ([eos] if step < 2 else [])
        code = sample(logits, group0, suppressed, gen["temperature"], gen["top_k"], gen["repetition_penalty"], u)
        if code == eos:
            break
        if len(req["predictor_uniforms"]) < (step + 1) * (groups - 1):
            break  # a different path than the one the draws came from: the codes will differ
        group0.append(code)
        frame = [code]
        emb = np.concatenate([hidden[None], codec[code][None]])[None].astype(np.float32)
        past_k = np.zeros([cp_shape[0], 1, cp_shape[2], 0, cp_shape[4]], np.float32)
        past_v = past_k
        for g in range(1, groups):
            cp_logits, past_k, past_v = predictor.run(None, {
                "inputs_embeds": emb, "generation_steps": np.array([g - 1], np.int64),
                "past_keys": past_k, "past_values": past_v})
            c = sample(cp_logits[0, -1], [], [], gen["subtalker_temperature"], gen["subtalker_top_k"], 1.0, next(cp_uniforms))
            frame.append(c)
            emb = cp[g - 1][c][None, None].astype(np.float32)
        frames.append(frame)
        total = n + step + 1
        logits, hidden, keys, values = decode.run(None, {
            "inputs_embeds": frame_row(frame)[None, None].astype(np.float32),
            "attention_mask": np.ones([1, total], np.int64),
            "position_ids": np.full([3, 1, 1], total - 1, np.int64),
            "past_keys": keys, "past_values": values})
        logits, hidden = logits[0, -1], hidden[0, -1]
    codes = np.array(frames, np.int64).reshape(-1, groups)
    wav = []
    if len(codes):
        ref = example[1] if example else np.zeros([0, groups], np.int64)
        both = np.concatenate([ref, codes]).T[None]
        wav = vocoder.run(None, {"codes": both})[0].reshape(-1)
        cut = int(len(ref) / both.shape[2] * len(wav))
        wav = wav[cut:].tolist()
    json.dump({"text_ids": text_ids, "codes": codes.tolist(), "waveform": wav}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
