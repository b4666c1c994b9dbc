#!/usr/bin/env python3
"""Builds the tokenizer reference corpus: a fixed list of test strings encoded by the Hugging
Face `tokenizers` package, written as JSON lines {"text": ..., "ids": [...]}.

Run by hand (never by CI), from the repo root:
    python3 -m venv .venv-tok && .venv-tok/bin/pip install tokenizers
    .venv-tok/bin/python tools/tokenizer_ref.py \
        [--tokenizer /work/shared/fixtures/qwen3-tokenizer/tokenizer.json] \
        [--out tests/data/tokenizer/corpus.jsonl]
The strings are generated deterministically (fixed lists plus a seeded random mix), so a rerun
with the same tokenizer.json reproduces the file byte for byte.
"""
import argparse
import json
import random
import sys

SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
    "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
]

ENGLISH = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Speech synthesis turns written text into natural-sounding audio.",
    "Please call me at 555-0123 before 9:30 a.m. tomorrow.",
    "She sells sea shells by the sea shore.",
    "To be, or not to be: that is the question.",
    "Dr. Smith paid $1,234.56 for 3 items (incl. tax) on 2024-03-15.",
    "Wait... what?! Really??",
    "e-mail: john.doe@example.com, web: https://example.org/path?q=1&lang=en#top",
    "C++ and C# are different; so are Java and JavaScript.",
    "I can't believe it's not butter.",
    "We've been waiting; they'd said they'll come, but I'm not sure you're right.",
    "I'M SURE YOU'RE RIGHT, BUT THEY'LL SAY WE'VE LOST AND HE'D AGREE. IT'S DONE.",
    "i'M sUrE yOu'Re RiGhT, tHeY'lL sAy We'Ve LoSt, He'D aGrEe, It'S dOnE.",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D",
    "don't won't shouldn't couldn't wouldn't isn't aren't",
    "the cat's hat, the cats' hats",
    "rock 'n' roll",
    "O'Neil's dog's bone",
    "He said \"hello\" and left.",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
    "def f(x):\n    return x ** 2\n",
    "for (int i = 0; i < n; i++) { sum += a[i]; }",
    "if (a != b && c >= d || !e) { return -1; }",
    "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); }",
    "<div class=\"note\">Text &amp; more</div>",
    "SELECT * FROM users WHERE id = 42;",
    "A B C D E F G",
    "a",
    "I",
    " ",
    "ok",
    "OK.",
    "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were perfectly normal.",
    "antidisestablishmentarianism",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "Supercalifragilisticexpialidocious!",
    "Once upon a time, in a land far, far away, there lived a king.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 100 1000 10000",
]

CHINESE = [
    "你好，世界！",
    "今天天气很好，我们去公园散步吧。",
    "语音合成技术可以将文字转换成自然的语音。",
    "北京是中华人民共和国的首都。",
    "我爱你",
    "人工智能正在改变我们的生活方式，包括工作、学习和娱乐。",
    "他说：“这是真的吗？”",
    "一二三四五六七八九十",
    "2024年3月15日，星期五。",
    "中文English混合Mixed文本text",
    "繁體中文與簡體中文不同。",
    "《红楼梦》是中国古典小说。",
]

JAPANESE = [
    "こんにちは、世界！",
    "今日はいい天気ですね。",
    "私は日本語を勉強しています。",
    "カタカナとひらがなと漢字",
    "東京スカイツリーは高さ６３４メートルです。",
    "ありがとうございました！",
    "ｶﾀｶﾅ半角",
    "「こんにちは」と彼は言った。",
]

KOREAN = [
    "안녕하세요, 세계!",
    "오늘 날씨가 정말 좋네요.",
    "저는 한국어를 공부하고 있습니다.",
    "대한민국의 수도는 서울입니다.",
    "감사합니다!",
    "한글과 漢字를 함께 씁니다.",
]

GERMAN = [
    "Grüß Gott! Wie geht's?",
    "Die Straße ist naß, weil es regnet.",
    "Donaudampfschifffahrtsgesellschaftskapitänswitwe",
    "Äpfel, Öl und Übermut.",
    "Ich hab' keine Zeit – später vielleicht.",
    "Größenordnung: 1.234,56 €",
]

