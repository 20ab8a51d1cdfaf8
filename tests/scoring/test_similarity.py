"""Similarity scorers (evalwh/scoring/similarity.py): bleu and rouge-l against reference
implementations, semantic with toy embedders; the 13a tokeniser, the option checks and the
edges of sentence_bleu.

The reference numbers below were computed once, outside the project, in a throwaway venv
(``python3 -m venv /tmp/refs && /tmp/refs/bin/pip install nltk sacrebleu rouge-score``;
Python 3.11.7, sacrebleu 2.6.0, nltk 3.10.4, rouge-score 0.1.2) and are hard-coded here;
none of those libraries is a dependency of evalwh. ``tok`` below is evalwh's own tokeniser,
``re.findall(r"\\w+|[^\\w\\s]", text)``. The schema's similarity criteria are checked in
tests/config/test_validate.py.
"""

from __future__ import annotations

import json
import math
import random
import sys
import uuid
from pathlib import Path

import pytest

from evalwh.config.model import Case
from evalwh.scoring import SCORERS, build_scorer
from evalwh.scoring.similarity import lcs_length, rouge_l, sentence_bleu, tokenize, tokenize_13a
from tests.config.test_validate import SCHEMA_PATH
from tests.scoring.test_base import FILE, build_error, crit, run


def expect(refs: str | list[str]) -> Case:
    return Case(id="q1", expected=refs)


