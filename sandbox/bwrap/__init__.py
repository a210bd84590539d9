"""The bubblewrap backend, for machines without a Docker engine: the same runner in
unshared namespaces, its own cgroup and the seccomp allowlist.
"""