FRENCH = [
    "Bonjour, ça va ? Très bien, merci !",
    "L'été dernier, nous sommes allés à Noël.",
    "« Je pense, donc je suis. »",
    "Où est la bibliothèque ? C'est là-bas.",
    "Qu'est-ce que c'est ?",
    "L'œuvre d'art coûte 1 000 €.",
]

RUSSIAN = [
    "Привет, мир!",
    "Москва — столица России.",
    "Я люблю программирование.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "ПРИВЕТ привет ПрИвЕт",
    "Ёлка и ёжик",
]

OTHER_SCRIPTS = [
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "Γειά σου Κόσμε",
    "Xin chào thế giới, tiếng Việt có dấu.",
    "Հայերեն",
    "ქართული",
    "Türkçe: İstanbul, ığdır, şeker",
    "Polski: zażółć gęślą jaźń",
    "Español: ¿Qué tal? ¡Muy bien! Mañana.",
    "Português: coração, não, ação",
    "Ελληνικά ΤΕΛΟΣ τέλος",
    "ᚠᚢᚦᚨᚱᚲ runes",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙",
]

EMOJI = [
    "😀",
    "Hello 👋 world 🌍!",
    "👨‍👩‍👧‍👦 family",
    "👩‍💻👨‍🔬🧑‍🚀",
    "🏳️‍🌈 🏴‍☠️",
    "👍🏽👍🏿👍🏻",
    "🇩🇪🇫🇷🇯🇵🇺🇸",
    "1️⃣ 2️⃣ #️⃣",
    "❤️ ❤ ♥",
    "🤖🤖🤖🤖🤖",
    "I ❤️ NY",
    "😂😂😂 lol",
    "🙂‍↔️ 🐦‍🔥",
    "☺︎ ☺️",
    "text😀text",
    "👁️‍🗨️",
]

NUMBERS = [
    "0",
    "7",
    "42",
    "123",
    "2024",
    "3.14159265358979323846",
    "1,000,000",
    "1 000 000",
    "-273.15",
    "+1 (555) 010-9999",
    "1e10 6.02e23",
    "0x1F 0b1010 0o777",
    "12345678901234567890123456789012345678901234567890",
    "9" * 120,
    "３．１４ ２０２４年",
    "½ ¼ ¾ ² ³ ⁴ ₁ ₂",
    "① ② ③ Ⅻ ⅳ",
    "٠١٢٣٤٥٦٧٨٩",
    "०१२३४५६७८९",
    "v1.2.3-rc4",
    "A4 B52 C3PO R2D2",
    "10:30:45.123",
    "100%",
    "$9.99 €5 £3 ¥100",
]

WHITESPACE = [
    "  ",
    "   ",
    "    ",
    "        ",
    " " * 33,
    "\t",
    "\t\t",
    "\t\t\t\t",
    "\n",
    "\n\n",
    "\n\n\n\n",
    "\r\n",
    "\r\n\r\n",
    "\r",
    " \n",
    "\n ",
    " \t \n \t ",
    "  leading",
    "trailing  ",
    "  both  ",
    " a",
    "a ",
    "a  b",
    "a   b",
    "a    b",
    "a\tb",
    "a\t\tb",
    "a\nb",
    "a\n\nb",
    "a \n b",
    "a  \n\n  b",
    "a\r\nb",
    "line one\nline two\n\nline four\n",
    "    indented code\n        more\n",
    "tab\tseparated\tvalues\n1\t2\t3\n",
    "word \n",
    "end.\n\n\n",
    "x\u00a0y",
    "x\u00a0\u00a0y",
    "x\u3000y",
    "x\u2028y",
    "x\u2029y",
    "x\u0085y",
    "x\u200by",
    "x\u180ey",
    "x \u180ey",
    "x\u180e y",
    "x\u180e\u180ey",
    "\u180e\n",
    "it'\u017f IT'\u017f '\u017f",
    "\u212aelvin '\u212a",
    " \u180e",
    "\u180e\u180e",
    "x\u2003\u2003y",
    "x\ufeffy",
    "\u000b\u000c",
    "a\u000bb\u000cc",
    "!!! \n\n",
    "? \n",
    ".\n",
    "...\r\n",
]