def test_types_are_registered(tmp_path: Path, embed_module: str):
    # each type name builds a scorer that scores: an exact copy 1, unrelated text low
    reference = expect("the cat sat on the mat")
    for type_ in ("bleu", "rouge-l"):
        same = run(crit(type_), "the cat sat on the mat", reference)
        other = run(crit(type_), "dogs bark loudly", reference)
        assert same.error is None and same.score == pytest.approx(1.0), type_
        assert other.error is None and other.score < 0.5, (type_, other.score)
    # and each name reaches its own scorer: a short answer keeps rouge-l's recall of 3 of 6
    # reference tokens (F1 2/3) while bleu's brevity penalty exp(1 - 6/3) pulls it below 0.37
    short = [run(crit(t), "the cat sat", reference).score for t in ("rouge-l", "bleu")]
    assert short[0] == pytest.approx(2 / 3) and short[1] < 0.37
    semantic = crit("semantic", embedder=f"{embed_module}:letters")
    same = run(semantic, "the cat sat", expect("the cat sat"), root=tmp_path)
    assert same.error is None and same.score == pytest.approx(1.0)
    assert {"bleu", "rouge-l", "semantic"} <= set(SCORERS)
    # and a config may name them
    types = json.dumps(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    assert all(f'"{t}"' in types for t in ("bleu", "rouge-l", "semantic"))


def test_tokenize():
    assert tokenize("Don't stop, 3.5!") == ["Don", "'", "t", "stop", ",", "3", ".", "5", "!"]
    assert tokenize("Don't stop, 3.5!", lowercase=True, keep_punctuation=False) == [
        "don",
        "t",
        "stop",
        "3",
        "5",
    ]
    assert tokenize("  Ça   va? 日本語_ok ") == ["Ça", "va", "?", "日本語_ok"]
    assert tokenize("") == []


H1 = ("The cat sat on the mat .", ["The cat is sitting on the mat ."])


H2 = (
    "the quick brown fox jumps over the lazy dog",
    ["a quick brown fox jumped over the lazy dog", "the fast brown fox leaps over a sleepy dog"],
)


H3 = (
    "it is a guide to action which ensures that the military always obeys the commands of "
    "the party",
    [
        "it is a guide to action that ensures that the military will forever heed party commands",
        "it is the guiding principle which guarantees the military forces always being under "
        "the command of the party",
        "it is the practical guide for the army always to heed the directions of the party",
    ],
)


H4 = ("Paris is the capital", ["The capital of France is Paris"])  # no 3- or 4-gram match


H5 = ("the cat", ["the cat sat on the mat"])  # shorter than 4 tokens


H6 = ("mat the on sat cat the", ["the cat sat on the mat"])  # unigram matches only


H7 = ("the cat sat on a mat", ["the cat sat on the mat", "a cat was sitting on the mat"])


# sacrebleu 2.6.0:
#   BLEU(tokenize="none", smooth_method=SMOOTHING, effective_order=EFF, max_ngram_order=N)
#     .sentence_score(" ".join(tok(hyp)), [" ".join(tok(r)) for r in refs]).score / 100
# (hyp, refs), smoothing, effective_order, max_n, expected
SACREBLEU = [
    (H1, "exp", True, 4, 0.42383656282787785),
    (H1, "add-k", True, 4, 0.5127984735494305),
    (H1, "exp", True, 2, 0.6552980970848461),
    (H1, "add-k", True, 2, 0.6782979718512521),
    (H2, "exp", True, 4, 0.4316700106852254),
    (H2, "none", False, 4, 0.4316700106852254),
    (H2, "add-k", True, 4, 0.5216948600244293),
    (H2, "exp", True, 2, 0.6972166887783967),
    (H2, "add-k", False, 2, 0.720082299823096),
    (H3, "exp", True, 4, 0.5045666840058485),
    (H3, "add-k", True, 4, 0.539755306744061),
    (H3, "exp", True, 2, 0.7453559924999297),
    (H3, "add-k", True, 2, 0.7597107961765193),
    (H4, "exp", True, 4, 0.12750736437345597),
    (H4, "exp", False, 4, 0.12750736437345597),
    (H4, "floor", True, 4, 0.0641328089975786),
    (H4, "add-k", True, 4, 0.255014728746912),
    (H4, "none", True, 4, 0.0),
    (H4, "exp", True, 2, 0.21444097124017666),
    (H4, "floor", True, 2, 0.09590091777082246),
    (H4, "add-k", True, 2, 0.2626354797426377),
    (H4, "none", True, 2, 0.0),
    (H5, "exp", True, 4, 0.13533528323661276),
    (H5, "floor", True, 4, 0.13533528323661276),
    (H5, "none", True, 4, 0.13533528323661276),
    (H5, "add-k", True, 4, 0.13533528323661276),
    (H5, "exp", False, 4, 0.0),
    (H5, "floor", False, 4, 0.0),
    (H5, "none", False, 4, 0.0),
    # sacrebleu's add-k also smooths the 3- and 4-gram orders the output does not have (to
    # precision 1); evalwh now does the same (it used to score 0 here)
    (H5, "add-k", False, 4, 0.13533528323661276),
    (H6, "exp", True, 4, 0.12703318703865377),
    (H6, "floor", False, 4, 0.06389431042462726),
    (H6, "add-k", True, 4, 0.30213753973567686),
    (H6, "none", True, 4, 0.0),
    (H7, "exp", True, 4, 0.5623413251903492),
    (H7, "add-k", True, 4, 0.6687403049764223),
]


@pytest.mark.parametrize(("pair", "smoothing", "effective", "max_n", "expected"), SACREBLEU)
def test_bleu_agrees_with_sacrebleu(pair, smoothing, effective, max_n, expected):
    hyp, refs = pair
    c = crit("bleu", smoothing=smoothing, effective_order=effective, max_n=max_n)
    result = run(c, hyp, expect(refs))
    assert result.score == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert result.error is None


# nltk 3.10.4:
#   nltk.translate.bleu_score.sentence_bleu([tok(r) for r in refs], tok(hyp),
#       smoothing_function=SmoothingFunction().METHOD)
# method1 (epsilon 0.1) = floor, method2 = add-k with k=1, method3 = exp. Every hypothesis has
# at least 4 tokens (nltk has no effective order).
NLTK = [
    (H1, "method1", 0.42383656282787796),
    (H1, "method2", 0.5127984735494304),
    (H2, "method1", 0.43167001068522526),
    (H2, "method2", 0.5216948600244291),
    (H3, "method3", 0.5045666840058485),
    (H4, "method1", 0.0641328089975786),
    (H4, "method2", 0.255014728746912),
    (H4, "method3", 0.12750736437345603),
    (H6, "method1", 0.06389431042462725),
    (H6, "method2", 0.3021375397356768),
    (H6, "method3", 0.1270331870386537),
    (H7, "method2", 0.668740304976422),
    (H7, "method3", 0.5623413251903491),
]


NLTK_METHOD = {"method1": "floor", "method2": "add-k", "method3": "exp"}


@pytest.mark.parametrize(("pair", "method", "expected"), NLTK)
def test_bleu_agrees_with_nltk(pair, method, expected):
    hyp, refs = pair
    result = run(crit("bleu", smoothing=NLTK_METHOD[method]), hyp, expect(refs))
    assert result.score == pytest.approx(expected, rel=1e-12)


# sacrebleu 2.6.0: sacrebleu.sentence_bleu(hyp, refs).score / 100 - every default (13a
# tokeniser, case-sensitive, exp smoothing, effective order), on raw text where 13a and
# evalwh's tokeniser split alike.
SACREBLEU_DEFAULTS = [
    ("The cat sat on the mat.", ["The cat is sitting on the mat."], 0.42383656282787785),
    ("Hello, world! How are you?", ["Hello world, how are you today?"], 0.14535768424205484),
    (
        "Yes: the answer is (b), not (c).",
        ["The answer is (b).", "Answer: (b)"],
        0.30576902884505125,
    ),
]


@pytest.mark.parametrize(("hyp", "refs", "expected"), SACREBLEU_DEFAULTS)
def test_bleu_defaults_agree_with_sacrebleu_sentence_bleu(hyp, refs, expected):
    assert run(crit("bleu"), hyp, expect(refs)).score == pytest.approx(expected, rel=1e-12)


def test_bleu_details():
    result = run(crit("bleu"), "the cat", expect("the cat sat on the mat"))
    assert result.details == {
        "precisions": [1.0, 1.0],
        "brevity_penalty": pytest.approx(math.exp(1 - 6 / 2)),
        "hyp_len": 2,
        "ref_len": 6,
    }
    json.dumps(result.details)


def test_bleu_identical_disjoint_and_empty():
    text = "The answer is forty-two, of course."
    assert run(crit("bleu"), text, expect(text)).score == pytest.approx(1.0)
    assert run(crit("bleu"), "completely unrelated words", expect(text)).score == 0.0
    assert run(crit("bleu"), "", expect(text)).score == 0.0
    assert run(crit("bleu"), "anything", expect("")).score == 0.0


def test_bleu_closest_reference_length_breaks_ties_to_the_shorter():
    # 3 tokens; references of 2 and 4 tokens are equally close: the shorter one (2) is used.
    _, details = sentence_bleu(["a", "b", "c"], [["a", "b", "c", "d"], ["a", "b"]])
    assert details["ref_len"] == 2
    assert details["brevity_penalty"] == 1.0


def test_bleu_lowercase_and_punctuation_options():
    case = expect("Hello, World!")
    assert run(crit("bleu"), "hello world", case).score == 0.0
    assert run(crit("bleu", lowercase=True), "hello world", case).score < 1.0
    both = crit("bleu", tokenizer="unicode", lowercase=True, keep_punctuation=False)
    assert run(both, "hello world", case).score == pytest.approx(1.0)


def test_bleu_reference_option_and_threshold_pass():
    c = crit("bleu", reference=["the cat sat on the mat"], threshold=0.9)
    result = run(c, "the cat sat on the mat", Case(id="x", expected="ignored"))
    assert result.score == pytest.approx(1.0)
    assert result.passed is None  # decided by the scorecard from threshold


def test_bleu_without_expected_is_an_error_result():
    result = run(crit("bleu"), "x", Case(id="q7"))
    assert (result.score, result.passed) == (0.0, False)
    assert result.error.startswith("case 'q7' has no expected value")
    empty = run(crit("bleu"), "x", Case(id="q8", expected=[]))
    assert "empty list" in empty.error


def test_bleu_non_string_expected_compared_as_text():
    assert run(crit("bleu"), "42", Case(id="a", expected=42)).score == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"max_n": 0}, "max_n"),
        ({"max_n": "4"}, "max_n"),
        ({"max_n": True}, "max_n"),
        ({"smoothing": "method1"}, "smoothing"),
        ({"smoothing": "exp", "smooth_value": 0.1}, "smooth_value"),
        ({"smoothing": "floor", "smooth_value": 0}, "smooth_value"),
        ({"smoothing": "add-k", "smooth_value": "1"}, "smooth_value"),
        ({"effective_order": "yes"}, "effective_order"),
        ({"lowercase": 1}, "lowercase"),
        ({"keep_punctuation": None}, "keep_punctuation"),
        ({"reference": []}, "reference"),
        ({"reference": 3}, "reference"),
        ({"reference": ["a", 1]}, "reference"),
    ],
)
def test_bleu_bad_options_are_config_errors(options, option):
    err = build_error(crit("bleu", **options))
    assert err.where == f"scorecard[0].{option}"
    assert err.file == FILE
    assert err.fix


