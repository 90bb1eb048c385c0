"""NonMaxSuppression-1, -3, -4, -5 and -9 against OpenVINO's CPU plugin and the oracle (the
reference's priority queue, box by box): both box encodings (corner boxes with either corner
first), both sort orders, both output types, f32/f16/bf16 boxes, scores and thresholds, 0 to 6
inputs' worth of defaults, max_output_boxes_per_class 0, 1, a few and more than the boxes, empty
batches, classes and boxes, equal scores, scores equal to score_threshold, IoUs equal to
iou_threshold, soft NMS, NaN and infinite scores and boxes.

Exact: the indices are integers and the selected scores are the input scores, except soft NMS's
decayed scores, which allow 4 ulps (the CPU plugin's vector exp is not correctly rounded).

Where the CPU plugin is not the judge (the oracle, under the spec's thresholds, is):
* -1, -3 and -4 when fewer boxes are selected than the output holds: the spec pads the output
  with -1, the plugin returns only the selected rows;
* IoU equal to iou_threshold (including the default threshold 0 with disjoint boxes), every
  version: the spec keeps the box, the plugin removes it (so does the reference for -5);
* a score equal to score_threshold (given, or decayed to it by soft NMS): the spec keeps the
  box, the plugin and reference drop it;
* -5's soft NMS: the plugin runs it as -9's;
* f16/bf16 thresholds with -5/-9: the spec types selected_scores as the thresholds (T_THRESHOLDS),
  the plugin always f32.
The departures in thresholds are recorded too: `test_non_max_suppression_cpu_plugin_departs`
runs the same inputs on the plugin and holds it to the oracle's `rule="cpu"`, so a change on
either side shows.
"""

import functools

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import suppression as oracle

FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16]
PADDED_WHY = "the spec pads -1/-3/-4's output with -1 rows; the CPU plugin returns only the selected rows"
EQUAL_WHY = "the spec keeps a box whose IoU equals iou_threshold; the CPU plugin removes it (at IoU >= iou_threshold)"
SCORE_WHY = ("the spec keeps a box scoring exactly score_threshold; OpenVINO's CPU plugin and reference take only "
             "scores above it")
TYPE_WHY = "the spec types selected_scores as the thresholds (T_THRESHOLDS); the CPU plugin makes it f32"
TRUNCATED_WHY = "the CPU plugin returns every selected row, past -1/-3's static size (which leaves out num_batches)"
SOFT5_WHY = "the CPU plugin runs -5's soft NMS as -9's, which suppresses by no IoU; -5's spec and reference do"
EMPTY_WHY = ("with nothing to select the CPU plugin leaves valid_outputs unwritten (or, without "
             "max_output_boxes_per_class, fails)")
NAMES = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold", "soft_nms_sigma",
         "extra")


def random_boxes(rng, batches, count, encoding, *, spread=4.0):
    """Boxes that overlap each other often: centers in [0, spread), sizes in [0.5, 3)."""
    center = rng.uniform(0, spread, (batches, count, 2))
    size = rng.uniform(0.5, 3, (batches, count, 2))
    if encoding == "center":
        return np.concatenate([center, size], axis=-1)
    first, second = center - size / 2, center + size / 2
    flip = rng.random((batches, count, 1)) < 0.3  # either diagonal pair of corners, either order
    return np.concatenate([np.where(flip, second, first), np.where(flip, first, second)], axis=-1)


def _case(cid, version, boxes, scores, extra=(), *, attrs=None, ulps=0, **kw):
    attrs = dict(attrs or {})
    inputs = [Input("boxes", boxes), Input("scores", scores)]
    inputs += [Input(NAMES[2 + k], v, const=True) for k, v in enumerate(extra)]
    out_type = np.int32 if attrs.get("output_type") == "i32" else np.int64
    call = functools.partial(oracle.non_max_suppression, version=version,
                             box_encoding=attrs.get("box_encoding", "corner"),
                             sort_result_descending=attrs.get("sort_result_descending", True),
                             output_type=out_type)
    case = Case(cid, "NonMaxSuppression", f"opset{version}", inputs, attrs, oracle=call, ulps=ulps, **kw)
    return _padded(case) if "openvino" not in kw and "error" not in kw else case


