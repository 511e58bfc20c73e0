"""scikit-learn: ``SmartClassifier`` in a Pipeline, tuned with GridSearchCV.

The estimators take LightGBM's parameters plus ``sampler`` (an instance or a name) and
``sampler_params``, so a grid can search over samplers and rates like any other parameter.

Run: ``python examples/sklearn_pipeline_gridsearch.py``
"""

from sklearn.feature_selection import SelectKBest, f_classif
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from smart_lgbm import FirstOrder, SmartClassifier
from smart_lgbm.datasets import load_higgs_sample

(X, y), (X_test, y_test) = load_higgs_sample()  # real: 7,000 training rows, 28 features
X, y = X[:3000], y[:3000]

pipeline = Pipeline([
    ("select", SelectKBest(f_classif, k=20)),
    ("model", SmartClassifier(n_estimators=40, num_leaves=15, verbose=-1, random_state=1)),
])
grid = GridSearchCV(
    pipeline,
    {"model__sampler": ["full", FirstOrder(rate=0.3)], "model__learning_rate": [0.05, 0.1]},
    scoring="roc_auc",
    cv=3,
)
grid.fit(X, y)
print(f"best: {grid.best_params_}, cross-validated AUC {grid.best_score_:.4f}, "
      f"test AUC {grid.score(X_test, y_test):.4f}")
assert grid.best_score_ > 0.7