def test_bleu_smooth_value_is_used():
    hyp, refs = H4
    low = run(crit("bleu", smoothing="floor", smooth_value=0.01), hyp, expect(refs)).score
    default = run(crit("bleu", smoothing="floor"), hyp, expect(refs)).score
    assert 0 < low < default


# rouge-score 0.1.2: rouge_scorer.RougeScorer(["rougeL"]).score(target, prediction)["rougeL"]
# (default tokeniser, no stemmer) -> precision, recall, fmeasure
ROUGE = [
    (
        "The cat sat on the mat.",
        "The cat is sitting on the mat.",
        0.8333333333333334,
        0.7142857142857143,
        0.7692307692307692,
    ),
    (
        "Paris is the capital of France",
        "The capital of France is Paris.",
        0.6666666666666666,
        0.6666666666666666,
        0.6666666666666666,
    ),
    (
        "police killed the gunman",
        "the gunman was shot down by police",
        0.5,
        0.2857142857142857,
        0.36363636363636365,
    ),
]


@pytest.mark.parametrize(("prediction", "target", "precision", "recall", "fmeasure"), ROUGE)
def test_rouge_l_agrees_with_rouge_score(prediction, target, precision, recall, fmeasure):
    result = run(crit("rouge-l"), prediction, expect(target))
    assert result.score == pytest.approx(fmeasure, rel=1e-12)
    assert result.details["precision"] == pytest.approx(precision, rel=1e-12)
    assert result.details["recall"] == pytest.approx(recall, rel=1e-12)


