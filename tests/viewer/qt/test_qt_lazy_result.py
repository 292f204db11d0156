"""In the window, a script's run keeps its folder (the recordings of graphs not opened yet) for
as long as its graphs can be opened, and no longer: opening an expression lets it go."""

from __future__ import annotations

import gc
import os

from viewer.model.document.examples import find_example

TRAIN = (
    "import numpy as np\n"
    "from autodiff import Variable\n"
    "w = Variable(np.array([1.0, 2.0]), name='w')\n"
    "for epoch in range(40):\n"
    "    w.cleargrad()\n"
    "    loss = (w * w).sum()\n"
    "    loss.backward()\n"
    "    w.data = w.data - 0.01 * w.grad.data\n"
)


def test_the_runs_folder_lives_while_its_graphs_can_be_opened(
    qtbot, window, wait_for_script, tmp_path
):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    doc = window.document
    doc.script_max_passes = 6
    assert window.open_path(script, confirm_scripts=False)
    wait_for_script(window)
    result = doc.script_result
    assert result is not None and result.ok, result.error
    folder = result.folder.path
    assert os.path.isdir(folder)  # the first passes and the other kept passes wait there
    window.script_panel.graphs.activated.emit(0)  # opened from the list: read now
    qtbot.waitUntil(lambda: doc.script_result.is_head(doc.trace))
    assert doc.title.endswith(result.graphs[0].title)

    del result
    assert window.open_path(script, confirm_scripts=False)  # the next run replaces it
    wait_for_script(window)
    assert not os.path.exists(folder)  # (no collection needed: the Document does one)
    folder = doc.script_result.folder.path
    assert os.path.isdir(folder)

    assert window.open_path(find_example("sphere").path)
    qtbot.waitUntil(lambda: doc.kind == "expression")
    gc.collect()
    assert doc.script_result is None
    assert not os.path.exists(folder)