PUNCT = [
    "!!!",
    "???",
    "?!?!",
    "...",
    "…",
    "—",
    "--",
    "---",
    "***",
    "```",
    "```python\nprint(1)\n```",
    "(a)",
    "[[x]]",
    "{{y}}",
    "<<>>",
    "a.b.c",
    "a,b;c:d",
    "\"quoted\"",
    "'single'",
    "“curly” ‘quotes’",
    "@#$%^&*",
    "~`|\\/",
    "!@#$%^&*()_+-=[]{}|;':\",./<>?",
    "a!b?c.",
    " !",
    " !!",
    "x !!!",
    "x , y",
    "::",
    "=>",
    "->",
    "===",
    "///",
    "§¶†‡",
    "©®™",
    "←→↑↓",
    "∑∏∫√∞≈≠≤≥",
    "♠♣♥♦",
]

COMBINING = [
    "e\u0301",
    "cafe\u0301",
    "A\u030a",
    "n\u0303",
    "Man\u0303ana",
    "\u1100\u1161\u11a8",
    "\u1112\u1161\u11ab\u1100\u1173\u11af",
    "A\u0308\u0304",
    "o\u0308",
    "u\u0308ber",
    "\u212b",
    "\u2126",
    "\u212a",
    "\ufb01",
    "\u00e9",
    "e\u0301\u0301",
    "a\u0323\u0302",
    "a\u0302\u0323",
    "\u0301",
    " \u0301",
    "x\u0301y",
    "q\u0307\u0323",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dalgo",
    "\u0915\u093c",
    "\u05d0\u05b8",
    "\u0627\u0653",
    "ﾞ",
    "\u3071",
    "\u306f\u309a",
    "<tts_pad>\u0301",
    "\u0301<tts_pad>",
    "e<|im_end|>\u0301",
    "<tts_pad>\u0338",
    "a<\u0338b >\u0338 =\u0338",
    "\u0338",
]

SPECIAL_MIX = [
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<tts_pad>",
    "<tts_text_bos>",
    "<tts_text_eod>",
    "<tts_text_bos_single>",
    "<tts_pad><tts_pad><tts_pad>",
    "<|im_start|><|im_start|>",
    "<|im_start|>user\nHello<|im_end|>",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n",
    "text<|endoftext|>more text",
    "x<|endoftext|>y",
    " <|im_end|> ",
    "  <tts_pad>  ",
    "\n<|im_start|>\n",
    "<|im_start|>assistant",
    "<|im_start",
    "<|im_start|",
    "im_start|>",
    "<|IM_START|>",
    "< |im_start|>",
    "<<|im_end|>>",
    "<|<|im_end|>|>",
    "<tts_pad",
    "<tts_text_bos_singl>",
    "<tts_text_bos_single><tts_text_bos>",
    "<|audio_start|><|audio_pad|><|audio_end|>",
    "<think>\n\n</think>\n\n",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
    "<|vision_start|><|image_pad|><|vision_end|>",
    "<|object_ref_start|>dog<|object_ref_end|><|box_start|>(1,2)<|box_end|>",
    "Hello<tts_pad>world",
    "你好<|im_end|>世界",
    "😀<tts_pad>😀",
    "123<|endoftext|>456",
    "<|endoftext|><|endoftext|>",
    "<|im_end|>\n<|im_start|>assistant\n",
]

PROMPT_TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "你好，世界！欢迎使用语音合成。",
    "こんにちは、今日はいい天気ですね。",
    "안녕하세요, 만나서 반갑습니다.",
    "Guten Tag! Wie geht's Ihnen?",
    "Bonjour à tous, c'est un plaisir.",
    "Привет! Как дела?",
    "I'm so happy 😀 to see you!",
    "It costs $1,234.56 — not bad.",
    "Line one.\nLine two.",
    " leading space",
    "trailing space ",
    "a",
    "Don't stop believing.",
    "The year 2024 had 366 days.",
    "e\u0301cole",
    "Wait... what?!",
]

REF_TEXTS = [
    "This is the reference transcript.",
    "我是参考音频的文本。",
    "Okay, so today we're going to talk about tokenizers.",
]

INSTRUCTS = [
    "Speak in a calm, warm voice.",
    "用温柔的语气说话。",
    "A deep male voice, slow and dramatic.",
]


