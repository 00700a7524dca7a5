#!/usr/bin/env python3
"""A small reference loop for LuxTTS's ONNX graphs, with onnxruntime (tests only).

Independent of voiced's Rust pipeline from the reference clip on: the prompt features in numpy
(the first 5 s; torchaudio's MelSpectrogram as ZipVoice's VocosFbank configures it: HTK filters
without normalisation, centred reflect-padded frames, magnitude, log clamped at 1e-7, lhotse's
frame count, x 0.1), the text encoder, the four flow-matching steps of upstream
``onnx_modeling.sample`` (t_shift 0.5, guidance 3.0, speed 1.3) from the start noise given to it,
the prompt cut, the vocoder on mel = x / 0.1 and the volume match. The phoneme tokens (espeak-ng
and tokens.txt) are taken from the request. Prints JSON {features, waveform}.

Usage: luxtts_reference.py MODEL_DIR REQUEST.json
REQUEST: {reference: path of f32 LE 24 kHz samples, prompt_tokens: [...], tokens: [...],
          noise: path of f32 LE [1, frames, 100]}
"""
import json
import math
import os
import sys

import numpy as np
import onnxruntime as ort


def htk_filters(sr=24000, n_fft=1024, n_mels=100):
    to_mel = lambda f: 2595.0 * math.log10(1.0 + f / 700.0)
    to_hz = lambda m: 700.0 * (10 ** (m / 2595.0) - 1.0)
    points = np.array([to_hz(m) for m in np.linspace(to_mel(0.0), to_mel(sr / 2), n_mels + 2)])
    freqs = np.arange(n_fft // 2 + 1) * sr / n_fft
    weights = np.zeros([n_mels, len(freqs)])
    for m in range(n_mels):
        lower = (freqs - points[m]) / (points[m + 1] - points[m])
        upper = (points[m + 2] - freqs) / (points[m + 2] - points[m + 1])
        weights[m] = np.maximum(0, np.minimum(lower, upper))
    return weights


def vocos_features(samples):
    n_fft, hop = 1024, 256
    y = np.pad(samples.astype(np.float64), (n_fft // 2,), mode="reflect")
    frames = 1 + (len(y) - n_fft) // hop
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    stacked = np.stack([y[i * hop:i * hop + n_fft] * window for i in range(frames)])
    magnitude = np.abs(np.fft.rfft(stacked, axis=1))
    mel = np.log(np.maximum(magnitude @ htk_filters().T, 1e-7))
    wanted = (len(samples) + hop // 2) // hop
    mel = mel[:wanted]
    if len(mel) < wanted:
        mel = np.concatenate([mel, np.repeat(mel[-1:], wanted - len(mel), axis=0)])
    return (mel.astype(np.float32) * np.float32(0.1))[None]


def main(model_dir, request_path):
    req = json.load(open(request_path))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = lambda name: ort.InferenceSession(os.path.join(model_dir, name), opts)
    text_encoder, fm, vocoder = session("text_encoder.onnx"), session("fm_decoder.onnx"), session("vocoder.onnx")
    clip = np.fromfile(req["reference"], dtype="<f4")[:5 * 24000]
    rms = float(np.sqrt(np.mean(clip.astype(np.float32) ** 2)))
    if 0 < rms < 0.001:
        clip = clip * np.float32(0.001 / rms)
    features = vocos_features(clip)
    prompt_len = features.shape[1]
    cond = text_encoder.run(None, {
        "tokens": np.array([req["tokens"]], np.int64),
        "prompt_tokens": np.array([req["prompt_tokens"]], np.int64),
        "prompt_features_len": np.array(prompt_len, np.int64),
        "speed": np.array(1.3, np.float32),
    })[0]
    frames = cond.shape[1]
    x = np.fromfile(req["noise"], dtype="<f4").reshape(1, frames, 100)
    speech = np.zeros_like(x)
    keep = min(prompt_len, frames)
    speech[:, :keep] = features[:, :keep]
    steps, shift = 4, 0.5
    times = [np.float32(shift * (k / steps) / (1 + (shift - 1) * (k / steps))) for k in range(steps + 1)]
    for step in range(steps):
        t, nxt = times[step], times[step + 1]
        v = fm.run(None, {"t": np.array(t, np.float32), "x": x, "text_condition": cond,
                          "speech_condition": speech, "guidance_scale": np.array(3.0, np.float32)})[0]
        x1 = x + (np.float32(1) - t) * v
        x0 = x - t * v
        x = (np.float32(1) - nxt) * x0 + nxt * x1 if step < steps - 1 else x1
    x = x[:, prompt_len:]
    wav = []
    if x.shape[1]:
        mel = np.ascontiguousarray((x / np.float32(0.1)).transpose(0, 2, 1))
        wav = np.clip(vocoder.run(None, {"mel": mel})[0].reshape(-1), -1, 1)
        if rms < 0.1:
            wav = wav * np.float32(rms / 0.1)
        wav = wav.tolist()
    json.dump({"features": features[0].reshape(-1).tolist(), "waveform": wav}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