def test_rouge_l_multiple_references_take_the_best():
    # rouge-score 0.1.2: RougeScorer(["rougeL"]).score_multi(
    #     ["Paris is France's capital city.", "The capital of France is Paris."],
    #     "Paris is the capital of France")["rougeL"].fmeasure == 0.6666666666666666
    refs = ["Paris is France's capital city.", "The capital of France is Paris."]
    result = run(crit("rouge-l"), "Paris is the capital of France", expect(refs))
    assert result.score == pytest.approx(0.6666666666666666, rel=1e-12)
    assert result.details["reference"] == 1
    assert result.details["lcs"] == 4


def test_rouge_l_case_and_punctuation_options_agree_with_rouge_score_custom_tokenizer():
    # rouge-score 0.1.2: RougeScorer(["rougeL"], tokenizer=T()) where T().tokenize(text) is
    # tok(text) (case and punctuation kept); .score(target, prediction)["rougeL"].fmeasure
    c = crit("rouge-l", tokenizer="unicode", lowercase=False, keep_punctuation=True)
    result = run(c, "The cat sat on the mat.", expect("The cat is sitting on the mat."))
    assert result.score == pytest.approx(0.7999999999999999, rel=1e-12)
    assert run(c, "Hello, World!", expect("hello world")).score == 0.0
    assert run(crit("rouge-l"), "Hello, World!", expect("hello world")).score == 1.0


def test_rouge_l_beta_weights_recall():
    # P = 2/4, R = 2/7: F_beta = (1 + b^2) P R / (R + b^2 P); with beta 2 that is 5/16.
    c = crit("rouge-l", beta=2)
    result = run(c, "police killed the gunman", expect("the gunman was shot down by police"))
    assert result.score == pytest.approx(5 / 16)


def test_rouge_l_empty_and_identical():
    assert run(crit("rouge-l"), "", expect("a b")).score == 0.0
    assert run(crit("rouge-l"), "a b", expect("")).score == 0.0
    assert run(crit("rouge-l"), "!!!", expect("a b")).score == 0.0  # no words at all
    assert run(crit("rouge-l"), "A b.", expect("a B")).score == 1.0


def test_rouge_l_reference_option():
    c = crit("rouge-l", reference="the cat sat")
    assert run(c, "the cat sat", Case(id="a")).score == 1.0


@pytest.mark.parametrize("beta", [0, -1, "1", True, float("nan")])
def test_rouge_l_bad_beta_is_a_config_error(beta):
    assert build_error(crit("rouge-l", beta=beta)).where == "scorecard[0].beta"


def test_lcs_length_and_rouge_l_helper():
    assert lcs_length("abcbdab", "bdcaba") == 4
    assert lcs_length([], ["a"]) == 0
    assert lcs_length(["a", "b"], ["a", "b"]) == 2
    assert rouge_l(["a"], []) == (0.0, 0.0, 0.0, 0)


EMBEDDER = """
CALLS = []


def letters(texts):
    '''A toy embedder: counts of the letters a-z (deterministic, no model).'''
    CALLS.append(list(texts))
    return [[t.lower().count(chr(c)) for c in range(ord("a"), ord("z") + 1)] for t in texts]


def polar(texts):
    return [[1.0, 0.0] if t == "yes" else [-1.0, 0.0] for t in texts]


def boom(texts):
    raise RuntimeError("model not loaded")


def too_few(texts):
    return [[1.0]]


def not_numbers(texts):
    return [["x"] for _ in texts]


def ragged(texts):
    return [[1.0] * (i + 1) for i, _ in enumerate(texts)]


def not_a_list(texts):
    return 3


def rounding(texts):
    # the cosine of this vector with itself computes to 1.0000000000000002
    return [[0.02834747652200631, 0.8357651039198697, 0.43276706790505337] for _ in texts]


def empty_vectors(texts):
    return [[] for _ in texts]


def nan_vectors(texts):
    return [[float("nan"), 1.0] for _ in texts]
"""


@pytest.fixture
def embed_module(tmp_path: Path):
    """The toy embedders, importable as ``module:function`` with ``tmp_path`` as root."""
    name = f"embed_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(EMBEDDER)
    yield name
    sys.modules.pop(name, None)


def test_semantic_cosine_of_toy_embeddings(tmp_path: Path, embed_module: str):
    c = crit("semantic", embedder=f"{embed_module}:letters")
    same = run(c, "abc", expect("cab"), root=tmp_path)
    assert same.score == pytest.approx(1.0)
    assert same.error is None
    apart = run(c, "ab", expect("cd"), root=tmp_path)
    assert apart.score == 0.0
    assert apart.details == {"cosine": 0.0}
    # (2, 1) . (1, 1) / (sqrt 5 * sqrt 2)
    near = run(c, "aab", expect("ab"), root=tmp_path)
    assert near.score == pytest.approx(3 / math.sqrt(10))


