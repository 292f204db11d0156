"""Spiral classification: three interleaved arms, separated by a small network.

300 points on three spiral arms (the book's toy data), labels 0, 1, 2. An MLP with one hidden
layer of 10 sigmoid units maps each 2-D point to three class scores; softmax cross entropy
turns scores and labels into a loss, and SGD (learning rate 1.0) takes a step per mini-batch
of 30 points. A DataLoader reshuffles the points every epoch. After 300 epochs the network
labels about 97% of the training points correctly, though no straight line separates any two
arms.
"""

import autodiff.functions as F
from autodiff import DataLoader, datasets, models, no_grad, optimizers


def main(
    epochs: int = 300, batch_size: int = 30, hidden_size: int = 10, lr: float = 1.0
) -> dict[str, float]:
    train_set = datasets.Spiral(train=True)  # seeds numpy's generator, as the book does
    train_loader = DataLoader(train_set, batch_size)
    model = models.MLP((hidden_size, 3))
    optimizer = optimizers.SGD(lr).setup(model)

    losses = []
    for epoch in range(epochs):
        sum_loss = 0.0
        for x, t in train_loader:
            y = model(x)
            loss = F.softmax_cross_entropy(y, t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(t)
        losses.append(sum_loss / len(train_set))
        if (epoch + 1) % 30 == 0 or epoch == 0:
            print(f"epoch {epoch + 1:3d}  loss {losses[-1]:.4f}")

    with no_grad():
        accuracy = float(F.accuracy(model(train_set.data), train_set.label).data)
    print(f"training accuracy: {accuracy:.1%}")
    return {"first_loss": losses[0], "loss": losses[-1], "accuracy": accuracy, "epochs": epochs}


if __name__ == "__main__":
    main()
