"""ResNet-18 (torchvision, 1000 classes) for 3x224x224 FP32 images, as a Kiln Python model.

The weights are torchvision's random initialisation under a fixed seed (weights=None: nothing is downloaded),
made on the CPU and then moved to the device, so a CPU worker and a GPU worker of the same torch hold the same
numbers. eval() (batch norm uses its running statistics), FP32, TF32 off unless config says tf32: true.
"""
import os
import sys

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import describe, pick_device, set_tf32  # noqa: E402

SEED = 20240501


def build(seed=SEED):
    torch.manual_seed(seed)
    return torchvision.models.resnet18(weights=None).eval()


class Model:
    def load(self, config, device):
        self.device = pick_device(device)
        set_tf32(config.get("tf32", False))
        self.model = build(int(config.get("seed", SEED))).to(self.device)
        print("gpu-check resnet18 on " + describe(self.device), file=sys.stderr)


    def run(self, x):
        with torch.inference_mode():
            y = self.model(torch.from_numpy(x).to(self.device))
            return y.float().cpu().numpy()

    def predict(self, inputs):
        return {"logits": self.run(np.ascontiguousarray(inputs["input"], dtype=np.float32))}
