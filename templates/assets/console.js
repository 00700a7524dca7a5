// The console's only script. The copy button next to a new key's secret: without it the
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
