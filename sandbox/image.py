"""The sandbox image: its recipe, its tag, and the two ways to build it.

Online, `docker build` runs sandbox/Dockerfile (a slim Python base plus numpy and
sympy from PyPI). Offline, debootstrap makes a Debian root file system with Debian's
python3, numpy and sympy; we add the non-root user and the runner and `docker import`
it. Either way the image is tagged by a hash of its recipe, so the backend looks for
exactly one tag and a changed runner can never run in a stale image. Nothing here
pulls at run time: the backend only ever *looks* for the tag.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from conductor_kernel.errors import UserFacingError

# Bump when the build steps change in a way the hashed files do not show.
RECIPE_VERSION = "1"
IMAGE_REPO = "conductor-sandbox"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = ("python3", "python3-numpy", "python3-sympy")
SANDBOX_UID = 10001
WORKDIR = "/work"
# Nowhere a cell can write: what one cell plants in HOME must not shape the next.
HOME = "/nonexistent"
RUNNER_DIR_IN_IMAGE = "/opt/conductor"
RUNNER_IN_IMAGE = RUNNER_DIR_IN_IMAGE + "/main.py"
IMAGE_PATH_ENV = "/usr/local/bin:/usr/bin:/bin"

HERE = Path(__file__).resolve().parent
RUNNER_SOURCE = HERE / "runner" / "main.py"
# The runner and its companions (sandbox/runner/), copied side by side into RUNNER_DIR_IN_IMAGE.
RUNNER_FILES = (RUNNER_SOURCE, HERE / "runner" / "supervise.py", HERE / "runner" / "child.py")
DOCKERFILE = HERE / "Dockerfile"

# Parts of the debootstrap tree that a sandbox never needs: package caches and lists,
# docs, and the device/proc/sys trees that Docker and bubblewrap provide themselves.
_ROOTFS_EXCLUDES = (
    "./dev/*",
    "./proc/*",
    "./sys/*",
    "./var/cache/apt/*",
    "./var/lib/apt/lists/*",
    "./usr/share/doc/*",
    "./usr/share/man/*",
    "./usr/share/locale/*",
    "./usr/share/info/*",
)

Progress = Callable[[str], None]
BuildMode = Literal["auto", "online", "offline"]


class ImageBuildError(UserFacingError):
    """The sandbox image could not be built; the message says what to try."""


def recipe_hash() -> str:
    """12 hex digits naming everything that goes into the image.

    Computed once per process (per file pair), so a process keeps using the tag it
    started with even if the runner source is edited under it.
    """
    return _hash_of((RUNNER_SOURCE, *RUNNER_FILES[1:]), DOCKERFILE)


@functools.lru_cache(maxsize=8)
def _hash_of(runner_files: tuple[Path, ...], dockerfile: Path) -> str:
    digest = hashlib.sha256()
    for part in (
        RECIPE_VERSION.encode(),
        SUITE.encode(),
        " ".join(DEBIAN_PACKAGES).encode(),
        *(path.read_bytes() for path in runner_files),
        dockerfile.read_bytes(),
    ):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:12]


def image_tag() -> str:
    return f"{IMAGE_REPO}:{recipe_hash()}"


def sandbox_home() -> Path:
    """Where sandbox build artefacts live: $CONDUCTOR_SANDBOX_CACHE, else $CONDUCTOR_HOME/sandbox.

    The separate variable lets tests, which isolate CONDUCTOR_HOME, share one build.
    """
    cache = os.environ.get("CONDUCTOR_SANDBOX_CACHE")
    if cache:
        return Path(cache)
    home = os.environ.get("CONDUCTOR_HOME")
    if not home:
        import platformdirs

        home = platformdirs.user_data_dir("conductor")
    return Path(home) / "sandbox"


def rootfs_path() -> Path | None:
    """The unpacked offline root file system (for bubblewrap), if one was built."""
    root = sandbox_home() / "rootfs"
    return root if (root / "usr" / "bin" / "python3").exists() else None


def build_image(
    client: Any,
    *,
    mode: BuildMode = "auto",
    cache_dir: Path | None = None,
    mirror: str = DEFAULT_MIRROR,
    force: bool = False,
    rootfs_dir: Path | None = None,
    progress: Progress = print,
) -> str:
    """Build the sandbox image unless its tag exists; return the tag.

    An offline build also unpacks the tree into `rootfs_dir` (default
    $CONDUCTOR_HOME/sandbox/rootfs) for the bubblewrap backend.
    """
    import docker.errors

    tag = image_tag()
    if not force:
        try:
            client.images.get(tag)
            progress(f"image {tag} is already built")
            return tag
        except docker.errors.ImageNotFound:
            pass
    if mode == "auto":
        # No probing of outside hosts: offline needs only Debian's mirror; --online is opt-in.
        mode = "offline"
        progress("no --online/--offline given: building offline (pass --online for the Dockerfile)")
    if mode == "online":
        _build_online(client, tag, progress)
    else:
        rootfs = rootfs_dir or sandbox_home() / "rootfs"
        _build_offline(client, tag, cache_dir or sandbox_home(), mirror, rootfs, progress)
    progress(f"built {tag}")
    stale = [t for i in client.images.list(name=IMAGE_REPO) for t in i.tags if t != tag]
    if stale:
        progress(f"older sandbox images ({', '.join(stale)}) can go: `docker rmi` them")
    return tag


def _build_online(client: Any, tag: str, progress: Progress) -> None:
    import docker.errors

    with tempfile.TemporaryDirectory(prefix="conductor-build-") as context:
        shutil.copy(DOCKERFILE, Path(context) / "Dockerfile")
        for path in _runner_files():
            shutil.copy(path, Path(context) / path.name)
        try:
            for chunk in client.api.build(
                path=context, tag=tag, rm=True, decode=True, labels=_image_labels("online")
            ):
                if "error" in chunk:
                    raise ImageBuildError(
                        f"docker build failed: {chunk['error'].strip()}. "
                        "Without registry access, use `conductor sandbox build --offline`."
                    )
                line = str(chunk.get("stream", "")).strip()
                if line:
                    progress(line)
        except docker.errors.APIError as exc:
            raise ImageBuildError(
                f"docker build failed: {exc}. Try `conductor sandbox build --offline`."
            ) from exc


def _build_offline(
    client: Any, tag: str, cache_dir: Path, mirror: str, rootfs: Path, progress: Progress
) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    base_tar = ensure_base_rootfs(cache_dir, mirror, progress)
    with tempfile.TemporaryDirectory(prefix="conductor-image-", dir=cache_dir) as tmp:
        final_tar = Path(tmp) / "image.tar"
        progress("adding the sandbox user and the runner")
        assemble_image_tar(base_tar, final_tar)
        progress(f"importing {final_tar.stat().st_size // (1024 * 1024)} MB as {tag}")
        repo, _, version = tag.partition(":")
        client.api.import_image_from_file(
            str(final_tar), repository=repo, tag=version, changes=_import_changes()
        )
        _unpack_rootfs(final_tar, rootfs, progress)


def base_rootfs_name(mirror: str = DEFAULT_MIRROR) -> str:
    key = hashlib.sha256(f"{RECIPE_VERSION} {SUITE} {mirror} {DEBIAN_PACKAGES}".encode())
    return f"rootfs-{SUITE}-{key.hexdigest()[:12]}.tar"


def ensure_base_rootfs(cache_dir: Path, mirror: str, progress: Progress) -> Path:
    """The cached debootstrap tarball, made first if missing (about 80 s)."""
    tarball = cache_dir / base_rootfs_name(mirror)
    if tarball.exists():
        progress(f"using cached root file system {tarball}")
        return tarball
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "debootstrap is not installed: `apt-get install debootstrap`, "
            "or build online with `conductor sandbox build --online`."
        )
    if os.geteuid() != 0:
        raise ImageBuildError(
            "an offline build runs debootstrap, which needs root: run "
            "`sudo conductor sandbox build --offline`, or build with `--online`."
        )
    with tempfile.TemporaryDirectory(prefix="debootstrap-", dir=cache_dir) as tmp:
        target = Path(tmp) / "root"
        command = [
            "debootstrap",
            "--variant=minbase",
            "--include=" + ",".join(DEBIAN_PACKAGES),
            SUITE,
            str(target),
            mirror,
        ]
        progress("running " + " ".join(command) + " (takes a minute or two)")
        _run_logged(command, progress, what="debootstrap")
        partial = tarball.with_suffix(".partial")
        excludes = [f"--exclude={pattern}" for pattern in _ROOTFS_EXCLUDES]
        progress(f"packing the root file system into {tarball}")
        _run_logged(
            ["tar", "-C", str(target), "--numeric-owner", *excludes, "-cf", str(partial), "."],
            progress,
            what="tar",
        )
        partial.rename(tarball)
    return tarball


def _run_logged(command: list[str], progress: Progress, *, what: str) -> None:
    started = time.monotonic()
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        tail = [*tail[-19:], line.rstrip()]
        if line.startswith(("I: Retrieving", "I: Configuring", "I: Base system")):
            progress(f"  [{time.monotonic() - started:5.1f}s] {line.strip()[3:]}")
    if proc.wait() != 0:
        raise ImageBuildError(
            f"{what} failed (exit {proc.returncode}); last output:\n"
            + "\n".join(tail)
            + "\nCheck the mirror (--mirror) and the network, then run the build again."
        )


def _passwd_lines() -> tuple[bytes, bytes]:
    user = f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}::{HOME}:/usr/sbin/nologin\n"
    group = f"sandbox:x:{SANDBOX_UID}:\n"
    return user.encode(), group.encode()


def assemble_image_tar(base_tar: Path, out_tar: Path) -> None:
    """Copy the base tree, adding the user, the runner and an empty work directory."""
    user_line, group_line = _passwd_lines()
    additions = {"./etc/passwd": user_line, "./etc/group": group_line}
    with (
        tarfile.open(base_tar) as src,
        tarfile.open(out_tar, "w", format=tarfile.GNU_FORMAT) as dst,
    ):
        for member in _members(src):
            name = "./" + member.name.lstrip("./") if member.name not in (".", "./") else "."
            if member.isfile() and name in additions:
                data = _read_member(src, member) + additions[name]
                member.size = len(data)
                dst.addfile(member, io.BytesIO(data))
            elif member.isfile():
                dst.addfile(member, src.extractfile(member))
            else:
                dst.addfile(member)
        for directory, mode, owner in (
            ("." + RUNNER_DIR_IN_IMAGE, 0o755, 0),
            ("." + WORKDIR, 0o700, SANDBOX_UID),
        ):
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, mode, owner, owner
            info.mtime = int(time.time())
            dst.addfile(info)
        for path in _runner_files():
            data = path.read_bytes()
            info = tarfile.TarInfo(f".{RUNNER_DIR_IN_IMAGE}/{path.name}")
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            dst.addfile(info, io.BytesIO(data))


def _runner_files() -> tuple[Path, ...]:
    return (RUNNER_SOURCE, *RUNNER_FILES[1:])


def _members(src: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    skip = {"." + RUNNER_DIR_IN_IMAGE, "." + WORKDIR}
    skip |= {f".{RUNNER_DIR_IN_IMAGE}/{path.name}" for path in _runner_files()}
    for member in src:
        if "./" + member.name.lstrip("./") not in skip:
            yield member


def _read_member(src: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = src.extractfile(member)
    assert handle is not None
    data = handle.read()
    return data if data.endswith(b"\n") or not data else data + b"\n"


def _import_changes() -> list[str]:
    return [
        f"USER {SANDBOX_UID}:{SANDBOX_UID}",
        f"WORKDIR {WORKDIR}",
        f"ENV PATH={IMAGE_PATH_ENV}",
        "ENV LANG=C.UTF-8",
        f"ENV HOME={HOME}",
        "ENV PYTHONNOUSERSITE=1",
        "ENV PYTHONSAFEPATH=1",
        f'CMD ["python3", "-I", "{RUNNER_IN_IMAGE}"]',
    ]


def _image_labels(mode: str) -> dict[str, str]:
    return {"conductor.sandbox.recipe": recipe_hash(), "conductor.sandbox.build": mode}


def _unpack_rootfs(final_tar: Path, dest: Path, progress: Progress) -> None:
    """Unpack the image tree for the bubblewrap backend (same Python, numpy, sympy)."""
    stamp = dest / ".conductor-recipe"
    if stamp.exists() and stamp.read_text().strip() == recipe_hash():
        return
    progress(f"unpacking the root file system for bubblewrap into {dest}")
    staging = dest.with_name(dest.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    subprocess.run(
        ["tar", "-C", str(staging), "--numeric-owner", "-xf", str(final_tar)], check=True
    )
    (staging / ".conductor-recipe").write_text(recipe_hash() + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    staging.rename(dest)