def test_semantic_file_path_embedder(tmp_path: Path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "emb.py").write_text(EMBEDDER)
    c = crit("semantic", embedder="models/emb.py:letters")
    assert run(c, "abc", expect("abc"), root=tmp_path).score == pytest.approx(1.0)


def test_semantic_negative_cosine_is_clamped_to_zero(tmp_path: Path, embed_module: str):
    c = crit("semantic", embedder=f"{embed_module}:polar")
    result = run(c, "no", expect("yes"), root=tmp_path)
    assert result.score == 0.0
    assert result.details == {"cosine": -1.0}
    assert run(c, "yes", expect("yes"), root=tmp_path).score == 1.0


def test_semantic_caches_reference_embeddings(tmp_path: Path, embed_module: str):
    fn = build_scorer(crit("semantic", embedder=f"{embed_module}:letters"), tmp_path, FILE)
    calls = sys.modules[embed_module].CALLS
    case = expect("the reference")
    fn("first answer", case)
    fn("second answer", case)
    fn("third", expect(["the reference", "another one", "another one"]))
    assert calls == [
        ["first answer", "the reference"],
        ["second answer"],
        ["third", "another one"],
    ]


def test_semantic_multiple_references_take_the_best(tmp_path: Path, embed_module: str):
    c = crit("semantic", embedder=f"{embed_module}:letters")
    result = run(c, "abc", expect(["xyz", "abc"]), root=tmp_path)
    assert result.score == pytest.approx(1.0)
    assert result.details["reference"] == 1


def test_semantic_reference_option_and_zero_vector(tmp_path: Path, embed_module: str):
    c = crit("semantic", embedder=f"{embed_module}:letters", reference="abc")
    assert run(c, "cba", Case(id="a"), root=tmp_path).score == pytest.approx(1.0)
    zero = run(c, "123", Case(id="a"), root=tmp_path)  # no letters: a zero vector
    assert (zero.score, zero.error) == (0.0, None)


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("boom", "raised RuntimeError: model not loaded"),
        ("too_few", "returned 1 vectors for 2 texts"),
        ("not_numbers", "vector 0 is not a non-empty list of finite numbers"),
        ("ragged", "vectors differ in length (1 for the output, 2 for the reference)"),
        ("not_a_list", "returned int, not a list of vectors"),
    ],
)
def test_semantic_embedder_failures_are_error_results(
    tmp_path: Path, embed_module: str, function: str, message: str
):
    c = crit("semantic", embedder=f"{embed_module}:{function}")
    result = run(c, "abc", expect("abd"), root=tmp_path)
    assert (result.score, result.passed) == (0.0, False)
    assert result.error == f"embedder {embed_module}:{function}: {message}"


def test_semantic_without_expected_is_an_error_result(tmp_path: Path, embed_module: str):
    c = crit("semantic", embedder=f"{embed_module}:letters")
    assert run(c, "x", Case(id="q7"), root=tmp_path).error.startswith("case 'q7' has no")


def test_semantic_embedder_is_required():
    err = build_error(crit("semantic"))
    assert err.where == "scorecard[0].embedder"
    assert "'embedder' is required" in err.message


@pytest.mark.parametrize(
    ("embedder", "message"),
    [
        ("no_colon", "'embedder' must look like module:function"),
        ("missing.py:f", "python file not found"),
        ("no_such_module_xyz:f", "cannot import module 'no_such_module_xyz'"),
    ],
)
def test_semantic_bad_embedder_is_a_config_error(tmp_path: Path, embedder: str, message: str):
    err = build_error(crit("semantic", embedder=embedder), root=tmp_path)
    assert err.where == "scorecard[0].embedder"
    assert message in err.message
    assert err.file == FILE
    assert "`function" not in (err.fix or "")


def test_semantic_unknown_function_is_a_config_error(tmp_path: Path, embed_module: str):
    err = build_error(crit("semantic", embedder=f"{embed_module}:nope"), root=tmp_path)
    assert err.where == "scorecard[0].embedder"
    assert "has no attribute 'nope'" in err.message
    assert "(texts)" in err.fix


MARKUP = [
    "A-\nB <skipped>C",
    "&quot;x&quot; &amp; &lt;y&gt;",
    "line one\nline two",
    'Hello, World! "Quoted" (3.5) 1,000 & more',
    "no entities here",
]


@pytest.mark.parametrize("text", MARKUP)
def test_tokenize_13a_agrees_with_sacrebleu_on_markup_and_line_breaks(text: str) -> None:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    reference = Tokenizer13a()
    assert tokenize_13a(text) == reference(text).split()  # case kept by default
    assert tokenize_13a(text, lowercase=True) == reference(text.lower()).split()


