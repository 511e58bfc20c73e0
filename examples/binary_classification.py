"""Binary classification: ``smart_lgbm.train`` as a drop-in for ``lightgbm.train``.

Trains on the bundled a9a data (UCI Adult, real, 32,561 training rows) with FirstOrder
sampling at an adaptive rate, stops early on the test split's log-loss, and compares with
stock LightGBM trained on every row.  The model is an ordinary ``lightgbm.Booster``.

Run: ``python examples/binary_classification.py``
"""

import lightgbm as lgb
import numpy as np

import smart_lgbm as sl
from smart_lgbm.datasets import load_a9a

(X, y), (X_test, y_test) = load_a9a()
params = {"objective": "binary", "num_leaves": 15, "learning_rate": 0.1, "verbose": -1, "seed": 1}


def logloss(p):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y_test * np.log(p) + (1 - y_test) * np.log(1 - p)))


record = {}
booster = sl.train(
    params,
    lgb.Dataset(X, y),
    num_boost_round=300,
    sampler=sl.FirstOrder(rate="auto"),  # starts at 10% of the rows, grows while the trees are noisy
    valid_sets=[lgb.Dataset(X_test, y_test)],
    callbacks=[lgb.early_stopping(20, verbose=False), sl.record_sampling(record)],
)
stock = lgb.train(params, lgb.Dataset(X, y), num_boost_round=booster.best_iteration)

proba = booster.predict(X_test, num_iteration=booster.best_iteration)
accuracy = float(((proba > 0.5) == y_test).mean())
print(f"smart-lgbm: {booster.best_iteration} trees, mean sampling rate "
      f"{np.mean(record['sampling_rate']):.2f}, test log-loss {logloss(proba):.4f}, accuracy {accuracy:.4f}")
print(f"stock LightGBM, same number of trees on every row: test log-loss {logloss(stock.predict(X_test)):.4f}")
assert accuracy > 0.84
