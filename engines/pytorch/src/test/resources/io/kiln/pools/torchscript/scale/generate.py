"""Regenerates scale.pt: a scripted TorchScript module with a scalar (0-d) input and a scalar output, for
model-pools' tests of rank-0 tensors through DJL's PyTorch engine (issue #36).

    forward(x: FP32 [N, 4], k: INT64 []) -> (y = x * k: FP32 [N, 4], twice = 2 * k: INT64 [])

No weights. Run with Debian's torch (apt-get install -y python3-torch), from anywhere:
    /usr/bin/python3 model-pools/src/test/resources/io/kiln/pools/torchscript/scale/generate.py
"""
import os
from typing import Tuple

import torch


class Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor, k: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x * k.to(torch.float32), k * 2


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    scripted = torch.jit.script(Scale().eval())
    y, twice = scripted(torch.ones(2, 4), torch.tensor(3))
    assert y.shape == (2, 4) and float(y[0, 0]) == 3.0 and twice.shape == () and int(twice) == 6
    scripted.save(os.path.join(here, "scale.pt"))


if __name__ == "__main__":
    main()