def test_bleu_explicit_13a_tokenizer_and_its_lowercase_option_match_sacrebleu() -> None:
    from sacrebleu.metrics import BLEU

    hyp, ref = "The value is 3.5, not 4.", "the value is 3.5 , or 4 ."
    expected = BLEU(lowercase=True, effective_order=True).sentence_score(hyp, [ref]).score
    result = run(crit("bleu", tokenizer="13a", lowercase=True), hyp, expect(ref))
    assert result.score == pytest.approx(expected / 100)
    assert result.details["hyp_len"] == 8  # "3.5" one token: the unicode tokenizer makes three


@pytest.mark.parametrize(
    ("type_", "option"),
    [("bleu", "keep_punctuation"), ("rouge-l", "lowercase"), ("rouge-l", "keep_punctuation")],
)
def test_unicode_only_options_on_the_reference_tokenizer_are_config_errors(
    type_: str, option: str
) -> None:
    err = build_error(crit(type_, **{option: True}))
    assert err.where == f"scorecard[0].{option}"
    assert f"'{option}' applies to the unicode tokenizer" in err.message
    assert "add `tokenizer: unicode`" in err.fix


def test_sentence_bleu_defaults_are_sacrebleus() -> None:
    from sacrebleu.metrics import BLEU

    hyp, refs = H3[0], H3[1]
    value, _ = sentence_bleu(tokenize_13a(hyp), [tokenize_13a(r) for r in refs])
    expected = BLEU(effective_order=True).sentence_score(hyp, refs).score / 100
    assert value == pytest.approx(expected)
    # a 2-token hypothesis: effective order (the default) scores the orders it has
    assert sentence_bleu(["a", "b"], [["a", "b"]])[0] == pytest.approx(1.0)


def test_sentence_bleu_reference_length_and_brevity_penalty_edges() -> None:
    # hypothesis 3 tokens, references of 1 and 4: 4 is closer (a sum instead of a difference,
    # or no key at all, would pick 1)
    assert sentence_bleu(["a", "b", "c"], [["a"], ["a", "b", "c", "d"]])[1]["ref_len"] == 4
    one = sentence_bleu(["a"], [["a", "b"]])[1]
    assert one["brevity_penalty"] == pytest.approx(math.exp(1 - 2))  # one token still counts
    empty = sentence_bleu([], [["a"]])
    assert empty == (0.0, {"precisions": [], "brevity_penalty": 0.0, "hyp_len": 0, "ref_len": 1})
    assert sentence_bleu(["a"], [])[1]["ref_len"] == 0


def test_sentence_bleu_without_effective_order_stops_at_the_missing_order() -> None:
    value, details = sentence_bleu(["a", "b"], [["a", "b"]], effective_order=False)
    assert value == 0.0
    assert details["precisions"] == [1.0, 1.0]  # unigrams and bigrams, then no trigram


def test_sentence_bleu_unknown_smoothing_names_it() -> None:
    with pytest.raises(ValueError, match="unknown smoothing 'bogus'"):
        sentence_bleu(["a"], [["a"]], smoothing="bogus")


ERRORS = [
    (
        "bleu",
        {"tokenizer": "bogus"},
        "tokenizer",
        "unknown tokenizer 'bogus'",
        "use `tokenizer: 13a` (the default) or `tokenizer: unicode` (any script)",
    ),
    (
        "bleu",
        {"keep_punctuation": True},
        "keep_punctuation",
        "'keep_punctuation' applies to the unicode tokenizer, not '13a'",
        "add `tokenizer: unicode`, or remove `keep_punctuation` to keep the 13a tokenizer",
    ),
    (
        "bleu",
        {"reference": []},
        "reference",
        "'reference' must be a string or a non-empty list of strings, got []",
        "write `reference: text` or `reference: [one, two]`, or remove it to use the case's "
        "expected value",
    ),
    (
        "bleu",
        {"max_n": 0},
        "max_n",
        "'max_n' must be a whole number of at least 1, got 0",
        "write e.g. `max_n: 4` (up to 4-grams, the usual BLEU) or `max_n: 2`",
    ),
    (
        "bleu",
        {"smoothing": "bogus"},
        "smoothing",
        "unknown smoothing 'bogus'",
        "use one of: exp, floor, add-k, none",
    ),
    (
        "bleu",
        {"smoothing": "exp", "smooth_value": 0.1},
        "smooth_value",
        "'smooth_value' has no effect with smoothing 'exp'",
        "use it with `smoothing: floor` or `smoothing: add-k`, or remove it",
    ),
    (
        "bleu",
        {"smoothing": "floor", "smooth_value": "1"},
        "smooth_value",
        "'smooth_value' must be a number above 0, got '1'",
        "write e.g. `smooth_value: 0.1`",
    ),
    (
        "rouge-l",
        {"beta": 0},
        "beta",
        "'beta' must be a number above 0, got 0",
        "write e.g. `beta: 1` (F1) or `beta: 2`",
    ),
    (
        "semantic",
        {},
        "embedder",
        "'embedder' is required",
        "write `embedder: module:function` or `embedder: path/to/file.py:function`, a "
        "function taking a list of strings and returning one vector per string",
    ),
    (
        "semantic",
        {"embedder": "no_colon"},
        "embedder",
        "'embedder' must look like module:function or path/to/file.py:function, got 'no_colon'",
        "write e.g. `embedder: scorers:check_answer` or `embedder: scorers.py:check_answer`",
    ),
]


