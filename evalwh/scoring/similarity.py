"""Similarity scorers: ``bleu``, ``rouge-l`` and ``semantic``.

All three compare the output with a reference: the ``reference`` option (a string or a list of
strings) or else the case's ``expected`` (a string or a list; other values are compared as
text). The score is in [0, 1]; the criterion's ``threshold`` decides pass or fail.

Tokenisers (option ``tokenizer``)
    By default each scorer tokenises as its reference implementation does, so its number is
    the one that implementation prints: ``bleu`` uses sacrebleu's ``13a`` (:func:`tokenize_13a`,
    mteval-v13a: punctuation split off, except ``.`` and ``,`` inside numbers and ``-`` not
    after a digit), ``rouge-l`` uses rouge-score's default (:func:`tokenize_rouge`: lower-case,
    then runs of ``[a-z0-9]``; everything else, including ``_`` and every non-ASCII letter, is
    dropped; no stemming). ``tokenizer: unicode`` (:func:`tokenize`) is for text in other
    scripts: words are runs of letters, digits and ``_`` in any script (regex ``\\w+``) and
    every other non-space character is a token of its own, e.g. ``"Don't stop, 3.5!"`` ->
    ``Don ' t stop , 3 . 5 !``; with it, ``lowercase`` and ``keep_punctuation`` (keep the
    punctuation tokens) apply. ``bleu`` also takes ``lowercase`` with ``13a`` (sacrebleu's
    ``lowercase=True``).

``bleu``
    Sentence BLEU as sacrebleu's ``sentence_bleu`` computes it (scaled to [0, 1]): clipped
    n-gram precisions up to ``max_n`` (default 4; a multi-reference case clips against the
    largest count in any reference), geometric mean, times the brevity penalty
    ``exp(1 - r/c)`` when the output (``c`` tokens) is shorter than the reference whose length
    is closest to it (``r``; ties go to the shorter one). Options:

    - ``smoothing``: ``exp`` (default; NIST geometric smoothing, sacrebleu's sentence default
      and nltk's ``method3``), ``floor`` (a zero n-gram count becomes ``smooth_value``,
      default 0.1: nltk's ``method1``), ``add-k`` (add ``smooth_value``, default 1, to the
      matches and the total of every order above 1: nltk's ``method2``), ``none``;
    - ``effective_order`` (default true, as in sacrebleu's ``sentence_bleu``): an output too
      short to have n-grams of some order is scored on the orders it has; when false such an
      output scores 0;
    - ``tokenizer`` (``13a``, default, or ``unicode``), ``lowercase`` (default false),
      ``keep_punctuation`` (``unicode`` only, default true).

    An output without a single matching token scores 0. ``add-k`` smooths every order above 1,
    also those the output is too short for (precision k/k = 1), as sacrebleu does.

``rouge-l``
    The ROUGE-L F-measure of rouge-score's ``RougeScorer(["rougeL"])``: precision ``P`` =
    LCS / output tokens, recall ``R`` = LCS / reference tokens (LCS: the longest common token
    subsequence), ``F = (1 + beta^2) P R / (R + beta^2 P)``. ``beta`` (default 1) > 1 favours
    recall. With several references the best F counts. ``tokenizer``: ``rouge`` (default,
    rouge-score's) or ``unicode`` (then ``lowercase`` defaults to true and ``keep_punctuation``
    to false).

``semantic``
    Cosine similarity between embeddings of the output and the reference. ``embedder:
    {model: ID}`` names a model of ``models:`` with an embeddings endpoint (openai,
    openai-compatible, google): the engine embeds each text through it
    (evalwh.engine.embed: cached, costed, under the cost cap) and scores the vectors with the
    same cosine as below. Else the embeddings come from your own
    embedding function: ``embedder`` is ``module:function`` or ``path/to/file.py:function``
    (resolved like the ``python`` scorer's ``function``), called with a list of strings and
    returning one vector (a sequence of numbers) per string. Any model will do - e.g. a
    function wrapping ``sentence_transformers.SentenceTransformer(...).encode`` - and evalwh
    itself needs no extra package. Reference embeddings are cached per text for the life of
    the scorer (one run). The cosine, in [-1, 1], is clamped to [0, 1]: opposite or unrelated
    meanings both score 0. With several references the best cosine counts. A zero vector
    scores 0.

Empty output or an empty reference scores 0 in ``bleu`` and ``rouge-l``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.base import ScoreResult, ScorerFn, option_error, option_where
from evalwh.scoring.builtin import (
    _as_strings,
    _bool_option,
    _empty_expected,
    _no_expected,
    _with_prepare,
)
from evalwh.scoring.userfunc import load_function
from evalwh.scoring.values import CaseValues

SMOOTHING = ("exp", "floor", "add-k", "none")
SMOOTH_DEFAULTS = {"floor": 0.1, "add-k": 1.0}

_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"\w+")
_ROUGE_TOKEN = re.compile(r"[a-z0-9]+")
# sacrebleu's TokenizerRegexp (the post-processing of 13a), rule for rule
_13A = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),  # symbols
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period and comma unless after a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # ... unless before a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # dash after a digit
)


def tokenize(text: str, *, lowercase: bool = False, keep_punctuation: bool = True) -> list[str]:
    """The ``unicode`` tokeniser: words (``\\w+``) and, with ``keep_punctuation``, single
    punctuation characters."""
    if lowercase:
        text = text.lower()
    return (_TOKEN if keep_punctuation else _WORD).findall(text)


def tokenize_13a(text: str, *, lowercase: bool = False) -> list[str]:
    """sacrebleu's default ``13a`` tokeniser (mteval-v13a), as ``sentence_bleu`` applies it."""
    if lowercase:
        text = text.lower()
    text = text.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in text:
        text = text.replace("&quot;", '"').replace("&amp;", "&")
        text = text.replace("&lt;", "<").replace("&gt;", ">")
    text = f" {text} "
    for pattern, repl in _13A:
        text = pattern.sub(repl, text)
    return text.split()


