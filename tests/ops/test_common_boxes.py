"""The box arithmetic the detection families share (irscatter/ops/common/boxes.py), against
literal per-pair definitions."""

import numpy as np
import pytest

from irscatter.ops.common.boxes import (
    areas,
    center_to_corners,
    greedy_keep,
    iou,
    ordered_corners,
    pairwise_iou,
)


def _iou_literal(a, b, offset=0.0):
    w = max(min(a[2], b[2]) - max(a[0], b[0]) + offset, 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]) + offset, 0.0)
    inter = w * h
    union = (a[2] - a[0] + offset) * (a[3] - a[1] + offset) + (b[2] - b[0] + offset) * (b[3] - b[1] + offset) - inter
    return inter / union if union > 0 else 0.0


def _greedy_literal(boxes, threshold, offset, inclusive, limit):
    kept = []
    for i in range(len(boxes)):
        if limit is not None and len(kept) >= limit:
            break
        overlaps = [_iou_literal(boxes[j], boxes[i], offset) for j in kept]
        if not any(v >= threshold if inclusive else v > threshold for v in overlaps):
            kept.append(i)
    return kept


def _random_boxes(rng, count):
    low = rng.integers(0, 8, (count, 2)).astype(np.float64)
    return np.concatenate([low, low + rng.integers(0, 5, (count, 2))], axis=1)


@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_iou_matches_the_literal_definition_including_degenerate_boxes(offset):
    rng = np.random.default_rng(1)
    boxes = _random_boxes(rng, 40)  # small integer grid: touching, nested, zero-area boxes
    table = pairwise_iou(boxes, boxes, offset)
    literal = np.array([[_iou_literal(a, b, offset) for b in boxes] for a in boxes])
    np.testing.assert_allclose(table, literal, rtol=1e-12)
    np.testing.assert_allclose(iou(boxes[3], boxes, offset), literal[3], rtol=1e-12)
    assert table.shape == (40, 40) and pairwise_iou(boxes[:0], boxes).shape == (0, 40)


@pytest.mark.parametrize("inclusive", [False, True])
@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_greedy_keep_matches_the_literal_walk(inclusive, offset):
    rng = np.random.default_rng(2)
    for _ in range(200):
        boxes = _random_boxes(rng, int(rng.integers(0, 25)))
        threshold = float(rng.choice([0.0, 0.25, 0.5, 1.0]))
        limit = None if rng.random() < 0.3 else int(rng.integers(0, 8))
        kept = greedy_keep(boxes, threshold, offset=offset, inclusive=inclusive, limit=limit)
        assert kept.tolist() == _greedy_literal(boxes, threshold, offset, inclusive, limit)


def test_an_iou_equal_to_the_threshold_suppresses_only_when_inclusive():
    boxes = np.array([[0, 0, 2, 2], [0, 0, 2, 1]], dtype=np.float32)  # IoU exactly 0.5
    assert greedy_keep(boxes, 0.5).tolist() == [0, 1]
    assert greedy_keep(boxes, 0.5, inclusive=True).tolist() == [0]


def test_corner_forms():
    boxes = np.array([[2.0, 3.0, 0.0, 1.0]])
    assert ordered_corners(boxes).tolist() == [[0.0, 1.0, 2.0, 3.0]]
    assert center_to_corners(np.array([[1.0, 2.0, 2.0, 4.0]])).tolist() == [[0.0, 0.0, 2.0, 4.0]]
    assert areas(np.array([[0.0, 0.0, 2.0, 3.0]]), offset=1.0).tolist() == [12.0]
    assert boxes.tolist() == [[2.0, 3.0, 0.0, 1.0]]  # the input is left as it was
