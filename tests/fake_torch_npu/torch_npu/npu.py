from . import CALLS


def synchronize(device=None):
    CALLS.append(("npu.synchronize", {"device": device}))
