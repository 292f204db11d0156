"""Models: Layers with a whole-network ``forward``, named as in DeZero's ``dezero/models.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

import autodiff.functions as F
import autodiff.layers as L
from autodiff import utils
from autodiff.core import Variable
from autodiff.layers import Layer, Linear

__all__ = [
    "MLP",
    "VGG16",
    "BottleneckA",
    "BottleneckB",
    "BuildingBlock",
    "Fire",
    "Model",
    "ResNet",
    "ResNet50",
    "ResNet101",
    "ResNet152",
    "Sequential",
    "SqueezeNet",
]


class Model(Layer):
    """A Layer that is a whole network; :meth:`plot` draws the graph of one forward pass."""

    def plot(self, *inputs: Any, to_file: str = "model.png") -> None:
        """Run ``forward(*inputs)`` and render its graph with Graphviz into ``to_file``."""
        y = self.forward(*inputs)
        return utils.plot_dot_graph(y, verbose=True, to_file=to_file)


class Sequential(Model):
    """Layers applied one after another; they are registered as ``l0``, ``l1``..."""

    def __init__(self, *layers: Layer | Callable[[Any], Any]) -> None:
        super().__init__()
        self.layers = list(layers)
        for i, layer in enumerate(self.layers):
            setattr(self, f"l{i}", layer)

    def forward(self, x: Any) -> Variable:
        for layer in self.layers:
            x = layer(x)
        return x


class MLP(Model):
    """A multi-layer perceptron: one :class:`Linear` per entry of ``fc_output_sizes``, with
    ``activation`` between them (none after the last)."""

    def __init__(
        self,
        fc_output_sizes: Sequence[int],
        activation: Callable[[Any], Variable] = F.sigmoid,
    ) -> None:
        super().__init__()
        if len(fc_output_sizes) == 0:
            raise ValueError("MLP: fc_output_sizes is empty; give at least one layer size")
        self.activation = activation
        self.layers = []
        for i, out_size in enumerate(fc_output_sizes):
            layer = Linear(out_size)
            setattr(self, f"l{i}", layer)
            self.layers.append(layer)

    def forward(self, x: Any) -> Variable:
        *hidden, last = self.layers
        for layer in hidden:
            x = self.activation(layer(x))
        return last(x)


# =============================================================================
# Convolutional networks (DeZero's, random initialisation; L.Conv2d and F.pooling are looked
# up when a model is built, so this module imports without them)
# =============================================================================
_WEIGHTS = "https://github.com/koki0702/dezero-models/releases/download/v0.1/"


def _global_average_pooling_2d(x: Variable) -> Variable:
    n, c, h, w = x.shape
    return F.reshape(F.average_pooling(x, (h, w), stride=1), (n, c))


class VGG16(Model):
    """VGG-16 (Simonyan and Zisserman): 13 3x3 convolutions in five blocks, each block ending
    in 2x2 max pooling, then three fully connected layers (4096, 4096, 1000) with dropout.

    ``pretrained=True`` loads DeZero's ``vgg16.npz`` from the data folder (never downloads).
    """

    WEIGHTS_PATH = _WEIGHTS + "vgg16.npz"
    # output channels of each convolution, block by block
    BLOCKS = ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512))

    def __init__(self, pretrained: bool = False) -> None:
        super().__init__()
        # nothing is downloaded: get_file names the file, its URL and where to put it
        weights = utils.get_file(self.WEIGHTS_PATH) if pretrained else None
        self._convs = []
        for b, channels in enumerate(self.BLOCKS, start=1):
            for k, out in enumerate(channels, start=1):
                name = f"conv{b}_{k}"
                setattr(self, name, L.Conv2d(out, kernel_size=3, stride=1, pad=1))
                self._convs.append((b, name))
        self.fc6 = Linear(4096)
        self.fc7 = Linear(4096)
        self.fc8 = Linear(1000)
        if weights is not None:
            self.load_weights(weights)

    def forward(self, x: Any) -> Variable:
        for i, (block, name) in enumerate(self._convs):
            x = F.relu(getattr(self, name)(x))
            last_of_block = i + 1 == len(self._convs) or self._convs[i + 1][0] != block
            if last_of_block:
                x = F.pooling(x, 2, 2)
        x = F.reshape(x, (x.shape[0], -1))
        x = F.dropout(F.relu(self.fc6(x)))
        x = F.dropout(F.relu(self.fc7(x)))
        return self.fc8(x)

    @staticmethod
    def preprocess(
        image: Any, size: tuple[int, int] | None = (224, 224), dtype: DTypeLike = np.float32
    ) -> NDArray:
        """A PIL image as VGG's input: RGB resized to ``size``, BGR order, the ImageNet mean
        subtracted, (3, H, W)."""
        image = image.convert("RGB")
        if size:
            image = image.resize(size)
        array = np.asarray(image, dtype=dtype)[:, :, ::-1]
        array = array - np.array([103.939, 116.779, 123.68], dtype=dtype)
        return array.transpose((2, 0, 1))


class ResNet(Model):
    """ResNet (He et al.) with bottleneck blocks: ``n_layers`` 50, 101 or 152.

    A 7x7 stride-2 convolution and BatchNorm, 3x3 stride-2 max pooling, four stages of
    bottleneck blocks (256, 512, 1024, 2048 channels), global average pooling, a 1000-way
    Linear. ``pretrained=True`` loads DeZero's ``resnet{n}.npz`` from the data folder.
    """

    WEIGHTS_PATH = _WEIGHTS + "resnet{}.npz"
    STAGES: dict[int, tuple[int, int, int, int]] = {  # noqa: RUF012 (read only)
        50: (3, 4, 6, 3),
        101: (3, 4, 23, 3),
        152: (3, 8, 36, 3),
    }

    def __init__(self, n_layers: int = 152, pretrained: bool = False) -> None:
        super().__init__()
        if n_layers not in self.STAGES:
            raise ValueError(f"ResNet: n_layers must be 50, 101 or 152, not {n_layers!r}")
        weights = utils.get_file(self.WEIGHTS_PATH.format(n_layers)) if pretrained else None
        block = self.STAGES[n_layers]
        self.conv1 = L.Conv2d(64, kernel_size=7, stride=2, pad=3, in_channels=3)
        self.bn1 = L.BatchNorm()
        self.res2 = BuildingBlock(block[0], 64, 64, 256, 1)
        self.res3 = BuildingBlock(block[1], 256, 128, 512, 2)
        self.res4 = BuildingBlock(block[2], 512, 256, 1024, 2)
        self.res5 = BuildingBlock(block[3], 1024, 512, 2048, 2)
        self.fc6 = Linear(1000)
        if weights is not None:
            self.load_weights(weights)

    def forward(self, x: Any) -> Variable:
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.pooling(x, kernel_size=3, stride=2)
        x = self.res5(self.res4(self.res3(self.res2(x))))
        return self.fc6(_global_average_pooling_2d(x))


class ResNet152(ResNet):
    def __init__(self, pretrained: bool = False) -> None:
        super().__init__(152, pretrained)


class ResNet101(ResNet):
    def __init__(self, pretrained: bool = False) -> None:
        super().__init__(101, pretrained)


class ResNet50(ResNet):
    def __init__(self, pretrained: bool = False) -> None:
        super().__init__(50, pretrained)


def _conv_bn(layer: Layer, i: int, in_ch: int, out_ch: int, k: int, stride: int) -> None:
    """``conv{i}`` (k x k, no bias, 'same' padding) followed by ``bn{i}`` on ``layer``."""
    conv = L.Conv2d(
        out_ch, kernel_size=k, stride=stride, pad=k // 2, nobias=True, in_channels=in_ch
    )
    setattr(layer, f"conv{i}", conv)
    setattr(layer, f"bn{i}", L.BatchNorm())


class BuildingBlock(Layer):
    """One ResNet stage: a :class:`BottleneckA` (``a``, which may downsample) and
    ``n_layers - 1`` :class:`BottleneckB` (``b1``, ``b2``...)."""

    def __init__(
        self,
        n_layers: int,
        in_channels: int,
        mid_channels: int,
        out_channels: int,
        stride: int,
        downsample_fb: bool = False,
    ) -> None:
        super().__init__()
        self.a = BottleneckA(in_channels, mid_channels, out_channels, stride, downsample_fb)
        self._forward = ["a"]
        for i in range(1, n_layers):
            setattr(self, f"b{i}", BottleneckB(out_channels, mid_channels))
            self._forward.append(f"b{i}")

    def forward(self, x: Any) -> Variable:
        for name in self._forward:
            x = getattr(self, name)(x)
        return x


class BottleneckA(Layer):
    """A bottleneck that changes the resolution and width: 1x1, 3x3, 1x1 convolutions with
    BatchNorm, plus a 1x1 projection of the input (``conv4``/``bn4``) on the shortcut.

    The stride sits on the first 1x1 convolution (MSRA's ResNet), or on the 3x3 one with
    ``downsample_fb`` (Facebook's).
    """

    def __init__(
        self,
        in_channels: int,
        mid_channels: int,
        out_channels: int,
        stride: int = 2,
        downsample_fb: bool = False,
    ) -> None:
        super().__init__()
        stride_1x1, stride_3x3 = (1, stride) if downsample_fb else (stride, 1)
        _conv_bn(self, 1, in_channels, mid_channels, 1, stride_1x1)
        _conv_bn(self, 2, mid_channels, mid_channels, 3, stride_3x3)
        _conv_bn(self, 3, mid_channels, out_channels, 1, 1)
        _conv_bn(self, 4, in_channels, out_channels, 1, stride)

    def forward(self, x: Any) -> Variable:
        h1 = F.relu(self.bn1(self.conv1(x)))
        h1 = F.relu(self.bn2(self.conv2(h1)))
        h1 = self.bn3(self.conv3(h1))
        h2 = self.bn4(self.conv4(x))
        return F.relu(h1 + h2)


class BottleneckB(Layer):
    """A bottleneck that keeps the resolution and width: 1x1, 3x3, 1x1 convolutions with
    BatchNorm, and the input itself on the shortcut."""

    def __init__(self, in_channels: int, mid_channels: int) -> None:
        super().__init__()
        _conv_bn(self, 1, in_channels, mid_channels, 1, 1)
        _conv_bn(self, 2, mid_channels, mid_channels, 3, 1)
        _conv_bn(self, 3, mid_channels, in_channels, 1, 1)

    def forward(self, x: Any) -> Variable:
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + x)


class Fire(Layer):
    """SqueezeNet's module: a 1x1 ``squeeze`` convolution, then 1x1 and 3x3 ``expand``
    convolutions side by side, their outputs stacked along the channels."""

    def __init__(self, squeeze: int, expand1x1: int, expand3x3: int) -> None:
        super().__init__()
        self.squeeze = L.Conv2d(squeeze, kernel_size=1)
        self.expand1x1 = L.Conv2d(expand1x1, kernel_size=1)
        self.expand3x3 = L.Conv2d(expand3x3, kernel_size=3, pad=1)

    def forward(self, x: Any) -> Variable:
        x = F.relu(self.squeeze(x))
        return F.concat((F.relu(self.expand1x1(x)), F.relu(self.expand3x3(x))), axis=1)


class SqueezeNet(Model):
    """SqueezeNet 1.1 (Iandola et al.): AlexNet's accuracy with 50x fewer parameters, from
    :class:`Fire` modules. DeZero's ``SqueezeNet`` is an empty placeholder; this one is the
    published network, randomly initialised (there are no DeZero weights to load).
    """

    # (squeeze, expand 1x1, expand 3x3) of fire2..fire9; max pooling after fire3 and fire5
    FIRES = ((16, 64, 64), (16, 64, 64), (32, 128, 128), (32, 128, 128))
    FIRES += ((48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256))

    def __init__(self, n_classes: int = 1000, pretrained: bool = False) -> None:
        super().__init__()
        if pretrained:
            raise ValueError(
                "SqueezeNet: there are no pretrained weights (DeZero publishes none); "
                "pass pretrained=False"
            )
        self.conv1 = L.Conv2d(64, kernel_size=3, stride=2)
        for i, sizes in enumerate(self.FIRES, start=2):
            setattr(self, f"fire{i}", Fire(*sizes))
        self.conv10 = L.Conv2d(n_classes, kernel_size=1)

    def forward(self, x: Any) -> Variable:
        x = F.pooling(F.relu(self.conv1(x)), 3, 2)
        for i in range(2, 2 + len(self.FIRES)):
            x = getattr(self, f"fire{i}")(x)
            if i in (3, 5):
                x = F.pooling(x, 3, 2)
        x = F.relu(self.conv10(F.dropout(x)))
        return _global_average_pooling_2d(x)
