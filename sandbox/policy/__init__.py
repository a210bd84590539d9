"""What a cell may do, shared by both backends: the seccomp allowlist and the cgroup limits."""
