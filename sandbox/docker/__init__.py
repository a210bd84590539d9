"""The Docker backend: a warm pool of hardened containers, each with a pre-forked runner."""