def _scalar(value, dtype, vector):
    return np.array([value] if vector else value, dtype=dtype)


def _random_cases():
    rng = np.random.default_rng(18)
    out = []
    n = 0
    for version in (1, 3, 4, 5, 9):
        for encoding in ("corner", "center"):
            for sort in (True, False):
                for dtype in FLOATS:
                    n += 1
                    batches, classes, count = (int(v) for v in rng.integers(1, 4, 3))
                    if version in (1, 3) and n % 2:
                        batches = classes = 1  # so that the CPU plugin's unpadded rows can fill the output
                    count += int(rng.integers(0, 8))
                    boxes = random_boxes(rng, batches, count, encoding).astype(dtype)
                    scores = rng.uniform(0, 1, (batches, classes, count)).astype(dtype)
                    limit = [0, 1, 3, 100][n % 4]
                    vector = version >= 5 and n % 3 == 0
                    iou = _scalar(rng.uniform(0.2, 0.7), np.float32, vector)
                    score = _scalar(rng.uniform(0, 0.5), np.float32, vector)
                    extra = [_scalar(limit, [np.int64, np.int32, np.uint8][n % 3], vector), iou, score]
                    attrs = {"box_encoding": encoding, "sort_result_descending": sort}
                    if version >= 3:
                        attrs["output_type"] = ("i32", "i64")[n % 2]
                    kw = {}
                    if version >= 5 and n % 2:
                        extra.append(_scalar(rng.uniform(0.2, 1.0), np.float32, vector))  # soft NMS
                        kw["ulps"] = 4
                    cid = f"nms{version}-{encoding}-{'sorted' if sort else 'by-class'}-{np.dtype(dtype).name}-" \
                          f"{batches}x{classes}x{count}-max{limit}"
                    out.append(_case(cid, version, boxes, scores, extra, attrs=attrs, **kw))
    return out


def _padded(case):
    """Cases the CPU plugin does not judge: -1/-3/-4 whose selection does not fill the spec's
    static output exactly, -5's soft NMS, and -5/-9 with nothing to select."""
    values = [i.value for i in case.inputs]
    if case.opset in ("opset1", "opset3", "opset4"):
        rows = case.oracle(*values).shape[0]
        selected = oracle.non_max_suppression(*values, version=9, box_encoding=case.attrs.get("box_encoding", "corner"))
        if selected[0].shape[0] < rows:
            case.openvino, case.why = "none", PADDED_WHY
        elif selected[0].shape[0] > rows:
            case.openvino, case.why = "none", TRUNCATED_WHY
    elif case.opset == "opset5" and len(values) == 6 and float(values[5].reshape(-1)[0]) > 0:
        case.openvino, case.why = "none", SOFT5_WHY
    elif len(values) < 3 or values[0].size == 0 or values[1].size == 0 or not values[2].reshape(-1)[0]:
        case.openvino, case.why = "none", EMPTY_WHY
    return case


def _full_cases():
    """-1/-3/-4 with every box selected (iou_threshold 1 suppresses nothing): the CPU plugin's
    unpadded rows are the whole output, so it judges the sort order."""
    rng = np.random.default_rng(5)
    out = []
    for version, (batches, classes) in ((1, (1, 1)), (3, (1, 1)), (4, (2, 3)), (4, (3, 2))):
        for sort in (True, False):
            count = 6
            boxes = random_boxes(rng, batches, count, "corner").astype(np.float32)
            scores = rng.uniform(0, 1, (batches, classes, count)).astype(np.float32)
            extra = [np.array(4 if version == 4 else 6, np.int64), np.array(1.0, np.float32),
                     np.array(-1.0, np.float32)]
            out.append(_case(f"nms{version}-all-{batches}x{classes}-{sort}", version, boxes, scores, extra,
                             attrs={"sort_result_descending": sort}))
    return out


