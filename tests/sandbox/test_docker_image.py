"""The sandbox image recipe: its tag, the offline tree we add to, the build cache."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from sandbox import image


def _tar_with(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for directory in ("./etc", "./usr", "./usr/bin"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def test_tag_is_a_stable_hash_of_the_recipe() -> None:
    tag = image.image_tag()
    repo, _, digest = tag.partition(":")
    assert repo == "conductor-sandbox" and len(digest) == 12
    int(digest, 16)
    assert image.image_tag() == tag


def test_tag_changes_when_the_runner_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = image.recipe_hash()
    edited = tmp_path / "main.py"
    edited.write_bytes(image.RUNNER_SOURCE.read_bytes() + b"\n# changed\n")
    monkeypatch.setattr(image, "RUNNER_SOURCE", edited)
    assert image.recipe_hash() != before


def test_assembled_tree_adds_user_runner_and_private_workdir(tmp_path: Path) -> None:
    base = _tar_with(
        tmp_path / "base.tar",
        {
            "./etc/passwd": b"root:x:0:0:root:/root:/bin/bash\n",
            "./etc/group": b"root:x:0:",  # no trailing newline: the line must not merge
            "./usr/bin/python3": b"#!fake\n",
        },
    )
    out = tmp_path / "image.tar"
    image.assemble_image_tar(base, out)
    with tarfile.open(out) as tar:
        members = {m.name.lstrip("./"): m for m in tar.getmembers()}

        def read(name: str) -> bytes:
            handle = tar.extractfile(members[name])
            assert handle is not None
            return handle.read()

        assert read("etc/passwd").splitlines() == [
            b"root:x:0:0:root:/root:/bin/bash",
            b"sandbox:x:10001:10001::/nonexistent:/usr/sbin/nologin",  # HOME outside /work
        ]
        assert read("etc/group").splitlines() == [b"root:x:0:", b"sandbox:x:10001:"]
        for path in image.RUNNER_FILES:
            assert read(f"opt/conductor/{path.name}") == path.read_bytes()
        assert read("usr/bin/python3") == b"#!fake\n"
        work = members["work"]
        assert work.isdir() and (work.uid, work.mode) == (10001, 0o700)
        assert members["opt/conductor/main.py"].uid == 0


def test_cached_rootfs_tarball_is_reused_without_debootstrap(tmp_path: Path) -> None:
    cached = tmp_path / image.base_rootfs_name()
    cached.write_bytes(b"cached")
    messages: list[str] = []
    assert image.ensure_base_rootfs(tmp_path, image.DEFAULT_MIRROR, messages.append) == cached
    assert messages and "cached" in messages[0]
    assert image.base_rootfs_name("http://mirror.example/debian") != cached.name


def test_rootfs_path_only_when_a_tree_was_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CONDUCTOR_HOME points into tmp_path (tests/conftest.py); the shared build cache
    # must not be touched by this fake tree.
    monkeypatch.delenv("CONDUCTOR_SANDBOX_CACHE", raising=False)
    assert image.rootfs_path() is None
    python = image.sandbox_home() / "rootfs" / "usr" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.write_text("")
    assert image.rootfs_path() == image.sandbox_home() / "rootfs"


def test_import_changes_make_the_image_non_root_with_the_runner_as_command() -> None:
    changes = image._import_changes()
    assert "USER 10001:10001" in changes and "WORKDIR /work" in changes
    assert any(c.startswith("CMD ") and image.RUNNER_IN_IMAGE in c for c in changes)
