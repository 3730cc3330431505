"""A Ray cluster of nodes that share nothing with the driver, on this one machine (issue 27).

The head runs in this machine's network namespace, bound to a bridge of the cluster's own. Each
worker node runs in a network namespace of its own (a veth on that bridge: it reaches the head and
the other nodes, and nothing else, so no registry) and a mount namespace of its own, in which the
driver's paths (the checkout, /tmp, /work) are covered by empty tmpfs mounts and the main Docker
engine's socket by /dev/null. Each node has its own `dockerd` (own data root, exec root, socket,
pidfile, cgroup parent; no bridge, no iptables: it never touches the main engine's docker0), into
which the base image is loaded with `docker save | docker load` (never pulled, never built), its
own HOME and working folder, and wholeloop installed from a built wheel into a venv of its own
(never the checkout). Ray's dashboard is off and each object store is small.

Everything is undone by `stop()`: Ray and the engines stopped, leftover processes of the node
killed, namespaces, links and folders removed. The main Docker engine is never stopped.

The node venvs' dependencies are the driver's own packages: a template venv under TEMPLATE_ROOT,
keyed by the driver venv's package list, is linked from the driver's venv once (seconds; pip
never downloads or builds a dependency for it) and linked again for each node. wholeloop itself
is always installed fresh from a wheel built from this checkout.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODES_ROOT = Path("/var/lib/wholeloop-raytest")  # outside every path the nodes must not see
TEMPLATE_ROOT = Path("/var/cache/wholeloop-raytest")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def _check(cmd: list[str], **kw) -> str:
    proc = _run(cmd, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")
    return proc.stdout


def can_make_namespaces() -> str | None:
    """None when this machine can host the cluster, else why not."""
    for tool in ("ip", "unshare", "dockerd", "docker"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if os.geteuid() != 0:
        return "namespaces and a second dockerd need root"
    name = f"wlprobe{os.getpid() % 100000}"
    proc = _run(["ip", "netns", "add", name])
    if proc.returncode != 0:
        return f"ip netns add failed: {proc.stderr.strip()}"
    _run(["ip", "netns", "del", name])
    return None


def build_wheel(dest: Path) -> Path:
    """wholeloop as a wheel, built from this checkout (what a node installs)."""
    dest.mkdir(parents=True, exist_ok=True)
    _check([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(dest)])
    return next(dest.glob("wholeloop-*.whl"))


def template_venv() -> Path:
    """A venv holding every package of the driver's own venv (wholeloop's dependencies, Ray at the
    driver's version) but wholeloop itself: made once per package list, by hard links to the
    driver's files (a copy across file systems), never by pip downloading or building anything,
    so a fresh machine pays seconds for it, not minutes. Each node's venv is linked from it and
    gets wholeloop from the wheel."""
    site = Path(sysconfig.get_paths()["purelib"])
    packages = sorted(p.name for p in site.glob("*.dist-info") if not p.name.startswith("wholeloop-"))
    key = hashlib.sha256((f"{sys.version}\n{site}\n" + "\n".join(packages)).encode()).hexdigest()[:16]
    venv = TEMPLATE_ROOT / f"venv-{key}"
    if (venv / ".complete").is_file():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    base = getattr(sys, "_base_executable", sys.executable)
    _check([base, "-m", "venv", "--without-pip", str(venv)])
    target = Path(
        _check([str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    )
    shutil.rmtree(target)
    if _run(["cp", "-al", str(site), str(target)]).returncode != 0:  # another file system: copied
        shutil.rmtree(target, ignore_errors=True)
        _check(["cp", "-a", str(site), str(target)])
    # wholeloop's editable install (its .pth and finder point at the checkout) goes; pip stays
    _check([str(venv / "bin/python"), "-m", "pip", "uninstall", "-q", "-y", "wholeloop"])
    leftover = _run([str(venv / "bin/python"), "-c", "import harness"], cwd=str(venv))
    if leftover.returncode == 0:
        raise RuntimeError(f"the template venv {venv} still imports wholeloop from the checkout")
    (venv / ".complete").touch()
    return venv


@dataclass
class Node:
    name: str
    root: Path
    netns: str
    ip: str
    host_link: str
    cgroup: str
    proc: subprocess.Popen | None = None
    alive: bool = True

    @property
    def docker_host(self) -> str:
        return f"unix://{self.root / 'docker.sock'}"

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    def docker(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return _run(["docker", "-H", self.docker_host, *args], **kw)

    def containers(self) -> list[str]:
        """Ids of every container on this node's engine (none when the engine is gone)."""
        proc = self.docker("ps", "-aq")
        return proc.stdout.split() if proc.returncode == 0 else []

    def images(self) -> set[str]:
        proc = self.docker("images", "--format", "{{.Repository}}:{{.Tag}}")
        return set(proc.stdout.split()) if proc.returncode == 0 else set()

    def exec(self, code: str) -> subprocess.CompletedProcess:
        """Python run on the node: in its namespaces, with its venv (to look at what it sees)."""
        cmd = ["nsenter", f"--net=/run/netns/{self.netns}", f"--mount=/proc/{self.proc.pid}/ns/mnt"]
        return _run([*cmd, str(self.python), "-c", code], timeout=60)

    def pids(self) -> list[int]:
        """Every process in the node's network namespace, and every container process under its
        cgroup parent."""
        pids = set()
        proc = _run(["ip", "netns", "pids", self.netns])
        pids.update(int(p) for p in proc.stdout.split() if p.isdigit())
        for procs in Path("/sys/fs/cgroup").glob(f"*/{self.cgroup}/**/cgroup.procs"):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in procs.read_text().split())
        return sorted(pids)