TWO = np.array([[[0, 0, 1, 1], [0, 0, 1, 2], [5, 5, 6, 6]]], np.float32)  # IoU(0, 1) = 0.5, box 2 apart
THREE = np.array([[[0.9, 0.8, 0.5]]], np.float32)
SOFT_BOXES = np.array([[[0.5, 0.5, 1.0, 1.0], [0.5, 0.6, 1.0, 1.0], [0.5, 0.4, 1.0, 1.0], [0.5, 10.5, 1.0, 1.0],
                        [0.5, 10.6, 1.0, 1.0], [0.5, 100.5, 1.0, 1.0]]], np.float32)  # the spec's soft NMS figures
SOFT_SCORES = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], np.float32)


def _departures(version):
    """(id, boxes, scores, optional inputs, attributes, why) where the spec's thresholds and the
    CPU plugin's part."""
    out = [
        # IoU(0, 1) is exactly iou_threshold: the spec keeps box 1
        (f"nms{version}-iou-equals-threshold", TWO, THREE,
         [np.array(5, np.int64), np.array(0.5, np.float32), np.array(0.0, np.float32)], {}, EQUAL_WHY),
        # box 2 scores exactly score_threshold: the spec takes it
        (f"nms{version}-score-equals-threshold", TWO, THREE,
         [np.array(5, np.int64), np.array(0.7, np.float32), np.array(0.5, np.float32)], {}, SCORE_WHY),
        # the default iou_threshold 0: disjoint boxes (IoU 0) all stay
        (f"nms{version}-max-only", TWO, THREE, [np.array(2, np.int64)], {}, EQUAL_WHY),
    ]
    soft = [np.array(10, np.int32), np.array(0.5, np.float32), np.array(0.0, np.float32)]
    if version == 9:
        # a tiny sigma decays every overlapping box to exactly 0, the score threshold: the spec
        # selects them last, with score 0
        out.append(("nms9-soft-1e-30", SOFT_BOXES, SOFT_SCORES, soft + [np.array(1e-30, np.float32)],
                    {"box_encoding": "center"}, SCORE_WHY))
    if version == 5:
        # -5's soft NMS removes boxes above iou_threshold; the plugin runs it as -9's
        out.append(("nms5-soft-0.5", SOFT_BOXES, SOFT_SCORES, soft + [np.array(0.5, np.float32)],
                    {"box_encoding": "center"}, SOFT5_WHY))
    return out


