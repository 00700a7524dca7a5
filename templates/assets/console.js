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
