"""`client.live.speak` against the real speech socket (docs/live-speech.md): two contexts fed
in pieces speak their text (heard back through /v1/transcriptions), word timings on each
context's clock agree with where Whisper hears the words, a cancel cuts a context's audio short
and ends it, and refusals (at the upgrade and on the socket) raise the code's exception."""

import asyncio
import io
import re
import wave
from dataclasses import dataclass, field

import pytest
from conftest import SPEAKER, VOICE, async_client, client

from voiced import (
    InsufficientScope,
    InvalidRequest,
    KeyCeilingExceeded,
    ProPlanRequired,
    Voiced,
)
from voiced.live import AudioChunk, ContextFinal, SpeakEvent, WordTiming

RATE = 16000
FIRST = ["The weather is lovely today, ", "so we are going ", "for a walk in the park. "]
SECOND = ["Please remember to buy ", "bread and milk ", "on your way home."]
OTHER = ["Seven green ", "bottles stood on ", "the kitchen shelf."]
# Five sentences flushed at once (one phrase, rendered sentence by sentence) and a tail.
LONG = (
    "Once upon a time there was a lighthouse keeper who lived alone on a rock far out at sea. "
    "Every evening he climbed the stairs and lit the great lamp for the ships. "
    "He wrote letters to his sister that he could never send, and kept them in a tin box. "
    "In the spring the puffins came back to the cliffs below his window. "
    "The storms came and went, and the gulls grew old, and still he climbed the stairs. "
    "One winter night a small boat appeared out of the fog with a lantern at its bow"
)