def long_strings():
    rng = random.Random(1234)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [
        "a" * 1000,
        "ab" * 400,
        "supercalifragilistic" * 20,
        "".join(rng.choice(letters) for _ in range(600)),
        "".join(rng.choice(letters + letters.upper()) for _ in range(300)),
        "的" * 200,
        "".join(rng.choice("人工智能语音合成技术中文测试文本") for _ in range(300)),
        "😀" * 100,
        "👨‍👩‍👧‍👦" * 20,
        " " * 500,
        "\n" * 200,
        "\t" * 100,
        " \n" * 100,
        "1234567890" * 30,
        "!" * 300,
        "-" * 200,
        "=" * 80,
        "ж" * 300,
        "한" * 200,
        "é" * 200,
        "e\u0301" * 100,
        "a" + "\u0301\u0323\u0308\u0327\u031b" * 60 + "b",
        ("o\u0308\u0323\u0301 " * 40).strip(),
        ("word " * 200).strip(),
        "<tts_pad>" * 50,
    ]


def random_mix(count):
    """Seeded random strings over a pool that mixes every category above."""
    rng = random.Random(20240315)
    pool = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    pool += list(" " * 12 + "\t\n\r" + "  \n\n")
    pool += list(".,;:!?'\"()[]{}<>|/\\-_=+*&^%$#@~`")
    pool += list("你好世界中文语音日本語こんにちはカタカナ한국어안녕ÄÖÜßäöüéèêçàœЖжЁёЯя")
    pool += ["\u0301", "\u0308", "\u00a0", "\u3000", "\u200d", "\ufe0f", "😀", "👍", "🏽", "🇩", "🇪"]
    pool += ["'s", "'T", "'re", "'LL", "'d", "'Ve", "'m"]
    pool += ["<|im_start|>", "<|im_end|>", "<tts_pad>", "<|endoftext|>", "<|im_", "tts_"]
    pool += ["½", "²", "①", "٣", "\u212b", "\u2126", "\ufb01"]
    out = []
    for _ in range(count):
        n = rng.randint(1, 40)
        out.append("".join(rng.choice(pool) for _ in range(n)))
    return out


def random_codepoints(count):
    """Seeded random strings of arbitrary scalar values (any plane, any category), mixed with
    spaces, newlines and contraction letters; they probe Unicode property agreement between
    PCRE2/utf8proc and Oniguruma/unicode-normalization."""
    rng = random.Random(777)
    ranges = [(0x0, 0xD7FF), (0xE000, 0x10FFFF), (0x0, 0x2FFF), (0x10000, 0x1FFFF),
              (0x300, 0x36F), (0x2000, 0x206F), (0x1680, 0x18AF), (0xAC00, 0xD7A3)]
    out = []
    for _ in range(count):
        s = ""
        for _ in range(rng.randint(1, 24)):
            if rng.random() < 0.3:
                s += rng.choice(" \t\n'sdtlSDTL ")
            else:
                a, b = rng.choice(ranges)
                s += chr(rng.randint(a, b))
        out.append(s)
    return out


def build_strings():
    s = []
    s += ENGLISH + CHINESE + JAPANESE + KOREAN + GERMAN + FRENCH + RUSSIAN + OTHER_SCRIPTS
    s += EMOJI + NUMBERS + WHITESPACE + PUNCT + COMBINING + SPECIAL_MIX
    s += ["<|im_start|>assistant\n" + t + "<|im_end|>\n<|im_start|>assistant\n" for t in PROMPT_TEXTS]
    s += ["<|im_start|>assistant\n" + t + "<|im_end|>\n" for t in REF_TEXTS]
    s += ["<|im_start|>user\n" + t + "<|im_end|>\n" for t in INSTRUCTS]
    s += [sp for sp in SPECIALS]
    s += ["a" + sp + "b" for sp in SPECIALS]
    s += ["\x00", "a\x00b", "\x01\x02\x03\x1f\x7f", "\x1b[31mred\x1b[0m"]
    s += long_strings()
    s += random_mix(120)
    s += random_codepoints(150)
    s += [""]
    seen = set()
    uniq = []
    for x in s:
        if x not in seen:
            seen.add(x)
            uniq.append(x)
    return uniq


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", default="/work/shared/fixtures/qwen3-tokenizer/tokenizer.json")
    ap.add_argument("--out", default="tests/data/tokenizer/corpus.jsonl")
    args = ap.parse_args()
    from tokenizers import Tokenizer  # imported late so --help works without the venv

    tok = Tokenizer.from_file(args.tokenizer)
    strings = build_strings()
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        for text in strings:
            ids = tok.encode(text, add_special_tokens=False).ids
            f.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=True) + "\n")
    print(f"wrote {len(strings)} entries to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
