# The new-user tests drive the TUI in a real terminal (tmux) and simulate a fresh
# machine by unpacking bubblewrap's Debian package (apt-get download, dpkg-deb).
# Sourced by .ci/run; idempotent.
if ! command -v tmux >/dev/null 2>&1; then
  apt-get ${APT_CONFIG_LOCK_WAIT:-} install -y -q --no-install-recommends tmux >/dev/null
fi
tmux -V
export CONDUCTOR_REQUIRE_TMUX=1
