"""Finding what went wrong: irscatter as the reference that other runtimes are judged against.

It sits beside `api.py`, above the runtime, and may drive other runtimes through
`irscatter.targets`:

* `metrics`: how far one tensor is from another (absolute, relative, ulp, cosine, NRMSE) and
  the tolerance presets a comparison judges by;
* `compare`: irscatter's values of every tensor against a target's, layer by layer (each
  layer run alone on the target, fed irscatter's inputs) or on the whole model, with a
  bisection over the graph to find the first layer that diverges;
* `tolerances`: which tolerance judges which tensor (the presets of the precision a target ran,
  `--tol`'s overrides); `verdicts`: the report every comparison makes, and its text;
* `dump_compare`: two saved sets of tensors from any runtime, judged key by key;
* `onnx_compare`: an IR converted from ONNX against the ONNX model on onnxruntime, every
  tensor matched through the ONNX value names the IR's ports keep;
* `two_models`: two IRs of one model (an original and its compressed or converted form), both
  run by irscatter, matched tensor by tensor and judged by the same rule;
* `html`: a comparison's report as one self-contained HTML page (a chart of every layer's
  error along the topological order, a sortable table), drawn with matplotlib when installed;
* `dump`: saving intermediate values, their statistics, and the first layer that turns finite
  inputs into NaN or infinity;
* `precision_search`: the layers that must stay in f32 for a model to pass on a target inferring
  in f16 or bf16, written into the model as the rt_info mark OpenVINO keeps them in f32 for;
* `campaign`: every model (or every distinct layer) of a corpus judged on a target, each in a
  process of its own, on a local pool or a Ray cluster, with the results in SQLite.
"""
