// The console's script (with the live panel's worklet, /assets/live-worklet.js). The copy button next to a new key's secret: without it the
// secret is still plain, selectable text.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const text = document.getElementById(button.dataset.copy)?.textContent ?? "";
  navigator.clipboard?.writeText(text).then(
    () => { button.textContent = "Copied"; },
    () => { button.textContent = "Select and copy"; },
  );
});

// A form with data-confirm (deleting a voice) asks first; without script it submits at once.
document.addEventListener("submit", (event) => {
  const question = event.target.dataset?.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// The playground: the word being said is highlighted while the audio plays (the words carry
// their times), and a clip can be recorded from the microphone instead of chosen as a file
// (MediaRecorder, webm/opus, put into the file field and sent by the same form). Without
// script the words are plain text and the file field works alone.
const playing = document.getElementById("playground-audio");
const words = document.querySelectorAll("#playground-words span[data-start]");
if (playing && words.length) {
  playing.addEventListener("timeupdate", () => {
    const t = playing.currentTime;
    for (const word of words) {
      const now = Number(word.dataset.start) <= t && t < Number(word.dataset.end);
      word.classList.toggle("now", now);
    }
  });
}

const record = document.getElementById("record");
if (record && navigator.mediaDevices && window.MediaRecorder) {
  record.hidden = false;
  let recorder = null;
  record.addEventListener("click", async () => {
    if (recorder) {
      recorder.stop();
      return;
    }
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    const chunks = [];
    recorder = new MediaRecorder(stream, { mimeType: "audio/webm;codecs=opus" });
    recorder.addEventListener("dataavailable", (event) => chunks.push(event.data));
    recorder.addEventListener("stop", () => {
      stream.getTracks().forEach((track) => track.stop());
      const file = new File(chunks, "recording.webm", { type: "audio/webm" });
      const field = document.getElementById("audio");
      const files = new DataTransfer();
      files.items.add(file);
      field.files = files.files;
      field.form.requestSubmit();
    });
    recorder.start();
    record.textContent = "Stop and transcribe";
    record.setAttribute("aria-pressed", "true");
  });
}

// "Play as it streams": the same speech through /console/playground/stream, its mp3 fed to the
// page's <audio> through Media Source Extensions as it arrives, so playback starts with the
// first sentence while the rest is rendered; then a link to the generation (download, word
// timings). Without script or MSE the button stays hidden and Speak shows the finished audio.
const streamButton = document.getElementById("speak-stream");
if (streamButton && window.MediaSource && MediaSource.isTypeSupported("audio/mpeg")) {
  streamButton.hidden = false;
  streamButton.addEventListener("click", async () => {
    const form = streamButton.form;
    if (!form.reportValidity()) return;
    const status = document.getElementById("stream-status");
    const audio = document.getElementById("stream-audio");
    status.className = "";
    status.textContent = "Speaking…";
    streamButton.disabled = true;
    try {
      const response = await fetch("/console/playground/stream", {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
      });
      if (!response.ok) {
        let detail = `The request was refused (${response.status}).`;
        try { detail = (await response.json()).detail || detail; } catch { /* not JSON */ }
        status.className = "error";
        status.textContent = detail;
        return;
      }
      const id = response.headers.get("x-service-generation-id");
      const source = new MediaSource();
      audio.hidden = false;
      audio.src = URL.createObjectURL(source);
      await new Promise((resolve) => source.addEventListener("sourceopen", resolve, { once: true }));
      const buffer = source.addSourceBuffer("audio/mpeg");
      let playedBeforeEnd = 0;
      const track = () => { playedBeforeEnd = Math.max(playedBeforeEnd, audio.currentTime); };
      audio.addEventListener("timeupdate", track);
      const reader = response.body.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer.appendBuffer(value);
        await new Promise((resolve) => buffer.addEventListener("updateend", resolve, { once: true }));
        if (audio.paused && buffer.buffered.length) audio.play().catch(() => {});
      }
      audio.removeEventListener("timeupdate", track);
      source.endOfStream();
      audio.dataset.playedBeforeEnd = String(playedBeforeEnd);
      audio.dataset.generation = id;
      const link = document.createElement("a");
      link.href = `/console/playground?generation=${encodeURIComponent(id)}`;
      link.textContent = "open the generation (download, word timings)";
      status.replaceChildren("Streamed; ", link, ".");
    } catch {
      status.className = "error";
      status.textContent = "The stream broke off before the end; the generation in History says why.";
    } finally {
      streamButton.disabled = false;
    }
  });
}

// The playground's live panel: the microphone (getUserMedia) downsampled to 16 kHz 16-bit PCM by
// an AudioWorklet (/assets/live-worklet.js) and sent as binary frames over the console's own
// WebSocket (/console/playground/listen: the session cookie, this page's origin and its CSRF
// token). Words appear while the person speaks (interims, shown as tentative) and settle into
// the transcript when they pause (finals). Stop ends the stream; the session's finals are
// stored as one capture (source: app), which the panel names. Without script, a microphone or
// AudioWorklet the button stays hidden.
const liveButton = document.getElementById("live-toggle");
if (liveButton && navigator.mediaDevices && window.AudioWorkletNode && window.WebSocket) {
  liveButton.hidden = false;
  const status = document.getElementById("live-status");
  const transcript = document.getElementById("live-transcript");
  const interim = document.createElement("span");
  interim.className = "interim";
  let live = null;
  const say = (text, error) => {
    status.className = error ? "error" : "";
    status.textContent = text;
  };
  const idle = () => {
    live = null;
    liveButton.disabled = false;
    liveButton.textContent = "Start listening";
    liveButton.setAttribute("aria-pressed", "false");
  };
  // The microphone and the audio graph, released once (Stop, the end, a refusal).
  const release = (session) => {
    if (session.released) return;
    session.released = true;
    session.stream?.getTracks().forEach((track) => track.stop());
    session.node?.disconnect();
    session.context?.close().catch(() => {});
  };
  const onMessage = (session, event) => {
    const message = JSON.parse(event.data);
    switch (message.type) {
      case "ready":
        session.ready = true;
        for (const buffer of session.queued.splice(0)) session.socket.send(buffer);
        liveButton.disabled = false;
        liveButton.textContent = "Stop";
        liveButton.setAttribute("aria-pressed", "true");
        say("Listening: speak now.");
        break;
      case "interim":
        interim.textContent = message.text;
        transcript.append(interim);
        break;
      case "final":
        interim.remove();
        if (message.text) {
          const settled = document.createElement("span");
          settled.className = "final";
          settled.textContent = `${message.text} `;
          transcript.append(settled);
        }
        break;
      case "ended": {
        session.ended = true;
        release(session);
        interim.remove();
        const stored = message.capture_id
          ? `Stored as capture ${message.capture_id} (source: app), listed in History.`
          : "Nothing was heard, so nothing was stored.";
        if (message.capture_id) transcript.dataset.capture = message.capture_id;
        say(message.detail ? `${message.detail} ${stored}` : stored, Boolean(message.detail));
        idle();
        break;
      }
      case "error":
        session.ended = true;
        release(session);
        say(message.detail, true);
        status.dataset.code = message.code;
        idle();
        break;
      default:
        break;
    }
  };
  const start = async () => {
    const session = { queued: [], ready: false, ended: false, released: false };
    live = session;
    liveButton.disabled = true;
    delete status.dataset.code;
    say("Starting the microphone…");
    try {
      session.stream = await navigator.mediaDevices.getUserMedia({ audio: true });
      session.context = new AudioContext();
      await session.context.audioWorklet.addModule("/assets/live-worklet.js");
      const source = session.context.createMediaStreamSource(session.stream);
      session.node = new AudioWorkletNode(session.context, "pcm16-downsampler", {
        numberOfInputs: 1, numberOfOutputs: 0, channelCount: 1, channelCountMode: "explicit",
      });
      source.connect(session.node);
      await session.context.resume();
    } catch (error) {
      release(session);
      say(`The microphone could not be used (${error.name || error}).`, true);
      idle();
      return;
    }
    const token = liveButton.dataset.csrf;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(
      `${scheme}://${location.host}/console/playground/listen?csrf_token=${encodeURIComponent(token)}`);
    socket.binaryType = "arraybuffer";
    session.socket = socket;
    session.node.port.onmessage = (event) => {
      if (session.stopSent || socket.readyState !== WebSocket.OPEN) return;
      if (session.ready) socket.send(event.data);
      else session.queued.push(event.data);
    };
    socket.addEventListener("message", (event) => onMessage(session, event));
    socket.addEventListener("close", () => {
      release(session);
      if (!session.ended) {
        say("The connection closed before the session ended; reload the page and try again.", true);
        if (live === session) idle();
      }
    });
  };
  const stop = () => {
    const session = live;
    liveButton.disabled = true;
    say("Settling the last words…");
    session.node?.port.postMessage("flush");
    // The flushed buffer comes back before the stop message goes out.
    setTimeout(() => {
      release(session);
      session.stopSent = true;
      if (session.socket?.readyState === WebSocket.OPEN) {
        session.socket.send(JSON.stringify({ type: "stop" }));
      }
    }, 150);
  };
  liveButton.addEventListener("click", () => {
    if (live) stop();
    else start();
  });
}
