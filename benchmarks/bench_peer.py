"""Peer copies: dst.copy_(src) from the device under test to every other device of the machine,
contiguous (a copy engine) and strided (a copy kernel), each verified; the pair's peer access
and its first copy (which enables it) recorded once. One device: skipped at discovery."""

from xferbench.device_memory import release_memory
from xferbench.devices import Device
from xferbench.practices import sizes
from xferbench.practices.peer import PEER_LAYOUTS, PeerCase, peer_skip_reason, run_peer
from xferbench.units import parse_size, size_label

from ._asv import CAPS, DEFAULT_SPEC, DEVICE, Grid, device_time, grid_timeout, skip_when, spec

SIZES = [size_label(n) for n in sizes()]
#: The device under test is the source of every copy: its series holds its row of the matrix.
TYPE, _, INDEX = DEVICE.partition(":")
SRC = int(INDEX or 0)
#: The destinations: every device of the machine (at least one value, so asv has a grid).
TO = [str(i) for i in range(max(CAPS.devices, 1))]


def _case(to, layout, size):
    return PeerCase(SRC, int(to), layout, parse_size(size))


def _reason(to, layout, size):
    return peer_skip_reason(_case(to, layout, size), CAPS)


def _first_reason(to, layout, size):
    why = _reason(to, layout, size)
    if why:
        return why
    if (layout, size) != (PEER_LAYOUTS[0], SIZES[0]):
        return (f"a pair's first copy (which enables peer access) and its peer access are "
                f"recorded once, at {PEER_LAYOUTS[0]} {SIZES[0]}: its first combination")
    return None


class Peer(Grid):
    """track_device_s: seconds per dst.copy_(src) from this device to device ``to``, device time
    on the source's stream (where PyTorch queues it), calls held back to back. Once per pair:
    track_first_copy_s, the first copy in the process (it enables peer access) on the host
    clock until both devices are done, and track_peer_access (1: can_device_access_peer)."""

    params = (TO, list(PEER_LAYOUTS), SIZES)
    param_names = ["to", "layout", "size"]
    unit = "seconds"

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _reason, DEFAULT_SPEC.max_time_s)

    def measure(self, to, layout, size):
        first = _first_reason(to, layout, size) is None
        result = run_peer(_case(to, layout, size), TYPE, CAPS, spec(), first=first)
        release_memory(Device(TYPE, int(to)))  # the grid releases the source device's
        # a call that could not be held (a loaded host) has no device time: that method is
        # skipped with the reason, the pair's first copy and peer access keep theirs
        values = {"track_device_s": device_time(result.measurement)}
        if first:
            values["track_first_copy_s"] = result.first_copy_s
            values["track_peer_access"] = 1.0 if result.peer_access else 0.0
        return values

    @skip_when(params, _reason)
    def track_device_s(self, cache, *params):
        return self.values["track_device_s"]

    @skip_when(params, _first_reason)
    def track_first_copy_s(self, cache, *params):
        return self.values["track_first_copy_s"]

    @skip_when(params, _first_reason)
    def track_peer_access(self, cache, *params):
        return self.values["track_peer_access"]

    track_peer_access.unit = "peer access (1 yes, 0 no)"
