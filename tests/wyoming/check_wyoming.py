"""`codectalk wyoming` driven by the `wyoming` package from PyPI (tests/wyoming/test_wyoming.sh).

usage: check_wyoming.py CODECTALK_BIN MODEL_DIR PORT SEED WORK_DIR
The server runs with --seed SEED --max-streams 1 --queue 0 --timeout 2 --max-connections 6;
its log is WORK_DIR/srv.log. Exit 0 when every check passed.
"""
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.tts import (Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped,
                         SynthesizeVoice)

BIN, MODEL, PORT, SEED, WORK = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def synth_pcm(text, voice, seed, extra=()):
    """What `codectalk synth` makes for the same text, voice and seed: raw s16le."""
    out = os.path.join(WORK, "synth.pcm")
    subprocess.run([BIN, "synth", "-m", MODEL, "-t", text, "-s", voice, "--seed", str(seed), "-o", out, "-q", *extra],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out, "rb") as f:
        return f.read()


def client():
    return AsyncTcpClient("127.0.0.1", PORT)


async def read_audio(c):
    """One audio-start .. audio-stop: (pcm bytes, chunk count, start event)."""
    ev = await asyncio.wait_for(c.read_event(), 120)
    assert ev is not None and AudioStart.is_type(ev.type), f"expected audio-start, got {ev}"
    start = AudioStart.from_event(ev)
    pcm, n = b"", 0
    while True:
        ev = await asyncio.wait_for(c.read_event(), 120)
        assert ev is not None, "connection closed inside the audio"
        if AudioStop.is_type(ev.type):
            return pcm, n, start
        assert AudioChunk.is_type(ev.type), f"expected audio-chunk, got {ev.type} {ev.data}"
        ch = AudioChunk.from_event(ev)
        assert (ch.rate, ch.width, ch.channels) == (24000, 2, 1), ch
        pcm += ch.audio
        n += 1


async def describe():
    async with client() as c:
        await c.write_event(Describe().event())
        ev = await asyncio.wait_for(c.read_event(), 30)
    info = Info.from_event(ev)
    check(len(info.tts) == 1, "info: one tts program")
    p = info.tts[0]
    names = [v.name for v in p.voices]
    out = subprocess.run([BIN, "info", "-m", MODEL], check=True, capture_output=True, text=True).stdout
    speakers = [ln.split(":", 1)[1].split() for ln in out.splitlines() if ln.startswith("speakers:")][0]
    check(names == speakers, f"info: voices are the model's speakers ({names})")
    check(p.supports_synthesize_streaming is True, "info: supports_synthesize_streaming")
    langs = p.voices[0].languages
    check("en" in langs and "zh" in langs and "auto" not in langs, f"info: languages as codes ({langs})")
    check(p.installed and p.version and "qwen3-tts" in p.name, f"info: program name and version ({p.name} {p.version})")


async def synthesize():
    text = "Hello from the Wyoming server."
    async with client() as c:
        await c.write_event(Synthesize(text=text, voice=SynthesizeVoice(name="Ryan")).event())
        pcm, n, start = await read_audio(c)
    check((start.rate, start.width, start.channels) == (24000, 2, 1), "synthesize: audio-start 24000 Hz, 16 bit, mono")
    check(len(pcm) > 0 and n > 1, f"synthesize: audio streamed in {n} chunks ({len(pcm)} bytes)")
    ref = synth_pcm(text, "ryan", SEED)
    check(pcm == ref, f"synthesize: PCM equals `codectalk synth` for the same seed ({len(pcm)} vs {len(ref)} bytes)")
    # by language only: the default voice, language set
    async with client() as c:
        await c.write_event(Synthesize(text="Bonjour.", voice=SynthesizeVoice(language="fr_FR")).event())
        pcm, n, _ = await read_audio(c)
    check(len(pcm) > 0, "synthesize: voice by language code only (fr_FR)")


