"""A leak's badge says its cause: 'cycle' for a reference cycle, 'held' for something that
holds it; the tooltip keeps the reason and the holder chain."""

from viewer.model.document.document import Document
from viewer.model.document.examples import find_example


def _leak_overlays(doc):
    return {
        nid: o for nid, overlays in doc.scene.overlays.items() for o in overlays if o.kind == "leak"
    }


def _run(stem):
    doc = Document()
    assert doc.run_script(find_example(stem).path)
    assert doc.script_result.ok and doc.leak_report is not None
    return doc


def test_a_create_graph_cycle_is_badged_cycle():
    doc = _run("create_graph_cycle")
    survivors = {s.node_id: s for s in doc.leak_report.survivors}
    overlays = _leak_overlays(doc)
    assert overlays and set(overlays) == set(survivors)
    assert {o.badge for o in overlays.values()} == {"cycle"}
    for nid, overlay in overlays.items():
        assert overlay.tooltip.startswith("cycle")
        assert survivors[nid].held_by in overlay.tooltip
        assert overlay.color == doc.scene.palette.error
    x = next(nid for nid, s in survivors.items() if s.label == "x")
    assert "[leak] cycle: " in doc.scene.node_tooltip(doc.scene.index_of(x), -1)


def test_a_global_list_holder_is_badged_held():
    doc = _run("global_list")
    survivors = {s.node_id: s for s in doc.leak_report.survivors}
    overlays = _leak_overlays(doc)
    assert overlays and set(overlays) == set(survivors)
    assert {o.badge for o in overlays.values()} == {"held"}
    for nid, overlay in overlays.items():
        assert overlay.tooltip.startswith("referenced: global 'debug_cache'")
        # the chain, then the problem this badge stands for where one is listed on its graph
        chain, _, problem = overlay.tooltip.partition("; problem ")
        assert chain.endswith(survivors[nid].held_by)
        assert not problem or problem.startswith("graph-held")
    _, _, badges = doc.scene.overlay_arrays("leak")  # what the view draws
    assert badges and set(badges) == {"held"}
    # the script's other graph gets the same badges from the same audit
    assert doc.show_script_graph(0)
    _, _, badges = doc.scene.overlay_arrays("leak")
    assert badges and set(badges) == {"held"}


def test_a_clean_script_has_no_leak_badge():
    doc = _run("clean_graph")
    assert _leak_overlays(doc) == {}
