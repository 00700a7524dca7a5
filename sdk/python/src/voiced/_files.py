# Audio handed to the transcription calls: bytes, a path, or a binary file object.
from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import IO, Union

AudioInput = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", IO[bytes]]
"""Audio to transcribe: its bytes, a file path, or a file object opened in binary mode."""


def read_audio(audio: AudioInput) -> tuple[str, bytes]:
    """The audio's file name (for the multipart form) and its bytes."""
    if isinstance(audio, (bytes, bytearray, memoryview)):
        return "audio", bytes(audio)
    if isinstance(audio, (str, os.PathLike)):
        path = Path(audio)
        return path.name, path.read_bytes()
    if hasattr(audio, "read"):
        data = audio.read()
        if not isinstance(data, bytes):
            raise TypeError("audio file objects must be opened in binary mode ('rb')")
        name = getattr(audio, "name", None)
        return (Path(name).name if isinstance(name, str) else "audio"), data
    raise TypeError("audio must be bytes, a file path or a binary file object")


def to_base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def content_type_of(name: str) -> str:
    suffix = Path(name).suffix.lower()
    return {
        ".wav": "audio/wav",
        ".mp3": "audio/mpeg",
        ".flac": "audio/flac",
        ".ogg": "audio/ogg",
        ".opus": "audio/ogg",
        ".webm": "audio/webm",
    }.get(suffix, "application/octet-stream")
