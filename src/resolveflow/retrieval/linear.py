"""TF-IDF word features and L2-regularised logistic regression, on numpy alone.

Label suggestion needs exactly these two pieces. They were scikit-learn's ``TfidfVectorizer`` and
``LogisticRegression``, which brought scikit-learn and scipy (194 MB, more than a quarter of a
default install) for a few hundred thousand multiply-adds; this module computes the same
features (the same tokens, ``min_df``, smoothed idf, sublinear tf, unit rows) and fits the same
objective (balanced class weights, unpenalised intercept) to a tighter tolerance, so its
probabilities agree with scikit-learn's to about 1e-3 (tests/core/unit/test_linear.py compares them
where scikit-learn is installed).

The feature matrix stays sparse as three flat arrays (value, row, column per non-zero entry);
the two products a fit needs are ``np.bincount`` sums over them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

# scikit-learn's default token pattern: words of two or more word characters, lowercased.
TOKEN = re.compile(r"(?u)\b\w\w+\b")


@dataclass(frozen=True)
class SparseRows:
    """A sparse matrix as (value, row, column) per non-zero entry."""

    values: Floats
    rows: Ints
    columns: Ints
    shape: tuple[int, int]

    def dot(self, weights: Floats) -> Floats:
        """Matrix times a vector of length ``shape[1]``."""
        products = self.values * weights[self.columns]
        sums = np.bincount(self.rows, weights=products, minlength=self.shape[0])
        return sums.astype(np.float64, copy=False)  # weighted: already float; the stubs say int

    def transpose_dot(self, per_row: Floats) -> Floats:
        """Transposed matrix times a vector of length ``shape[0]``."""
        products = self.values * per_row[self.rows]
        sums = np.bincount(self.columns, weights=products, minlength=self.shape[1])
        return sums.astype(np.float64, copy=False)  # weighted: already float; the stubs say int

    def take(self, rows: Ints) -> SparseRows:
        """The matrix of ``rows`` (distinct row indices), in that order."""
        position = np.full(self.shape[0], -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        keep = position[self.rows] >= 0
        shape = (len(rows), self.shape[1])
        return SparseRows(self.values[keep], position[self.rows[keep]], self.columns[keep], shape)

    def dense(self) -> Floats:
        matrix = np.zeros(self.shape)
        np.add.at(matrix, (self.rows, self.columns), self.values)
        return matrix


class TfidfWords:
    """Word TF-IDF with sublinear tf, smoothed idf and L2-normalised rows."""

    def __init__(self, vocabulary: dict[str, int], idf: Floats) -> None:
        self.vocabulary = vocabulary
        self.idf = idf

    @classmethod
    def fit(cls, texts: Sequence[str], *, min_df: int = 2) -> TfidfWords:
        """Learn the vocabulary (words in at least ``min_df`` texts) and their idf.

        Raises ValueError when no word qualifies, as there is nothing to learn from.
        """
        document_frequency: Counter[str] = Counter()
        for text in texts:
            document_frequency.update(set(TOKEN.findall(text.lower())))
        words = sorted(word for word, df in document_frequency.items() if df >= min_df)
        if not words:
            raise ValueError("empty vocabulary")
        n = len(texts)
        idf = np.array([math.log((1 + n) / (1 + document_frequency[w])) + 1.0 for w in words])
        return cls({word: index for index, word in enumerate(words)}, idf)

    def transform(self, texts: Sequence[str]) -> SparseRows:
        values: list[float] = []
        rows: list[int] = []
        columns: list[int] = []
        for row, text in enumerate(texts):
            counts = Counter(
                self.vocabulary[word]
                for word in TOKEN.findall(text.lower())
                if word in self.vocabulary
            )
            if not counts:
                continue
            cols = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
            tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
            weights = (1.0 + np.log(tf)) * self.idf[cols]
            weights /= np.linalg.norm(weights)
            values.extend(weights.tolist())
            rows.extend([row] * len(counts))
            columns.extend(cols.tolist())
        return SparseRows(
            np.array(values, dtype=np.float64),
            np.array(rows, dtype=np.int64),
            np.array(columns, dtype=np.int64),
            (len(texts), len(self.vocabulary)),
        )


@dataclass(frozen=True)
class LogisticModel:
    weights: Floats
    intercept: float

    def probability(self, features: SparseRows) -> Floats:
        return _sigmoid(features.dot(self.weights) + self.intercept)


def fit_logistic(
    features: SparseRows,
    target: npt.NDArray[np.bool_],
    *,
    c: float,
    max_iterations: int = 1000,
    tolerance: float = 1e-7,
) -> LogisticModel:
    """Minimise 0.5 * |w|^2 + c * sum_i s_i * log(1 + exp(-y_i (x_i . w + b))).

    ``s_i`` balances the classes (n / (2 * size of i's class)), as scikit-learn's
    ``class_weight="balanced"``; the intercept ``b`` is not penalised. The objective is divided
    by ``c * sum(s)`` so the tolerance does not depend on the data's size.
    """
    signs = np.where(target, 1.0, -1.0)
    positives = int(target.sum())
    n = len(target)
    if positives in (0, n):
        raise ValueError("both classes are needed")
    sample_weight = np.where(target, n / (2.0 * positives), n / (2.0 * (n - positives)))
    scale = 1.0 / (c * sample_weight.sum())

    def objective(theta: Floats) -> tuple[float, Floats]:
        w, b = theta[:-1], theta[-1]
        margins = signs * (features.dot(w) + b)
        loss = c * float(sample_weight @ np.logaddexp(0.0, -margins)) + 0.5 * float(w @ w)
        per_row = -c * sample_weight * signs * _sigmoid(-margins)
        gradient = np.append(w + features.transpose_dot(per_row), per_row.sum())
        return loss * scale, gradient * scale

    theta = _lbfgs(objective, np.zeros(features.shape[1] + 1), max_iterations, tolerance)
    return LogisticModel(theta[:-1], float(theta[-1]))


def _sigmoid(values: Floats) -> Floats:
    result: Floats = np.exp(-np.logaddexp(0.0, -values))
    return result


def _lbfgs(
    objective: Any, start: Floats, max_iterations: int, tolerance: float, memory: int = 10
) -> Floats:
    """Limited-memory BFGS with a backtracking (Armijo) line search, for a smooth convex
    objective; stops when the largest gradient component is below ``tolerance``."""
    x = start
    value, gradient = objective(x)
    steps: list[tuple[Floats, Floats, float]] = []  # (s, y, 1 / y.s)
    for _ in range(max_iterations):
        if float(np.max(np.abs(gradient))) < tolerance:
            break
        direction = -_two_loop(gradient, steps)
        slope = float(gradient @ direction)
        if slope >= 0:  # not a descent direction: restart from the gradient
            steps.clear()
            direction, slope = -gradient, -float(gradient @ gradient)
        step = 1.0
        while True:
            candidate = x + step * direction
            new_value, new_gradient = objective(candidate)
            if new_value <= value + 1e-4 * step * slope:
                break
            step *= 0.5
            if step < 1e-12:  # no decrease left to find at this precision
                return x
        s, y = candidate - x, new_gradient - gradient
        ys = float(y @ s)
        if ys > 1e-12:
            steps.append((s, y, 1.0 / ys))
            if len(steps) > memory:
                steps.pop(0)
        x, value, gradient = candidate, new_value, new_gradient
    return x


def _two_loop(gradient: Floats, steps: list[tuple[Floats, Floats, float]]) -> Floats:
    q = gradient.copy()
    alphas: list[float] = []
    for s, y, rho in reversed(steps):
        alpha = rho * float(s @ q)
        alphas.append(alpha)
        q -= alpha * y
    if steps:
        s, y, _ = steps[-1]
        q *= float(s @ y) / float(y @ y)
    for (s, y, rho), alpha in zip(steps, reversed(alphas), strict=True):
        beta = rho * float(y @ q)
        q += (alpha - beta) * s
    return q
