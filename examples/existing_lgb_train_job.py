"""An existing ``lightgbm.train`` job with SMART's sampling: ``SmartObjective``.

One objective object goes where LightGBM takes an objective; its ``callback`` numbers the
iterations, ``feval`` computes the loss's metric on transformed scores (LightGBM computes
built-in metrics of a custom objective on raw scores), and ``finalize`` turns the booster
into the stock objective's model, whose ``predict`` returns probabilities.

The samples are the engine's, but not its speed: stock LightGBM still builds its histograms
over every row.  For the speed-up, use ``smart_lgbm.train`` or the estimators.

Run: ``python examples/existing_lgb_train_job.py``
"""

import lightgbm as lgb
import numpy as np

import smart_lgbm as sl
from smart_lgbm.datasets import load_higgs_sample

(X, y), (X_val, y_val) = load_higgs_sample()  # LightGBM's HIGGS sample: 7,000 / 500 rows, real

obj = sl.SmartObjective("binary", sl.FirstOrder(rate=0.3), seed=1)
dtrain = lgb.Dataset(X, y)
init = obj.init_score(dtrain)  # what stock "binary" starts from (LightGBM does not, for a custom objective)
dtrain.set_init_score(init)
dvalid = lgb.Dataset(X_val, y_val, reference=dtrain, init_score=np.full(len(y_val), init[0]))

evals = {}
booster = lgb.train(
    {"objective": obj, "metric": "None", "num_leaves": 15, "learning_rate": 0.05, "verbose": -1},
    dtrain,
    num_boost_round=400,
    valid_sets=[dvalid],
    feval=obj.feval,
    callbacks=[obj.callback, lgb.early_stopping(20, verbose=False), lgb.record_evaluation(evals)],
)
model = obj.finalize(booster, init)  # the stock objective's model: probabilities, initial score folded in
proba = model.predict(X_val, num_iteration=booster.best_iteration)
accuracy = float(((proba > 0.5) == y_val).mean())
print(f"best iteration {booster.best_iteration}, validation binary_logloss "
      f"{min(evals['valid_0']['binary_logloss']):.4f}, accuracy {accuracy:.4f}, mean sampling rate "
      f"{np.mean(obj.record['sampling_rate']):.2f}")
assert accuracy > 0.65