async def streaming():
    pieces = ["Hello the", "re. How are", " you today? I am fine", ", thanks. The weather is", " nice and warm today, so",
              " we will go for a long walk in the park", " after lunch. See", " you there!"]
    async with client() as c:
        await c.write_event(SynthesizeStart(voice=SynthesizeVoice(name="vivian")).event())
        for p in pieces[:6]:
            await c.write_event(SynthesizeChunk(text=p).event())
        # the engine starts on the text it has: audio comes before the rest of the text is sent
        ev = await asyncio.wait_for(c.read_event(), 120)
        check(AudioStart.is_type(ev.type), f"streaming: audio-start before the text ends ({ev.type})")
        ev = await asyncio.wait_for(c.read_event(), 120)
        check(AudioChunk.is_type(ev.type), f"streaming: audio before the text ends ({ev.type})")
        pcm = AudioChunk.from_event(ev).audio if AudioChunk.is_type(ev.type) else b""
        for p in pieces[6:]:
            await c.write_event(SynthesizeChunk(text=p).event())
        await c.write_event(Synthesize(text="".join(pieces), voice=SynthesizeVoice(name="vivian")).event())
        await c.write_event(SynthesizeStop().event())
        types = []
        while True:
            ev = await asyncio.wait_for(c.read_event(), 120)
            assert ev is not None, "connection closed before synthesize-stopped"
            types.append(ev.type)
            if SynthesizeStopped.is_type(ev.type):
                break
            if AudioChunk.is_type(ev.type):
                pcm += AudioChunk.from_event(ev).audio
        check(types[-2:] == ["audio-stop", "synthesize-stopped"] and set(types[:-2]) <= {"audio-chunk"},
              f"streaming: chunks, audio-stop, synthesize-stopped; the compatibility synthesize ignored "
              f"({sorted(set(types))})")
        # the connection stays usable
        await c.write_event(Ping(text="still there").event())
        ev = await asyncio.wait_for(c.read_event(), 30)
        check(Pong.is_type(ev.type) and Pong.from_event(ev).text == "still there", "ping -> pong after streaming")
    ref = synth_pcm("".join(pieces), "vivian", SEED, ["--streaming-text"])
    check(len(pcm) > 0 and pcm == ref, f"streaming: the audio equals `codectalk synth --streaming-text` of the whole "
          f"text with the same seed ({len(pcm)} vs {len(ref)} bytes)")
    # a client that never ends its text: closed after --timeout, its stream (the only slot) freed
    async with client() as c:
        await c.write_event(SynthesizeStart(voice=SynthesizeVoice(name="vivian")).event())
        await c.write_event(SynthesizeChunk(text="And then nothing more").event())
        t0 = time.time()
        while True:
            ev = await asyncio.wait_for(c.read_event(), 30)
            if ev is None:
                break
        check(time.time() - t0 < 10, "text never ended: the connection is closed after --timeout")
    async with client() as c:
        await c.write_event(Synthesize(text="The slot is free.", voice=SynthesizeVoice(name="vivian")).event())
        try:
            pcm, _, _ = await read_audio(c)
        except AssertionError as e:
            pcm = b""
            print(e)
        check(len(pcm) > 0, "text never ended: its stream slot was freed")


def raw(timeout=10):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    return s


def read_events(s, until_close=True, limit=20.0):
    """Events from a raw socket until it closes (or limit seconds): list of (header, data)."""
    buf, evs, t0 = b"", [], time.time()
    s.settimeout(1.0)
    while time.time() - t0 < limit:
        try:
            d = s.recv(65536)
        except socket.timeout:
            if not until_close:
                break
            continue
        except ConnectionResetError:
            break
        if not d:
            break
        buf += d
        while b"\n" in buf:
            line, rest = buf.split(b"\n", 1)
            h = json.loads(line)
            dl, pl = h.get("data_length") or 0, h.get("payload_length") or 0
            if len(rest) < dl + pl:
                break
            data = json.loads(rest[:dl]) if dl else {}
            evs.append((h, data))
            buf = rest[dl + pl:]
    return evs, time.time() - t0


def srv_log():
    with open(os.path.join(WORK, "srv.log")) as f:
        return f.read()