def _cover(path: Path) -> Path:
    """The topmost ancestor of PATH (or PATH itself) that holds nothing a node needs: its own
    folders, the venv template and the interpreter the venvs link to."""
    needed = [NODES_ROOT, TEMPLATE_ROOT, Path(sys.base_prefix).resolve(), Path("/usr"), Path("/etc"), Path("/var/run")]
    for candidate in reversed(path.parents[:-1]):  # from the top down, "/" left out
        if not any(n == candidate or candidate in n.parents for n in needed):
            return candidate
    return path


@dataclass
class RayCluster:
    workers: int = 2
    cpus_per_node: int = 2
    object_store_mb: int = 1024  # per worker: two units at once may each hold a task's image archive (~260 MB)
    head_store_mb: int = 3072  # the driver's puts: one image archive per task of a run, kept until it ends
    base_images: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # for the head, the nodes and the driver
    hidden: tuple[Path, ...] = ()  # paths of the driver no node may see (besides ROOT, /tmp, /work)
    nodes: list[Node] = field(default_factory=list)
    address: str = ""

    def __post_init__(self) -> None:
        tag = f"{os.getpid() % 100000}"
        self.tag = tag
        self.root = NODES_ROOT / tag
        self.bridge = f"wlrb{tag}"
        self.subnet = f"10.227.{os.getpid() % 250}"
        self.head_ip = f"{self.subnet}.1"
        self.head: subprocess.Popen | None = None
        self.logs: list[Path] = []

    def hidden_paths(self) -> list[Path]:
        """The driver's folders covered on every node (a folder inside another is covered by it).

        The checkout is covered at its topmost folder the nodes do not need (/work for /work/main,
        /check for CI's /check/work/main): a tmpfs mounted on the checkout itself would leave an
        empty folder of that name on the node, so the node would still "see" the driver's path."""
        paths = sorted({Path(p).resolve() for p in (_cover(ROOT), "/tmp", "/work", *self.hidden) if Path(p).is_dir()})
        return [p for p in paths if not any(q != p and q in p.parents for q in paths)]

    # ------------------------------------------------------------------ start

    def start(self, wheel: Path, template: Path) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        _check(["ip", "link", "add", self.bridge, "type", "bridge"])
        _check(["ip", "addr", "add", f"{self.head_ip}/24", "dev", self.bridge])
        _check(["ip", "link", "set", self.bridge, "up"])
        self._start_head()
        for n in range(1, self.workers + 1):
            self.nodes.append(self._start_node(n, wheel, template))
        for node in self.nodes:
            self._wait_engine(node)
            for image in self.base_images:
                self.ship_image(node, image)
        self.wait_for_nodes(self.workers + 1)

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "DOCKER_"))}
        env.update({"RAY_USAGE_STATS_ENABLED": "0", **self.env})
        return env

    def _start_head(self) -> None:
        port = _free_port(self.head_ip)
        temp = self.root / "head"
        temp.mkdir()
        log = temp / "ray.log"
        self.logs.append(log)
        cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block"]
        cmd += [f"--port={port}", f"--node-ip-address={self.head_ip}", "--num-cpus=0"]
        cmd += ["--disable-usage-stats", "--include-dashboard=false", f"--temp-dir={temp}"]
        cmd += [f"--object-store-memory={self.head_store_mb * 2**20}"]
        with open(log, "w") as fh:
            self.head = subprocess.Popen(
                cmd, env=self._env(), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )
        _wait(lambda: "Ray runtime started" in log.read_text(), 120, lambda: log.read_text()[-3000:], self.head)
        self.address = f"{self.head_ip}:{port}"

    def _start_node(self, n: int, wheel: Path, template: Path) -> Node:
        node = Node(
            name=f"node{n}",
            root=self.root / f"node{n}",
            netns=f"wlr{self.tag}-{n}",
            ip=f"{self.subnet}.{10 + n}",
            host_link=f"wlr{self.tag}h{n}",
            cgroup=f"wholeloop-raytest-{self.tag}-{n}",
        )
        root = node.root
        for sub in ("home", "work", "tmp", "docker", "exec"):
            (root / sub).mkdir(parents=True)
        # the venv: dependencies copied from the template, wholeloop from the wheel (not the checkout)
        _check(["cp", "-al", str(template), str(root / "venv")])  # hard links: nothing installed is rewritten
        (root / "venv" / ".complete").unlink(missing_ok=True)
        _check([str(node.python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)])
        (root / "daemon.json").write_text("{}\n")
        self._launch(node)
        return node

    def _launch(self, node: Node) -> None:
        """The node's namespaces, engine and raylet (its folders and venv exist)."""
        root = node.root
        # the network: a veth from the cluster's bridge into the node's namespace, no default route
        _check(["ip", "netns", "add", node.netns])
        _check(["ip", "link", "add", node.host_link, "type", "veth", "peer", "name", "eth0", "netns", node.netns])
        _check(["ip", "link", "set", node.host_link, "master", self.bridge, "up"])
        ns = ["ip", "netns", "exec", node.netns]
        _check([*ns, "ip", "addr", "add", f"{node.ip}/24", "dev", "eth0"])
        _check([*ns, "ip", "link", "set", "eth0", "up"])
        _check([*ns, "ip", "link", "set", "lo", "up"])
        hidden = [str(p) for p in self.hidden_paths()]
        dockerd = [
            "dockerd",
            f"--config-file={root / 'daemon.json'}",
            f"--data-root={root / 'docker'}",
            f"--exec-root={root / 'exec'}",
            f"--host=unix://{root / 'docker.sock'}",
            f"--pidfile={root / 'docker.pid'}",
            f"--cgroup-parent=/{node.cgroup}",
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-masq=false",
            "--log-level=warn",
        ]
        ray = [
            str(node.python),
            "-m",
            "ray.scripts.scripts",
            "start",
            "--block",
            f"--address={self.address}",
            f"--node-ip-address={node.ip}",
            f"--num-cpus={self.cpus_per_node}",
            f"--object-store-memory={self.object_store_mb * 2**20}",
            "--disable-usage-stats",
            f'--resources={{"{node.name}": 1}}',
        ]
        script = "\n".join(
            [
                "set -e",
                "mount --make-rprivate /",
                f"hostname {node.name}",
                *(f"mount -t tmpfs -o size=1m,mode=755 wholeloop-hidden {shlex.quote(p)}" for p in hidden),
                "if [ -S /var/run/docker.sock ]; then mount --bind /dev/null /var/run/docker.sock; fi",
                f"{shlex.join(dockerd)} > {root / 'dockerd.log'} 2>&1 &",
                f"echo $! > {root / 'dockerd.launch.pid'}",
                f"while [ ! -S {root / 'docker.sock'} ]; do sleep 0.2; done",
                f"exec {shlex.join(ray)}",
            ]
        )
        env = self._env()
        env.update(
            {
                "HOME": str(root / "home"),
                "TMPDIR": str(root / "tmp"),
                "DOCKER_HOST": node.docker_host,
                "WHOLELOOP_CACHE": str(root / "home" / ".cache" / "wholeloop"),
                "PATH": f"{root / 'venv' / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            }
        )
        env.pop("VIRTUAL_ENV", None)
        env.pop("PYTHONPATH", None)
        log = root / "ray.log"
        self.logs.append(log)
        with open(log, "w") as fh:
            node.proc = subprocess.Popen(
                # nsenter, not `ip netns exec`: that one remounts /sys, hiding the cgroup mounts dockerd needs
                ["nsenter", f"--net=/run/netns/{node.netns}", "unshare", "--mount", "--uts", "--propagation", "private"]
                + ["bash", "-c", script],
                env=env,
                cwd=str(root / "work"),
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        node.alive = True

    def _wait_engine(self, node: Node) -> None:
        _wait(
            lambda: node.docker("version").returncode == 0,
            120,
            lambda: _tail(node.root / "dockerd.log") + _tail(node.root / "ray.log"),
            node.proc,
        )

    def ship_image(self, node: Node, image: str) -> None:
        """`docker save IMAGE | docker -H NODE load`: the node never pulls nor builds it."""
        with subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE) as save:
            load = subprocess.run(
                ["docker", "-H", node.docker_host, "load", "-q"], stdin=save.stdout, capture_output=True, text=True
            )
        if save.returncode != 0 or load.returncode != 0:
            raise RuntimeError(f"loading {image} into {node.name}: {load.stderr[-2000:]}")

    def wait_for_nodes(self, count: int, timeout: float = 120) -> None:
        def alive() -> bool:
            code = "import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
            code += "print(sum(n['Alive'] for n in ray.nodes()))"
            proc = _run([sys.executable, "-c", code, self.address], env=self._env(), timeout=60)
            return proc.returncode == 0 and proc.stdout.strip().splitlines()[-1:] == [str(count)]

        _wait(alive, timeout, lambda: "\n".join(_tail(p, 1500) for p in self.logs))

    # ------------------------------------------------------------------ losing a node, stopping

    def kill_node(self, node: Node) -> None:
        """SIGKILL the node's raylet, Ray workers and Docker engine (and everything else in its
        namespaces): as a machine losing power would, but its containers' processes go too."""
        for _ in range(5):
            pids = node.pids()
            if node.proc is not None and node.proc.poll() is None:
                pids.append(node.proc.pid)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.3)
        if node.proc is not None:
            node.proc.wait()
        node.alive = False

    def restart_node(self, node: Node) -> None:
        """A killed node back in the cluster: the same name, address, folders and engine data (its
        images and caches survive, as a rebooted machine's disk would); whatever of a unit its
        engine still lists is removed, as an operator would on bringing the machine back."""
        self._release(node)
        for stale in ("docker.sock", "docker.pid", "dockerd.launch.pid"):
            (node.root / stale).unlink(missing_ok=True)
        shutil.rmtree(node.root / "exec", ignore_errors=True)
        (node.root / "exec").mkdir()
        self._launch(node)
        self._wait_engine(node)
        for cid in node.containers():
            node.docker("rm", "-f", cid)
        self.wait_for_nodes(1 + sum(n.alive for n in self.nodes))

    def _release(self, node: Node) -> None:
        """A dead node's namespace, link and cgroups go."""
        _run(["ip", "netns", "del", node.netns])
        _run(["ip", "link", "del", node.host_link])
        for cgroup in sorted(Path("/sys/fs/cgroup").glob(f"*/{node.cgroup}"), reverse=True):
            for sub in sorted(cgroup.rglob("*"), key=lambda p: -len(p.parts)):
                if sub.is_dir():
                    with contextlib.suppress(OSError):
                        sub.rmdir()
            with contextlib.suppress(OSError):
                cgroup.rmdir()

    def _stop_node(self, node: Node) -> None:
        if node.alive:
            for cid in node.containers():  # nothing of a unit outlives the cluster
                node.docker("rm", "-f", cid)
            pidfile = node.root / "docker.pid"
            if pidfile.is_file():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)  # this node's dockerd only
                deadline = time.monotonic() + 15
                while pidfile.exists() and time.monotonic() < deadline:
                    time.sleep(0.2)
        self.kill_node(node)  # Ray's processes, and whatever else is left in its namespaces
        self._release(node)

    def stop(self) -> None:
        for node in self.nodes:
            try:
                self._stop_node(node)
            except Exception:  # the others are stopped all the same
                pass
        if self.head is not None and self.head.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # the head keeps nothing worth a graceful stop
                os.killpg(self.head.pid, signal.SIGKILL)
            self.head.wait()
        _run(["ip", "link", "del", self.bridge])
        shutil.rmtree(self.root, ignore_errors=True)


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _wait(ok, timeout: float, why, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            raise RuntimeError(f"cluster did not come up:\n{why()}")
        time.sleep(0.3)


def _tail(path: Path, size: int = 3000) -> str:
    try:
        return f"--- {path}\n" + path.read_text(errors="replace")[-size:]
    except OSError:
        return f"--- {path}: none\n"
