"""Sine regression: a two-layer network learns a curve a straight line cannot.

100 points x in [0, 1] with y = sin(2 pi x) plus uniform noise in [0, 1] (the book's
steps 43-45). The model is an MLP with one hidden layer of 10 sigmoid units
(Linear(10) -> sigmoid -> Linear(1)), trained on all points at once by SGD with learning
rate 0.2. The loss falls from about 0.8 to about 0.08, close to the noise's own variance
(1/12), which no model can go below on average.
"""

import autodiff.functions as F
from autodiff import datasets, models, optimizers


def main(iters: int = 10000, lr: float = 0.2, hidden_size: int = 10) -> dict[str, float]:
    x, y = datasets.get_sine()  # seeds numpy's generator with 0, as the book does
    model = models.MLP((hidden_size, 1))
    optimizer = optimizers.SGD(lr).setup(model)

    first_loss = None
    for i in range(iters):
        y_pred = model(x)
        loss = F.mean_squared_error(y, y_pred)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        if first_loss is None:
            first_loss = float(loss.data)
        if i % 1000 == 0 or i == iters - 1:
            print(f"iter {i:5d}  loss {float(loss.data):.5f}")

    return {"first_loss": first_loss, "loss": float(loss.data), "iters": iters}


if __name__ == "__main__":
    main()
