// Audio given to `transcriptions.create`, read into bytes and base64-encoded, on any runtime.

/** Something with an async iterator of chunks: a Node `Readable`, a web `ReadableStream` on most runtimes. */
export type ChunkIterable = AsyncIterable<Uint8Array | string>;

/**
 * Audio to transcribe: a `Blob`/`File`, an `ArrayBuffer`, a typed array (`Uint8Array`, Node's
 * `Buffer`), a web `ReadableStream`, a Node `Readable` (any async iterable of chunks), or on
 * server runtimes (Node, Deno, Bun) a file path.
 */
export type AudioInput =
  Blob | ArrayBuffer | ArrayBufferView | ReadableStream<Uint8Array> | ChunkIterable | string;

export async function readAudio(audio: AudioInput): Promise<Uint8Array> {
  if (typeof audio === "string") return readFilePath(audio);
  if (audio instanceof Uint8Array) return audio;
  if (ArrayBuffer.isView(audio)) return new Uint8Array(audio.buffer, audio.byteOffset, audio.byteLength);
  if (audio instanceof ArrayBuffer) return new Uint8Array(audio);
  if (typeof Blob !== "undefined" && audio instanceof Blob) return new Uint8Array(await audio.arrayBuffer());
  if (Symbol.asyncIterator in audio) return concat(audio as ChunkIterable);
  if (typeof (audio as ReadableStream<Uint8Array>).getReader === "function") {
    return concat(readerChunks((audio as ReadableStream<Uint8Array>).getReader()));
  }
  throw new TypeError("audio must be a Blob, ArrayBuffer, typed array, stream or file path");
}

async function readFilePath(path: string): Promise<Uint8Array> {
  let fs: typeof import("node:fs/promises");
  try {
    fs = await import("node:fs/promises");
  } catch {
    throw new TypeError(
      "a file path as audio needs a server runtime (Node, Deno, Bun); pass a Blob or bytes",
    );
  }
  return new Uint8Array(await fs.readFile(path));
}

async function* readerChunks(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

async function concat(chunks: ChunkIterable): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of chunks) {
    const part = typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk;
    parts.push(part);
    length += part.byteLength;
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** Standard base64 (with padding), through `Buffer` where the runtime has it, else `btoa`. */
export function toBase64(bytes: Uint8Array): string {
  const buffer = (
    globalThis as {
      Buffer?: { from(b: ArrayBufferLike, o: number, l: number): { toString(e: string): string } };
    }
  ).Buffer;
  if (buffer) return buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
