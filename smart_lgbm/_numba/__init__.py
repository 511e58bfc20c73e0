"""numba infrastructure shared by every compiled module."""
