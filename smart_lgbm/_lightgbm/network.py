"""LightGBM's socket network (``LGBM_NetworkInit``/``LGBM_NetworkFree``)."""

from __future__ import annotations

import ctypes

from ._capi import _LIB, _c_str, _check


def network_init(machines: str, local_listen_port: int, time_out: int, num_machines: int) -> None:
    """Join LightGBM's socket network (``LGBM_NetworkInit``), as ``Booster.set_network`` does.

    LightGBM keeps the network in thread-local state: the Datasets constructed and the
    Boosters trained *by this thread* until :func:`network_free` belong to it.  A Dataset
    constructed without a reference on the network finds its bin boundaries jointly
    (features divided among the machines, each finding its share from its own rows, then
    all-gathered), and a Booster with ``tree_learner=data`` grows every tree from all
    machines' histograms.  Every machine must make the same collective calls in the same
    order.

    Parameters
    ----------
    machines : str
        ``"ip1:port1,ip2:port2"``; a machine's rank is its position in this list.
    local_listen_port : int
        This machine's port (the one its entry in ``machines`` names).
    time_out : int
        LightGBM's socket time-out in minutes: a receive from a peer that is alive but
        silent that long fails (``Socket recv error``).  A peer that *dies* is another
        matter: its sockets close, ``recv`` returns 0 bytes, and LightGBM 4.6/4.7's receive
        loop retries forever, spinning; whoever runs the machines must notice a death
        itself (smart_lgbm.dask's client does).
    num_machines : int
    """
    _check(_LIB.LGBM_NetworkInit(_c_str(machines), ctypes.c_int(local_listen_port), ctypes.c_int(time_out),
                                 ctypes.c_int(num_machines)))


def network_free() -> None:
    """Leave LightGBM's network (``LGBM_NetworkFree``; nothing happens when none is up)."""
    _check(_LIB.LGBM_NetworkFree())
