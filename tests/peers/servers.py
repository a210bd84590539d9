"""Real model servers started for tests/peers: llama.cpp's llama-server with
SmolLM2-135M-Instruct, and LiteLLM's proxy with deterministic mock models.

`.ci/setup.d/20-model-peers.sh` builds and caches them and exports where they are;
tests skip without them (fail under CONDUCTOR_REQUIRE_PEERS=1). Every server listens
on 127.0.0.1 on a free port and writes its log to a file the tests read.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

# Read at import: the autouse home fixture removes CONDUCTOR_* variables from each test.
ENV = {
    k: os.environ.get(k, "")
    for k in (
        "CONDUCTOR_PEERS_CACHE",
        "CONDUCTOR_LLAMA_SERVER",
        "CONDUCTOR_SMOLLM2_GGUF",
        "CONDUCTOR_LITELLM",
        "CONDUCTOR_REQUIRE_PEERS",
    )
}
CACHE = Path(ENV["CONDUCTOR_PEERS_CACHE"] or Path.home() / ".cache" / "conductor-peers")
REQUIRE = "CONDUCTOR_REQUIRE_PEERS"
MODEL_ALIAS = "smollm2"

# The LiteLLM mock models: each always answers the same, at once.
MOCKS = {
    "mock-answer": '>> FINAL ANSWER:\n"""\n42\n"""',
    "mock-expert": 'Expert Mathematician:\n"""\nWhat is 6 times 7?\n"""',
    "mock-ignore": "I like turtles. Here is a poem about the sea instead of an answer.",
    "mock-python": 'Expert Python:\n"""\n```python\nprint(6 * 7)\n```\nPlease run this code!\n"""',
    "mock-empty": " ",  # LiteLLM treats "" as no mock at all
    "mock-500": "litellm.InternalServerError",
}


def _die_with_parent() -> None:
    """In the child before exec: be sent SIGTERM when the test process dies, so a
    killed test run leaves no server behind (Linux; elsewhere a no-op)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_llama_server() -> tuple[Path, Path] | None:
    """(llama-server binary, SmolLM2 GGUF), from the environment or the CI cache."""
    binary = ENV["CONDUCTOR_LLAMA_SERVER"]
    model = ENV["CONDUCTOR_SMOLLM2_GGUF"]
    found_bin = (
        Path(binary) if binary else next(CACHE.glob("llama-cpp-python-*/llama-server"), None)
    )
    found_model = Path(model) if model else CACHE / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if found_bin and found_bin.exists() and found_model.exists():
        return found_bin, found_model
    return None


def find_qwen() -> Path | None:
    """Qwen2.5-Coder-1.5B-Instruct's GGUF, if someone put it in the cache (the set-up
    script does not: 1.1 GB)."""
    found = CACHE / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    return found if found.exists() else None


def find_litellm() -> Path | None:
    env = ENV["CONDUCTOR_LITELLM"]
    if env:
        return Path(env) if Path(env).exists() else None
    return next(iter(sorted(CACHE.glob("litellm-*-venv/bin/litellm"), reverse=True)), None)


def _get(url: str, timeout: float = 2.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.status, reply.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


@dataclass
class Peer:
    """One running server: its process, address and log."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    _log: object = field(default=None, repr=False)
    key: str = "unused"  # the API key clients must send

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"{self.root}/v1"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self, path: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited {self.process.returncode}:\n{self.log()[-3000:]}"
                )
            status, _ = _get(self.root + path)
            if status == 200:
                return
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.name} not ready in {timeout:g} s:\n{self.log()[-3000:]}")

    def kill(self) -> None:
        """kill -9: the server dies mid-whatever, as a crash would."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


class LlamaServer(Peer):
    def metric(self, name: str) -> float:
        """One Prometheus counter from /metrics (e.g. `tokens_predicted_total`)."""
        _, text = _get(self.root + "/metrics")
        match = re.search(rf"^llamacpp:{re.escape(name)} ([0-9.e+-]+)$", text, re.M)
        return float(match.group(1)) if match else 0.0

    def idle(self) -> bool:
        _, text = _get(self.root + "/metrics")
        match = re.search(r"^llamacpp:requests_processing ([0-9.]+)$", text, re.M)
        return match is not None and float(match.group(1)) == 0

    def wait_idle(self, timeout: float) -> bool:
        """True once no request is being processed (bounded wait, not a timing check)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.idle():
                return True
            time.sleep(0.1)
        return False


def start_llama_server(
    binary: Path,
    model: Path,
    workdir: Path,
    *,
    slots: int = 2,
    extra: tuple[str, ...] = (),
    alias: str = MODEL_ALIAS,
    threads: int = 1,
) -> LlamaServer:
    """`extra` flags go last (`--jinja`: the chat template renders tools)."""
    port = free_port()
    log_path = workdir / f"llama-server-{port}.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [
            str(binary),
            "-m", str(model),
            "--alias", alias,
            "--host", "127.0.0.1",
            "--port", str(port),
            "-c", str(4096 * slots),
            "-np", str(slots),
            "-t", str(threads),
            "--temp", "0",
            "--seed", "1",
            "--metrics",
            "--no-webui",
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )  # fmt: skip
    server = LlamaServer("llama-server", process, port, log_path, log)
    server.wait_ready("/health", timeout=60)
    return server


def litellm_config(llama_url: str | None) -> str:
    """The proxy's model list: the mocks, and a route to llama-server's model."""
    lines = ["model_list:"]
    for name, reply in MOCKS.items():
        quoted = reply.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines += [
            f"  - model_name: {name}",
            "    litellm_params:",
            f"      model: openai/{name}",
            "      api_key: unused",
            f'      mock_response: "{quoted}"',
        ]
    if llama_url:
        lines += [
            f"  - model_name: {MODEL_ALIAS}",
            "    litellm_params:",
            f"      model: openai/{MODEL_ALIAS}",
            f"      api_base: {llama_url}",
            "      api_key: unused",
        ]
    lines += ["litellm_settings:", "  drop_params: true", "  telemetry: false", "  num_retries: 0"]
    lines += ["router_settings:", "  num_retries: 0"]
    return "\n".join(lines) + "\n"


def start_litellm(
    binary: Path, workdir: Path, llama_url: str | None, *, model_list: str | None = None
) -> Peer:
    """The proxy with the mocks and llama-server's route, or `model_list` (YAML) instead."""
    port = free_port()
    config = workdir / f"litellm-{port}.yaml"
    config.write_text(model_list or litellm_config(llama_url), encoding="utf-8")
    log_path = workdir / f"litellm-{port}.log"
    log = log_path.open("wb")
    key = "sk-" + secrets.token_hex(16)  # the proxy refuses to start without a master key
    env = dict(
        os.environ,
        LITELLM_MASTER_KEY=key,
        LITELLM_TELEMETRY="False",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_LOG="INFO",
        NO_DOCS="True",
    )
    env.pop("DATABASE_URL", None)
    process = subprocess.Popen(
        [str(binary), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=workdir,
        preexec_fn=_die_with_parent,
    )
    peer = Peer("litellm", process, port, log_path, log, key)
    peer.wait_ready("/health/liveliness", timeout=180)
    return peer
