# The notebook's optional semantic index (lessons/read/semantic.py): the `semantic` extra
# (numpy, threadpoolctl, and wordllama, whose wheel carries its model). Only from the
# registries; when they cannot be reached, the semantic tests skip and the lexical
# notebook is tested as always.
if .venv/bin/python -c "import numpy, wordllama, threadpoolctl" 2>/dev/null; then
  echo "semantic extra already installed"
elif .venv/bin/python -m pip install --quiet -e '.[semantic]'; then
  echo "semantic extra installed"
else
  echo "semantic extra not installed (registry unreachable?): its tests will skip" >&2
fi
