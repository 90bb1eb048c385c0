"""Checks over a whole graph: shape and type inference (`infer`) and conformance findings
(`conformance`, behind `validate`; `strict`, the kernel probes of `validate --strict`). They sit above the op library, whose inference they run, and
below the runtime, which compiles a model only after they pass."""
