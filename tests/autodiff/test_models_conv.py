"""VGG16, ResNet and SqueezeNet: built on Conv2d and pooling."""

from __future__ import annotations

import re

import numpy as np
import pytest

import autodiff
import autodiff.functions as F
from autodiff import models


@pytest.fixture(autouse=True)
def no_data(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTODIFF_DATA", str(tmp_path))


@pytest.mark.parametrize(
    ("make", "file_name"),
    [
        (lambda: models.VGG16(pretrained=True), "vgg16.npz"),
        (lambda: models.ResNet50(pretrained=True), "resnet50.npz"),
        (lambda: models.ResNet(101, pretrained=True), "resnet101.npz"),
    ],
)
def test_pretrained_weights_are_only_read_from_disk(make, file_name):
    with pytest.raises(FileNotFoundError, match=re.escape(file_name)):
        make()


def test_squeezenet_has_no_pretrained_weights_and_resnet_checks_its_depth():
    with pytest.raises(ValueError, match="no pretrained weights"):
        models.SqueezeNet(pretrained=True)
    with pytest.raises(ValueError, match="50, 101 or 152"):
        models.ResNet(34)


def test_vgg16_runs_and_has_dezeros_layers():
    model = models.VGG16()
    names = list(model.named_params())
    assert names[0] == "conv1_1/W" and "fc8/W" in names
    with autodiff.test_mode():
        y = model(np.random.randn(1, 3, 32, 32).astype(np.float32))
    assert y.shape == (1, 1000)


def test_resnet50_runs_forward_and_backward():
    model = models.ResNet50()
    y = model(np.random.randn(1, 3, 64, 64).astype(np.float32))
    assert y.shape == (1, 1000)
    F.sum(y).backward()
    assert model.conv1.W.grad is not None


def test_squeezenet_runs():
    model = models.SqueezeNet(n_classes=10)
    with autodiff.test_mode():
        y = model(np.random.randn(2, 3, 64, 64).astype(np.float32))
    assert y.shape == (2, 10)
