"""This process's memory as the kernel counts it (``/proc/self``), for tests that bound it: the
resident set now, its high-water mark since a reset, and the resident set with freed arenas
given back first."""

from __future__ import annotations

import ctypes
import gc


def status_mb(key: str) -> float:
    """A ``/proc/self/status`` figure (``VmRSS:``, ``VmHWM:``) in megabytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {key}")


def resident_mb() -> float:
    """Resident memory in use, freed arenas given back first."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return status_mb("VmRSS:")


def reset_peak() -> float:
    """The resident memory now; the high-water mark (VmHWM) starts again from here."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    return status_mb("VmRSS:")


def rss_bytes() -> int:
    """The resident set now, in bytes."""
    return int(status_mb("VmRSS:") * 1024 * 1024)
