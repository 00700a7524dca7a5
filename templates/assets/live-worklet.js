// The playground's live panel: the microphone, at the audio context's rate (44.1 or 48 kHz
// usually), averaged down to 16 kHz mono and written as 16-bit little-endian PCM, posted to
// the page in 100 ms buffers (the page sends each as one binary WebSocket frame). Each output
// sample is the mean of the input samples of its 1/16000 s (a box filter: enough low-pass for
// speech recognition, and no aliasing of the loud high frequencies that plain decimation keeps).
const TARGET_RATE = 16000;
const BUFFER = TARGET_RATE / 10;

class Pcm16Downsampler extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / TARGET_RATE; // input samples per output sample
    this.position = 0;
    this.sum = 0;
    this.count = 0;
    this.last = 0;
    this.out = new Int16Array(BUFFER);
    this.filled = 0;
    this.port.onmessage = (event) => {
      if (event.data === "flush") this.flush();
    };
  }

  emit(value) {
    const v = Math.max(-1, Math.min(1, value));
    this.out[this.filled++] = v < 0 ? v * 0x8000 : v * 0x7fff;
    if (this.filled === BUFFER) this.flush();
  }

  flush() {
    if (this.filled === 0) return;
    const full = this.out.slice(0, this.filled);
    this.port.postMessage(full.buffer, [full.buffer]);
    this.filled = 0;
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    const frames = channels[0].length;
    for (let i = 0; i < frames; i++) {
      let sample = 0;
      for (const channel of channels) sample += channel[i];
      this.sum += sample / channels.length;
      this.count += 1;
      this.position += 1;
      // Below 16 kHz input (rare) one input sample makes several output samples: held.
      while (this.position >= this.step) {
        this.position -= this.step;
        if (this.count > 0) {
          this.last = this.sum / this.count;
          this.sum = 0;
          this.count = 0;
        }
        this.emit(this.last);
      }
    }
    return true;
  }
}

registerProcessor("pcm16-downsampler", Pcm16Downsampler);
