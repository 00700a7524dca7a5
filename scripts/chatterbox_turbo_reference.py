#!/usr/bin/env python3
"""A small reference loop for Chatterbox Turbo's ONNX graphs, with onnxruntime (tests only).

Independent of voiced's Rust pipeline: tokenises the text itself (the WordLevel tokenizer of the
generated test models: lowercase, `\\w+|[^\\w\\s]+`), runs the speech encoder, the language model
with its KV cache (fed back by name), samples in the upstream order (temperature -> top-k 1000 ->
top-p 0.95 -> repetition penalty 1.2 -> draw) from the uniform draws given to it, and decodes with
the given noise bank. Prints JSON {text_ids, tokens, waveform}.

Usage: chatterbox_turbo_reference.py MODEL_DIR REQUEST.json
REQUEST: {text, temperature, uniforms: [...], reference: path of f32 LE samples,
          noise: path of f32 LE [1, 80, K], noise_frames: K}
"""
import json
import os
import re
import sys

import numpy as np
import onnxruntime as ort

START, STOP, SILENCE = 6561, 6562, 4299


def tokenize(model_dir, text):
    doc = json.load(open(os.path.join(model_dir, "tokenizer.json")))
    vocab, unk = doc["model"]["vocab"], doc["model"]["unk_token"]
    return [vocab.get(w, vocab[unk]) for w in re.findall(r"\w+|[^\w\s]+", text.lower())]


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()


def sample(logits, generated, temperature, u):
    x = logits.astype(np.float64) / temperature
    kth = np.sort(x)[::-1][999] if len(x) > 1000 else -np.inf
    x[x < kth] = -np.inf
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(softmax(x[order]))
    remove = cum <= 1 - 0.95
    remove[-1] = False
    x[order[remove]] = -np.inf
    for i in sorted(set(generated)):
        x[i] = x[i] / 1.2 if x[i] > 0 else x[i] * 1.2
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
    ids = tokenize(model_dir, req["text"])
    x = np.concatenate([feats, emb.run(None, {"input_ids": np.array([ids], np.int64)})[0]], axis=1)
    past = {}
    for i in lm.get_inputs():
        if i.name.startswith("past_key_values"):
            past[i.name] = np.zeros([1, i.shape[1], 0, i.shape[3]], np.float32)
    total, first = x.shape[1], 0
    generated, tokens = [START], []
    names = [o.name for o in lm.get_outputs()]
    for u in req["uniforms"]:
        feed = dict(past)
        feed.update(
            inputs_embeds=x,
            attention_mask=np.ones([1, total], np.int64),
            position_ids=np.arange(first, first + x.shape[1], dtype=np.int64)[None, :],
        )
        out = dict(zip(names, lm.run(None, feed)))
        tok = sample(out["logits"][0, -1], generated, req["temperature"], u)
        tokens.append(tok)
        generated.append(tok)
        past = {k: out["present" + k[len("past_key_values"):]] for k in past}
        if tok == STOP:
            break
        first += x.shape[1]
        x = emb.run(None, {"input_ids": np.array([[tok]], np.int64)})[0]
        total += 1
    speech = list(prompt[0]) + [t for t in generated[1:] if t not in (START, STOP)] + [SILENCE] * 3
    noise = np.fromfile(req["noise"], dtype="<f4").reshape(1, 80, req["noise_frames"])
    wav = dec.run(None, {
        "speech_tokens": np.array([speech], np.int64),
        "speaker_embeddings": spk,
        "speaker_features": spkf,
        "noise": noise,
    })[0]
    json.dump({"text_ids": ids, "tokens": tokens, "waveform": wav[0].tolist()}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