def tokenize_rouge(text: str) -> list[str]:
    """rouge-score's default tokeniser (no stemming): lower-case, then the runs of
    ``[a-z0-9]`` (everything else separates tokens and is dropped)."""
    return _ROUGE_TOKEN.findall(text.lower())


# --- options -----------------------------------------------------------------------------


def _number(criterion: Criterion, file: str, name: str, default: float, fix: str) -> float:
    value = criterion.options.get(name, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise option_error(
            criterion, file, name, f"'{name}' must be a number above 0, got {value!r}", fix
        )
    return float(value)


def _fixed_references(criterion: Criterion, file: str) -> CaseValues | None:
    """The ``reference`` option's strings for each case (templates rendered per case:
    evalwh.scoring.values), or None when unset."""
    value = criterion.options.get("reference")
    if value is None:
        return None
    if isinstance(value, str):
        return CaseValues(criterion, file, "reference", [value])
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return CaseValues(criterion, file, "reference", list(value))
    raise option_error(
        criterion,
        file,
        "reference",
        f"'reference' must be a string or a non-empty list of strings, got {value!r}",
        "write `reference: text` or `reference: [one, two]`, or remove it to use the "
        "case's expected value",
    )


def _references(fixed: CaseValues | None, case: Case) -> list[str] | ScoreResult:
    """The references to compare against, or the error result when the case has none."""
    if fixed is not None:
        return fixed(case)
    if case.expected is None:
        return _no_expected(case)
    refs = _as_strings(case.expected)
    return refs if refs else _empty_expected(case)


def _tokenizer(
    criterion: Criterion, file: str, *, reference: str, lowercase: bool, keep_punctuation: bool
) -> Callable[[str], list[str]]:
    """The criterion's tokeniser: ``reference`` (``13a`` for bleu, ``rouge`` for rouge-l: the
    reference implementation's own, the default) or ``unicode`` (with ``lowercase`` and
    ``keep_punctuation``, default as given). bleu's ``13a`` also takes ``lowercase``."""
    name = criterion.options.get("tokenizer", reference)
    if name not in (reference, "unicode"):
        raise option_error(
            criterion,
            file,
            "tokenizer",
            f"unknown tokenizer {name!r}",
            f"use `tokenizer: {reference}` (the default) or `tokenizer: unicode` (any script)",
        )
    lower = _bool_option(criterion, file, "lowercase", lowercase)
    keep = _bool_option(criterion, file, "keep_punctuation", keep_punctuation)
    fixed = ("keep_punctuation",) if reference == "13a" else ("lowercase", "keep_punctuation")
    for option in fixed:
        if name != "unicode" and option in criterion.options:
            raise option_error(
                criterion,
                file,
                option,
                f"'{option}' applies to the unicode tokenizer, not {name!r}",
                f"add `tokenizer: unicode`, or remove `{option}` to keep the {name} tokenizer",
            )
    if name == "13a":
        return lambda text: tokenize_13a(text, lowercase=lower)
    if name == "rouge":
        return tokenize_rouge
    return lambda text: tokenize(text, lowercase=lower, keep_punctuation=keep)


# --- bleu --------------------------------------------------------------------------------


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _closest_length(hyp_len: int, ref_lens: list[int]) -> int:
    """The reference length closest to ``hyp_len``; ties go to the shorter reference."""
    return min(ref_lens, key=lambda r: (abs(hyp_len - r), r))


def sentence_bleu(
    hypothesis: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    max_n: int = 4,
    smoothing: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = True,
) -> tuple[float, dict[str, Any]]:
    """BLEU in [0, 1] of a tokenised hypothesis against tokenised references, and details."""
    if smoothing not in SMOOTHING:
        raise ValueError(f"unknown smoothing {smoothing!r}")
    if smooth_value is None:
        smooth_value = SMOOTH_DEFAULTS.get(smoothing, 0.0)
    hyp_len = len(hypothesis)
    ref_len = _closest_length(hyp_len, [len(r) for r in references]) if references else 0
    bp = 1.0  # brevity penalty
    if hyp_len < ref_len:
        bp = math.exp(1 - ref_len / hyp_len) if hyp_len > 0 else 0.0
    correct: list[int] = []
    total: list[int] = []
    for n in range(1, max_n + 1):
        hyp_counts = _ngrams(hypothesis, n)
        best: Counter[tuple[str, ...]] = Counter()
        for ref in references:
            best |= _ngrams(ref, n)  # union keeps the largest count of each n-gram
        correct.append(sum(min(c, best[g]) for g, c in hyp_counts.items()))
        total.append(max(hyp_len - n + 1, 0))
    details: dict[str, Any] = {
        "precisions": [],
        "brevity_penalty": bp,
        "hyp_len": hyp_len,
        "ref_len": ref_len,
    }
    if not any(correct):
        return 0.0, details
    precisions: list[float] = []
    exp_factor = 1.0
    for n in range(1, max_n + 1):
        matches, count = float(correct[n - 1]), float(total[n - 1])
        if smoothing == "add-k" and n > 1:  # as sacrebleu: also orders the output lacks
            matches += smooth_value
            count += smooth_value
        if count == 0:
            if effective_order:
                break
            details["precisions"] = precisions
            return 0.0, details
        if matches > 0:
            precisions.append(matches / count)
        elif smoothing == "exp":
            exp_factor *= 2
            precisions.append(1.0 / (exp_factor * count))
        elif smoothing == "floor":
            precisions.append(smooth_value / count)
        else:  # none
            precisions.append(0.0)
    details["precisions"] = precisions
    if min(precisions) <= 0:
        return 0.0, details
    score = bp * math.exp(sum(math.log(p) for p in precisions) / len(precisions))
    return min(score, 1.0), details


def bleu(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """Sentence BLEU against the reference(s); see the module docstring for the options."""
    opts = criterion.options
    max_n = opts.get("max_n", 4)
    if isinstance(max_n, bool) or not isinstance(max_n, int) or max_n < 1:
        raise option_error(
            criterion,
            file,
            "max_n",
            f"'max_n' must be a whole number of at least 1, got {max_n!r}",
            "write e.g. `max_n: 4` (up to 4-grams, the usual BLEU) or `max_n: 2`",
        )
    smoothing = opts.get("smoothing", "exp")
    if smoothing not in SMOOTHING:
        raise option_error(
            criterion,
            file,
            "smoothing",
            f"unknown smoothing {smoothing!r}",
            f"use one of: {', '.join(SMOOTHING)}",
        )
    smooth_value: float | None = None
    if "smooth_value" in opts:
        if smoothing not in SMOOTH_DEFAULTS:
            raise option_error(
                criterion,
                file,
                "smooth_value",
                f"'smooth_value' has no effect with smoothing {smoothing!r}",
                "use it with `smoothing: floor` or `smoothing: add-k`, or remove it",
            )
        smooth_value = _number(
            criterion, file, "smooth_value", 0.0, "write e.g. `smooth_value: 0.1`"
        )
    effective_order = _bool_option(criterion, file, "effective_order", True)
    tok = _tokenizer(criterion, file, reference="13a", lowercase=False, keep_punctuation=True)
    references = _reference_tokens(criterion, file, tok)

    def score(output: str, case: Case) -> ScoreResult:
        ref_tokens = references(case)
        if isinstance(ref_tokens, ScoreResult):
            return ref_tokens
        value, details = sentence_bleu(
            tok(output),
            ref_tokens,
            max_n=max_n,
            smoothing=smoothing,
            smooth_value=smooth_value,
            effective_order=effective_order,
        )
        return ScoreResult(value, details=details)

    return _with_prepare(score, references.prepare)  # type: ignore[attr-defined]


# --- rouge-l -----------------------------------------------------------------------------


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (O(len(a) * len(b)))."""
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l(
    hypothesis: Sequence[str], reference: Sequence[str], beta: float = 1.0
) -> tuple[float, float, float, int]:
    """(F-measure, precision, recall, LCS length) of tokenised texts."""
    if not hypothesis or not reference:
        return 0.0, 0.0, 0.0, 0
    lcs = lcs_length(hypothesis, reference)
    precision = lcs / len(hypothesis)
    recall = lcs / len(reference)
    if precision + recall <= 0:
        return 0.0, precision, recall, lcs
    b2 = beta * beta
    return (1 + b2) * precision * recall / (recall + b2 * precision), precision, recall, lcs


def _reference_tokens(
    criterion: Criterion, file: str, tok: Callable[[str], list[str]]
) -> Callable[[Case], list[list[str]] | ScoreResult]:
    """The tokenised references of a case: the criterion's ``reference`` (tokenised once) or
    the case's expected value(s); a ScoreResult when the case has none."""
    fixed = _fixed_references(criterion, file)
    fixed_tokens = None if fixed is None or fixed.fixed is None else [tok(r) for r in fixed.fixed]

    def references(case: Case) -> list[list[str]] | ScoreResult:
        if fixed_tokens is not None:
            return fixed_tokens
        refs = _references(fixed, case)
        return refs if isinstance(refs, ScoreResult) else [tok(r) for r in refs]

    references.prepare = fixed  # type: ignore[attr-defined]
    return references


def rouge_l_scorer(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """ROUGE-L F-measure against the reference(s), the best one counting."""
    beta = _number(criterion, file, "beta", 1.0, "write e.g. `beta: 1` (F1) or `beta: 2`")
    tok = _tokenizer(criterion, file, reference="rouge", lowercase=True, keep_punctuation=False)
    references = _reference_tokens(criterion, file, tok)

    def score(output: str, case: Case) -> ScoreResult:
        ref_tokens = references(case)
        if isinstance(ref_tokens, ScoreResult):
            return ref_tokens
        hyp = tok(output)
        best: tuple[float, float, float, int] | None = None
        best_index = 0
        for i, ref in enumerate(ref_tokens):
            result = rouge_l(hyp, ref, beta)
            if best is None or result[0] > best[0]:
                best, best_index = result, i
        assert best is not None
        f, precision, recall, lcs = best
        details: dict[str, Any] = {"precision": precision, "recall": recall, "lcs": lcs}
        if len(ref_tokens) > 1:
            details["reference"] = best_index
        return ScoreResult(f, details=details)

    return _with_prepare(score, references.prepare)  # type: ignore[attr-defined]


# --- semantic ----------------------------------------------------------------------------


def _load_embedder(criterion: Criterion, root: Path, file: str) -> tuple[Callable[..., Any], str]:
    """The ``embedder`` function, loaded by the python scorer's loader."""
    spec = criterion.options.get("embedder")
    if spec is None:
        raise option_error(
            criterion,
            file,
            "embedder",
            "'embedder' is required",
            "write `embedder: module:function` or `embedder: path/to/file.py:function`, a "
            "function taking a list of strings and returning one vector per string",
        )
    proxy = dataclasses.replace(criterion, options={"function": spec})
    try:
        return load_function(proxy, root, file)
    except ConfigError as exc:
        # Same checks and messages as the python scorer, about the `embedder` option.
        def rename(text: str | None) -> str | None:
            if text is None:
                return None
            text = text.replace("'function'", "'embedder'").replace("`function", "`embedder")
            return text.replace("(output, case)", "(texts)")

        raise ConfigError(
            rename(exc.message) or "",
            file=exc.file,
            where=option_where(criterion, "embedder"),
            fix=rename(exc.fix),
        ) from None


def _vector(value: Any) -> tuple[tuple[float, ...], float] | None:
    """A vector as floats and its norm; None if it is not a sequence of finite numbers."""
    try:
        floats = tuple(float(x) for x in value)
    except (TypeError, ValueError):
        return None
    if not floats or not all(math.isfinite(x) for x in floats):
        return None
    return floats, math.sqrt(sum(x * x for x in floats))


def cosine_result(
    output: tuple[tuple[float, ...], float],
    references: Sequence[tuple[tuple[float, ...], float]],
    failed: Callable[[str], ScoreResult],
) -> ScoreResult:
    """The best cosine of the output's vector (and norm) with the references', clamped to
    [0, 1]; ``failed(message)`` when the vectors differ in length."""
    out_vec, out_norm = output
    best: float | None = None
    best_index = 0
    for i, (ref_vec, ref_norm) in enumerate(references):
        if len(ref_vec) != len(out_vec):
            return failed(
                f"vectors differ in length ({len(out_vec)} for the output, "
                f"{len(ref_vec)} for the reference)"
            )
        if out_norm == 0 or ref_norm == 0:
            cosine = 0.0
        else:
            cosine = sum(x * y for x, y in zip(out_vec, ref_vec, strict=True)) / (
                out_norm * ref_norm
            )
        if best is None or cosine > best:
            best, best_index = cosine, i
    assert best is not None
    details: dict[str, Any] = {"cosine": best}
    if len(references) > 1:
        details["reference"] = best_index
    return ScoreResult(min(max(best, 0.0), 1.0), details=details)


def semantic(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """Cosine similarity of embeddings (clamped to [0, 1]) from the user's ``embedder``, or
    from a model's embeddings endpoint (``embedder: {model: ID}``, called by the engine)."""
    fixed = _fixed_references(criterion, file)
    if isinstance(criterion.options.get("embedder"), dict):
        return _model_embedded(criterion, fixed)
    fn, name = _load_embedder(criterion, Path(root).resolve(), file)
    cache: dict[str, tuple[tuple[float, ...], float]] = {}

    def failed(message: str) -> ScoreResult:
        return ScoreResult(0.0, passed=False, error=f"embedder {name}: {message}")

    def score(output: str, case: Case) -> ScoreResult:
        refs = _references(fixed, case)
        if isinstance(refs, ScoreResult):
            return refs
        missing = list(dict.fromkeys(r for r in refs if r not in cache))
        texts = [output, *missing]
        try:
            raw = fn(texts)
        except Exception as exc:
            return failed(f"raised {type(exc).__name__}: {exc}")
        try:
            raw = list(raw)
        except TypeError:
            return failed(f"returned {type(raw).__name__}, not a list of vectors")
        if len(raw) != len(texts):
            return failed(f"returned {len(raw)} vectors for {len(texts)} texts")
        vectors = []
        for i, item in enumerate(raw):
            vector = _vector(item)
            if vector is None:
                return failed(f"vector {i} is not a non-empty list of finite numbers")
            vectors.append(vector)
        for text, vector in zip(missing, vectors[1:], strict=True):
            cache[text] = vector
        return cosine_result(vectors[0], [cache[ref] for ref in refs], failed)

    return _with_prepare(score, fixed)


def _model_embedded(criterion: Criterion, fixed: CaseValues | None) -> ScorerFn:
    """``embedder: {model: ID}``: the engine embeds the output and the references through
    the model's endpoint (evalwh.engine.embed) and scores the vectors with ``from_vectors``;
    called without the engine, the criterion errs."""
    model = str(criterion.options["embedder"]["model"])

    def not_here(output: str, case: Case) -> ScoreResult:
        return ScoreResult(0.0, error=f"embedder model '{model}' is called by the engine")

    def texts(output: str, case: Case) -> list[str] | ScoreResult:
        """The texts to embed, the output first; a ScoreResult when the case has no reference."""
        refs = _references(fixed, case)
        return refs if isinstance(refs, ScoreResult) else [output, *refs]

    def from_vectors(vectors: Sequence[str]) -> ScoreResult:
        """The score of the texts' vectors as the endpoint returned them (JSON text)."""
        parsed = []
        for i, text in enumerate(vectors):
            try:
                vector = _vector(json.loads(text))
            except (ValueError, TypeError):
                vector = None
            if vector is None:
                return ScoreResult(
                    0.0,
                    passed=False,
                    error=f"embedder model '{model}': vector {i} is not a non-empty list of "
                    "finite numbers",
                )
            parsed.append(vector)

        def failed(message: str) -> ScoreResult:
            return ScoreResult(0.0, passed=False, error=f"embedder model '{model}': {message}")

        return cosine_result(parsed[0], parsed[1:], failed)

    not_here.embed_model = model  # type: ignore[attr-defined]
    not_here.texts = texts  # type: ignore[attr-defined]
    not_here.from_vectors = from_vectors  # type: ignore[attr-defined]
    return _with_prepare(not_here, fixed)
