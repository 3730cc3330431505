"""A container's disk limit: its whole writable layer on a filesystem of the limit's size.

The engine (overlay2 on ext4 here) has no storage quota. So, between creating a container and
starting it, wholeloop puts a size-limited filesystem *under* the container's writable layer: a
sparse file of the limit's size is made an ext4 filesystem holding the layer's folder (its
`diff/` -- the upper directory every write of the container lands in -- and `work/`), and mounted
over that folder. The engine then mounts the container's overlay on it as usual. Every byte and
every file the container writes, anywhere (repository, /tmp, /root, the venv, a copied-up image
file), is on that filesystem: the kernel refuses what does not fit (ENOSPC), one fallocate,
parallel writers and an inode flood alike (ext4 has a fixed number of inodes: about one per
16 KB of the limit, one per 4 KB below 512 MB). The container sees its limit as the size of `/`
(`df /`). The backing file is unlinked once mounted: its space goes back to the host when the
engine removes the container (its removal unmounts the layer folder, which frees the loop device).

Docker keeps three files of a container outside its layer, writable from inside:
/etc/hosts, /etc/hostname and /etc/resolv.conf. With the network off, the container gets
read-only ones of ours instead (`etc_mounts`); with it on, the engine's stay (DNS), and the file
size limit (RLIMIT_FSIZE, set to the disk limit for every process) bounds each of them.

It needs root on the engine's host (mkfs.ext4, a loop mount) and the engine's own overlay2
folders; `available()` says why not otherwise, and then only RLIMIT_FSIZE holds (no single file
above the limit; the total is not bounded): `DockerSandbox.disk_enforcement` says which.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import DiskSpaceError, SandboxError
from ..snapshot import cache_dir
from .engine import client, translate

MIN_BYTES = 16 * 2**20  # ext4 needs room for its metadata
SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"
HOSTS = (
    "127.0.0.1\tlocalhost {name}\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
    "ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n"
)


def _tool(name: str) -> str | None:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":" + SBIN)


def available(container_id: str) -> tuple[Path | None, str]:
    """(the container's layer folder, "") when a filesystem limit can be put under it, else
    (None, why not)."""
    if os.geteuid() != 0:
        return None, "wholeloop does not run as root on the engine's host (a loop mount needs it)"
    if not (_tool("mkfs.ext4") and _tool("mount")):
        return None, "mkfs.ext4 or mount is missing (Debian: e2fsprogs, mount)"
    with translate("inspecting a container"):
        driver = client().api.inspect_container(container_id).get("GraphDriver") or {}
    upper = (driver.get("Data") or {}).get("UpperDir")
    if driver.get("Name") != "overlay2" or not upper:
        return None, f"the engine's storage driver is {driver.get('Name')!r}, not overlay2"
    layer = Path(upper).parent
    if not (layer / "diff").is_dir() or not (layer / "work").is_dir():
        return None, f"the container's layer folder {layer} is not on this host (a remote engine?)"
    return layer, ""


@dataclass
class DiskQuota:
    """The filesystem under one container's writable layer."""

    layer: Path
    limit: int

    @classmethod
    def attach(cls, layer: Path, limit: int) -> DiskQuota:
        """Put a filesystem of `limit` bytes under `layer` (a created, not yet started container's
        layer folder). Raises SandboxError, leaving nothing behind."""
        if limit < MIN_BYTES:
            raise SandboxError(f"a disk limit of {limit} bytes is below the smallest possible, {MIN_BYTES // 2**20} MB")
        image = layer.with_name(layer.name + ".wholeloop-disk")
        st = layer.stat()
        try:
            with open(image, "wb") as fh:
                fh.truncate(limit)  # sparse: costs the host only what gets written
            # -d: the layer folder's content (diff/, work/, link, lower) is copied in at creation.
            # No journal (the layer dies with the container), no reserved blocks, no discard wait.
            _run(
                [
                    _tool("mkfs.ext4"),
                    "-q",
                    "-F",
                    "-d",
                    str(layer),
                    "-O",
                    "^has_journal",
                    "-m",
                    "0",
                    "-E",
                    "lazy_itable_init=1,nodiscard",
                    "-L",
                    "wholeloop",
                    str(image),
                ],
                "making the container's filesystem",
            )
            # noinit_itable: no background zeroing of inode tables (a fresh sparse file reads as zeros)
            _run(
                [_tool("mount"), "-o", "loop,noinit_itable,nodev,nosuid", str(image), str(layer)],
                "mounting the container's filesystem",
            )
        finally:
            image.unlink(missing_ok=True)  # mounted: the loop device keeps it until the unmount
        try:
            os.chown(layer, st.st_uid, st.st_gid)
            os.chmod(layer, st.st_mode & 0o7777)
            (layer / "lost+found").rmdir()
        except OSError:
            pass
        return cls(layer, limit)

    def usage(self) -> tuple[int, int, int, int]:
        """(bytes used, bytes free, files used, files free) of the container's filesystem."""
        vfs = os.statvfs(self.layer)
        return (
            (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize,
            vfs.f_bavail * vfs.f_frsize,
            vfs.f_files - vfs.f_ffree,
            vfs.f_favail,
        )

    def full(self) -> bool:
        """Is the filesystem full, in bytes or in files (less than 1% of either, or 4 MB, left)?

        4 MB, not less: writers that stop on ENOSPC together leave ext4's unused delayed-allocation
        reservations behind, which come back as free space once they exit (eight parallel `dd`s
        into a 50 MB disk left 0.86 MB here, and more than 1 MB under CI's load)."""
        try:
            used, free, files, files_free = self.usage()
        except OSError:  # unmounted: the container is gone
            return False
        return free < max(4 * 2**20, (used + free) // 100) or files_free < max(16, (files + files_free) // 100)

    def describe(self) -> str:
        used, free, files, _ = self.usage()
        return f"{used / 2**20:.1f} MB and {files:,} files written, {free / 2**20:.1f} MB free"


def sweep_leftovers(older_than_s: float = 600) -> list[str]:
    """Delete backing files a process killed between making and mounting a filesystem left in the
    engine's overlay2 folder (a mounted one is unlinked at once); returns what was deleted."""
    import time

    with translate("asking the engine for its data folder"):
        root = Path(client().info().get("DockerRootDir") or "/var/lib/docker") / "overlay2"
    removed = []
    try:
        for image in root.glob("*.wholeloop-disk"):
            if time.time() - image.stat().st_mtime > older_than_s:
                image.unlink(missing_ok=True)
                removed.append(str(image))
    except OSError:
        pass  # not ours to read (not root, a remote engine)
    return removed


def _run(argv: list, what: str) -> None:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SandboxError(f"{what} failed: {(proc.stderr or proc.stdout).strip()[-500:]}")


def etc_mounts(hostname: str) -> dict[str, str]:
    """Read-only stand-ins, on the host, for the /etc files docker keeps outside the layer:
    {target in the container: source on the host}. Written once per content, then shared."""
    folder = cache_dir() / "etc"
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for target, text in (
        ("/etc/hosts", HOSTS.format(name=hostname)),
        ("/etc/hostname", hostname + "\n"),
        ("/etc/resolv.conf", "# wholeloop: this container has no network\n"),
    ):
        path = folder / f"{Path(target).name}-{hostname}"
        if not path.is_file() or path.read_text() != text:
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_text(text)
            os.chmod(tmp, 0o444)
            os.replace(tmp, path)
        out[target] = str(path)
    return out


def engine_free_bytes() -> tuple[str, int] | None:
    """(the engine's data folder, bytes free on its filesystem) when it is on this host, else None."""
    with translate("asking the engine for its data folder"):
        root = client().info().get("DockerRootDir") or "/var/lib/docker"
    try:
        return root, shutil.disk_usage(root).free
    except OSError:
        return None


def check_room(limit: int | None, containers: int) -> None:
    """Refuse (DiskSpaceError) when `containers` containers at `limit` bytes each could need more
    than the engine's disk has free. Nothing to check without a limit or a local engine."""
    if not limit:
        return
    found = engine_free_bytes()
    if found is None:
        return
    root, free = found
    need = limit * containers
    if need > free:
        raise DiskSpaceError(
            f"this run may write up to {need / 2**30:.1f} GB ({containers} containers at once x a disk limit of "
            f"{limit / 2**30:.2f} GB) but the engine's disk ({root}) has {free / 2**30:.1f} GB free"
        )
