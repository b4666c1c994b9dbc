"""Cloned voices through the official `openai` SDK (docs/CLONING.md "Server API"): a voice
uploaded as JSON with base64 audio is used as `voice`, a one-off clone goes in `extra_body`
(ref_audio, ref_text, x_vector_only), and both give the same PCM for the same clip and seed;
an unknown voice and a missing transcript are 400s the SDK raises.
usage: check_openai_clone.py BASE_URL CLIP.wav"""
import base64
import json
import sys
import urllib.request

import openai

BASE, CLIP = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=BASE, api_key="unused")
clip = base64.b64encode(open(CLIP, "rb").read()).decode()
TEXT = "This is the reference transcript, read aloud in full."
body = json.dumps({"name": "sdk-voice", "audio": clip, "ref_text": TEXT}).encode()
req = urllib.request.Request(BASE + "/audio/voices", data=body, headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req) as r:
    assert r.status == 201, r.status
    made = json.load(r)
assert made["mode"] == "icl" and made["name"] == "sdk-voice", made
EXTRA = {"seed": 5, "max_new_tokens": 12}
say = "Hello from a cloned voice."
by_name = client.audio.speech.create(model="tts-1", voice="sdk-voice", input=say, response_format="pcm",
                                     extra_body=EXTRA).content
one_off = client.audio.speech.create(model="tts-1", voice="alloy", input=say, response_format="pcm",
                                     extra_body={**EXTRA, "ref_audio": clip, "ref_text": TEXT}).content
assert len(by_name) > 0 and by_name == one_off, (len(by_name), len(one_off))
xv = client.audio.speech.create(model="tts-1", voice="sdk-voice", input=say, response_format="pcm",
                                extra_body={**EXTRA, "x_vector_only": True}).content
assert len(xv) > 0 and xv != by_name
for kw, want in (({"voice": "nobody"}, "nobody"), ({"voice": "alloy", "extra_body": {"ref_audio": clip}}, "x-vector-only")):
    try:
        client.audio.speech.create(model="tts-1", input=say, **kw)
        raise AssertionError(f"{kw} accepted")
    except openai.BadRequestError as e:
        assert want in str(e), str(e)
print(f"openai {openai.__version__}: 5 clone checks passed")