async def bad_input():
    # an unknown event type is dropped (the protocol's rule); the connection goes on
    async with client() as c:
        await c.write_event(Event(type="frobnicate", data={"x": 1}))
        await c.write_event(Ping(text="a").event())
        ev = await asyncio.wait_for(c.read_event(), 30)
        check(Pong.is_type(ev.type), "unknown event ignored: the next ping is answered")
    check("ignoring event 'frobnicate'" in srv_log(), "unknown event: logged")
    # an unknown voice: an error event, the connection goes on
    async with client() as c:
        await c.write_event(Synthesize(text="Hi.", voice=SynthesizeVoice(name="nobody")).event())
        ev = await asyncio.wait_for(c.read_event(), 30)
        check(Error.is_type(ev.type) and Error.from_event(ev).code == "unknown_voice" and "vivian" in ev.data["text"],
              f"unknown voice: error event naming the voices ({ev.data})")
        await c.write_event(Ping(text="b").event())
        ev = await asyncio.wait_for(c.read_event(), 30)
        check(Pong.is_type(ev.type), "after an error event the connection goes on")
    # a huge payload_length: error event, closed at once
    s = raw()
    s.sendall(b'{"type": "audio-chunk", "payload_length": 1000000000000}\n')
    evs, dt = read_events(s)
    s.close()
    check(len(evs) == 1 and evs[0][0]["type"] == "error" and "payload_length" in evs[0][1]["text"] and dt < 5,
          f"huge payload_length: an error event naming it, then closed ({evs}, {dt:.1f} s)")
    # a payload_length longer than what is sent; meanwhile another connection is served
    s = raw()
    s.sendall(b'{"type": "audio-chunk", "payload_length": 1000}\n' + b"\0" * 10)
    async with client() as c:
        await c.write_event(Synthesize(text="Other connections are unaffected.", voice=SynthesizeVoice(name="eric")).event())
        pcm, _, _ = await read_audio(c)
    check(len(pcm) > 0, "while a connection waits for a lying payload, another is served")
    evs, dt = read_events(s)
    s.close()
    check(len(evs) == 1 and evs[0][1].get("code") == "bad_event" and "incomplete" in evs[0][1]["text"],
          f"lying payload_length: closed after --timeout with an error event ({evs})")
    check("closed: event incomplete after 2 s without data (58 of 1048 bytes arrived)" in srv_log(),
          "lying payload_length: logged")
    # not JSON: error event, closed
    s = raw()
    s.sendall(b"GET / HTTP/1.1\r\n\r\n")
    evs, dt = read_events(s)
    s.close()
    check(len(evs) == 1 and evs[0][1].get("code") == "bad_event" and dt < 5, f"not an event: error, closed ({evs})")
    # the client closes inside an event: logged
    s = raw()
    s.sendall(b'{"type": "synthesize", "data_length": 500}\n{"text"')
    time.sleep(0.3)
    s.close()
    time.sleep(0.5)
    check("closed by the client inside an event" in srv_log(), "client closing mid-event: logged")
    # too many connections: the 7th of --max-connections 6 gets an error event and is closed
    held = [raw() for _ in range(6)]
    time.sleep(0.3)
    s = raw()
    evs, dt = read_events(s)
    s.close()
    for h in held:
        h.close()
    check(len(evs) == 1 and evs[0][1].get("code") == "too_many_connections", f"connection over the limit: error ({evs})")
    time.sleep(0.5)
    # the engine full (one stream, no queue): a second request at once gets server_busy; the
    # first one is not read past its audio-start, so it holds the slot (back-pressure)
    long_text = "This request holds the only stream slot for a while, " * 6
    async with client() as c1, client() as c2:
        await c1.write_event(Synthesize(text=long_text, voice=SynthesizeVoice(name="ryan")).event())
        ev = await asyncio.wait_for(c1.read_event(), 60)
        check(AudioStart.is_type(ev.type), "full engine: the first request starts")
        await c2.write_event(Synthesize(text="Me too.", voice=SynthesizeVoice(name="ryan")).event())
        ev = await asyncio.wait_for(c2.read_event(), 60)
        check(Error.is_type(ev.type) and Error.from_event(ev).code == "server_busy" and "retry after" in ev.data["text"],
              f"full engine: the second gets a server_busy error event ({ev.type} {ev.data})")
    # the slot is freed again once the first client left (its stream cancelled)
    for _ in range(100):
        async with client() as c:
            await c.write_event(Synthesize(text="Free again.", voice=SynthesizeVoice(name="ryan")).event())
            ev = await asyncio.wait_for(c.read_event(), 60)
            if AudioStart.is_type(ev.type):
                break
        await asyncio.sleep(0.1)
    check(AudioStart.is_type(ev.type), "full engine: the slot is freed when its client goes away")


async def main():
    await describe()
    await synthesize()
    await streaming()
    await bad_input()


asyncio.run(main())
print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