@pytest.mark.parametrize(("type_", "options", "option", "message", "fix"), ERRORS)
def test_option_errors_name_the_file_the_option_the_problem_and_the_fix(
    tmp_path: Path, type_: str, options: dict[str, object], option: str, message: str, fix: str
) -> None:
    err = build_error(crit(type_, **options), root=tmp_path)
    assert (err.file, err.where) == (FILE, f"scorecard[0].{option}")
    assert err.message == f"criterion 'c' ({type_}): {message}"
    assert err.fix == fix


def test_an_embedder_naming_a_missing_function_is_told_the_embedder_signature(
    tmp_path: Path, embed_module: str
) -> None:
    err = build_error(crit("semantic", embedder=f"{embed_module}:nope"), root=tmp_path)
    assert err.fix == f"define `def nope(texts): ...` in {embed_module}, or fix the name"


def test_bleu_max_n_of_one_is_unigram_precision() -> None:
    result = run(crit("bleu", max_n=1), "a b x", expect("a b c"))
    assert result.score == pytest.approx(2 / 3)
    assert result.details["precisions"] == [pytest.approx(2 / 3)]


def test_bleu_unicode_tokenizer_keeps_punctuation_by_default() -> None:
    unicode = crit("bleu", tokenizer="unicode", max_n=1)
    assert run(unicode, "hello world", expect("hello, world")).details["ref_len"] == 3


@pytest.mark.parametrize("options", [{}, {"tokenizer": "rouge"}])
def test_rouge_l_reference_tokenizer_drops_what_rouge_score_drops(
    options: dict[str, str],
) -> None:
    from rouge_score import rouge_scorer

    hyp, ref = "snake_case cafe costs 3.50", "snake case cafe costs 3 50"
    expected = rouge_scorer.RougeScorer(["rougeL"]).score(ref, hyp)["rougeL"].fmeasure
    assert expected == pytest.approx(1.0)  # rouge-score drops "_" and "."; unicode would not
    assert run(crit("rouge-l", **options), hyp, expect(ref)).score == pytest.approx(expected)


def test_rouge_l_unicode_tokenizer_lowercases_and_drops_punctuation_by_default() -> None:
    result = run(crit("rouge-l", tokenizer="unicode"), "The Cat!", expect("the cat"))
    assert result.score == pytest.approx(1.0)


def test_rouge_l_default_beta_is_f1() -> None:
    # precision 1/2, recall 1/3: F1 = 0.4 (beta 2 would weigh recall: 0.357)
    assert rouge_l(["a", "b"], ["a", "c", "d"])[0] == pytest.approx(0.4)


def test_rouge_l_reports_the_first_best_reference_and_only_among_several() -> None:
    one = run(crit("rouge-l"), "a b c", expect("a b"))
    assert "reference" not in one.details
    # F of "a b c" against: "a x" 0.4, "a b x y" 0.571 (precision 0.667 > "a b x y z"'s F)
    refs = ["a x", "a b x y", "a b x y", "c"]
    assert run(crit("rouge-l"), "a b c", expect(refs)).details["reference"] == 1
    # "c" has the higher precision (1.0 against 0.667) but the lower F: F decides
    assert run(crit("rouge-l"), "a b c", expect(["a b x y", "c"])).details["reference"] == 0
    # "a b" (F 0.8, precision 0.667) beats "a b c x y" (F 0.75): F against F, not precision
    assert run(crit("rouge-l"), "a b c", expect(["a b", "a b c x y"])).details["reference"] == 0


def test_semantic_reports_the_first_best_reference_and_only_among_several(
    tmp_path: Path, embed_module: str
) -> None:
    c = crit("semantic", embedder=f"{embed_module}:letters")
    assert run(c, "ab", expect(["ab", "ab"]), root=tmp_path).details["reference"] == 0
    assert "reference" not in run(c, "ab", expect("ab"), root=tmp_path).details


def test_semantic_cosine_rounding_above_one_is_clamped(tmp_path: Path, embed_module: str) -> None:
    c = crit("semantic", embedder=f"{embed_module}:rounding")
    result = run(c, "x", expect("y"), root=tmp_path)
    assert result.details["cosine"] > 1.0
    assert result.score == 1.0


