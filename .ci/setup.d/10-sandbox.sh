# Sandbox: libseccomp, which the pyseccomp bindings load to build the one seccomp
# allowlist (sandbox/policy/seccomp.py) for bubblewrap. Debian's apt already depends on
# it, so this is usually a no-op; idempotent either way.
if ! ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; then
  apt-get ${APT_CONFIG_LOCK_WAIT:-} install -y -q --no-install-recommends libseccomp2 >/dev/null
fi