@dataclass
class Heard:
    """What one context received, in order."""

    chunks: list[AudioChunk] = field(default_factory=list)
    finals: int = 0
    audio_after_final: bool = False

    @property
    def pcm(self) -> bytes:
        return b"".join(c.audio for c in self.chunks)

    @property
    def seconds(self) -> float:
        return len(self.pcm) / 2 / RATE

    @property
    def words(self) -> list[WordTiming]:
        return [w for c in self.chunks for w in c.words]

    @property
    def chars(self) -> str:
        return "".join("".join(c.alignment.chars) for c in self.chunks if c.alignment)

    def wav(self) -> bytes:
        out = io.BytesIO()
        with wave.open(out, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(self.pcm)
        return out.getvalue()


def take(heard: dict[str, Heard], event: SpeakEvent) -> None:
    if isinstance(event, AudioChunk):
        h = heard.setdefault(event.context_id, Heard())
        h.audio_after_final |= h.finals > 0
        h.chunks.append(event)
    elif isinstance(event, ContextFinal):
        heard.setdefault(event.context_id, Heard()).finals += 1


def squash(text: str) -> str:
    return " ".join(text.split())


def bare(word: str) -> str:
    return re.sub(r"[^a-z0-9]", "", word.lower())


def check_spoken(c: Voiced, h: Heard, pieces: list[str], *, whisper_words: list[str]) -> None:
    """The context's audio says its text; its alignment spells the text as sent; its words
    are the text's words, in order, inside the audio, and where Whisper hears them."""
    text = "".join(pieces)
    assert h.finals == 1 and not h.audio_after_final
    assert squash(h.chars) == squash(text)
    assert [w.word for w in h.words] == text.split()
    # Each chunk starts where the one before ended, on the context's clock.
    for before, after in zip(h.chunks, h.chunks[1:]):
        assert after.start == pytest.approx(before.end)
    assert h.chunks[-1].end == pytest.approx(h.seconds)
    for chunk in h.chunks:
        for w in chunk.words:
            assert chunk.start <= w.start <= w.end <= chunk.end + 0.01, (w, chunk.start, chunk.end)
    starts = [w.start for w in h.words]
    assert starts == sorted(starts), starts
    assert all(w.end <= h.seconds + 0.01 for w in h.words), (h.words[-1], h.seconds)

    heard = c.transcriptions.create(audio=h.wav(), timestamps="word")
    said = heard["text"].lower()
    for word in whisper_words:
        assert word in said, (word, said)
    # The SDK's absolute times agree with Whisper's: a word of the context's second phrase
    # would be off by the first phrase's length (seconds) had chunk times stayed relative.
    ours = {bare(w.word): w.start for w in h.words}
    for w in heard.get("words") or []:
        if bare(w["word"]) in whisper_words:
            assert abs(w["start"] - ours[bare(w["word"])]) < 0.75, (w, ours[bare(w["word"])])


def check_cut(c: Voiced, h: Heard) -> None:
    """The cancelled context ended, nothing came after, and it stopped short: the lighthouse
    was heard, nothing of the later sentences, and its phrase failed as cancelled."""
    assert h.finals == 1 and not h.audio_after_final
    said = c.transcriptions.create(audio=h.wav())["text"].lower()
    assert "lighthouse" in said, said
    assert not any(w in said for w in ("puffins", "storms", "gulls", "winter", "lantern")), said
    assert h.seconds < 12, h.seconds  # the whole text is some 30 s of speech
    generation = c.generations.get(str(h.chunks[0].generation_id))
    assert generation["status"] == "failed" and "cancelled" in (generation.get("error") or ""), generation


def finished(heard: dict[str, Heard], *contexts: str) -> bool:
    return all(k in heard and heard[k].finals for k in contexts)


def test_two_contexts_in_pieces_speak_their_text_with_word_times_and_a_cancel_cuts_one():
    c = client()
    heard: dict[str, Heard] = {}
    with c.live.speak(voice=SPEAKER, output_format="pcm_16000") as socket:
        a = socket.context("a")
        b = socket.context("b")
        cut = socket.context("cut")
        for i, piece in enumerate(FIRST + SECOND):
            a.send_text(piece)
            if i < len(OTHER):
                b.send_text(OTHER[i])
        b.close()  # flushes: its last words have no space after them
        a.close()
        cut.send_text(LONG)
        cut.flush()  # everything flushed: cancel() must still cut it
        cancelled = ended = False
        for event in socket:
            take(heard, event)
            if not cancelled and isinstance(event, AudioChunk) and event.context_id == "cut":
                assert cut.cancel()
                cancelled = True
            if not ended and finished(heard, "a", "b", "cut"):
                socket.close_socket()
                ended = True
    assert cancelled
    check_spoken(c, heard["a"], FIRST + SECOND,
                 whisper_words=["weather", "lovely", "park", "bread", "milk", "home"])  # fmt: skip
    check_spoken(c, heard["b"], OTHER, whisper_words=["bottles", "kitchen", "shelf"])
    # Each phrase is a generation readable afterwards.
    phrases_a = {ch.generation_id for ch in heard["a"].chunks}
    assert len(phrases_a) >= 2 and None not in phrases_a
    for gen in phrases_a:
        assert c.generations.get(str(gen))["status"] == "completed"

    check_cut(c, heard["cut"])
    assert not cut.cancel() and cut.closed  # a second cancel sends nothing


def test_async_speak_two_contexts_and_cancel_mid_turn():
    heard: dict[str, Heard] = {}

    async def run() -> None:
        async with async_client() as c:
            async with c.live.speak(voice=SPEAKER, output_format="pcm_16000") as socket:
                a = await socket.context("a")
                cut = await socket.context("cut")
                for piece in FIRST + SECOND:
                    await a.send_text(piece)
                await a.close()
                # An agent interrupted mid-turn: its sentences are spoken, its last words
                # (no sentence end yet) wait in the buffer.
                await cut.send_text(LONG)
                cancelled = ended = False
                async for event in socket:
                    take(heard, event)
                    if not cancelled and isinstance(event, AudioChunk) and event.context_id == "cut":
                        assert await cut.cancel()
                        cancelled = True
                    if not ended and finished(heard, "a", "cut"):
                        await socket.close_socket()
                        ended = True
                assert cancelled

    asyncio.run(run())
    c = client()
    check_spoken(c, heard["a"], FIRST + SECOND,
                 whisper_words=["weather", "lovely", "park", "bread", "milk", "home"])  # fmt: skip
    check_cut(c, heard["cut"])


def test_refusals_at_the_upgrade_raise_the_codes_exception():
    with pytest.raises(InsufficientScope) as scope:
        with client("read_only").live.speak(voice=VOICE):
            pass
    assert scope.value.status == 403 and scope.value.type == "missing_permissions"
    assert "voice:generate" in (scope.value.detail or "")
    # An unknown voice is the 400 every speech door gives, naming the field.
    with pytest.raises(InvalidRequest) as voice:
        with client().live.speak(voice="No Such Voice"):
            pass
    assert voice.value.status == 400 and voice.value.param == "voice_id"
    assert "No Such Voice" in (voice.value.detail or "")
    with pytest.raises(ProPlanRequired):
        with client("unpaid").live.speak(voice=VOICE):
            pass
    with pytest.raises(InvalidRequest) as bad:
        with client().live.speak(voice=VOICE, inactivity_timeout=999):
            pass
    assert bad.value.status == 400 and bad.value.param == "inactivity_timeout"

    async def refused() -> None:
        async with async_client("read_only") as c:
            async with c.live.speak(voice=VOICE):
                pass

    with pytest.raises(InsufficientScope):
        asyncio.run(refused())


def test_refusals_on_the_socket_raise_the_codes_exception():
    # The key's ceiling (0 minutes) refuses the first phrase: an error message, then the close.
    with client("ceiling").live.speak(voice=VOICE, output_format="pcm_16000") as socket:
        turn = socket.context("t")
        turn.send_text("Hello there.")
        turn.close()
        with pytest.raises(KeyCeilingExceeded) as ceiling:
            list(socket)
    assert ceiling.value.code == "key_ceiling_exceeded" and ceiling.value.status is None
    assert ceiling.value.body["contextId"] == "t"
    # A message the server cannot take (a voice setting that would change the voice).
    with client().live.speak(voice=VOICE) as socket:
        socket.context(voice_settings={"style": 0.4})
        with pytest.raises(InvalidRequest) as bad:
            socket.recv(timeout=60)
    assert bad.value.param == "voice_settings.style"
