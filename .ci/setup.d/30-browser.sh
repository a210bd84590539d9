# A headless browser for the HTML export's tests: Debian's chromium, driven by
# Playwright for Python with the system browser (Playwright's own browser download
# is not reachable here). Sourced by .ci/run; idempotent.
if ! command -v chromium >/dev/null 2>&1; then
  apt-get ${APT_CONFIG_LOCK_WAIT:-} install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
export CONDUCTOR_CHROMIUM="${CONDUCTOR_CHROMIUM:-$(command -v chromium)}"
chromium --version
export CONDUCTOR_REQUIRE_BROWSER=1