@pytest.mark.parametrize("embedder", ["empty_vectors", "nan_vectors"])
def test_semantic_empty_or_non_finite_vectors_are_error_results(
    tmp_path: Path, embed_module: str, embedder: str
) -> None:
    result = run(
        crit("semantic", embedder=f"{embed_module}:{embedder}"), "x", expect("y"), root=tmp_path
    )
    assert result.error == (
        f"embedder {embed_module}:{embedder}: vector 0 is not a non-empty list of finite numbers"
    )


WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "Paris",
    "3.5",
    "don't",
    "e-mail",
    "snake_case",
    "x,y",
    "(a)",
    "U.S.",
    "10-4",
    "naïve",
    "καλημέρα",
    "日本語",
    "&amp;",
    "end.",
    "Hello,",
]


def sentences(rng: random.Random, n: int, low: int = 1, high: int = 12) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) for _ in range(n)]


def test_bleu_matches_sacrebleu_sentence_bleu():
    import sacrebleu

    from tests.scoring.test_base import crit, run
    from tests.scoring.test_similarity import expect

    rng = random.Random(13)
    for hyp in sentences(rng, 150):
        refs = sentences(rng, rng.randint(1, 3), 1, 10)
        ours = run(crit("bleu"), hyp, expect(refs)).score
        theirs = sacrebleu.sentence_bleu(hyp, refs).score / 100
        assert ours == pytest.approx(theirs, abs=1e-12), (hyp, refs)
    for smoothing in ("floor", "add-k", "none"):
        for hyp in sentences(rng, 40, 1, 5):
            refs = sentences(rng, 1, 1, 6)
            ours = run(crit("bleu", smoothing=smoothing), hyp, expect(refs)).score
            theirs = sacrebleu.sentence_bleu(hyp, refs, smooth_method=smoothing).score / 100
            assert ours == pytest.approx(theirs, abs=1e-12), (smoothing, hyp, refs)


def test_rouge_l_matches_rouge_score():
    from rouge_score import rouge_scorer

    from tests.scoring.test_base import crit, run
    from tests.scoring.test_similarity import expect

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    rng = random.Random(17)
    pairs = [(a, b) for a, b in zip(sentences(rng, 150), sentences(rng, 150), strict=True)]
    pairs += [("snake_case variable name", "snake case variable name"), ("καλημέρα κόσμε",) * 2]
    for prediction, target in pairs:
        ours = run(crit("rouge-l"), prediction, expect(target)).score
        theirs = scorer.score(target, prediction)["rougeL"].fmeasure
        assert ours == pytest.approx(theirs, abs=1e-12), (prediction, target)
    assert (
        run(crit("rouge-l"), "snake_case variable name", expect("snake case variable name")).score
        == 1.0
    )
    greek = run(crit("rouge-l", tokenizer="unicode"), "καλημέρα κόσμε", expect("καλημέρα κόσμε"))
    assert greek.score == 1.0


def test_an_embedding_model_criterion_gives_the_engine_its_texts_and_scores_its_vectors(
    tmp_path: Path,
) -> None:
    fn = build_scorer(crit("semantic", embedder={"model": "embed"}), tmp_path, FILE)
    case = Case(id="c1", expected=["a cat", "a dog"])
    assert fn.embed_model == "embed"  # type: ignore[attr-defined]
    assert fn.texts("the cat", case) == ["the cat", "a cat", "a dog"]  # type: ignore[attr-defined]
    result = fn.from_vectors(["[1, 0]", "[0, 1]", "[1, 1]"])  # type: ignore[attr-defined]
    assert result.score == pytest.approx(1 / math.sqrt(2))
    assert result.details == {"cosine": pytest.approx(1 / math.sqrt(2)), "reference": 1}
    # without the engine there is nothing to embed with: the criterion errs, never passes
    assert fn("the cat", case).error == "embedder model 'embed' is called by the engine"


def test_an_embedding_model_criterion_without_a_reference_sends_nothing(tmp_path: Path) -> None:
    fn = build_scorer(crit("semantic", embedder={"model": "embed"}), tmp_path, FILE)
    texts = fn.texts("out", Case(id="c1"))  # type: ignore[attr-defined]
    assert texts.error is not None and "expected" in texts.error


@pytest.mark.parametrize(
    ("vectors", "error"),
    [
        (
            ["[1, 0]", "[1, 0, 0]"],
            "vectors differ in length (2 for the output, 3 for the reference)",
        ),
        (["[1, 0]", "not json"], "vector 1 is not a non-empty list of finite numbers"),
        (["[]", "[1]"], "vector 0 is not a non-empty list of finite numbers"),
    ],
)
def test_vectors_that_cannot_be_compared_are_the_criterions_error(
    tmp_path: Path, vectors: list[str], error: str
) -> None:
    fn = build_scorer(crit("semantic", embedder={"model": "embed"}), tmp_path, FILE)
    result = fn.from_vectors(vectors)  # type: ignore[attr-defined]
    assert (result.score, result.passed) == (0.0, False)
    assert result.error == f"embedder model 'embed': {error}"
