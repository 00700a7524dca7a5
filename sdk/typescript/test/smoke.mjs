// A few calls through the built SDK, run by runtimes.test.mjs under Deno and Bun (which have no
// node:test of ours): arguments are the base URL, a key, a voice name and a wav file path.
import { Voiced, VoicedError } from "../dist/index.js";

const [baseURL, apiKey, voice, wav] = globalThis.Deno ? Deno.args : process.argv.slice(2);
const voiced = new Voiced({ baseURL, apiKey });
const { data: voices, response } = await voiced.voices.list().withResponse();
const transcription = await voiced.transcriptions.create({ audio: wav });
let error;
try {
  await voiced.captures.list({ limit: 0 });
} catch (err) {
  error = err instanceof VoicedError ? { code: err.code, param: err.param, status: err.status } : String(err);
}
console.log(
  JSON.stringify({
    hasVoice: voices.data.some((v) => v.name === voice),
    policy: response.rateLimit?.policy,
    text: transcription.text,
    error,
  }),
);