def _edge_cases():
    out = []
    two, three = TWO, THREE
    for version in (1, 3, 4, 5, 9):
        padded = "; " + PADDED_WHY if version < 5 else ""
        for cid, boxes, scores, extra, attrs, why in _departures(version):
            out.append(_case(cid, version, boxes, scores, extra, attrs=attrs, ulps=4 if len(extra) > 3 else 0,
                             openvino="none", why=why + padded))
        # defaults: no max_output_boxes_per_class selects nothing
        out.append(_case(f"nms{version}-two-inputs", version, two, three))
        # equal scores: the lower box index first (disjoint boxes, so only the order matters)
        ties = np.array([[[0, 10 * k, 1, 10 * k + 1] for k in range(5)]], np.float32)
        out.append(_case(f"nms{version}-equal-scores", version, ties, np.full((1, 2, 5), 0.5, np.float32),
                         [np.array(3, np.int64), np.array(0.5, np.float32), np.array(0.1, np.float32)],
                         attrs={"sort_result_descending": True}))
        # equal scores on overlapping boxes: the lower index is selected, the other suppressed
        same = np.array([[[0, 0, 1, 1], [0, 0, 1, 1.1], [0, 0.05, 1, 1]]], np.float32)
        out.append(_case(f"nms{version}-equal-overlapping", version, same, np.full((1, 1, 3), 0.5, np.float32),
                         [np.array(3, np.int64), np.array(0.5, np.float32)]))
        # empty batches, classes and boxes
        for b, c, n in ((1, 1, 0), (0, 2, 3), (2, 0, 3)):
            out.append(_case(f"nms{version}-empty-{b}x{c}x{n}", version, np.zeros((b, n, 4), np.float32),
                             np.zeros((b, c, n), np.float32), [np.array(3, np.int64), np.array(0.5, np.float32)]))
        # NaN and infinite scores: NaN is never a candidate, +inf always first
        odd = np.array([[[np.nan, np.inf, 0.3, -np.inf, 0.2, 0.6]]], np.float32)
        boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6], [0, 9, 1, 10], [0, 20, 1, 21],
                           [0, 5.2, 1, 6.2]]], np.float32)
        out.append(_case(f"nms{version}-nan-inf-scores", version, boxes, odd,
                         [np.array(6, np.int64), np.array(0.4, np.float32), np.array(-1.0, np.float32)]))
    # more selected boxes than -1/-3's output holds (its size leaves out num_batches)
    rng = np.random.default_rng(9)
    for version in (1, 3):
        boxes = random_boxes(rng, 3, 4, "corner", spread=20).astype(np.float32)
        out.append(_case(f"nms{version}-truncated", version, boxes, rng.uniform(0, 1, (3, 2, 4)).astype(np.float32),
                         [np.array(4, np.int64), np.array(0.5, np.float32)], openvino="none",
                         why="the CPU plugin returns every selected row, past the spec's static size"))
    # soft NMS: the spec's worked figures (the ONNX test boxes) and a tiny sigma
    boxes, scores = SOFT_BOXES, SOFT_SCORES
    for version in (5, 9):
        # -5's sigma 0.5 and -9's 1e-30 are among the departures
        for sigma in ((1e-30, np.inf) if version == 5 else (0.5, np.inf)):
            out.append(_case(f"nms{version}-soft-{sigma}", version, boxes, scores,
                             [np.array(10, np.int32), np.array(0.5, np.float32), np.array(0.0, np.float32),
                              np.array(sigma, np.float32)], attrs={"box_encoding": "center"}, ulps=4))
        # negative scores under soft NMS (the decay raises them towards 0)
        out.append(_case(f"nms{version}-soft-negative", version, boxes, -scores,
                         [np.array(10, np.int32), np.array(0.9, np.float32), np.array(-1.0, np.float32),
                          np.array(0.5, np.float32)], attrs={"box_encoding": "center"}, ulps=4))
        for dtype in (np.float16, ml_dtypes.bfloat16):
            out.append(_case(f"nms{version}-thresholds-{np.dtype(dtype).name}", version, boxes, scores,
                             [np.array(10, np.int64), np.array(0.5, dtype), np.array(0.1, dtype), np.array(0.5, dtype)],
                             attrs={"box_encoding": "center"}, ulps=4, openvino="none", why=TYPE_WHY))
    # a long queue (the step machinery grows its head past 64 candidates)
    rng = np.random.default_rng(2)
    for version in (5, 9):
        boxes = random_boxes(rng, 1, 150, "corner", spread=12).astype(np.float32)
        out.append(_case(f"nms{version}-soft-long", version, boxes, rng.uniform(0, 1, (1, 1, 150)).astype(np.float32),
                         [np.array(60, np.int64), np.array(0.6, np.float32), np.array(0.05, np.float32),
                          np.array(0.3, np.float32)], ulps=4))
    # NaN and infinite box coordinates
    weird = np.array([[[0, 0, 1, 1], [np.nan, 0, 1, 1], [0, 0, np.inf, 1], [0, -np.inf, 1, np.inf], [0, 0, 1, 1.2]]],
                     np.float32)
    for version in (5, 9):
        out.append(_case(f"nms{version}-odd-boxes", version, weird, np.array([[[0.9, 0.8, 0.7, 0.6, 0.5]]], np.float32),
                         [np.array(5, np.int64), np.array(0.5, np.float32)]))
    return out


