# The MCP Inspector's command-line mode (npm: @modelcontextprotocol/inspector) lists and
# calls every tool and resource of `conductor mcp` in a test: a client we did not write.
# Sourced by .ci/run; cached between runs.
INSPECTOR_DIR="${HOME}/.cache/conductor-peers/mcp-inspector-0.15.0"
if [ ! -x "$INSPECTOR_DIR/node_modules/.bin/mcp-inspector" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    apt-get ${APT_CONFIG_LOCK_WAIT:-} install -y -q --no-install-recommends nodejs npm >/dev/null
  fi
  mkdir -p "$INSPECTOR_DIR"
  npm install --prefix "$INSPECTOR_DIR" --silent --no-audit --no-fund \
    @modelcontextprotocol/inspector@0.15.0
fi
export CONDUCTOR_MCP_INSPECTOR="$INSPECTOR_DIR/node_modules/.bin/mcp-inspector"
export CONDUCTOR_REQUIRE_MCP_INSPECTOR=1
echo "mcp inspector: $CONDUCTOR_MCP_INSPECTOR"
