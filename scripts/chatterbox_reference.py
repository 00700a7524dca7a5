#!/usr/bin/env python3
"""A small reference loop for Chatterbox multilingual's ONNX graphs, with onnxruntime (tests only).

Independent of voiced's Rust pipeline: prepares the text as upstream does (`punc_norm`, lower
case, NFKD, `[lang]` prefix, spaces as `[SPACE]`), tokenises it itself (the character-level
tokenizer of the generated test models and its template [6563, 255, ..., 0, 6561, 6561]), runs
the speech encoder, the embedder with upstream positions, and the language model as a batch of
two (the second row's text rows zeroed) with its KV cache fed back by name; samples in the
upstream order (classifier-free guidance 0.5 -> repetition penalty 1.2 -> temperature -> min-p
0.05 -> top-p 1.0 -> draw) from the uniform draws given to it; decodes [prompt tokens ||
generated tokens below 6561] with the given noise bank and drops the last token's audio.
Prints JSON {text_ids, tokens, waveform}.

Usage: chatterbox_reference.py MODEL_DIR REQUEST.json
REQUEST: {text, language, temperature, uniforms: [...], reference: path of f32 LE samples,
          noise: path of f32 LE [1, 80, K], noise_frames: K}
"""
import json
import os
import sys
import unicodedata

import numpy as np
import onnxruntime as ort

START, STOP, EXAG, SOT, EOT, SPEECH_VOCAB = 6561, 6562, 6563, 255, 0, 6561
CFG, PENALTY, MIN_P, TOP_P, EXAGGERATION = 0.5, 1.2, 0.05, 1.0, 0.5


def punc_norm(text):
    text = " ".join(text.split())
    for a, b in [("...", ", "), ("…", ", "), (":", ","), (" - ", ", "), (";", ", "), ("—", "-"),
                 ("–", "-"), (" ,", ","), ("“", '"'), ("”", '"'), ("‘", "'"), ("’", "'")]:
        text = text.replace(a, b)
    text = text.rstrip(" ")
    if not any(text.endswith(p) for p in [".", "!", "?", "-", ",", "、", "，", "。", "？", "！"]):
        text += "."
    return text


def tokenize(model_dir, text, language):
    doc = json.load(open(os.path.join(model_dir, "tokenizer.json")))
    vocab, unk = doc["model"]["vocab"], doc["model"]["unk_token"]
    added = {t["content"]: t["id"] for t in doc["added_tokens"]}
    text = unicodedata.normalize("NFKD", punc_norm(text).lower())
    text = f"[{language}]{text}"
    if "[SPACE]" in added:
        text = text.replace(" ", "[SPACE]")
    ids, i = [], 0
    while i < len(text):
        for token, tid in added.items():
            if text.startswith(token, i):
                ids.append(tid)
                i += len(token)
                break
        else:
            ids.append(vocab.get(text[i], vocab[unk]))
            i += 1
    return [EXAG, SOT] + ids + [EOT, START, START]


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()


def sample(cond, uncond, generated, temperature, u):
    c = cond.astype(np.float64)
    x = c + CFG * (c - uncond.astype(np.float64))
    for i in sorted(set(generated)):
        x[i] = x[i] / PENALTY if x[i] > 0 else x[i] * PENALTY
    x = x / temperature
    p = softmax(x)
    x[p < MIN_P * p.max()] = -np.inf
    if TOP_P < 1.0:
        raise SystemExit("top-p below 1 is not used by the multilingual model")
    p = softmax(x)
    cum = np.cumsum(p)
    target = u * p.sum()
    for i in range(len(p)):
        if cum[i] > target and p[i] > 0:
            return i
    return int(np.nonzero(p)[0][-1])


def main(model_dir, request_path):
    req = json.load(open(request_path))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    run = lambda name: ort.InferenceSession(os.path.join(model_dir, "onnx", name), opts)
    enc, emb, lm = run("speech_encoder.onnx"), run("embed_tokens.onnx"), run("language_model.onnx")
    dec = run("conditional_decoder.seeded.onnx")
    audio = np.fromfile(req["reference"], dtype="<f4")[None, :]
    feats, prompt, spk, spkf = enc.run(None, {"audio_values": audio})
    ids = tokenize(model_dir, req["text"], req["language"])
    positions = [0 if t >= START else i - 1 for i, t in enumerate(ids)]
    exag = np.array([EXAGGERATION], np.float32)
    text = emb.run(None, {"input_ids": np.array([ids], np.int64),
                          "position_ids": np.array([positions], np.int64), "exaggeration": exag})[0]
    cond = np.concatenate([feats, text], axis=1)
    uncond = cond.copy()
    eot = ids.index(EOT)
    for row in range(eot + 1):
        if ids[row] != EXAG:
            uncond[0, feats.shape[1] + row] = 0.0
    x = np.concatenate([cond, uncond], axis=0)
    past = {}
    for i in lm.get_inputs():
        if i.name.startswith("past_key_values"):
            past[i.name] = np.zeros([2, i.shape[1], 0, i.shape[3]], np.float32)
    total = x.shape[1]
    generated, tokens = [START], []
    names = [o.name for o in lm.get_outputs()]
    for step, u in enumerate(req["uniforms"]):
        feed = dict(past)
        feed.update(inputs_embeds=x, attention_mask=np.ones([2, total], np.int64))
        out = dict(zip(names, lm.run(None, feed)))
        logits = out["logits"]
        tok = sample(logits[0, -1], logits[1, -1], generated, req["temperature"], u)
        tokens.append(tok)
        generated.append(tok)
        past = {k: out["present" + k[len("past_key_values"):]] for k in past}
        if tok == STOP:
            break
        row = emb.run(None, {"input_ids": np.array([[tok]], np.int64),
                             "position_ids": np.array([[step + 1]], np.int64), "exaggeration": exag})[0]
        x = np.concatenate([row, row], axis=0)
        total += 1
    spoken = [t for t in generated[1:] if 0 <= t < SPEECH_VOCAB]
    noise = np.fromfile(req["noise"], dtype="<f4").reshape(1, 80, req["noise_frames"])
    wav = dec.run(None, {
        "speech_tokens": np.array([list(prompt[0]) + spoken], np.int64),
        "speaker_embeddings": spk,
        "speaker_features": spkf,
        "noise": noise,
    })[0][0]
    wav = wav[: max(1, len(spoken) - 1) * 960]
    json.dump({"text_ids": ids, "tokens": tokens, "waveform": wav.tolist()}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
