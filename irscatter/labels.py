"""Every label irscatter attaches to an error or a finding, with what it means.

A label names the rule that failed; `validate` prints it in brackets and `--json` as `code`, and
it does not change between releases. The labels of the model as a whole (the XML, the graph,
the weights, the feeds, the limits) and those that many ops share are here. A label that only
one op raises is in that op's own table (`Op.labels`), beside the code that checks it.
`irscatter ops --json` lists both; `tests/test_labels.py` holds that every label raised is
declared and every label declared is raised.
"""

from __future__ import annotations

SHARED: dict[str, str] = {
    # the file and the XML document
    "xml-size": "the .xml file is larger than the xml_bytes limit",
    "xml-elements": "the document has more elements than the xml_elements limit",
    "xml-depth": "elements nest deeper than the xml_depth limit",
    "xml-attributes": "an element has more attributes than the xml_attributes limit",
    "xml-malformed": "the file is not well-formed XML, or holds no element",
    "doctype": "the document declares a DTD or entities, which IR files never need",
    "net-root": "the root element is not <net>",
    "net-version": "<net> has no IR version, or one other than 10 and 11",
    "layer-attribute": "a <layer> lacks a mandatory attribute or has a malformed one",
    "port-attribute": "a <port> lacks its id or has one that is not a non-negative integer",
    "edge-attribute": "an <edge> lacks one of its four ids or has one that is not a non-negative integer",
    "port-dim": "a port's <dim> is not a size (a non-negative integer, -1 or ?)",
    "port-precision": "a port's precision is not an element type",
    "body-depth": "sub-graph bodies nest deeper than the body_depth limit",
    "duplicate-element": "an element the format allows once where it stands (<data>, <input>, <output>, <body>, "
                         "<layers>, <edges>, ...) is given twice",
    "misplaced-element": "a <layer> stands outside the <layers> of the model or of a body",
    "duplicate-port": "two ports of one layer (inputs and outputs together) share an id",
    # weights
    "no-weights": "a Const needs bytes from a weights file and there is none",
    "const-size": "a Const's size attribute disagrees with its shape and element type",
    "const-range": "a Const's bytes lie past the end of the weights file",
    "const-data": "a Const has no data to read",
    "const-attribute": "a Const's element_type, shape, offset or size is missing or malformed",
    "const-strings": "a string Const's packed bytes (count, end offsets) do not hold the strings of its shape",
    "weights-changed": "the weights file changed (written to, cut short, removed or replaced) after the model was read",
    # op resolution (ops/registry.py, from the opset tables in ir/opsets.py)
    "unknown-opset": "the layer's version names no opset OpenVINO has",
    "not-in-opset": "the opset holds no op of the layer's type",
    "no-kernel": "an OpenVINO op that irscatter has no kernel for yet",
    "custom-domain": "an opset outside OpenVINO's with no ops registered for it",
    "draft-op": "an op version that only the spec pages of an opset still being defined describe: the pinned "
                "OpenVINO refuses it",
    "no-runtime": "a layer with a <body> was compiled without irscatter's runtime loaded",
    # a layer against its op's declaration
    "attributes": "an attribute is missing, or its value is not one the op's schema allows",
    "input-count": "the layer has more or fewer inputs than the op takes",
    "output-count": "the layer declares more or fewer outputs than the op has",
    "invalid": "the layer breaks a rule of its op (the message says which)",
    "inference": "shape or type inference failed on the layer (the message says why)",
    # the graph
    "no-result": "the model has no Result, so nothing is computed",
    "unconnected-input": "an input port of a layer has no edge into it",
    "cycle": "the graph has a cycle",
    "duplicate-layer-id": "two layers share one id",
    "duplicate-edge": "one edge is listed twice",
    "duplicate-input": "an input port has more than one incoming edge",
    "dangling-edge": "an edge names a layer or port that does not exist",
    "unreachable": "a layer contributes to no Result",
    "declared-shape": "a port's declared dims disagree with the inferred shape",
    "declared-precision": "a port's declared precision disagrees with the inferred element type",
    # control flow (If, Loop, TensorIterator: ops/control/core.py)
    "no-body": "the layer has no <body> (or then_body/else_body) to run",
    "port-map": "a <port_map> entry names a port the layer lacks or a body layer of the wrong type",
    "back-edge": "a back edge does not run from a body Result to a body Parameter",
    "body-input-type": "a tensor mapped onto a body Parameter has another element type than the Parameter",
    "slice-axis": "a sliced input or concatenated output names an axis its tensor lacks",
    "slice-parts": "a sliced input's start, end, stride and part_size do not cut its axis into whole parts",
    "iteration-count": "the number of iterations cannot be told from the sliced inputs",
    "back-edge-type": "a back edge feeds a value of another element type than the Parameter's",
    "no-iteration-value": "the body never ran, so an output that is not a Parameter's value has no value",
    # model state (ReadValue, Assign and the compiled model's variables)
    "variable-id": "a ReadValue or Assign has an empty variable_id",
    "variable-type": "a variable's value (initial, assigned or set) has an element type other than the variable's",
    "variable-shape": "a variable's value (initial, assigned or set) has a shape the variable's shape does not allow",
    "variable-pair": "a variable is read by more than one ReadValue, or assigned by more than one Assign",
    "unknown-variable": "an Assign, or a state set through the API, names a variable no ReadValue declares",
    "state-busy": "a stateful model is run again from inside one of its own runs, in the same thread",
    # limits and running
    "tensor-limit": "a tensor would be larger than the tensor_elements or tensor_bytes limit",
    "rank-limit": "a layer's output would have more than the 64 dimensions an array can have",
    "out-of-memory": "the machine could not allocate an output",
    "iteration-limit": "the Loops and TensorIterators of a run, nested ones included, would make more iterations "
                       "than the loop_iterations limit",
    "pipe-wait": "a named pipe given as the model file was not written to its end within the pipe_wait_seconds "
                 "limit",
    "unknown-input": "a feed names no Parameter of the model",
    "unknown-output": "a requested output names no tensor of the model",
    "fed-twice": "one Parameter is fed twice (by name and by position)",
    "missing-input": "a Parameter is not fed",
    "feed-dtype": "a feed's element type differs from its Parameter's",
    "feed-shape": "a feed's shape does not fit its Parameter's",
    "region-ops": "a combiner <body> holds ops that are not element-wise",
    "region-scalars": "a combiner <body>'s Parameters or Results are not scalars",
    # rules many ops share (ops/common, ops/elementwise/table.py)
    "same-element-type": "inputs that must share one element type do not",
    "no-string-conversion": "a string tensor converts to no other type, and no other type to string",
    "numeric-type": "the op is not defined for boolean or string tensors",
    "signed-type": "the op takes floats and signed integers only",
    "float-type": "the op takes floating-point types only",
    "integer-type": "the op takes integer types only",
    "boolean-type": "the op takes boolean tensors only",
    "broadcast": "the input shapes do not broadcast by the auto_broadcast rule",
    "axis-type": "an axis input is not of an integer type",
    "axis-shape": "an axis input is not a scalar or a 1-element tensor",
    "axis-range": "an axis lies outside [-rank, rank-1]",
    "axes-type": "an axes input is not of an integer type",
    "axes-rank": "an axes input is not a scalar or a 1-D tensor",
    "axes-unique": "an axes input names one axis twice",
    "axes-vector": "an axes input is not a 1-D tensor",
    "axes-count": "an axes input names more axes than the data has",
    "channel-shape": "a per-channel input is not a 1-D tensor as long as the data's channel axis",
    "indices-type": "indices are not of an integer type",
    "index-range": "an index lies outside the range the op allows",
    # strict mode (ops/common/strict.py): behaviour the spec leaves undefined, reported, not refused
    "duplicate-indices": "strict mode: two indices write one place without a reduction, which the spec leaves "
                         "undefined",
    "negative-index": "strict mode: a negative index where the op's spec expects [0, d-1]",
    "data-rank": "the data input has a rank the op does not take",
    "indices-rank": "the indices have a rank the op does not take",
    "updates-shape": "the updates' shape is not the one the data and indices require",
    "batch-dims-range": "batch_dims lies outside the range the op allows",
    "batch-shape": "the batch dimensions of data and indices differ",
    "index-depth": "the last dimension of the indices is longer than the data's rank allows",
    "indices-shape": "the indices do not have the shape the op requires",
    "updates-type": "the updates' element type differs from the data's",
    "updates-rank": "the updates have a rank the op does not take",
    "mean-boolean": "the mean reduction is not defined for booleans",
    "index-type": "an index input has an element type the op does not take",
    "index-rank": "an index input has a rank the op does not take",
    "output-type": "the requested output element type is not one the op can produce",
    "start-type": "a slice's start is not of an integer type",
    "start-rank": "a slice's start is not a 1-D tensor",
    "stop-type": "a slice's stop is not of an integer type",
    "stop-rank": "a slice's stop is not a 1-D tensor",
    "step-type": "a slice's step is not of an integer type",
    "step-rank": "a slice's step is not a 1-D tensor",
    "sizes": "a slice's start, stop, step and axes have different lengths",
    "scalar-input": "an input the op takes as one value (alpha, beta, lambda) is not a scalar or one element",
    # pooling (ops/pooling/core.py)
    "pool-attribute-size": "a pooling kernel, strides, dilations or pads attribute has not one value per spatial axis",
    "pool-attribute-value": "a pooling kernel, stride or dilation is below 1, or a pad is negative",
    "pool-window-size": "a pooling kernel (dilated) spans more than the padded input along an axis",
    "pool-empty-batch": "the input of a MaxPool or AvgPool has a batch or channel dimension of 0",
    "output-size-type": "an adaptive pooling's output_size is not of type i32 or i64",
    "output-size-shape": "an adaptive pooling's output_size is not a 1-D tensor with one value per spatial axis",
    "output-size-value": "an adaptive pooling's output_size is negative, or asks for bins over an empty axis",
    # the recurrent cells and sequences (ops/recurrent/core.py)
    "recurrent-rank": "an input of a recurrent cell or sequence does not have the rank the op takes",
    "recurrent-shape": "the batch, input, hidden or num_directions dimensions of a recurrent op's inputs disagree "
                       "with each other, with hidden_size or with direction",
    "recurrent-activations": "a recurrent op names fewer activation functions than it applies",
    "recurrent-clip": "a recurrent op's clip is negative or NaN",
    "sequence-lengths-type": "sequence_lengths is not of an integer type",
    "sequence-lengths-range": "a sequence length lies outside [0, seq_length]",
    "conv-rank": "a convolution's data does not have 1, 2 or 3 spatial axes",
    "conv-filter-rank": "a convolution's filters do not have the rank the data's requires",
    "conv-channels": "a convolution's data channels do not match its filters' (or groups)",
    "conv-attribute-length": "a convolution's strides, dilations, pads or output_padding lack one value per spatial axis",
    "conv-attribute-range": "a convolution's strides or dilations are below 1, or its pads or output_padding below 0",
    "conv-window": "a convolution's dilated kernel is empty or larger than the padded input",
    "conv-type": "a convolution's element type is one it does not compute (boolean, string, packed, 8-bit floats)",
    "conv-output-shape": "a transposed convolution's output_shape is not a 1-D integer tensor of one size >= 0 per spatial axis",
    "conv-output-size": "a transposed convolution's pads crop its output below size 0",
    # the embedding bags and segment reductions (ops/sparse/core.py)
    "weights-shape": "per_sample_weights does not have the shape of the indices",
    "mean-weights": "per_sample_weights is given with reduction mean, which takes none",
    "bag-offsets": "an embedding bag's offsets decrease, or lie outside [0, number of indices]",
    "segment-count": "num_segments is negative",
    # the Fourier transforms (ops/signal/core.py)
    "complex-shape": "a complex input (real, imaginary pairs) does not have a last dimension of 2",
    "axes-empty": "an axes input names no axis, where the op transforms at least one",
    "signal-size-type": "a signal_size input is not of type i32 or i64",
    "signal-size-shape": "a signal_size input is not a 1-D tensor with one value per axis",
    "signal-size-value": "a signal_size value is below -1",
    "frame-type": "frame_size or frame_step is not of type i32 or i64",
    "frame-shape": "frame_size or frame_step is not a scalar",
    "frame-value": "frame_size or frame_step is not positive, or a frame is longer than the signal",
    "window-shape": "a window is not 1-D, is empty, or is longer than frame_size",
    # the block-moving ops (ops/spatial/core.py)
    "block-size": "a DepthToSpace or SpaceToDepth block_size is below 1",
    "block-input-type": "block_shape and the crops or pads are not of one integer type",
    "block-input-shape": "block_shape and the crops or pads are not 1-D tensors with one value per data axis",
    "block-shape-value": "a block_shape value is below 1, or block_shape[0] (the batch axis) is not 1",
    # the colour conversions (ops/image/core.py)
    "image-type": "a colour conversion's element type is not u8 or a floating-point type",
    "image-rank": "an input of a colour conversion does not have 4 dimensions (N, H, W, C)",
    "image-channels": "an input of a colour conversion has another number of channels than its plane or format has",
    "image-planes": "the planes of an NV12 or I420 frame disagree in batch, or the chroma planes are not half "
                    "the Y plane's height and width",
    "image-height": "a colour conversion's image height is odd, or a single NV12/I420 plane's height is not "
                    "3/2 of an even image height",
    "image-width": "a colour conversion's image width is odd",
    # the CTC decoders and loss (ops/sequence)
    "ctc-shape": "an input of a CTC op does not have the rank it takes, or their batch or time dimensions disagree",
    "ctc-index-type": "a length, labels or blank_index input of a CTC op is not of type i32 or i64",
    "ctc-classes": "a CTC decoder has a step to decode over 0 classes",
    # MatrixNms and MulticlassNms (ops/suppression)
    "nms-boxes-shape": "NMS boxes are not a [batches or classes, boxes, 4] tensor ([batches, boxes, 5] for rotated "
                       "boxes)",
    "nms-scores-shape": "NMS scores do not have the rank the op's form takes, or disagree with the boxes' dims",
    "nms-attribute-range": "an NMS attribute lies outside its range (nms_top_k, keep_top_k or background_class "
                           "below -1, nms_eta outside [0, 1])",
    # NonMaxSuppression and NMSRotated (ops/suppression)
    "nms-type": "NMS boxes, scores or thresholds are not f32, f16 or bf16, or max_output_boxes_per_class is "
                "not of an integer type",
    "nms-scalar": "an NMS max_output_boxes_per_class or threshold is not a scalar (or a 1-element 1-D tensor, "
                  "where the op allows one)",
    "nms-max-boxes": "an NMS max_output_boxes_per_class is negative",
    # ROIPooling and ROIAlign (ops/roi)
    "rois-shape": "the rois input is not a 2-D tensor with one row of the op's box values per region",
    "pooled-size": "pooled_h or pooled_w is below the least the op takes (1, or 0 where the spec allows it)",
    "spatial-scale": "spatial_scale is not a positive, finite f32 number",
    # PSROIPooling and DeformablePSROIPooling (ops/roi)
    "psroi-attribute": "a position-sensitive pooling's output_dim, group_size, spatial_bins_x, spatial_bins_y or "
                       "part_size is below 1",
    "psroi-channels": "the data's channels are not output_dim * group_size^2 (output_dim * spatial_bins_x * "
                      "spatial_bins_y in PSROIPooling's bilinear mode)",
    # PriorBox and PriorBoxClustered (ops/detection)
    "prior-size-type": "a prior box op's output_size or image_size is not of an integer type",
    "prior-size-shape": "a prior box op's output_size or image_size is not a 1-D tensor of two values",
    "prior-size-value": "a prior box op's output_size has a negative value",
    "prior-variance": "a prior box op's variance has other than 0, 1 or 4 values, or a negative one",
    # string tensors (ops/strings)
    "string-utf8": "a string's bytes are not valid UTF-8 (or a string holds a lone surrogate, which UTF-8 cannot "
                   "encode): irscatter's string tensors hold text",
}

# The codes `validate` uses for an error that carries no label of its own: its kind.
KINDS: dict[str, str] = {
    "load": "the file could not be read as an IR (the message says why)",
    "security": "the file asks for something irscatter refuses on principle",
    "validation": "the model breaks a rule (the message says which)",
    "execution": "a kernel could not compute its output (the message says why)",
    "usage": "the command line or API call is malformed",
    "error": "any other error irscatter reports about a model",
}
