"""Distributed training on Dask: ``DaskSmartClassifier`` on a LocalCluster.

Every worker runs the engine on the partitions it holds and draws its own sample;
LightGBM's data-parallel learner builds each tree from all workers' samples.  Needs the
``dask`` extra: ``pip install 'smart-lgbm[dask]'``.

Run: ``python examples/dask_local_cluster.py``
"""

import logging

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

from smart_lgbm import FirstOrder
from smart_lgbm.dask import DaskSmartClassifier
from smart_lgbm.datasets import make_dense_binary

if __name__ == "__main__":  # worker processes import this file: start the cluster only here
    X_np, y_np = make_dense_binary(n_rows=40_000, n_features=20, seed=0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        X = da.from_array(X_np, chunks=(10_000, X_np.shape[1]))  # one block across the columns
        y = da.from_array(y_np, chunks=10_000)
        clf = DaskSmartClassifier(client=client, sampler=FirstOrder(rate=0.2), n_estimators=50, num_leaves=15,
                                  verbose=-1, random_state=1)
        clf.fit(X, y)
        proba = clf.predict_proba(X)[:, 1].compute()  # a Dask Array until computed
        local = clf.to_local()  # a SmartClassifier: pickle it, predict without the cluster
    accuracy = float(((proba > 0.5) == y_np).mean())
    print(f"{local.n_estimators_} trees on 2 workers; training accuracy {accuracy:.4f}; "
          f"local model agrees: {np.allclose(local.predict_proba(X_np[:100])[:, 1], proba[:100])}")
    assert accuracy > 0.6
