"""Help > Examples by Topic: every bundled example under its topic, with what it teaches."""

from __future__ import annotations

from PySide6 import QtCore

from viewer.model.document.examples import find_example, list_examples


def test_examples_by_topic_says_what_each_example_teaches_and_opens_one(qtbot, shown):
    window = shown()
    window.actions["examples_by_topic"].trigger()
    dialog = window.examples_by_topic
    assert dialog.isVisible() and not dialog.isModal()
    text = " ".join(dialog.browser.toPlainText().split())
    for example in list_examples():
        assert example.description, example.stem  # each example says what it teaches
        assert " ".join(example.title.split()) in text
        assert " ".join(example.description.split()) in text
    for topic in ("Basics", "Higher order", "Training", "Debugging", "Leaks", "PyTorch"):
        assert topic in text
    # a title is a link: following it opens that example and closes the list
    dialog.browser.anchorClicked.emit(QtCore.QUrl("example:diamond"))
    assert window.document.path == find_example("diamond").path
    assert not dialog.isVisible()
    window.show_examples_by_topic()
    dialog.browser.anchorClicked.emit(QtCore.QUrl("example:no_such_example"))
    assert dialog.isVisible() and window.document.path == find_example("diamond").path


def test_an_example_that_needs_torch_says_so_where_torch_is_missing(qtbot, shown, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    window = shown()
    window.actions["examples_by_topic"].trigger()
    text = " ".join(window.examples_by_topic.browser.toPlainText().split())
    title = find_example("torch_mlp").title
    assert f"{title} (script; needs torch, not installed)" in " ".join(text.split())
    # opening it is refused with what to install; the app goes on
    window.examples_by_topic.browser.anchorClicked.emit(QtCore.QUrl("example:torch_mlp"))
    assert 'pip install "autodiff-viewer[torch]"' in str(window.document.last_error)
    assert window.document.script_run is None


def test_the_examples_menu_names_each_topic_as_the_list_does(qtbot, shown):
    window = shown()
    action = window.actions["example_torch_mlp"]
    menu = next(w for w in action.associatedObjects() if hasattr(w, "title"))
    assert menu.title() == "PyTorch"
    assert window.actions["example_diamond"].associatedObjects()[0].title() == "Basics"
