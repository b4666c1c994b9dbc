"""The streaming-text WebSocket endpoint under the `websockets` client from PyPI: text fed in
1-5 character pieces with random delays gives audio before the text ends and the same PCM as the
one-shot POST /v1/audio/speech (non_streaming_mode false, same seed); bad JSON is an error event
on a connection that keeps working; a message over the limit closes with 1009; clients that
drop mid-utterance free their stream slots. usage: check_ws.py HTTP_PORT WS_PORT"""
import asyncio, json, random, sys, time, urllib.request

import websockets

HTTP, WS = int(sys.argv[1]), int(sys.argv[2])
URL = f"ws://127.0.0.1:{WS}/v1/audio/speech/stream"
TEXT = ("Streaming text reaches the engine a few characters at a time. It speaks what it has, "
        "na\u00efve caf\u00e9 and \u4eca\u5929\u597d\u3002 Then the rest follows. Done!")
CONFIG = {"type": "session.config", "voice": "uncle_fu", "seed": 7, "response_format": "pcm",
          "max_new_tokens": 60, "stream_audio": True}
failed = 0


def check(what, ok, detail=""):
    global failed
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail}"))
    failed += 0 if ok else 1


def one_shot(text):
    body = json.dumps({"input": text, "voice": "uncle_fu", "seed": 7, "response_format": "pcm",
                       "max_new_tokens": 60, "non_streaming_mode": False}).encode()
    rq = urllib.request.Request(f"http://127.0.0.1:{HTTP}/v1/audio/speech", body,
                                {"Content-Type": "application/json"})
    with urllib.request.urlopen(rq, timeout=300) as r:
        return r.read()


async def utterance(ws, text, rng, index, wait_audio=False):
    """Feeds text in 1-5 character pieces with random delays while receiving; returns
    (pcm, events, audio_before_end)."""
    t_end = None
    pcm, events = bytearray(), []
    first_audio = None

    got_audio = asyncio.Event()

    async def feed():
        nonlocal t_end
        i = 0
        while i < len(text):
            if wait_audio and i >= len(text) // 2 and not got_audio.is_set():  # the rest waits for audio (20 s at most)
                try:
                    await asyncio.wait_for(got_audio.wait(), 20)
                except asyncio.TimeoutError:
                    pass
            k = rng.randint(1, 5)
            await ws.send(json.dumps({"type": "input.text", "text": text[i:i + k]}))
            i += k
            await asyncio.sleep(rng.uniform(0, 0.03))
        t_end = time.monotonic()
        await ws.send(json.dumps({"type": "input.done"}))

    task = asyncio.create_task(feed())
    while True:
        m = await asyncio.wait_for(ws.recv(), 300)
        if isinstance(m, bytes):
            if first_audio is None:
                first_audio = time.monotonic()
                got_audio.set()
            pcm += m
            continue
        ev = json.loads(m)
        events.append(ev)
        if ev["type"] in ("session.done", "error") and ev.get("utterance_index", index) == index and ev["type"] == "session.done":
            break
    await task
    return bytes(pcm), events, first_audio is not None and first_audio < t_end


async def main():
    rng = random.Random(17)
    ref = one_shot(TEXT)
    async with websockets.connect(URL, max_size=None) as ws:
        await ws.send(json.dumps(CONFIG))
        pcm, events, early = await utterance(ws, TEXT, rng, 0, wait_audio=True)
        types = [e["type"] for e in events]
        check("events: audio.start, audio.done, session.done", types == ["audio.start", "audio.done", "session.done"], types)
        check("audio.start states pcm at 24 kHz mono", events[0].get("format") == "pcm"
              and events[0].get("sample_rate") == 24000 and events[0].get("channels") == 1, events[0])
        check("audio arrives before the text has ended", early)
        check("streamed text gives the one-shot PCM byte for byte", len(pcm) > 0 and pcm == ref,
              f"{len(pcm)} vs {len(ref)} bytes")
        # bad JSON: an error event, and the connection goes on with the next utterance
        await ws.send("{not json")
        ev = json.loads(await ws.recv())
        check("bad JSON is an error event", ev["type"] == "error" and "invalid JSON" in ev["message"], ev)
        await ws.send(json.dumps({"type": "no.such"}))
        ev = json.loads(await ws.recv())
        check("an unknown type is an error event", ev["type"] == "error" and "no.such" in ev["message"], ev)
        await ws.send(json.dumps({"type": "session.config", "voice": "nobody"}))
        ev = json.loads(await ws.recv())
        check("a bad session.config is an error event naming the field", ev["type"] == "error"
              and "nobody" in ev["message"], ev)
        pcm2, events2, _ = await utterance(ws, "Second one.", rng, 1)
        check("a second utterance on the same connection", len(pcm2) > 0
              and events2[-1] == {"type": "session.done", "utterance_index": 1, "total_sentences": 1}, events2[-1:])
    # a message over the limit: close code 1009
    async with websockets.connect(URL, max_size=None) as ws:
        await ws.send(json.dumps(CONFIG))
        await ws.send(json.dumps({"type": "input.text", "text": "x" * 70000}))
        code = None
        try:
            while True:
                await asyncio.wait_for(ws.recv(), 30)
        except websockets.exceptions.ConnectionClosed as e:
            code = e.rcvd.code if getattr(e, "rcvd", None) else getattr(e, "code", None)
        check("a message over the limit closes with 1009", code == 1009, code)
    # clients that drop mid-utterance (text never ended): their slots are free again at once
    for _ in range(2):
        ws = await websockets.connect(URL, max_size=None)
        await ws.send(json.dumps(CONFIG))
        await ws.send(json.dumps({"type": "input.text", "text": "This text never ends and"}))
        await asyncio.wait_for(ws.recv(), 60)  # audio.start: it holds a slot
        ws.transport.abort()
    await asyncio.sleep(0.3)
    t0 = time.monotonic()
    ok = True
    try:
        one_shot("Slots are free.")
    except Exception as e:  # a 503 would mean the dropped streams still hold the slots
        ok = False
        print(e)
    check("dropped clients free their slots", ok, f"{time.monotonic() - t0:.1f} s")


asyncio.run(main())
sys.exit(1 if failed else 0)
