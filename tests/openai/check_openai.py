"""The server as the official `openai` SDK calls it (docs/SERVE.md): every response format,
speed, the model and voice aliases, plain and streamed responses; each body decoded with FFmpeg
(PyAV) to the expected duration. usage: check_openai.py BASE_URL"""
import io
import sys

import av
import openai

BASE = sys.argv[1]
client = openai.OpenAI(base_url=BASE, api_key="unused")
EXTRA = {"seed": 3, "max_new_tokens": 12}  # the random model runs to its budget


def duration(data: bytes, fmt: str) -> float:
    if fmt == "pcm":
        return len(data) / 2 / 24000
    with av.open(io.BytesIO(data)) as c:
        n, rate = 0, None
        for frame in c.decode(audio=0):
            n += frame.samples
            rate = frame.sample_rate
    return n / rate


# what a format may add or lose at its edges: MP3 / AAC priming and last-frame padding (no
# gapless header on a stream), Opus' 20 ms frames; lossless formats none
SLACK = {"mp3": 0.1, "aac": 0.1, "opus": 0.03, "flac": 0.001, "wav": 0.001, "pcm": 0.001}


def near(got: float, want: float, what: str, fmt: str, speed: float = 1.0) -> None:
    slack = SLACK[fmt] + (0.02 if speed != 1.0 else 0.0)  # the time-stretch's edges
    assert abs(got - want) <= slack, f"{what}: {got:.3f} s, want {want:.3f} s"


# the length every format must decode to: the raw samples of the same request
BASE_S = len(client.audio.speech.create(model="tts-1", voice="alloy", input="Hello there.", response_format="pcm",
                                        extra_body=EXTRA).content) / 2 / 24000
assert BASE_S >= 0.5, BASE_S
checks = 1
for fmt in ("mp3", "opus", "aac", "flac", "wav", "pcm"):
    for speed in (1.0, 2.0, 0.5):
        r = client.audio.speech.create(model="tts-1", voice="alloy", input="Hello there.", response_format=fmt,
                                       speed=speed, extra_body=EXTRA)
        near(duration(r.content, fmt), BASE_S / speed, f"{fmt} speed {speed}", fmt, speed)
        checks += 1
    # streamed as it is made: the SDK's streaming response
    with client.audio.speech.with_streaming_response.create(model="gpt-4o-mini-tts", voice="nova", input="Hello there.",
                                                            response_format=fmt, extra_body=EXTRA) as r:
        parts = list(r.iter_bytes())
    near(duration(b"".join(parts), fmt), BASE_S, f"{fmt} streamed", fmt)
    checks += 1
# stream_format "sse" (the SDK's own parameter): speech.audio.delta events carry base64 bytes of
# the format, then speech.audio.done
import base64  # noqa: E402
import json  # noqa: E402

for fmt in ("mp3", "pcm"):
    with client.audio.speech.with_streaming_response.create(model="tts-1", voice="echo", input="Hello there.",
                                                            response_format=fmt, stream_format="sse",
                                                            extra_body=EXTRA) as r:
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1]["type"] == "speech.audio.done" and all(e["type"] == "speech.audio.delta" for e in events[:-1])
    data = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    near(duration(data, fmt), BASE_S, f"{fmt} sse", fmt)
    checks += 1
# a streamed WAV saved as it arrives reads with Python's wave: a correct RIFF layout (whole
# samples), the audio up to the end of the file
import wave  # noqa: E402

with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy", input="Hello there.",
                                                        response_format="wav", extra_body=EXTRA) as r:
    r.stream_to_file("/tmp/.codectalk_stream.wav" if len(sys.argv) < 3 else sys.argv[2])
with wave.open("/tmp/.codectalk_stream.wav" if len(sys.argv) < 3 else sys.argv[2]) as w:
    assert w.getframerate() == 24000 and w.getnchannels() == 1 and w.getsampwidth() == 2
    got = len(w.readframes(w.getnframes())) / 2 / 24000
near(got, BASE_S, "streamed wav through wave", "wav")
checks += 1
# the model's own voice and id work too; unknown names are 400/404 with the choices
models = [m.id for m in client.models.list()]
assert "tts-1" in models and "tts-1-hd" in models and "gpt-4o-mini-tts" in models, models
assert client.models.retrieve("tts-1-hd").id == "tts-1-hd"
try:
    client.models.retrieve("whisper-1")
    raise AssertionError("whisper-1 retrieved")
except openai.NotFoundError:
    pass
for bad, err in (({"voice": "nobody"}, openai.BadRequestError), ({"response_format": "m4a"}, openai.BadRequestError),
                 ({"model": "tts-2"}, openai.NotFoundError)):
    args = {"model": "tts-1", "voice": "alloy", "input": "x"} | bad
    try:
        client.audio.speech.create(**args)
        raise AssertionError(f"{bad} accepted")
    except err as e:
        assert "unknown" in str(e) or "must be" in str(e) or "not served" in str(e), str(e)
    checks += 1
try:
    client.audio.speech.create(model="tts-1", voice="alloy", input="x", speed=4.5)
    raise AssertionError("speed 4.5 accepted")
except openai.BadRequestError as e:
    assert "0.25" in str(e), str(e)
print(f"openai {openai.__version__}: {checks + 3} checks passed")