def _error_cases():
    ok_boxes, ok_scores = np.zeros((1, 2, 4), np.float32), np.zeros((1, 1, 2), np.float32)
    limit = np.array(2, np.int64)
    out = []
    for version in (1, 5):
        out += [
            _case(f"nms{version}-err-boxes-rank", version, np.zeros((2, 4), np.float32), ok_scores,
                  error="nms-boxes-shape"),
            _case(f"nms{version}-err-boxes-last", version, np.zeros((1, 2, 3), np.float32), ok_scores,
                  error="nms-boxes-shape"),
            _case(f"nms{version}-err-scores-rank", version, ok_boxes, np.zeros((1, 2), np.float32),
                  error="nms-scores-shape"),
            _case(f"nms{version}-err-scores-boxes", version, ok_boxes, np.zeros((1, 1, 3), np.float32),
                  error="nms-scores-shape"),
            _case(f"nms{version}-err-f64", version, ok_boxes.astype(np.float64), ok_scores, error="nms-type"),
            _case(f"nms{version}-err-max-float", version, ok_boxes, ok_scores, [np.array(2.0, np.float32)],
                  error="nms-type"),
            _case(f"nms{version}-err-thr-int", version, ok_boxes, ok_scores, [limit, np.array(1, np.int32)],
                  error="nms-type"),
            _case(f"nms{version}-err-negative-max", version, ok_boxes, ok_scores, [np.array(-1, np.int64)],
                  error="nms-max-boxes"),
            _case(f"nms{version}-err-thr-shape", version, ok_boxes, ok_scores,
                  [limit, np.array([0.5, 0.6], np.float32)], error="nms-scalar"),
            _case(f"nms{version}-err-encoding", version, ok_boxes, ok_scores, attrs={"box_encoding": "corners"},
                  error="attributes"),
        ]
    out.append(_case("nms1-err-vector-threshold", 1, ok_boxes, ok_scores, [limit, np.array([0.5], np.float32)],
                     error="nms-scalar"))
    out.append(_case("nms9-err-output-type", 9, ok_boxes, ok_scores, attrs={"output_type": "i16"},
                     error="attributes"))
    return out


CASES = _random_cases() + _full_cases() + _edge_cases()
ERRORS = _error_cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_non_max_suppression(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_non_max_suppression_refused(case):
    harness.check(case, ERRORS)


def _cpu_cases():
    return [_case(cid + "-cpu", version, boxes, scores, extra, attrs=attrs, ulps=4 if len(extra) > 3 else 0,
                  openvino="cpu")
            for version in (1, 3, 4, 5, 9) for cid, boxes, scores, extra, attrs, _ in _departures(version)]


CPU_CASES = _cpu_cases()


def _oracle_rule(case, rule):
    version = int(case.opset.removeprefix("opset"))
    out = oracle.non_max_suppression(*(i.value for i in case.inputs), version=version,
                                     box_encoding=case.attrs.get("box_encoding", "corner"), rule=rule)
    if version < 5:  # the plugin returns only the selected rows, unpadded
        return [out[(out != -1).any(axis=1)]]
    return list(out)


@pytest.mark.parametrize("case", CPU_CASES, ids=str)
def test_non_max_suppression_cpu_plugin_departs(case):
    """What OpenVINO's CPU plugin does where it departs from the spec's thresholds (the oracle's
    rule="cpu"), on inputs where that differs from the spec's answer."""
    got = harness.run_openvino(case, CPU_CASES)
    want = _oracle_rule(case, "cpu")
    spec = _oracle_rule(case, "spec")
    assert any(w.shape != s.shape or (w != s).any() for w, s in zip(want, spec)), "no departure here"
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        harness.assert_close(g, w, ulps=case.ulps * 2 + 2 if case.ulps else 0, what=f"output {k}")


def test_lazy_queue_equals_greedy_without_soft_nms():
    """The soft-NMS step machinery, run on a hard NMS, selects what greedy suppression does."""
    from irscatter.ops.suppression import non_max_suppression as nms

    rng = np.random.default_rng(1)
    for _ in range(4):
        boxes = random_boxes(rng, 1, 200, "corner", spread=12)[0].astype(np.float32)
        scores = np.round(rng.uniform(0, 1, 200), 1).astype(np.float32)  # many equal scores
        for ignores in (True, False):
            # many scores equal to the score threshold, too
            rule = nms.Rule(0.4, 0.1, 0.0, soft_ignores_iou=ignores)
            geometry = nms.AxisAligned(nms.ordered_corners(boxes))
            fast = nms.select_class(geometry, scores, 70, rule)
            candidates = np.flatnonzero(scores >= rule.score_threshold)
            slow = nms._select_lazily(geometry, candidates, scores[candidates], 70, rule)
            assert len(fast[0]) > 30
            assert fast[0].tolist() == slow[0].tolist() and fast[1].tolist() == slow[1].tolist()
