"""The numpy TF-IDF and logistic regression behind label suggestion (retrieval/linear.py).

Where scikit-learn is installed (a dev install, through sentence-transformers), its results are
the reference: the features must match exactly and the probabilities to the optimum's precision.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from resolveflow.retrieval.linear import TfidfWords, fit_logistic

WORDS = [
    *("crash", "traceback", "error", "load", "dataset", "split", "stream", "parquet", "arrow"),
    *("cache", "memory", "slow", "docs", "typo", "readme", "feature", "request", "add"),
    *("support", "please", "audio", "image", "column", "map", "filter", "hub", "token"),
]


def _corpus(seed: int, n: int = 300) -> tuple[list[str], np.ndarray]:
    """Texts where the first third of the vocabulary leans to the positive class, noisily."""
    rng = np.random.default_rng(seed)
    texts, target = [], []
    for _ in range(n):
        positive = bool(rng.random() < 0.3)  # unbalanced, as real labels are
        pool = WORDS[:10] if positive else WORDS[10:]
        words = list(rng.choice(pool, size=6)) + list(rng.choice(WORDS, size=4))
        words += [f"rare{rng.integers(0, 10_000)}"]  # appears once: below min_df
        texts.append(" ".join(words))
        target.append(positive)
    return texts, np.array(target)


def test_features_are_unit_rows_over_words_seen_at_least_twice() -> None:
    texts = ["Crash on load, crash again", "crash when loading", "docs typo", "a b unique"]
    vectorizer = TfidfWords.fit(texts, min_df=2)
    assert set(vectorizer.vocabulary) == {"crash"}  # 'a', 'b' are one letter: not words
    features = vectorizer.transform([*texts, "nothing known here"]).dense()
    assert features.shape == (5, 1)
    assert np.allclose(features[:, 0], [1.0, 1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        TfidfWords.fit(["only once", "each word"], min_df=2)


def test_the_fit_separates_the_classes_and_regularisation_shrinks_it() -> None:
    texts, target = _corpus(1)
    features = TfidfWords.fit(texts).transform(texts)
    strong = fit_logistic(features, target, c=3.0)
    weak = fit_logistic(features, target, c=0.01)
    p_strong, p_weak = strong.probability(features), weak.probability(features)
    accuracy = float(np.mean((p_strong >= 0.5) == target))
    assert accuracy > 0.9
    # balanced weights: the minority class is not drowned out
    assert float(np.mean(p_strong[target] >= 0.5)) > 0.85
    assert np.abs(weak.weights).sum() < np.abs(strong.weights).sum()
    assert np.abs(p_weak - 0.5).max() < np.abs(p_strong - 0.5).max()
    with pytest.raises(ValueError):
        fit_logistic(features, np.ones(len(texts), dtype=bool), c=3.0)


@pytest.mark.parametrize("seed", [2, 3])
def test_agrees_with_scikit_learn(seed: int) -> None:
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    sklearn_linear = pytest.importorskip("sklearn.linear_model")
    texts, target = _corpus(seed)
    ours = TfidfWords.fit(texts)
    reference = sklearn_text.TfidfVectorizer(sublinear_tf=True, min_df=2)
    reference_features = reference.fit_transform(texts)
    assert sorted(ours.vocabulary) == sorted(reference.vocabulary_)
    order = [
        ours.vocabulary[w] for w in sorted(reference.vocabulary_, key=reference.vocabulary_.get)
    ]
    features = ours.transform(texts)
    assert np.allclose(features.dense()[:, order], reference_features.toarray(), atol=1e-12)

    model = fit_logistic(features, target, c=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tight = sklearn_linear.LogisticRegression(
            C=3.0, class_weight="balanced", max_iter=10_000, tol=1e-10
        ).fit(reference_features, target)
    expected = tight.predict_proba(reference_features)[:, 1]
    assert np.abs(model.probability(features) - expected).max() < 1e-3
