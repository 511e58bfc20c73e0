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


def reset_links(machines: str, local_listen_port: int) -> int:
    """Make this machine's links to its peers reset (TCP RST) rather than close when LightGBM
    closes them (:func:`network_free` next): a peer waiting in a receive from this machine
    then fails at once (``Socket recv error``) and leaves the network, where an orderly close
    would leave it spinning (LightGBM 4.6/4.7's receive loop retries on 0 bytes forever).
    Called when training fails on this machine after it joined the network.

    LightGBM's links are its TCP sockets whose local port is ``local_listen_port`` (the
    ones its peers opened to this machine) or whose peer is another entry of ``machines``
    (the ones this machine opened); they are found among the process's open files
    (``/proc/self/fd``, or ``/dev/fd``) and given ``SO_LINGER`` 0.  Nothing else is touched.

    Returns
    -------
    int
        The number of links set to reset (0 where the process's open files cannot be listed).
    """
    import os
    import socket
    import struct

    peers: set[tuple[str, int]] = set()
    for entry in str(machines).split(","):
        host, _, port = entry.strip().rpartition(":")
        if port.isdigit():
            try:
                peers.update((address, int(port)) for address in socket.gethostbyname_ex(host)[2])
            except OSError:
                peers.add((host, int(port)))
    folder = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    try:
        descriptors = [int(name) for name in os.listdir(folder) if name.isdigit()]
    except OSError:
        return 0
    count = 0
    for fd in descriptors:
        try:
            duplicate = os.dup(fd)
        except OSError:
            continue  # closed meanwhile
        try:
            sock = socket.socket(fileno=duplicate)
        except OSError:
            # not a socket: the duplicate is ours to close, or every call would double
            # the process's open files (a worker then dies of "Too many open files")
            os.close(duplicate)
            continue
        try:
            if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            try:
                local, peer = sock.getsockname()[:2], sock.getpeername()[:2]
            except OSError:
                continue  # not connected: a listener or a closing socket
            if local[1] == int(local_listen_port) or (peer[0], peer[1]) in peers:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                count += 1
        finally:
            sock.close()  # (the duplicate only: LightGBM's own descriptor stays open)
    return count
