"""Shared by the gpu-check models: which torch device to run on, and TF32.

Kiln tells a Python model "cuda:0" when its worker holds a GPU (CUDA_VISIBLE_DEVICES is the worker's card) and
"cpu" otherwise. A GPU worker whose torch sees no CUDA device fails its load, as Kiln's own engines do, unless
the node's environment says KILN_GPU_CHECK_CPU=1: then it runs on the CPU and says so on stderr. That is the
CPU mode of loadtest/gpu-check/run.sh (a CPU machine with `--gpus 1` standing in for a GPU), never the GPU run.
"""
import os
import sys

import torch


def pick_device(device):
    if device.startswith("cuda") and not torch.cuda.is_available():
        if os.environ.get("KILN_GPU_CHECK_CPU") == "1":
            print("gpu-check: told %s but torch %s sees no CUDA device; KILN_GPU_CHECK_CPU=1, so running on the CPU"
                  % (device, torch.__version__), file=sys.stderr)
            return torch.device("cpu")
        raise RuntimeError("told %s but torch %s sees no CUDA device (CUDA_VISIBLE_DEVICES=%r, torch.version.cuda=%s)"
                           % (device, torch.__version__, os.environ.get("CUDA_VISIBLE_DEVICES"), torch.version.cuda))
    return torch.device(device)


def set_tf32(enabled):
    """Strict FP32 unless asked. TF32 (PyTorch leaves it on for cuDNN convolutions) rounds the inputs of each
    product to a 10-bit mantissa, which can move ResNet-18's logits past the check's 1e-3 against the CPU;
    run.sh's direct benchmark reports how far TF32 moves them on the card."""
    torch.backends.cuda.matmul.allow_tf32 = bool(enabled)
    torch.backends.cudnn.allow_tf32 = bool(enabled)


def describe(device):
    if device.type == "cuda":
        return "%s (%s, torch %s, CUDA %s, cuDNN %s)" % (device, torch.cuda.get_device_name(device), torch.__version__,
                                                        torch.version.cuda, torch.backends.cudnn.version())
    return "cpu (torch %s, %d threads)" % (torch.__version__, torch.get_num_threads())
