"""
A random Fourier feature layer in a PyTorch training loop
=========================================================

:class:`rffkern.torch.RandomFourierLayer` is a ``torch.nn.Module``: the random features of a
Gaussian kernel, a linear readout, and one learnable relevance per input (an inverse length
scale), computed by rffkern's fused CPU kernels in the forward and the backward pass (see
:doc:`/user_guide/torch`). Here it is trained like any PyTorch model -- a ``DataLoader``, Adam, a
mean squared error plus an L1 penalty on the relevances written in PyTorch -- on a target that
depends on 3 of its 8 inputs, and the relevances of the other 5 shrink towards zero.

This example needs PyTorch (``pip install "rffkern[torch]"``); the documentation build leaves it
out where PyTorch is not installed.
"""
import os

import matplotlib.pyplot as plt
import numpy as np
import torch

from rffkern.torch import RandomFourierLayer

FAST = bool(os.environ.get("RFFKERN_DOCS_FAST") or os.environ.get("CI"))
n_epochs = 20 if FAST else 60
torch.manual_seed(0)

# %%
# Data: 8 inputs, 3 of them relevant
# ----------------------------------
rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, size=(2000, 8)).astype(np.float32)
y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 + 0.5 * X[:, 2] + 0.1 * rng.normal(size=2000)
X, y = torch.from_numpy(X), torch.from_numpy(y.astype(np.float32)).unsqueeze(1)
train = torch.utils.data.TensorDataset(X[:1600], y[:1600])
loader = torch.utils.data.DataLoader(train, batch_size=64, shuffle=True)
X_val, y_val = X[1600:], y[1600:]

# %%
# An ordinary training loop
# -------------------------
# The relevances start at ``1 / length_scale``; the L1 penalty pulls those of unused inputs to 0.
model = RandomFourierLayer(8, 300, out_features=1, length_scale=2.0, random_state=0)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
penalty = 1e-3
history = []
for epoch in range(n_epochs):
    for xb, yb in loader:
        loss = torch.nn.functional.mse_loss(model(xb), yb) + penalty * model.relevances.abs().sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        history.append(torch.nn.functional.mse_loss(model(X_val), y_val).item())
print(f"validation MSE after {n_epochs} epochs: {history[-1]:.4f} (noise variance 0.01)")
print("relevances:", np.round(model.relevances.detach().numpy(), 3))

# %%
# Left: the validation error per epoch. Right: the learned relevances, the true support in orange.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.semilogy(np.arange(1, n_epochs + 1), history)
ax1.set(xlabel="epoch", ylabel="validation MSE", title="Training RandomFourierLayer with Adam")
colors = ["tab:orange"] * 3 + ["tab:blue"] * 5
ax2.bar(np.arange(1, 9), np.abs(model.relevances.detach().numpy()), color=colors)
ax2.set(xlabel="input", ylabel="|relevance|", title="Learned relevances (true support in orange)")
plt.show()
