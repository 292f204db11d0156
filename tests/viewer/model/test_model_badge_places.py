"""Where flagged nodes' badges go (viewer.model.scene.badges): clear of each other and of every
node's box, the top right corner while it is free, shared by two neighbours with the same text
when there is room for one only."""

from itertools import combinations

import numpy as np
import pytest

from viewer.model.scene.badges import GAP, badge_reach, place_badges, spots

H = 17.0  # a badge's height, pixels


def box(cx, cy, w, h):
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def ring_of(b, grow=4.0):
    return (b[0] - grow, b[1] - grow, b[2] + grow, b[3] + grow)


def overlap(a, b):
    """Rectangles (left, top, right, bottom) sharing some area (touching is not overlapping)."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_a_lone_badge_sits_on_its_rings_top_right_corner_above_the_box():
    b = box(100, 100, 90, 30)
    ring = ring_of(b)
    (pill,), drawn = place_badges([ring], [b], ["dead-relu"], [70.0], [b], H)
    assert drawn.tolist() == [True]
    left, top, right, bottom = pill
    assert right == pytest.approx(ring[2] + 0.4 * 70)  # 40 % of it past the ring's side
    assert bottom == pytest.approx(b[1] - GAP)  # its box (and text) stays clear
    assert bottom - top == pytest.approx(H) and right - left == pytest.approx(70)


def test_a_node_and_its_output_close_together_get_badges_that_do_not_collide():
    # zoomed out: a ReLU and its output 6 px apart, a badge taller than the gap between them,
    # and nodes above, below and to the left as in dead_relu's graph
    relu, out = box(100, 100, 60, 10), box(100, 116, 40, 10)
    above, below, left = box(100, 84, 40, 10), box(100, 132, 60, 10), box(40, 116, 40, 10)
    boxes = [relu, out, above, below, left]
    texts = ["held", "nonfinite"]
    pills, drawn = place_badges(
        [ring_of(relu, 3), ring_of(out, 3)], [relu, out], texts, [40.0, 64.0], boxes, H
    )
    assert drawn.all()
    assert not overlap(pills[0], pills[1])
    for pill in pills:
        assert not any(overlap(pill, b) for b in boxes)


def test_two_neighbours_with_the_same_text_share_one_badge_when_only_one_fits():
    # the dead_relu case at a small zoom: every place around the output is taken by a box or
    # by the ReLU's badge, so its badge is the ReLU's
    relu, out = box(100, 100, 60, 10), box(100, 116, 40, 10)
    above, below, left = box(100, 84, 40, 10), box(100, 132, 60, 10), box(20, 116, 100, 10)
    boxes = [relu, out, above, below, left]
    pills, drawn = place_badges(
        [ring_of(relu, 3), ring_of(out, 3)],
        [relu, out],
        ["dead-relu", "dead-relu"],
        [70.0, 70.0],
        boxes,
        H,
    )
    assert drawn.tolist() == [True, False]
    assert pills[1].tolist() == pills[0].tolist()
    assert not any(overlap(pills[0], b) for b in boxes)


def test_different_texts_are_never_merged():
    relu, out = box(100, 100, 60, 10), box(100, 116, 40, 10)
    above, below, left = box(100, 84, 40, 10), box(100, 132, 60, 10), box(20, 116, 100, 10)
    boxes = [relu, out, above, below, left]
    _, drawn = place_badges(
        [ring_of(relu, 3), ring_of(out, 3)],
        [relu, out],
        ["dead-relu", "held"],
        [70.0, 40.0],
        boxes,
        H,
    )
    assert drawn.all()


def test_a_row_of_flagged_nodes_side_by_side_keeps_every_badge_apart():
    # eight flagged boxes 20 px apart in a row (a layer's parameters), badges wider than the gaps
    boxes = [box(60 + 80 * i, 200, 60, 24) for i in range(8)]
    rings = [ring_of(b) for b in boxes]
    pills, drawn = place_badges(rings, boxes, ["held"] * 8, [44.0] * 8, boxes, H)
    shown = pills[drawn]
    assert len(shown) == 8  # room above and below the row: none needs to share
    for a, b in combinations(shown.tolist(), 2):
        assert not overlap(a, b)
    for pill in shown.tolist():
        assert not any(overlap(pill, b) for b in boxes)


def test_with_no_room_at_all_a_badge_goes_back_to_its_corner():
    b = box(100, 100, 90, 30)
    wall = (-1e6, -1e6, 1e6, 1e6)  # a box over everything (a huge module, zoomed in)
    (pill,), drawn = place_badges([ring_of(b)], [b], ["x"], [30.0], [b, wall], H)
    assert drawn.all()
    assert pill.tolist() == pytest.approx(spots(ring_of(b), b, 30.0, H)[0])


def test_every_place_is_within_the_reach_the_view_pads_its_bounds_with():
    rng = np.random.default_rng(3)
    for _ in range(50):
        b = box(*rng.uniform(0, 500, 2), *rng.uniform(10, 200, 2))
        ring = ring_of(b, float(rng.uniform(3, 14)))
        width = float(rng.uniform(20, 120))
        reach = badge_reach([width], H)
        for pill in spots(ring, b, width, H):
            assert pill[0] >= ring[0] - reach and pill[2] <= ring[2] + reach
            assert pill[1] >= ring[1] - reach and pill[3] <= ring[3] + reach


def test_no_badges_and_no_obstacles():
    pills, drawn = place_badges(np.zeros((0, 4)), np.zeros((0, 4)), [], [], np.zeros((0, 4)), H)
    assert pills.shape == (0, 4) and drawn.shape == (0,)
    (pill,), _ = place_badges([(0, 0, 10, 10)], [(2, 2, 8, 8)], ["a"], [20.0], [], H)
    assert pill[3] == pytest.approx(2 - GAP)
