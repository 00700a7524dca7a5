"""The reference of the Silero VAD test (tests/engines/vad.rs): the speech probability of each
32 ms frame of a 16 kHz mono 16-bit WAV, computed as the `silero-vad` package runs its ONNX model
(`silero_vad.utils_vad.OnnxWrapper.__call__`, package 6.2.3: 512-sample frames, each behind the
last 64 samples of the one before, the recurrent state carried, `sr` = 16000; a last partial
frame padded with zeros as `audio_forward` does), with the same onnxruntime (1.31.1, one thread).
The package's own wrapper needs torch, which this machine cannot install; this is its arithmetic
on numpy, line for line.

Usage: python reference.py MODEL.onnx CLIP.wav  → one probability per line.
"""
import sys
import wave

import numpy as np
import onnxruntime

FRAME, CONTEXT, RATE = 512, 64, 16000


def main():
    model, clip = sys.argv[1], sys.argv[2]
    opts = onnxruntime.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model, sess_options=opts,
                                           providers=["CPUExecutionProvider"])
    with wave.open(clip) as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2
        audio = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    if len(audio) % FRAME:
        audio = np.pad(audio, (0, FRAME - len(audio) % FRAME))
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros((1, CONTEXT), dtype=np.float32)
    for start in range(0, len(audio), FRAME):
        x = np.concatenate([context, audio[None, start:start + FRAME]], axis=1)
        out, state = session.run(None, {"input": x, "state": state,
                                        "sr": np.array(RATE, dtype="int64")})
        context = x[..., -CONTEXT:]
        print(f"{float(out.reshape(-1)[0]):.6f}")


if __name__ == "__main__":
    main()
